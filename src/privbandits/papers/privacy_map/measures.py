"""What the map reads from one stored run: utility in the environment's metric, ms and bytes per round.

Bytes come from the traffic ledger where a protocol sends messages (O3M's and the MPC learner's
``communication.bytes_per_round``, FCLUB's and P2B's ``metrics.bytes``); the DP baselines run
inside one process, so theirs is the payload a deployment would send per round, computed from the
mechanism (marked *nominal*); non-private LinUCB and the MPC twin send nothing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from privbandits.papers.privacy_map.environments import MapEnvironment
from privbandits.papers.privacy_map.systems import Point

FLOAT_BYTES = 8


def utility(env: MapEnvironment, point: Point, result: dict[str, Any]) -> float:
    """The run's value in the environment's metric (NaN where a replay matched no event)."""
    if env.metric == "regret":
        return float(result["final_regret"])
    if env.metric == "accuracy":
        return float(result["final_reward"]) / result["horizon"]
    metrics = result.get("metrics") or {}
    if env.metric == "ctr":
        return float(metrics.get("ctr", math.nan))
    return float(metrics[point.reads])


def rounds_of(env: MapEnvironment, result: dict[str, Any]) -> int:
    """Rounds the run played: the horizon, or users × interactions for a population (P2B)."""
    if env.metric == "late_reward":
        return int(env.environment["n_users"]) * result["horizon"]
    return int(result["horizon"])


def ms_per_round(env: MapEnvironment, result: dict[str, Any]) -> float:
    """Wall time of the run's loop per round, in milliseconds (machine- and load-dependent)."""
    return 1000.0 * result["wall_time_s"] / rounds_of(env, result)


def nominal_bytes(env: MapEnvironment, point: Point) -> float | None:
    """Per-round payload of a DP baseline in a deployment: x and r to the trusted server (joint DP),
    or the noisy x xᵀ (upper triangle) and r·x of each user's report (local and shuffle DP)."""
    dim = sum(env.partition)
    if point.model == "joint_dp":
        return float(FLOAT_BYTES * (dim + 1))
    if point.model in ("local_dp", "shuffle_dp"):
        return float(FLOAT_BYTES * (dim * (dim + 1) // 2 + dim))
    return None


@dataclass(frozen=True)
class Cost:
    """Bytes per round and where the number comes from ('measured', 'nominal' or 'none')."""

    bytes_per_round: float
    source: str


def cost(env: MapEnvironment, point: Point, result: dict[str, Any]) -> Cost:
    """Bytes per round of one run: measured from the ledger where there is one, else nominal, else none."""
    communication = result.get("communication")
    if communication:
        return Cost(float(communication["bytes_per_round"]), "measured")
    metrics = result.get("metrics") or {}
    if "bytes" in metrics:
        return Cost(float(metrics["bytes"]) / rounds_of(env, result), "measured")
    nominal = nominal_bytes(env, point)
    if nominal is not None:
        return Cost(nominal, "nominal")
    return Cost(0.0, "none")
