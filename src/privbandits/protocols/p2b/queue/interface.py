"""The P2B shuffler's durable report queue: the interface and the logic both backends share (issues 17, 34).

A shuffler that restarts (crash, SIGKILL, redeploy) must lose no report it acknowledged
and release no batch twice. :class:`ReportQueue` gives it the three steps it needs, each
one database transaction, committed durably before it returns:

1. :meth:`ReportQueue.accept` stores a device's ``(code, action, reward)``, or its code and its content sealed to
   the server (:meth:`ReportQueue.accept_sealed`: then the queue never holds the action or the reward), with the
   device's transport identity *before* the shuffler acknowledges it. It is idempotent on
   the report's id: a device that retries after a lost acknowledgement is not counted twice.
2. :meth:`ReportQueue.close_batch` moves every held report into batch ``batch_id`` at once
   (idempotent on ``batch_id``) and drops their sender identities in the same transaction:
   the shuffler strips transport identity before anything is forwarded (spec §2.5,
   "anonymization"). The batch's reports are rewritten in the order of their random ids, so
   neither the rows' order nor their sequence numbers keep the order they arrived in.
3. :meth:`ReportQueue.mark_released` records that a batch went out; a restarted shuffler
   asks :meth:`ReportQueue.unreleased` what is still to send.

Two backends implement it: :class:`~privbandits.protocols.p2b.queue.sqlite.SqliteReportQueue`,
one file per shuffler (the embedded default), and
:class:`~privbandits.protocols.p2b.queue.postgres.PostgresReportQueue`, one PostgreSQL schema
that several shuffler front ends on several hosts share. This module holds every step's SQL and
checks once; a backend supplies its connection, its transactions and the few statements its
dialect or its concurrency needs (:meth:`ReportQueue._take_held`, :meth:`ReportQueue._lock_batches`).

Report ids are 128 random bits in hex (``secrets.token_hex(16)``, or ``rng.bytes(16).hex()``
for a seeded simulation, or a keyed hash only the shuffler can compute): an id says nothing
about the device, and it is the only thing of a report kept beside the batch besides
``(code, action, reward)``.

Exactly-once release needs the receiving side too: mark a batch released only after the
server acknowledged it (the server ignores a batch id it has already seen); then a crash
between the send and :meth:`~ReportQueue.mark_released` resends a batch the server drops,
and nothing is lost. The queue itself guarantees that a batch's content never changes
once formed, so a resend is the same batch.
"""

from __future__ import annotations

import re
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from privbandits.validation import Constraint, Integer, InvalidInputError, check

SCHEMA_VERSION = 2
"""2: a report's content may be sealed (``sealed``, with ``action`` and ``reward`` NULL); a queue of
version 1 is refused (the table cannot take a sealed report)."""

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


_BATCH_ID = Integer(low=0)
MAX_SEALED_BYTES = 4096
"""The longest sealed report a queue takes."""
_SETTINGS = ("n_codes", "n_arms")
TABLES = frozenset({"settings", "batches", "reports"})
"""The queue's tables: a database (file or schema) holding any other is refused."""


class QueueIntegrityError(RuntimeError):
    """The stored queue contradicts itself (edited behind the queue's back)."""


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
    sealed: tuple[bytes | None, ...] = ()
    """Each report's sealed content (None: a report in the clear); a sealed report's action and reward read -1."""

    def __len__(self) -> int:
        return len(self.codes)


