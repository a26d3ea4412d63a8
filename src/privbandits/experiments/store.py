"""The results store: one SQLite file, one row per finished unit of work.

A row is keyed by its task's key (:class:`~privbandits.experiments.tasks.Task`: the
hash of the function and its complete parameters) and holds the parameters and
the result as JSON. Each row is written in its own transaction as soon as its
unit finishes, so a sweep killed at any moment (even ``kill -9``) keeps every
finished unit, and the same command resumes by skipping the keys present.

Concurrent writers are safe: rows are inserted with ``INSERT OR IGNORE`` on the
key (the first finished copy wins, and results are deterministic functions of
the key), and a process claims a unit before computing it, so two commands
sharing a store do not compute the same unit twice while both are alive.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import time
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from privbandits import __version__
from privbandits.experiments.tasks import Task, canonical_json, keyed_name

_BUSY_SECONDS = 60
"""How long opening or writing the store waits for another process's lock."""

SCHEMA_VERSION = 2

_SCHEMA = """
CREATE TABLE IF NOT EXISTS units (
    key          TEXT PRIMARY KEY,
    fn           TEXT NOT NULL,
    params       TEXT NOT NULL,
    result       TEXT NOT NULL,
    seconds      REAL NOT NULL,
    version      TEXT NOT NULL,
    finished_at  TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS claims (
    key    TEXT PRIMARY KEY,
    owner  TEXT NOT NULL,
    since  REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS invocations (
    name        TEXT PRIMARY KEY,
    spec        TEXT NOT NULL,
    updated_at  TEXT NOT NULL
);
"""


@dataclass(frozen=True)
class RunRecord:
    """The outcome of one (policy, seed) run of a config experiment.

    ``rounds`` are the 1-based rounds at which the cumulative series were kept
    (downsampled; the last round is always included). ``estimate_norm`` is
    ‖θ̂‖₂ at those rounds for policies with one shared estimate (None
    otherwise); ``communication`` totals what a protocol's parties sent
    (None for plaintext policies); ``metrics`` holds a protocol's own scalar
    measurements (FCLUB's messages, replay's matched rounds and CTR, P2B's
    cold / warm mean rewards; None when there are none). A series is empty
    where it does not exist: pseudo-regret under replay (expected rewards
    unknown), every series of a population run (P2B).
    """

    experiment: str
    policy_index: int
    label: str
    config_hash: str
    seed: int
    horizon: int
    run_spec: dict[str, Any]
    rounds: np.ndarray
    cumulative_regret: np.ndarray
    cumulative_reward: np.ndarray
    wall_time_s: float
    actions_digest: str
    estimate_norm: np.ndarray | None = None
    communication: dict[str, float] | None = None
    metrics: dict[str, float] | None = None
    finished_at: str = ""

    @property
    def final_regret(self) -> float:
        """Cumulative pseudo-regret at the horizon (NaN when unknown)."""
        return float(self.cumulative_regret[-1]) if len(self.cumulative_regret) else float("nan")

    @property
    def final_reward(self) -> float:
        """Cumulative reward at the horizon (NaN for runs without a reward series)."""
        return float(self.cumulative_reward[-1]) if len(self.cumulative_reward) else float("nan")

    def to_result(self) -> dict[str, Any]:
        """The record as a stored result (JSON data)."""
        result = {
            "experiment": self.experiment,
            "policy_index": self.policy_index,
            "label": self.label,
            "config_hash": self.config_hash,
            "seed": self.seed,
            "horizon": self.horizon,
            "run_spec": self.run_spec,
            "rounds": self.rounds.tolist(),
            "cumulative_regret": self.cumulative_regret.tolist(),
            "cumulative_reward": self.cumulative_reward.tolist(),
            "wall_time_s": self.wall_time_s,
            "actions_digest": self.actions_digest,
            "final_regret": self.final_regret,
            "final_reward": self.final_reward,
        }
        if self.estimate_norm is not None:
            result["estimate_norm"] = self.estimate_norm.tolist()
        if self.communication is not None:
            result["communication"] = self.communication
        if self.metrics is not None:
            result["metrics"] = self.metrics
        return result

    @classmethod
    def from_result(cls, result: dict[str, Any], finished_at: str = "") -> RunRecord:
        """A record back from its stored result."""
        norm = result.get("estimate_norm")
        return cls(
            experiment=result["experiment"],
            policy_index=result["policy_index"],
            label=result["label"],
            config_hash=result["config_hash"],
            seed=result["seed"],
            horizon=result["horizon"],
            run_spec=result["run_spec"],
            rounds=np.asarray(result["rounds"], dtype=np.int64),
            cumulative_regret=np.asarray(result["cumulative_regret"], dtype=np.float64),
            cumulative_reward=np.asarray(result["cumulative_reward"], dtype=np.float64),
            wall_time_s=result["wall_time_s"],
            actions_digest=result["actions_digest"],
            estimate_norm=None if norm is None else np.asarray(norm, dtype=np.float64),
            communication=result.get("communication"),
            metrics=result.get("metrics"),
            finished_at=finished_at,
        )


