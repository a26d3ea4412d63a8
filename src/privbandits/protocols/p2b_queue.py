"""The P2B shuffler's durable report queue: one SQLite file per shuffler (issue 17, faults).

A shuffler that restarts (crash, SIGKILL, redeploy) must lose no report it acknowledged
and release no batch twice. :class:`ReportQueue` gives it the three steps it needs, each
one SQLite transaction, committed with ``synchronous=FULL`` in WAL mode before it returns:

1. :meth:`ReportQueue.accept` stores a device's ``(code, action, reward)`` with the
   device's transport identity *before* the shuffler acknowledges it. It is idempotent on
   the report's id: a device that retries after a lost acknowledgement is not counted twice.
2. :meth:`ReportQueue.close_batch` moves every held report into batch ``batch_id`` at once
   (idempotent on ``batch_id``) and drops their sender identities in the same transaction:
   the shuffler strips transport identity before anything is forwarded (spec §2.5,
   "anonymization"). The batch's reports are rewritten in the order of their random ids, so
   neither the rows' order nor their sequence numbers keep the order they arrived in. With
   ``secure_delete`` on and the WAL truncated after the batch is formed, no identity or
   arrival order of a batched report is left in the file's bytes either.
3. :meth:`ReportQueue.mark_released` records that a batch went out; a restarted shuffler
   asks :meth:`ReportQueue.unreleased` what is still to send.

Report ids are 128 random bits in hex (``secrets.token_hex(16)``, or ``rng.bytes(16).hex()``
for a seeded simulation, or a keyed hash only the shuffler can compute): an id says nothing
about the device, and it is the only thing of a report kept beside the batch besides
``(code, action, reward)``. The file (and its ``-wal``/``-shm``, which SQLite creates with
the file's mode) is readable by its owner only (0600).

Exactly-once release needs the receiving side too: mark a batch released only after the
server acknowledged it (the server ignores a batch id it has already seen); then a crash
between the send and :meth:`~ReportQueue.mark_released` resends a batch the server drops,
and nothing is lost. The queue itself guarantees that a batch's content never changes
once formed, so a resend is the same batch.
"""

from __future__ import annotations

import os
import re
import sqlite3
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from privbandits.validation import Constraint, Instance, Integer, InvalidInputError, NoneOr, check, validate

SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS settings (
    name TEXT PRIMARY KEY,
    value INTEGER
);
CREATE TABLE IF NOT EXISTS batches (
    batch_id INTEGER PRIMARY KEY,
    size INTEGER NOT NULL,
    closed_at REAL NOT NULL,
    released_at REAL
);
CREATE TABLE IF NOT EXISTS reports (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    report_id TEXT NOT NULL UNIQUE,
    sender TEXT,
    code INTEGER NOT NULL,
    action INTEGER NOT NULL,
    reward INTEGER NOT NULL,
    batch_id INTEGER REFERENCES batches (batch_id),
    CHECK ((batch_id IS NULL) = (sender IS NOT NULL))
);
CREATE INDEX IF NOT EXISTS reports_by_batch ON reports (batch_id, seq);
"""
"""A report is held (sender kept, no batch) or batched (batch set, sender gone), never both or neither."""

_REPORT_ID = re.compile(r"[0-9a-f]{32}")


class _ReportId(Constraint):
    """128 random bits as 32 lowercase hex digits."""

    def accepts(self, value: object) -> bool:
        return isinstance(value, str) and _REPORT_ID.fullmatch(value) is not None

    def __str__(self) -> str:
        return "a string of 32 lowercase hexadecimal digits (a random id: secrets.token_hex(16))"


class _Identity(Constraint):
    """A transport identity: the certificate name the TLS layer authenticated."""

    def accepts(self, value: object) -> bool:
        return isinstance(value, str) and 0 < len(value) <= 255 and value.isprintable()

    def __str__(self) -> str:
        return "a non-empty printable string of at most 255 characters (the peer's certificate name)"


_PATH = Instance((str, os.PathLike), "a path (str or os.PathLike)")
_BATCH_ID = Integer(low=0)
_SETTINGS = ("n_codes", "n_arms")


@dataclass(frozen=True, eq=False)  # arrays: compare fields, not batches
class QueuedBatch:
    """One formed batch: its reports' ``(code, action, reward)`` in the order of their ids, which says
    nothing of the order they arrived in (read-only int64 arrays; the shuffler shuffles when it releases),
    the ids in that order, and whether it was released."""

    batch_id: int
    codes: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray
    released: bool
    report_ids: tuple[str, ...] = ()

    def __len__(self) -> int:
        return len(self.codes)


class ReportQueue:
    """Reports a shuffler accepted, held until their batch closes, and the batches it formed (see module doc).

    Parameters
    ----------
    path : str or PathLike
        The queue's SQLite file (created with its folder if missing; ``-wal``/``-shm`` beside it).
    n_codes, n_arms : int, optional
        Codes must lie in ``[0, n_codes)`` and actions in ``[0, n_arms)``. Stored with the queue
        on creation; reopening with other values is refused (a restart with another config).
    """

    def __init__(self, path: str | os.PathLike, *, n_codes: int | None = None, n_arms: int | None = None) -> None:
        owner = "ReportQueue"
        check(path, "path", _PATH, owner)
        given = validate(
            owner,
            {"n_codes": NoneOr(Integer(low=1), "no upper bound"), "n_arms": NoneOr(Integer(low=1), "no upper bound")},
            {"n_codes": n_codes, "n_arms": n_arms},
        )
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        try:
            _owner_only(self.path)
            # autocommit mode: every operation below opens its own transaction with BEGIN IMMEDIATE
            self._db = sqlite3.connect(self.path, timeout=30, isolation_level=None, check_same_thread=False)
        except (sqlite3.Error, OSError) as exc:
            raise InvalidInputError(
                f"{owner}: path {str(self.path)!r} cannot be opened as a report queue: {exc}"
            ) from None
        try:
            if self._db.execute("PRAGMA journal_mode=WAL").fetchone()[0] != "wal":
                raise sqlite3.DatabaseError("could not switch to WAL mode")
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.execute("PRAGMA secure_delete=ON")
            self._db.execute("PRAGMA foreign_keys=ON")
            version = self._db.execute("PRAGMA user_version").fetchone()[0]
            tables = {name for (name,) in self._db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        except sqlite3.DatabaseError as exc:
            self._db.close()
            raise InvalidInputError(f"{owner}: path {str(self.path)!r} is not a report queue: {exc}") from None
        try:
            self._open(owner, version, tables - {"sqlite_sequence"}, given)
        except BaseException:
            self._db.close()
            raise

    def _open(self, owner: str, version: int, tables: set[str], given: dict) -> None:
        """Create or check the schema and the stored settings (one transaction)."""
        if version > SCHEMA_VERSION:
            raise InvalidInputError(
                f"{owner}: path {str(self.path)!r} holds a queue of schema version {version}; "
                f"this privbandits reads up to {SCHEMA_VERSION}"
            )
        if tables and not tables <= {"settings", "batches", "reports"}:
            raise InvalidInputError(
                f"{owner}: path {str(self.path)!r} is not a report queue: it is a SQLite file with tables "
                f"{sorted(tables)}"
            )
        with self._transaction():
            for statement in filter(str.strip, _SCHEMA.split(";")):  # not executescript: it would commit first
                self._db.execute(statement)
            self._db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            stored = dict(self._db.execute("SELECT name, value FROM settings").fetchall())
            for name in _SETTINGS:
                if name not in stored:
                    self._db.execute("INSERT INTO settings (name, value) VALUES (?, ?)", (name, given[name]))
                    stored[name] = given[name]
                elif given[name] is not None and given[name] != stored[name]:
                    raise InvalidInputError(
                        f"{owner}: {name} must be {stored[name]} (the value this queue was created with), "
                        f"got {given[name]!r}"
                    )
        self.n_codes, self.n_arms = stored["n_codes"], stored["n_arms"]
        self._code = Integer(low=0, high=None if self.n_codes is None else self.n_codes - 1)
        self._action = Integer(low=0, high=None if self.n_arms is None else self.n_arms - 1)
        self._reward = Integer(low=0, high=1, note="a binary reward")

    # ----------------------------------------------------------------- transactions

    def _transaction(self) -> _Transaction:
        return _Transaction(self._db, self._lock)

    # ----------------------------------------------------------------- the three steps

    def accept(self, report_id: str, sender_identity: str, code: int, action: int, reward: int) -> bool:
        """Persist one report (committed before this returns, so the caller may acknowledge it then).

        True if it is new, False if ``report_id`` was already accepted with the same report (a retry
        after a lost acknowledgement: acknowledge again, count nothing). The same id with another
        report, or from another device while held, is refused and stores nothing.
        """
        return self.accept_many([(report_id, sender_identity, code, action, reward)])[0]

    def accept_many(self, reports: Sequence[tuple[str, str, int, int, int]]) -> list[bool]:
        """Persist several reports ``(report_id, sender_identity, code, action, reward)`` in one transaction (a
        group commit: one sync for all), each as :meth:`accept` does; True for each new one. If any is refused
        (a bad field, or an id accepted with another report or sender), none is stored."""
        owner = "ReportQueue.accept"
        rows = [self._checked(owner, *report) for report in reports]
        with self._transaction():
            return [self._accept_row(owner, row) for row in rows]

    def _checked(self, owner: str, report_id: str, sender_identity: str, code: int, action: int, reward: int):
        check(report_id, "report_id", _ReportId(), owner)
        check(sender_identity, "sender_identity", _Identity(), owner)
        code = check(code, "code", self._code, owner)
        action = check(action, "action", self._action, owner)
        return report_id, sender_identity, code, action, check(reward, "reward", self._reward, owner)

    def _accept_row(self, owner: str, row: tuple[str, str, int, int, int]) -> bool:
        report_id, sender_identity, *report = row
        found = self._db.execute(
            "SELECT sender, code, action, reward, batch_id FROM reports WHERE report_id = ?", (report_id,)
        ).fetchone()
        if found is None:
            self._db.execute(
                "INSERT INTO reports (report_id, sender, code, action, reward) VALUES (?, ?, ?, ?, ?)", row
            )
            return True
        sender, *fields, batch_id = found
        if fields != report:
            raise InvalidInputError(
                f"{owner}: report_id {report_id!r} was already accepted with another report "
                f"(code, action, reward) = {tuple(fields)}, got {tuple(report)}; "
                "a retry resends the same report"
            )
        if batch_id is None and sender != sender_identity:
            raise InvalidInputError(
                f"{owner}: report_id {report_id!r} is held for another sender; got it from {sender_identity!r} "
                "(report ids are random: a collision is a forged or copied id)"
            )
        return False

    def next_batch_id(self) -> int:
        """The id the next :meth:`close_batch` must use (0 for a new queue)."""
        with self._transaction():
            return self._next_batch_id()

    def _next_batch_id(self) -> int:
        return self._db.execute("SELECT COALESCE(MAX(batch_id) + 1, 0) FROM batches").fetchone()[0]

    def close_batch(self, batch_id: int) -> QueuedBatch:
        """Form batch ``batch_id`` from every held report, dropping their sender identities, in one transaction.

        Idempotent: closing a batch that exists returns it unchanged (reports held since stay held).
        ``batch_id`` must be an existing batch or :meth:`next_batch_id` (batches are numbered 0, 1, ...).
        A batch may be empty.
        """
        owner = "ReportQueue.close_batch"
        batch_id = check(batch_id, "batch_id", _BATCH_ID, owner)
        with self._transaction():
            if self._exists(batch_id):
                return self._batch(batch_id)
            expected = self._next_batch_id()
            if batch_id != expected:
                raise InvalidInputError(
                    f"{owner}: batch_id must be an existing batch or the next one, {expected}, got {batch_id}"
                )
            size = self._db.execute("SELECT COUNT(*) FROM reports WHERE batch_id IS NULL").fetchone()[0]
            self._db.execute(
                "INSERT INTO batches (batch_id, size, closed_at) VALUES (?, ?, ?)", (batch_id, size, time.time())
            )
            self._form(batch_id)
            batch = self._batch(batch_id)
        # the identities' old page images leave the write-ahead log too (secure_delete zeroed them in the file)
        with self._lock:
            self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return batch

    def _form(self, batch_id: int) -> None:
        """Rewrite the held reports as batch ``batch_id`` in the order of their (random) ids, without identities:
        their old rows, with the senders and the arrival order, are deleted (and zeroed: ``secure_delete``)."""
        rows = self._db.execute(
            "SELECT report_id, code, action, reward FROM reports WHERE batch_id IS NULL ORDER BY report_id"
        ).fetchall()
        self._db.execute("DELETE FROM reports WHERE batch_id IS NULL")
        self._db.executemany(
            "INSERT INTO reports (report_id, code, action, reward, batch_id) VALUES (?, ?, ?, ?, ?)",
            [(*row, batch_id) for row in rows],
        )

    def batch(self, batch_id: int) -> QueuedBatch:
        """Batch ``batch_id`` as formed (for a resend after a restart)."""
        batch_id = check(batch_id, "batch_id", _BATCH_ID, "ReportQueue.batch")
        with self._transaction():
            if not self._exists(batch_id):
                raise InvalidInputError(f"ReportQueue.batch: batch_id must be a formed batch, got {batch_id}")
            return self._batch(batch_id)

    def released(self, batch_id: int) -> bool:
        """Whether batch ``batch_id`` was marked released (False for a batch not formed yet)."""
        batch_id = check(batch_id, "batch_id", _BATCH_ID, "ReportQueue.released")
        with self._transaction():
            row = self._db.execute("SELECT released_at FROM batches WHERE batch_id = ?", (batch_id,)).fetchone()
        return row is not None and row[0] is not None

    def mark_released(self, batch_id: int) -> bool:
        """Record that batch ``batch_id`` went out: True if this call marked it, False if it already was."""
        owner = "ReportQueue.mark_released"
        batch_id = check(batch_id, "batch_id", _BATCH_ID, owner)
        with self._transaction():
            if not self._exists(batch_id):
                raise InvalidInputError(f"{owner}: batch_id must be a formed batch, got {batch_id}")
            marked = self._db.execute(
                "UPDATE batches SET released_at = ? WHERE batch_id = ? AND released_at IS NULL", (time.time(), batch_id)
            ).rowcount
        return marked == 1

    # ----------------------------------------------------------------- what is in the queue

    def held(self) -> int:
        """Reports accepted and not yet in a batch."""
        with self._transaction():
            return self._db.execute("SELECT COUNT(*) FROM reports WHERE batch_id IS NULL").fetchone()[0]

    def held_senders(self) -> list[str]:
        """The distinct identities of the held reports, sorted (the only identities the queue keeps)."""
        with self._transaction():
            rows = self._db.execute(
                "SELECT DISTINCT sender FROM reports WHERE sender IS NOT NULL ORDER BY sender"
            ).fetchall()
        return [sender for (sender,) in rows]

    def batches(self) -> list[int]:
        """Ids of every formed batch, ascending."""
        with self._transaction():
            return [batch_id for (batch_id,) in self._db.execute("SELECT batch_id FROM batches ORDER BY batch_id")]

    def unreleased(self) -> list[int]:
        """Ids of the formed batches not marked released, ascending (what a restarted shuffler still sends)."""
        with self._transaction():
            rows = self._db.execute("SELECT batch_id FROM batches WHERE released_at IS NULL ORDER BY batch_id")
            return [batch_id for (batch_id,) in rows]

    def _exists(self, batch_id: int) -> bool:
        return self._db.execute("SELECT 1 FROM batches WHERE batch_id = ?", (batch_id,)).fetchone() is not None

    def _batch(self, batch_id: int) -> QueuedBatch:
        size, released_at = self._db.execute(
            "SELECT size, released_at FROM batches WHERE batch_id = ?", (batch_id,)
        ).fetchone()
        rows = self._db.execute(
            "SELECT report_id, code, action, reward FROM reports WHERE batch_id = ? ORDER BY seq", (batch_id,)
        ).fetchall()
        table = np.array([row[1:] for row in rows], dtype=np.int64).reshape(len(rows), 3)
        if len(rows) != size:  # the file was edited behind the queue's back
            raise sqlite3.DatabaseError(f"batch {batch_id} records {size} reports but holds {len(rows)}")
        codes, actions, rewards = (np.ascontiguousarray(table[:, column]) for column in range(3))
        for array in (codes, actions, rewards):
            array.flags.writeable = False
        ids = tuple(row[0] for row in rows)
        return QueuedBatch(batch_id, codes, actions, rewards, released_at is not None, ids)

    # ----------------------------------------------------------------- lifetime

    def close(self) -> None:
        """Close the file (every operation is already committed)."""
        with self._lock:
            self._db.close()

    def __enter__(self) -> ReportQueue:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"ReportQueue({str(self.path)!r})"


def _owner_only(path: Path) -> None:
    """Create ``path`` with mode 0600 if it is missing, else make it 0600 (SQLite gives its -wal and -shm files
    the database file's mode)."""
    descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        os.fchmod(descriptor, 0o600)
    finally:
        os.close(descriptor)


class _Transaction:
    """``BEGIN IMMEDIATE`` … ``COMMIT`` (``ROLLBACK`` on an error) under the queue's lock: one per operation."""

    __slots__ = ("db", "lock")

    def __init__(self, db: sqlite3.Connection, lock: threading.Lock) -> None:
        self.db, self.lock = db, lock

    def __enter__(self) -> None:
        self.lock.acquire()
        try:
            self.db.execute("BEGIN IMMEDIATE")
        except BaseException:
            self.lock.release()
            raise

    def __exit__(self, kind: object, *exc: object) -> None:
        try:
            if kind is None:
                self.db.execute("COMMIT")
            elif self.db.in_transaction:
                self.db.execute("ROLLBACK")
        finally:
            self.lock.release()


__all__ = ["QueuedBatch", "ReportQueue"]