class ReportQueue(ABC):
    """Reports a shuffler accepted, held until their batch closes, and the batches it formed (see module doc).

    Open one with a backend's class. ``n_codes`` and ``n_arms`` (codes in ``[0, n_codes)``, actions in
    ``[0, n_arms)``) are stored with the queue when it is created; reopening with other values is refused.
    Every method is one transaction; one queue object may be shared by threads.
    """

    OWNER: ClassVar[str] = "ReportQueue"
    """Error messages name the interface's methods, whichever backend runs them."""
    _BATCH_ORDER: ClassVar[str] = "report_id"
    """The column a batch's rows are read back in (the order of their ids)."""
    _HOLDS_OTHER: ClassVar[str] = "it holds tables"
    _SCHEMA: ClassVar[tuple[str, ...]]
    """The backend's CREATE ... IF NOT EXISTS statements."""

    n_codes: int | None
    n_arms: int | None

    # ----------------------------------------------------------------- what a backend supplies

    @property
    @abstractmethod
    def location(self) -> str:
        """Where the queue lives, fit for logs and results (a path, or a URL without its password)."""

    @abstractmethod
    def _execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        """Run one statement (``?`` placeholders); a cursor (``fetchone``, ``fetchall``, ``rowcount``)."""

    @abstractmethod
    def _executemany(self, sql: str, rows: list[tuple]) -> None:
        """Run one statement for each of ``rows``."""

    @abstractmethod
    def _begin(self) -> None:
        """Open the operation's transaction."""

    @abstractmethod
    def _in_transaction(self) -> bool:
        """Whether a transaction is open (False on a connection that died)."""

    @abstractmethod
    def _layout(self) -> tuple[int, set[str]]:
        """The stored schema version (0: none) and the tables already there, inside the set-up transaction."""

    @abstractmethod
    def _store_version(self) -> None:
        """Record :data:`SCHEMA_VERSION`, inside the set-up transaction."""

    @abstractmethod
    def _disconnect(self) -> None:
        """Close the connection."""

    def _lock_batches(self) -> None:
        """Make this transaction the only one forming a batch (a backend whose transactions are already
        serialised needs nothing)."""
        return None

    def _take_held(self) -> list[tuple]:
        """Remove every held report, returning ``(report_id, code, action, reward)`` of each (a backend whose
        transactions are serialised may read, then delete)."""
        rows = self._execute(
            "SELECT report_id, code, action, reward, sealed FROM reports WHERE batch_id IS NULL"
        ).fetchall()
        self._execute("DELETE FROM reports WHERE batch_id IS NULL")
        return rows

    def _after_batch(self) -> None:
        """After a batch is committed (e.g. scrub what the engine kept of the old rows)."""
        return None

    # ----------------------------------------------------------------- set-up

    def _where(self) -> str:
        return f"{self.location!r}"

    def _setup(self, owner: str, given: dict) -> None:
        """Create or check the schema and the stored settings (one transaction)."""
        self._lock = threading.Lock()
        with self._transaction():
            version, tables = self._layout()
            if version > SCHEMA_VERSION:
                raise InvalidInputError(
                    f"{owner}: {self._where()} holds a queue of schema version {version}; "
                    f"this privbandits reads up to {SCHEMA_VERSION}"
                )
            if tables and not tables <= TABLES:
                raise InvalidInputError(
                    f"{owner}: {self._where()} is not a report queue: {self._HOLDS_OTHER} {sorted(tables)}"
                )
            if tables and version < SCHEMA_VERSION:
                raise InvalidInputError(
                    f"{owner}: {self._where()} holds a queue of schema version {version} (reports in the clear only); "
                    f"this privbandits writes {SCHEMA_VERSION}: move it away to start afresh"
                )
            if tables != TABLES:  # (DDL on an existing table would wait for every open write transaction)
                for statement in self._SCHEMA:
                    self._execute(statement)
            if version != SCHEMA_VERSION:
                self._store_version()
            stored = dict(self._execute("SELECT name, value FROM settings").fetchall())
            for name in _SETTINGS:
                if name not in stored:
                    self._execute("INSERT INTO settings (name, value) VALUES (?, ?)", (name, given[name]))
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

    def _transaction(self) -> _Transaction:
        return _Transaction(self)

    # ----------------------------------------------------------------- the three steps

    def accept(self, report_id: str, sender_identity: str, code: int, action: int, reward: int) -> bool:
        """Persist one report (committed before this returns, so the caller may acknowledge it then).

        True if it is new, False if ``report_id`` was already accepted with the same report (a retry
        after a lost acknowledgement: acknowledge again, count nothing). The same id with another
        report, or from another device while held, is refused and stores nothing.
        """
        return self.accept_many([(report_id, sender_identity, code, action, reward)])[0]

    def accept_sealed(self, report_id: str, sender_identity: str, code: int, sealed: bytes) -> bool:
        """Persist one report whose content is sealed to the server: its ``code`` (the crowd id the shuffler
        thresholds on) and ``sealed`` (opaque bytes), as :meth:`accept` does. A retry is the same id with the same
        code (its sealing may differ: the first one is kept)."""
        return self.accept_many([(report_id, sender_identity, code, None, None, sealed)])[0]

    def accept_many(self, reports: Sequence[tuple]) -> list[bool]:
        """Persist several reports ``(report_id, sender_identity, code, action, reward)`` (or, sealed,
        ``(report_id, sender_identity, code, None, None, sealed)``) in one transaction (a group commit: one sync for
        all), each as :meth:`accept` does; True for each new one. If any is refused (a bad field, or an id accepted
        with another report or sender), none is stored."""
        owner = f"{self.OWNER}.accept"
        rows = [self._checked(owner, *report) for report in reports]
        with self._transaction():
            return [self._accept_row(owner, row) for row in rows]

    def _checked(self, owner: str, report_id: str, sender_identity: str, code: int, action: int | None,
                 reward: int | None, sealed: bytes | None = None) -> tuple:  # fmt: skip
        check(report_id, "report_id", _ReportId(), owner)
        check(sender_identity, "sender_identity", _Identity(), owner)
        code = check(code, "code", self._code, owner)
        if sealed is not None:
            if not isinstance(sealed, bytes) or not 0 < len(sealed) <= MAX_SEALED_BYTES or (action, reward) != (
                    None, None):  # fmt: skip
                raise InvalidInputError(
                    f"{owner}: sealed must be 1 to {MAX_SEALED_BYTES} bytes with action and reward None, got "
                    f"{type(sealed).__name__} with action {action!r}, reward {reward!r}"
                )
            return report_id, sender_identity, code, None, None, sealed
        action = check(action, "action", self._action, owner)
        return report_id, sender_identity, code, action, check(reward, "reward", self._reward, owner), None

    def _accept_row(self, owner: str, row: tuple) -> bool:
        report_id, sender_identity, *report = row
        # concurrent front ends: an insert of an id another transaction holds waits for it, then does nothing
        inserted = self._execute(
            "INSERT INTO reports (report_id, sender, code, action, reward, sealed) VALUES (?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (report_id) DO NOTHING",
            row,
        ).rowcount
        if inserted == 1:
            return True
        sender, *fields, sealed, batch_id = self._execute(
            "SELECT sender, code, action, reward, sealed, batch_id FROM reports WHERE report_id = ?", (report_id,)
        ).fetchone()
        if (sealed is None) != (report[3] is None) or list(fields) != report[:3]:
            raise InvalidInputError(
                f"{owner}: report_id {report_id!r} was already accepted with another report "
                f"(code, action, reward) = {tuple(fields)}, got {tuple(report[:3])}; "
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
        return self._execute("SELECT COALESCE(MAX(batch_id) + 1, 0) FROM batches").fetchone()[0]

    def close_batch(self, batch_id: int) -> QueuedBatch:
        """Form batch ``batch_id`` from every held report, dropping their sender identities, in one transaction.

        Idempotent: closing a batch that exists returns it unchanged (reports held since stay held).
        ``batch_id`` must be an existing batch or :meth:`next_batch_id` (batches are numbered 0, 1, ...).
        A batch may be empty.
        """
        owner = f"{self.OWNER}.close_batch"
        batch_id = check(batch_id, "batch_id", _BATCH_ID, owner)
        with self._transaction():
            self._lock_batches()
            if self._exists(batch_id):
                return self._batch(batch_id)
            expected = self._next_batch_id()
            if batch_id != expected:
                raise InvalidInputError(
                    f"{owner}: batch_id must be an existing batch or the next one, {expected}, got {batch_id}"
                )
            self._form(batch_id)
            batch = self._batch(batch_id)
        self._after_batch()
        return batch

    def _form(self, batch_id: int) -> None:
        """Rewrite the held reports as batch ``batch_id`` in the order of their (random) ids, without identities:
        their old rows, with the senders and the arrival order, are deleted."""
        rows = sorted(self._take_held(), key=lambda row: row[0])
        self._execute(
            "INSERT INTO batches (batch_id, size, closed_at) VALUES (?, ?, ?)", (batch_id, len(rows), time.time())
        )
        self._executemany(
            "INSERT INTO reports (report_id, code, action, reward, sealed, batch_id) VALUES (?, ?, ?, ?, ?, ?)",
            [(*row, batch_id) for row in rows],
        )

    def batch(self, batch_id: int) -> QueuedBatch:
        """Batch ``batch_id`` as formed (for a resend after a restart)."""
        batch_id = check(batch_id, "batch_id", _BATCH_ID, f"{self.OWNER}.batch")
        with self._transaction():
            if not self._exists(batch_id):
                raise InvalidInputError(f"{self.OWNER}.batch: batch_id must be a formed batch, got {batch_id}")
            return self._batch(batch_id)

    def released(self, batch_id: int) -> bool:
        """Whether batch ``batch_id`` was marked released (False for a batch not formed yet)."""
        batch_id = check(batch_id, "batch_id", _BATCH_ID, f"{self.OWNER}.released")
        with self._transaction():
            row = self._execute("SELECT released_at FROM batches WHERE batch_id = ?", (batch_id,)).fetchone()
        return row is not None and row[0] is not None

    def mark_released(self, batch_id: int) -> bool:
        """Record that batch ``batch_id`` went out: True if this call marked it, False if it already was
        (by this front end or another)."""
        owner = f"{self.OWNER}.mark_released"
        batch_id = check(batch_id, "batch_id", _BATCH_ID, owner)
        with self._transaction():
            if not self._exists(batch_id):
                raise InvalidInputError(f"{owner}: batch_id must be a formed batch, got {batch_id}")
            marked = self._execute(
                "UPDATE batches SET released_at = ? WHERE batch_id = ? AND released_at IS NULL", (time.time(), batch_id)
            ).rowcount
        return marked == 1

    # ----------------------------------------------------------------- what is in the queue

    def held(self) -> int:
        """Reports accepted and not yet in a batch."""
        with self._transaction():
            return self._execute("SELECT COUNT(*) FROM reports WHERE batch_id IS NULL").fetchone()[0]

    def held_senders(self) -> list[str]:
        """The distinct identities of the held reports, sorted (the only identities the queue keeps)."""
        with self._transaction():
            rows = self._execute("SELECT DISTINCT sender FROM reports WHERE sender IS NOT NULL").fetchall()
        return sorted(sender for (sender,) in rows)

    def batches(self) -> list[int]:
        """Ids of every formed batch, ascending."""
        with self._transaction():
            return [batch_id for (batch_id,) in self._execute("SELECT batch_id FROM batches ORDER BY batch_id")]

    def unreleased(self) -> list[int]:
        """Ids of the formed batches not marked released, ascending (what a restarted shuffler still sends)."""
        with self._transaction():
            rows = self._execute("SELECT batch_id FROM batches WHERE released_at IS NULL ORDER BY batch_id")
            return [batch_id for (batch_id,) in rows]

    def _exists(self, batch_id: int) -> bool:
        return self._execute("SELECT 1 FROM batches WHERE batch_id = ?", (batch_id,)).fetchone() is not None

    def _batch(self, batch_id: int) -> QueuedBatch:
        size, released_at = self._execute(
            "SELECT size, released_at FROM batches WHERE batch_id = ?", (batch_id,)
        ).fetchone()
        rows = self._execute(
            f"SELECT report_id, code, action, reward, sealed FROM reports WHERE batch_id = ? "
            f"ORDER BY {self._BATCH_ORDER}",
            (batch_id,),
        ).fetchall()
        table = np.array([[-1 if value is None else value for value in row[1:4]] for row in rows],
                         dtype=np.int64).reshape(len(rows), 3)  # fmt: skip
        if len(rows) != size:
            raise QueueIntegrityError(f"batch {batch_id} records {size} reports but holds {len(rows)}")
        codes, actions, rewards = (np.ascontiguousarray(table[:, column]) for column in range(3))
        for array in (codes, actions, rewards):
            array.flags.writeable = False
        ids = tuple(row[0] for row in rows)
        sealed = tuple(None if row[4] is None else bytes(row[4]) for row in rows)
        return QueuedBatch(batch_id, codes, actions, rewards, released_at is not None, ids, sealed)

    # ----------------------------------------------------------------- lifetime

    def close(self) -> None:
        """Close the connection (every operation is already committed)."""
        with self._lock:
            self._disconnect()

    def __enter__(self) -> ReportQueue:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.location!r})"


class _Transaction:
    """``BEGIN`` … ``COMMIT`` (``ROLLBACK`` on an error) under the queue's lock: one per operation."""

    __slots__ = ("queue",)

    def __init__(self, queue: ReportQueue) -> None:
        self.queue = queue

    def __enter__(self) -> None:
        self.queue._lock.acquire()
        try:
            self.queue._begin()
        except BaseException:
            self.queue._lock.release()
            raise

    def __exit__(self, kind: object, *exc: object) -> None:
        try:
            if kind is None:
                self.queue._execute("COMMIT")
            elif self.queue._in_transaction():
                self.queue._execute("ROLLBACK")
        finally:
            self.queue._lock.release()


__all__ = ["QueueIntegrityError", "QueuedBatch", "ReportQueue", "SCHEMA_VERSION"]
