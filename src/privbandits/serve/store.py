"""The event store of a served party: one SQLite file (WAL, ``synchronous=FULL``, mode 0600).

It holds every decision (the answer, the per-event state, its deadline), every close (a reward absorbed or a
timeout), every put of a feature holder's rows, the role's checkpoints and the application's client tokens (SHA-256
hashes only). Every change of the role's state is journalled by a sequence number that grows across the whole file: a
decision's ``decide_seq``, a close's ``close_seq`` and a put's ``seq``. A checkpoint records the last sequence number
it includes, so recovery (:func:`privbandits.serve.service.DecisionService.open`) is: load the newest checkpoint,
then replay the journal after it in sequence order. Each write commits before the service answers, so what a response
acknowledges is durable.

A file that is not a store of this version, or that SQLite finds damaged, is refused with :class:`StoreError`, one
line naming the file.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import sqlite3
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from privbandits.serve.decider import DecidedEvent, DecideInput, Decision
from privbandits.serve.role import FeaturePut

SCHEMA_VERSION = "2"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS events (
    event_id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL,
    request_sha256 TEXT NOT NULL,
    features TEXT NOT NULL,
    arms TEXT,
    arm INTEGER NOT NULL,
    propensity REAL,
    model_version INTEGER NOT NULL,
    event_state TEXT NOT NULL,
    decided_at REAL NOT NULL,
    deadline REAL NOT NULL,
    decide_seq INTEGER NOT NULL UNIQUE,
    status TEXT NOT NULL CHECK (status IN ('open', 'rewarded', 'expired')),
    reward REAL,
    closed_at REAL,
    close_seq INTEGER UNIQUE
);
CREATE INDEX IF NOT EXISTS events_open ON events (deadline) WHERE status = 'open';
CREATE TABLE IF NOT EXISTS puts (
    seq INTEGER PRIMARY KEY, key TEXT NOT NULL, features TEXT NOT NULL, put_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS puts_key ON puts (key, seq);
CREATE TABLE IF NOT EXISTS checkpoints (
    seq INTEGER PRIMARY KEY, model_version INTEGER NOT NULL, state BLOB NOT NULL, written_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS tokens (
    client TEXT PRIMARY KEY, sha256 TEXT NOT NULL UNIQUE, created_at REAL NOT NULL
);
"""

_EVENT_COLUMNS = "event_id, user_id, arm, propensity, model_version, event_state"
KEPT_CHECKPOINTS = 2


class StoreError(RuntimeError):
    """The store cannot be used (damaged, another version, another learner): one line naming the file."""


@dataclass(frozen=True)
class StoredEvent:
    """An event's row: what it was asked and answered, and where it stands."""

    event: DecidedEvent
    request_sha256: str
    deadline: float
    status: str
    reward: float | None


@dataclass(frozen=True)
class LoggedEvent:
    """A rewarded event as the decision log holds it: what was asked, the answer, the reward, when."""

    asked: DecideInput
    arm: int
    propensity: float | None
    reward: float
    decided_at: float


@dataclass(frozen=True)
class JournalEntry:
    """One journalled change of the role's state: ``kind`` is ``decide``, ``rewarded`` or ``expired`` (``event``
    set), or ``put`` (``put`` set)."""

    seq: int
    kind: str
    event: DecidedEvent | None
    reward: float | None
    put: FeaturePut | None = None


def features_text(features: np.ndarray) -> str:
    """Rows as the store keeps them: ``f8:SHAPE:`` and their float64 bytes (little-endian) in base64, ``SHAPE`` as
    ``ROWSxWIDTH``. Exact, and about a hundred times cheaper to write than JSON numbers (a float's shortest repr)."""
    rows = np.ascontiguousarray(features, dtype="<f8")
    shape = "x".join(str(size) for size in rows.shape)
    return f"f8:{shape}:{base64.b64encode(rows.tobytes()).decode()}"


def features_of(text: str) -> np.ndarray:
    """The rows :func:`features_text` wrote, or the JSON numbers that stores written before it kept."""
    if not text.startswith("f8:"):
        return np.asarray(json.loads(text), dtype=np.float64)
    _, shape, data = text.split(":", 2)
    flat = np.frombuffer(base64.b64decode(data, validate=True), dtype="<f8")
    return flat.reshape([int(size) for size in shape.split("x")]).astype(np.float64)


def _put(key: str, text: str) -> FeaturePut:
    return FeaturePut(key, features_of(text))


def _event(row: tuple) -> DecidedEvent:
    event_id, user_id, arm, propensity, version, state = row
    return DecidedEvent(event_id, user_id, int(arm), propensity, int(version), json.loads(state))