@dataclass(frozen=True)
class StoredUnit:
    """One stored row: the unit's key, function, parameters and result, and when it finished."""

    key: str
    fn: str
    params: dict[str, Any]
    result: dict[str, Any]
    seconds: float
    version: str
    finished_at: str


class StoreError(RuntimeError):
    """The results file cannot be used (a folder, read-only, damaged, another program's database, newer schema)."""


_TABLES = {"units", "claims", "invocations"}


def check_store_path(path: Path) -> None:
    """Refuse, before anything is created or computed, a store that cannot be written: a folder, something in
    the way of creating it, a read-only file or folder (SQLite writes its journal beside the store)."""
    from privbandits.experiments.writable import PathError, check_writable

    try:
        check_writable(path, "--store", folder=False)
        if path.exists() and not os.access(path.parent, os.W_OK | os.X_OK):
            raise PathError(
                f"--store {str(path)!r} cannot be written: its folder is read-only (SQLite writes its journal there)"
            )
    except PathError as exc:
        raise StoreError(str(exc)) from None


def owner_id() -> str:
    """This process's claim owner: ``host:pid``."""
    return f"{socket.gethostname()}:{os.getpid()}"


def _owner_alive(owner: str) -> bool:
    """Whether a claim's owner may still be working (another host's owner is assumed alive)."""
    host, _, pid = owner.rpartition(":")
    if host != socket.gethostname():
        return True
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except (PermissionError, ValueError):
        return True
    return True


def _loads(text: str) -> Any:
    return json.loads(text)


