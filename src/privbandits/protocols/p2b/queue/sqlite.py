"""The report queue in one SQLite file per shuffler: the embedded default (issue 17, faults).

Every step is one ``BEGIN IMMEDIATE`` transaction (so the queue's transactions are serialised,
across processes too), committed with ``synchronous=FULL`` in WAL mode before it returns. With
``secure_delete`` on and the WAL truncated after a batch is formed, no identity or arrival order
of a batched report is left in the file's bytes. The file (and its ``-wal``/``-shm``, which
SQLite creates with the file's mode) is readable by its owner only (0600).
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from privbandits.protocols.p2b.queue.interface import SCHEMA_VERSION, ReportQueue
from privbandits.validation import Instance, Integer, InvalidInputError, NoneOr, check, validate

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS settings (name TEXT PRIMARY KEY, value INTEGER)",
    """CREATE TABLE IF NOT EXISTS batches (
        batch_id INTEGER PRIMARY KEY,
        size INTEGER NOT NULL,
        closed_at REAL NOT NULL,
        released_at REAL
    )""",
    # a report is held (sender kept, no batch) or batched (batch set, sender gone), never both or neither
    """CREATE TABLE IF NOT EXISTS reports (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        report_id TEXT NOT NULL UNIQUE,
        sender TEXT,
        code INTEGER NOT NULL,
        action INTEGER,
        reward INTEGER,
        sealed BLOB,
        batch_id INTEGER REFERENCES batches (batch_id),
        CHECK ((batch_id IS NULL) = (sender IS NOT NULL)),
        CHECK ((sealed IS NULL) = (action IS NOT NULL AND reward IS NOT NULL))
    )""",
    "CREATE INDEX IF NOT EXISTS reports_by_batch ON reports (batch_id, seq)",
)

_PATH = Instance((str, os.PathLike), "a path (str or os.PathLike)")
COUNTS = {"n_codes": NoneOr(Integer(low=1), "no upper bound"), "n_arms": NoneOr(Integer(low=1), "no upper bound")}
"""``n_codes`` and ``n_arms``, as every backend's constructor takes them."""


class SqliteReportQueue(ReportQueue):
    """A :class:`~privbandits.protocols.p2b.queue.interface.ReportQueue` in one SQLite file (see module doc).

    Parameters
    ----------
    path : str or PathLike
        The queue's SQLite file (created with its folder if missing; ``-wal``/``-shm`` beside it).
    n_codes, n_arms : int, optional
        Codes must lie in ``[0, n_codes)`` and actions in ``[0, n_arms)``. Stored with the queue
        on creation; reopening with other values is refused (a restart with another config).
    """

    _SCHEMA = _SCHEMA
    _BATCH_ORDER = "seq"  # rows are written in id order when the batch forms
    _HOLDS_OTHER = "it is a SQLite file with tables"

    def __init__(self, path: str | os.PathLike, *, n_codes: int | None = None, n_arms: int | None = None) -> None:
        owner = type(self).__name__
        check(path, "path", _PATH, owner)
        given = validate(owner, COUNTS, {"n_codes": n_codes, "n_arms": n_arms})
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            _owner_only(self.path)
            # autocommit mode: every operation opens its own transaction with BEGIN IMMEDIATE
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
            self._db.execute("PRAGMA user_version").fetchone()
            problems = [row[0] for row in self._db.execute("PRAGMA quick_check").fetchall()]
            if problems != ["ok"]:  # a damaged file is refused whole, never half-used
                raise sqlite3.DatabaseError("damaged: " + " ".join(" ".join(problems[:3]).split()))
        except sqlite3.DatabaseError as exc:
            self._db.close()
            raise InvalidInputError(f"{owner}: path {str(self.path)!r} is not a report queue: {exc}") from None
        try:
            self._setup(owner, given)
        except BaseException:
            self._db.close()
            raise

    @property
    def location(self) -> str:
        return str(self.path)

    def _where(self) -> str:
        return f"path {str(self.path)!r}"

    def _execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        return self._db.execute(sql, params)

    def _executemany(self, sql: str, rows: list[tuple]) -> None:
        self._db.executemany(sql, rows)

    def _begin(self) -> None:
        self._execute("BEGIN IMMEDIATE")

    def _in_transaction(self) -> bool:
        try:
            return self._db.in_transaction
        except sqlite3.ProgrammingError:  # closed: nothing left to roll back
            return False

    def _layout(self) -> tuple[int, set[str]]:
        version = self._execute("PRAGMA user_version").fetchone()[0]
        tables = {name for (name,) in self._execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        return version, tables - {"sqlite_sequence"}

    def _store_version(self) -> None:
        self._execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    def _after_batch(self) -> None:
        # the identities' old page images leave the write-ahead log too (secure_delete zeroed them in the file)
        with self._lock:
            self._execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def _disconnect(self) -> None:
        self._db.close()


def _owner_only(path: Path) -> None:
    """Create ``path`` with mode 0600 if it is missing, else make it 0600 (SQLite gives its -wal and -shm files
    the database file's mode)."""
    descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        os.fchmod(descriptor, 0o600)
    finally:
        os.close(descriptor)


__all__ = ["SqliteReportQueue"]