def _create_private(path: Path) -> None:
    """Create ``path`` empty with mode 0600 (never readable by others, whatever the umask) unless it exists."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:
        os.chmod(path, 0o600)


class EventStore:
    """The SQLite file of one served party (see the module docstring). Used from one thread at a time."""

    def __init__(self, path: str | Path, identity: str) -> None:
        self.path = Path(path)
        self._grouped = False
        try:
            _create_private(self.path)
            self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            self._setup(identity)
        except (sqlite3.Error, OSError, ValueError) as exc:
            raise StoreError(f"event store {self.path} cannot be used: {exc}") from None
        self._seq = self._last_seq()

    def _setup(self, identity: str) -> None:
        db = self._db
        db.execute("PRAGMA busy_timeout = 5000")
        if db.execute("PRAGMA quick_check").fetchone()[0] != "ok":
            raise ValueError("SQLite's quick_check finds it damaged")
        db.execute("PRAGMA journal_mode = WAL")
        db.execute("PRAGMA synchronous = FULL")
        db.executescript(_SCHEMA)  # idempotent (IF NOT EXISTS); executescript commits on its own
        with self._transaction():
            meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
            if not meta:
                db.executemany("INSERT INTO meta VALUES (?, ?)", [("schema", SCHEMA_VERSION), ("decider", identity)])
            elif meta.get("schema") != SCHEMA_VERSION:
                raise ValueError(f"it is a store of schema {meta.get('schema')!r}, this version reads {SCHEMA_VERSION}")
            elif meta.get("decider") != identity:
                raise ValueError("it was written by a learner of another configuration (its checkpoints do not fit)")

    def _transaction(self) -> contextlib.AbstractContextManager[None]:
        """One durable write: its own transaction, or part of the :meth:`group` around it."""
        return contextlib.nullcontext() if self._grouped else _Transaction(self._db)

    @contextlib.contextmanager
    def group(self) -> Iterator[None]:
        """Every write inside is one transaction, committed (durable) at the end; rolled back on an exception."""
        with _Transaction(self._db):
            self._grouped = True
            try:
                yield
            finally:
                self._grouped = False


    def _last_seq(self) -> int:
        row = self._db.execute(
            "SELECT max(coalesce((SELECT max(decide_seq) FROM events), 0),"
            " coalesce((SELECT max(close_seq) FROM events), 0),"
            " coalesce((SELECT max(seq) FROM checkpoints), 0), coalesce((SELECT max(seq) FROM puts), 0))"
        ).fetchone()
        return int(row[0])

    @property
    def last_seq(self) -> int:
        """The sequence number of the last journalled change."""
        return self._seq

    def close(self) -> None:
        """Close the file (everything written is already committed)."""
        self._db.close()

    # -- events --------------------------------------------------------------
    def get(self, event_id: str) -> StoredEvent | None:
        """The event's row, or None if it was never decided."""
        row = self._db.execute(
            f"SELECT {_EVENT_COLUMNS}, request_sha256, deadline, status, reward FROM events WHERE event_id = ?",
            (event_id,),
        ).fetchone()
        if row is None:
            return None
        return StoredEvent(_event(row[:6]), row[6], float(row[7]), row[8], row[9])

    def add_decision(
        self,
        request: DecideInput,
        request_sha256: str,
        decision: Decision,
        deadline: float,
        features: str | None = None,
    ) -> DecidedEvent:
        """Journal a decision and what was asked (the party's own features: its decision log; ``features``: their
        :func:`features_text` if already written), committed when this returns."""
        state = json.dumps(decision.event_state, allow_nan=False, separators=(",", ":"))
        arms = None if request.arms is None else json.dumps(list(request.arms))
        event_id, user_id = request.event_id, request.user_id
        seq = self._seq + 1
        with self._transaction():
            self._db.execute(
                "INSERT INTO events (event_id, user_id, request_sha256, features, arms, arm, propensity, model_version,"
                " event_state, decided_at, deadline, decide_seq, status)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'open')",
                (event_id, user_id, request_sha256, features or features_text(request.features), arms, decision.arm,
                 decision.propensity, decision.model_version, state, time.time(), deadline, seq),
            )  # fmt: skip
        self._seq = seq
        return DecidedEvent(event_id, user_id, decision.arm, decision.propensity, decision.model_version,
                            decision.event_state)  # fmt: skip

    def close_event(self, event_id: str, reward: float | None) -> int:
        """Journal the close of an open event: rewarded (``reward``) or expired (None); its sequence number."""
        seq = self._seq + 1
        status = "expired" if reward is None else "rewarded"
        with self._transaction():
            changed = self._db.execute(
                "UPDATE events SET status = ?, reward = ?, closed_at = ?, close_seq = ?"
                " WHERE event_id = ? AND status = 'open'",
                (status, reward, time.time(), seq, event_id),
            ).rowcount
            if changed != 1:
                raise ValueError(f"event {event_id!r} is not open")
        self._seq = seq
        return seq

    def due(self, now: float, limit: int = 1000) -> list[str]:
        """Open events whose deadline has passed, oldest deadline first."""
        rows = self._db.execute(
            "SELECT event_id FROM events WHERE status = 'open' AND deadline <= ? ORDER BY deadline LIMIT ?",
            (now, limit),
        )
        return [row[0] for row in rows]

    def rewarded(self) -> Iterator[LoggedEvent]:
        """Every rewarded event with what was asked, in decision order (the decision log)."""
        rows = self._db.execute(
            "SELECT event_id, user_id, features, arms, arm, propensity, reward, decided_at FROM events"
            " WHERE status = 'rewarded' ORDER BY decide_seq"
        )
        for event_id, user_id, features, arms, arm, propensity, reward, decided_at in rows:
            asked = DecideInput(event_id, user_id, _put(event_id, features).features,
                                None if arms is None else tuple(json.loads(arms)))  # fmt: skip
            yield LoggedEvent(asked, int(arm), propensity, float(reward), float(decided_at))

    def counts(self) -> dict[str, int]:
        """Events by status (``open``, ``rewarded``, ``expired``)."""
        counts = {"open": 0, "rewarded": 0, "expired": 0}
        counts.update(self._db.execute("SELECT status, count(*) FROM events GROUP BY status").fetchall())
        return counts

    # -- a feature holder's rows ---------------------------------------------
    def add_put(self, put: FeaturePut) -> int:
        """Journal ``put`` (committed when this returns); its sequence number."""
        seq = self._seq + 1
        with self._transaction():
            self._db.execute("INSERT INTO puts VALUES (?, ?, ?, ?)", (seq, put.key, features_text(put.features),
                                                                     time.time()))  # fmt: skip
        self._seq = seq
        return seq

    def last_put(self, key: str) -> np.ndarray | None:
        """The rows last put under ``key``, or None."""
        row = self._db.execute("SELECT features FROM puts WHERE key = ? ORDER BY seq DESC LIMIT 1", (key,)).fetchone()
        return None if row is None else _put(key, row[0]).features

    def put_count(self) -> int:
        """How many puts are journalled (duplicates are not)."""
        return int(self._db.execute("SELECT count(*) FROM puts").fetchone()[0])

    # -- checkpoints and the journal -----------------------------------------
    def write_checkpoint(self, state: bytes, model_version: int) -> None:
        """Save the learner's state as of :attr:`last_seq`, keeping the newest :data:`KEPT_CHECKPOINTS`."""
        with self._transaction():
            self._db.execute(
                "INSERT OR REPLACE INTO checkpoints VALUES (?, ?, ?, ?)",
                (self._seq, model_version, state, time.time()),
            )
            self._db.execute(
                "DELETE FROM checkpoints WHERE seq NOT IN (SELECT seq FROM checkpoints ORDER BY seq DESC LIMIT ?)",
                (KEPT_CHECKPOINTS,),
            )

    def last_checkpoint(self) -> tuple[int, bytes] | None:
        """The newest checkpoint: the last sequence number it includes, and the state."""
        row = self._db.execute("SELECT seq, state FROM checkpoints ORDER BY seq DESC LIMIT 1").fetchone()
        return None if row is None else (int(row[0]), bytes(row[1]))

    def journal(self, after: int) -> Iterator[JournalEntry]:
        """Every journalled change with a sequence number above ``after``, in sequence order."""
        rows = self._db.execute(
            f"SELECT decide_seq, 'decide', NULL, {_EVENT_COLUMNS} FROM events WHERE decide_seq > ?1"
            f" UNION ALL SELECT close_seq, status, reward, {_EVENT_COLUMNS} FROM events WHERE close_seq > ?1"
            " UNION ALL SELECT seq, 'put', NULL, key, features, NULL, NULL, NULL, NULL FROM puts WHERE seq > ?1"
            " ORDER BY 1",
            (after,),
        ).fetchall()
        for row in rows:
            if row[1] == "put":
                yield JournalEntry(int(row[0]), "put", None, None, _put(row[3], row[4]))
            else:
                yield JournalEntry(int(row[0]), row[1], _event(row[3:]), row[2])

    # -- tokens --------------------------------------------------------------
    def add_token(self, client: str, sha256: str) -> None:
        """Store a client's token hash (replacing the client's previous one)."""
        with self._transaction():
            self._db.execute("INSERT OR REPLACE INTO tokens VALUES (?, ?, ?)", (client, sha256, time.time()))

    def token_hashes(self) -> dict[str, str]:
        """The clients' token hashes by client name."""
        return dict(self._db.execute("SELECT client, sha256 FROM tokens").fetchall())


class _Transaction:
    """``BEGIN IMMEDIATE`` ... ``COMMIT`` (``ROLLBACK`` on an exception): one durable write."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    def __enter__(self) -> None:
        self._db.execute("BEGIN IMMEDIATE")

    def __exit__(self, kind, value, traceback) -> None:
        self._db.execute("ROLLBACK" if kind else "COMMIT")