class ResultsStore:
    """Finished units persisted in one SQLite file (created with its folder if missing)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        check_store_path(self.path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, timeout=_BUSY_SECONDS)
        deadline = time.monotonic() + _BUSY_SECONDS
        while True:
            try:
                self._open()
                return
            except sqlite3.OperationalError as exc:
                # another process creating the store or switching it to WAL: SQLite may answer "locked"
                # at once, without its busy wait; try again until the same timeout
                if "locked" not in str(exc) or time.monotonic() > deadline:
                    self._db.close()
                    raise StoreError(f"{self.path} could not be opened: {exc}") from None
                time.sleep(0.05)

    def _open(self) -> None:
        try:
            version = self._db.execute("PRAGMA user_version").fetchone()[0]
            self._check_contents(version)  # before anything is written into the file
            self._db.execute("PRAGMA journal_mode=WAL")
        except sqlite3.OperationalError:
            raise
        except sqlite3.DatabaseError as exc:
            self._db.close()
            raise StoreError(f"{self.path} is not a privbandits results store: {exc}") from None
        if version > SCHEMA_VERSION:
            self._db.close()
            raise StoreError(
                f"{self.path} has schema version {version}; this privbandits reads up to "
                f"{SCHEMA_VERSION}. Upgrade privbandits or use another --store."
            )
        with self._db:
            self._db.executescript(_SCHEMA)
            self._db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    def _check_contents(self, version: int) -> None:
        """Refuse another program's SQLite database (tables of its own, no schema version of ours) and a damaged
        file (SQLite's quick check), without writing to either."""
        tables = {row[0] for row in self._db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        foreign = sorted(tables - _TABLES)
        if foreign and version == 0:
            self._db.close()
            raise StoreError(
                f"{self.path} is an SQLite database but not a privbandits results store (it has the tables "
                f"{', '.join(foreign)}); give another --store"
            )
        if tables:
            try:
                problem = self._db.execute("PRAGMA quick_check").fetchone()[0]
            except sqlite3.DatabaseError as exc:
                problem = str(exc)
            if problem != "ok":
                self._db.close()
                raise StoreError(f"results store {self.path} is damaged ({problem}); restore it or use another --store")

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> ResultsStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- units -------------------------------------------------------------------
    def stored_keys(self, keys: Iterable[str] | None = None) -> set[str]:
        """The keys among ``keys`` (default: all) that have a stored result."""
        if keys is None:
            return {key for (key,) in self._db.execute("SELECT key FROM units")}
        keys = list(keys)
        found: set[str] = set()
        for start in range(0, len(keys), 500):
            chunk = keys[start : start + 500]
            marks = ",".join("?" * len(chunk))
            found.update(key for (key,) in self._db.execute(f"SELECT key FROM units WHERE key IN ({marks})", chunk))
        return found

    def put(self, task: Task, result: dict[str, Any], seconds: float, *, replace: bool = False) -> bool:
        """Store ``task``'s result durably; returns whether a row was written.

        An existing row with the same key is kept (the first finished copy wins)
        unless ``replace``.
        """
        row = (
            task.key,
            keyed_name(task.fn),
            canonical_json(task.params),
            canonical_json(result),
            float(seconds),
            __version__,
            datetime.now(UTC).isoformat(timespec="seconds"),
        )
        verb = "INSERT OR REPLACE" if replace else "INSERT OR IGNORE"
        with self._db:
            cursor = self._db.execute(f"{verb} INTO units VALUES (?, ?, ?, ?, ?, ?, ?)", row)
            self._db.execute("DELETE FROM claims WHERE key = ?", (task.key,))
        return cursor.rowcount == 1

    def units(self, keys: Iterable[str]) -> dict[str, StoredUnit]:
        """Stored rows of ``keys`` (keys without a row are absent from the result)."""
        keys = list(keys)
        rows: dict[str, StoredUnit] = {}
        for start in range(0, len(keys), 500):
            chunk = keys[start : start + 500]
            marks = ",".join("?" * len(chunk))
            query = f"SELECT key, fn, params, result, seconds, version, finished_at FROM units WHERE key IN ({marks})"
            for key, fn, params, result, seconds, version, when in self._db.execute(query, chunk):
                rows[key] = StoredUnit(key, fn, _loads(params), _loads(result), seconds, version, when)
        return rows

    def units_of(self, fn: str) -> list[StoredUnit]:
        """Every stored row of task function ``fn`` (e.g. the audits), oldest first."""
        query = "SELECT key, fn, params, result, seconds, version, finished_at FROM units WHERE fn = ? ORDER BY 7"
        return [
            StoredUnit(key, fn, _loads(params), _loads(result), seconds, version, when)
            for key, fn, params, result, seconds, version, when in self._db.execute(query, (fn,))
        ]

    def results(self, tasks: Iterable[Task]) -> dict[str, dict[str, Any]]:
        """``{task.key: result}`` for the stored ones among ``tasks``."""
        return {key: unit.result for key, unit in self.units(task.key for task in tasks).items()}

    def count(self) -> int:
        """Number of stored units."""
        return self._db.execute("SELECT COUNT(*) FROM units").fetchone()[0]

    # -- claims --------------------------------------------------------------------
    def claim(self, key: str, owner: str | None = None) -> bool:
        """Claim ``key`` for computing; False while another live process holds it."""
        owner = owner or owner_id()
        with self._db:
            self._db.execute("INSERT OR IGNORE INTO claims VALUES (?, ?, ?)", (key, owner, time.time()))
            (holder,) = self._db.execute("SELECT owner FROM claims WHERE key = ?", (key,)).fetchone()
            if holder == owner:
                return True
            if _owner_alive(holder):
                return False
            cursor = self._db.execute(
                "UPDATE claims SET owner = ?, since = ? WHERE key = ? AND owner = ?", (owner, time.time(), key, holder)
            )
            return cursor.rowcount == 1

    def release(self, keys: Iterable[str], owner: str | None = None) -> None:
        """Drop this process's claims on ``keys`` (after a failure or an interruption)."""
        owner = owner or owner_id()
        with self._db:
            self._db.executemany("DELETE FROM claims WHERE key = ? AND owner = ?", [(key, owner) for key in keys])

    def claimed_elsewhere(self, key: str, owner: str | None = None) -> bool:
        """Whether a live process other than ``owner`` holds ``key``."""
        row = self._db.execute("SELECT owner FROM claims WHERE key = ?", (key,)).fetchone()
        return row is not None and row[0] != (owner or owner_id()) and _owner_alive(row[0])

    # -- invocations -----------------------------------------------------------------
    def remember(self, name: str, spec: dict[str, Any]) -> None:
        """Record the spec (options) a reproduction or experiment ``name`` was last run with."""
        when = datetime.now(UTC).isoformat(timespec="seconds")
        with self._db:
            self._db.execute("INSERT OR REPLACE INTO invocations VALUES (?, ?, ?)", (name, canonical_json(spec), when))

    def recall(self, name: str) -> dict[str, Any] | None:
        """The spec ``name`` was last run with, or None."""
        row = self._db.execute("SELECT spec FROM invocations WHERE name = ?", (name,)).fetchone()
        return None if row is None else _loads(row[0])

    def invocations(self) -> list[str]:
        """Names of every reproduction or experiment run into this store."""
        return [name for (name,) in self._db.execute("SELECT name FROM invocations ORDER BY name")]

    # -- config experiments ----------------------------------------------------------
    def experiments(self) -> list[str]:
        """Names of the config experiments with at least one stored run."""
        query = "SELECT DISTINCT json_extract(params, '$.spec.experiment') FROM units WHERE fn = ? ORDER BY 1"
        return [name for (name,) in self._db.execute(query, (RUN_FN,))]

    def load(self, experiment: str) -> list[RunRecord]:
        """Every stored run of config experiment ``experiment``, ordered by policy then seed."""
        rows = self._db.execute(
            "SELECT result, finished_at FROM units WHERE fn = ? AND json_extract(params, '$.spec.experiment') = ?",
            (RUN_FN, experiment),
        )
        records = [RunRecord.from_result(_loads(result), when) for result, when in rows]
        return sorted(records, key=lambda r: (r.policy_index, r.label, r.seed))


RUN_FN = "privbandits.experiments.runner:run_task"
"""The task function of one (policy, seed) run of a config experiment."""
