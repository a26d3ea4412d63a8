"""Embedded SQLite store of finished runs, keyed by (config hash, seed).

Each run is written in its own transaction as soon as it finishes, so a sweep
killed at any moment keeps every finished run, and the same command resumes
by skipping the keys already present.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from privbandits import __version__

SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    config_hash    TEXT    NOT NULL,
    seed           INTEGER NOT NULL,
    experiment     TEXT    NOT NULL,
    policy_index   INTEGER NOT NULL,
    label          TEXT    NOT NULL,
    horizon        INTEGER NOT NULL,
    run_spec       TEXT    NOT NULL,
    final_regret   REAL    NOT NULL,
    final_reward   REAL    NOT NULL,
    wall_time_s    REAL    NOT NULL,
    actions_digest TEXT    NOT NULL,
    series         TEXT    NOT NULL,
    version        TEXT    NOT NULL,
    finished_at    TEXT    NOT NULL,
    PRIMARY KEY (config_hash, seed)
);
CREATE INDEX IF NOT EXISTS runs_by_experiment ON runs (experiment);
"""


@dataclass(frozen=True)
class RunRecord:
    """The outcome of one (policy, seed) run.

    ``rounds`` are the 1-based rounds at which the cumulative series were kept
    (downsampled; the last round is always included). ``estimate_norm`` is
    ‖θ̂‖₂ at those rounds for policies with one shared estimate (None
    otherwise); ``communication`` totals what a protocol's parties sent
    (None for plaintext policies).
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
    finished_at: str = ""

    @property
    def final_regret(self) -> float:
        return float(self.cumulative_regret[-1])

    @property
    def final_reward(self) -> float:
        return float(self.cumulative_reward[-1])


class StoreError(RuntimeError):
    """The results file cannot be used (wrong format or newer schema)."""


class ResultsStore:
    """Runs persisted in one SQLite file (created with its folder if missing)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._db = sqlite3.connect(self.path, timeout=60)
            self._db.execute("PRAGMA journal_mode=WAL")
            version = self._db.execute("PRAGMA user_version").fetchone()[0]
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{self.path} is not a privbandits results store: {exc}") from None
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"{self.path} has schema version {version}; this privbandits reads up to "
                f"{SCHEMA_VERSION}. Upgrade privbandits or use another --store."
            )
        with self._db:
            self._db.executescript(_SCHEMA)
            self._db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> ResultsStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def finished_keys(self) -> set[tuple[str, int]]:
        """All stored ``(config_hash, seed)`` keys."""
        return set(self._db.execute("SELECT config_hash, seed FROM runs"))

    def save(self, record: RunRecord) -> None:
        """Write one run durably (replacing an earlier run with the same key)."""
        series = {
            "rounds": record.rounds.tolist(),
            "cumulative_regret": record.cumulative_regret.tolist(),
            "cumulative_reward": record.cumulative_reward.tolist(),
        }
        if record.estimate_norm is not None:
            series["estimate_norm"] = record.estimate_norm.tolist()
        if record.communication is not None:
            series["communication"] = record.communication
        row = (
            record.config_hash,
            record.seed,
            record.experiment,
            record.policy_index,
            record.label,
            record.horizon,
            json.dumps(record.run_spec, sort_keys=True),
            record.final_regret,
            record.final_reward,
            record.wall_time_s,
            record.actions_digest,
            json.dumps(series),
            __version__,
            datetime.now(UTC).isoformat(timespec="seconds"),
        )
        with self._db:
            self._db.execute(f"INSERT OR REPLACE INTO runs VALUES ({','.join('?' * len(row))})", row)

    def experiments(self) -> list[str]:
        """Names of the experiments with at least one stored run."""
        return [name for (name,) in self._db.execute("SELECT DISTINCT experiment FROM runs ORDER BY 1")]

    def load(self, experiment: str) -> list[RunRecord]:
        """Every stored run of ``experiment``, ordered by policy then seed."""
        rows = self._db.execute(
            "SELECT experiment, policy_index, label, config_hash, seed, horizon, run_spec,"
            " series, wall_time_s, actions_digest, finished_at FROM runs"
            " WHERE experiment = ? ORDER BY policy_index, label, seed",
            (experiment,),
        )
        records = []
        for name, index, label, chash, seed, horizon, spec, series, wall, digest, when in rows:
            series = json.loads(series)
            records.append(
                RunRecord(
                    experiment=name,
                    policy_index=index,
                    label=label,
                    config_hash=chash,
                    seed=seed,
                    horizon=horizon,
                    run_spec=json.loads(spec),
                    rounds=np.asarray(series["rounds"], dtype=np.int64),
                    cumulative_regret=np.asarray(series["cumulative_regret"]),
                    cumulative_reward=np.asarray(series["cumulative_reward"]),
                    wall_time_s=wall,
                    actions_digest=digest,
                    estimate_norm=None if "estimate_norm" not in series else np.asarray(series["estimate_norm"]),
                    communication=series.get("communication"),
                    finished_at=when,
                )
            )
        return records
