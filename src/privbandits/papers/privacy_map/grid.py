"""The map's units: one config run per (environment, point with runs of its own, seed)."""

from __future__ import annotations

from privbandits.experiments.store import RUN_FN
from privbandits.experiments.tasks import Task
from privbandits.papers.privacy_map.environments import MapEnvironment, environments
from privbandits.papers.privacy_map.options import MapOptions
from privbandits.papers.privacy_map.systems import Point, config_of, placed


def unit_label(env: MapEnvironment, label: str, seed: int) -> str:
    """The label of one unit (unique within the map): environment, point, seed."""
    return f"{env.key} | {label} | seed {seed}"


def _units(env: MapEnvironment, point: Point) -> list[Task]:
    config = config_of(env, point)
    spec = config.run_spec(0)
    return [Task(RUN_FN, {"spec": spec, "seed": seed}, unit_label(env, point.label, seed)) for seed in point.seeds]


def tasks(options: MapOptions) -> list[Task]:
    """Every unit of the map: the runs a one-policy config of each placed point would make."""
    units = []
    for env in environments(options)[0]:
        for point in placed(env, options)[0]:
            if point.runs:
                units += _units(env, point)
    return units
