"""Each point's stored runs summarised: utility mean and 95% interval over seeds, ms and bytes per round, the ε a
user pays."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from privbandits.experiments.report import mean_interval
from privbandits.papers.privacy_map.environments import HIGHER_IS_BETTER, MapEnvironment
from privbandits.papers.privacy_map.grid import unit_label
from privbandits.papers.privacy_map.measures import cost, ms_per_round, utility
from privbandits.papers.privacy_map.per_user import user_epsilon
from privbandits.papers.privacy_map.semantics import SEMANTICS
from privbandits.papers.privacy_map.systems import Point


@dataclass(frozen=True)
class PointSummary:
    """One point over its seeds: utility mean ± half-width (NaN seeds dropped), ms and bytes per round."""

    point: Point
    mean: float
    half: float
    seeds: int
    ms: float
    bytes_per_round: float
    bytes_source: str
    actions: tuple[str, ...]
    values: tuple[float, ...] = ()
    """Utility of each seed's run, in ``point.seeds`` order (NaN kept)."""
    user_epsilon: str = "—"
    """The ε a user pays, with its unit (:func:`~privbandits.papers.privacy_map.per_user.user_epsilon`)."""

    def overlaps(self, other: PointSummary) -> bool:
        """Whether the two 95% intervals overlap (then neither is clearly better)."""
        return abs(self.mean - other.mean) <= self.half + other.half


def summarise(env: MapEnvironment, point: Point, points: dict[str, dict[str, Any]]) -> PointSummary:
    """The point's runs (read by their unit labels) reduced to one row of the map."""
    runs = [points[unit_label(env, point.source, seed)] for seed in point.seeds]
    per_seed = np.array([utility(env, point, run) for run in runs])
    values = per_seed[~np.isnan(per_seed)]
    mean, half = mean_interval(values) if len(values) else (math.nan, math.nan)
    costs = [cost(env, point, run) for run in runs]
    return PointSummary(
        point,
        float(mean),
        float(half),
        len(values),
        float(np.mean([ms_per_round(env, run) for run in runs])),
        float(np.mean([c.bytes_per_round for c in costs])),
        costs[0].source,
        tuple(run["actions_digest"] for run in runs),
        tuple(float(v) for v in per_seed),
        user_epsilon(env, point, runs),
    )


def better(env: MapEnvironment, a: PointSummary, b: PointSummary) -> bool:
    """Whether ``a`` beats ``b`` in the environment's metric (NaN never beats)."""
    if math.isnan(a.mean):
        return False
    if math.isnan(b.mean):
        return True
    return a.mean > b.mean if HIGHER_IS_BETTER[env.metric] else a.mean < b.mean


def notion_of(row: PointSummary) -> str:
    """The privacy notion a point's ε is stated in (points of different notions are never ranked together)."""
    return SEMANTICS[row.point.model].notion


def ranked_within(
    env: MapEnvironment, rows: list[PointSummary], epsilon: float, notion: str | None = None
) -> list[PointSummary]:
    """Each system's best point whose stated ε is at most ``epsilon`` (of ``notion`` only, when given),
    best system first.

    The secret-shared MPC rows are left out: they are the check of their twin, which stands for them.
    """
    best: dict[str, PointSummary] = {}
    for row in rows:
        if row.point.epsilon > epsilon or row.point.system == "MPC ε-greedy (secret-shared)":
            continue
        if notion is not None and notion_of(row) != notion:
            continue
        system = row.point.system
        if system not in best or better(env, row, best[system]):
            best[system] = row
    ranked: list[PointSummary] = []
    for row in best.values():
        at = next((i for i, other in enumerate(ranked) if better(env, row, other)), len(ranked))
        ranked.insert(at, row)
    return ranked
