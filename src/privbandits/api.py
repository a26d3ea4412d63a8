"""The Python entry point: ``privbandits.run(name_or_spec, **overrides)`` returns the stored results as a table.

It is the command line's ``run`` without the terminal: the same reproductions and
configs, the same typed options (as Python values rather than strings), the same
results store, so a run from Python and one from the shell share their units.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from privbandits.experiments.catalog import config_reproduction, find
from privbandits.experiments.config import ExperimentConfig
from privbandits.experiments.overrides import OptionError, unknown_key, validation_message
from privbandits.experiments.reproduction import ConfigReproduction, Reproduction
from privbandits.experiments.reproduction import report as build_report
from privbandits.experiments.reproduction import run as run_reproduction
from privbandits.experiments.tasks import Task

_SERIES = ("rounds", "cumulative_regret", "cumulative_reward", "estimate_norm")


@dataclass
class Results:
    """Stored results of one reproduction or config: one row per unit (a run or a reproduction point).

    ``rows`` are plain dicts (the unit's label, its scalar parameters and seed, its final
    metrics); ``series(i)`` gives row ``i``'s per-round arrays, when it has them; ``report``
    is the reproduction's report (claims, tables, figures written).
    """

    name: str
    rows: list[dict[str, Any]]
    report: Any = None
    _series: list[dict[str, list[float]]] = field(default_factory=list, repr=False)

    @property
    def columns(self) -> list[str]:
        """Every column that occurs in a row, in first-seen order."""
        return list(dict.fromkeys(key for row in self.rows for key in row))

    def __len__(self) -> int:
        return len(self.rows)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self.rows)

    def __getitem__(self, index: int) -> dict[str, Any]:
        return self.rows[index]

    def series(self, index: int) -> dict[str, list[float]]:
        """Per-round series of row ``index`` (e.g. ``rounds``, ``cumulative_regret``); empty if it has none."""
        return self._series[index]

    def column(self, name: str) -> list[Any]:
        """One column (None where a row lacks it)."""
        return [row.get(name) for row in self.rows]

    def to_csv(self, path: str | Path) -> Path:
        """Write the rows as CSV."""
        path = Path(path)
        with path.open("w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=self.columns)
            writer.writeheader()
            writer.writerows(self.rows)
        return path

    def __str__(self) -> str:
        columns = self.columns
        lines = [" | ".join(columns)] + [" | ".join(_cell(row.get(c)) for c in columns) for row in self.rows]
        return f"{self.name}: {len(self.rows)} row(s)\n" + "\n".join(lines)


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    return "" if value is None else str(value)


def _flatten(prefix: str, value: Any, into: dict[str, Any]) -> None:
    """Scalars of nested parameters as dotted columns; lists become comma-separated text."""
    if isinstance(value, Mapping):
        for key, item in value.items():
            _flatten(f"{prefix}.{key}" if prefix else str(key), item, into)
    elif isinstance(value, list):
        if all(not isinstance(v, Mapping | list) for v in value):
            into[prefix] = ",".join(str(v) for v in value)
    else:
        into[prefix] = value


_FIRST = ("seed", "final_regret", "final_reward", "wall_time_s")
_SKIPPED = {*_SERIES, "run_spec", "label", "experiment", "policy_index", "config_hash", "actions_digest"}


def _row(task: Task, result: dict[str, Any]) -> tuple[dict[str, Any], dict[str, list[float]]]:
    """One table row (label, seed, final metrics, then the unit's spec as dotted columns) and its series."""
    spec_columns: dict[str, Any] = {}
    params = dict(task.params)
    spec = params.pop("spec", None)
    if spec is not None:  # a config run: the policy's and environment's fields
        _flatten("policy", spec.get("policy", {}), spec_columns)
        _flatten("environment", spec.get("environment", {}), spec_columns)
        spec_columns["horizon"] = spec.get("horizon")
    _flatten("", params, spec_columns)
    metrics = {
        key: value
        for key, value in result.items()
        if key not in _SKIPPED and (isinstance(value, bool | int | float | str) or value is None)
    }
    first = {key: (spec_columns | metrics)[key] for key in _FIRST if key in spec_columns | metrics}
    row = {"label": task.label, **first, **metrics, **spec_columns}
    series = {key: result[key] for key in _SERIES if isinstance(result.get(key), list)}
    return row, series


def _options(reproduction: Reproduction | ConfigReproduction, overrides: dict[str, Any]) -> BaseModel:
    """Defaults of ``reproduction`` (a config's own values) with Python-valued ``overrides``."""
    if isinstance(reproduction, ConfigReproduction):
        base = reproduction.parse({}).model_dump(mode="json")
        model: type[BaseModel] = ExperimentConfig
    else:
        base, model = {}, reproduction.options_model()
    for key in overrides:
        if key not in model.model_fields:
            raise unknown_key(key, list(model.model_fields), reproduction.name)
    try:
        return model.model_validate({**base, **overrides})
    except ValidationError as exc:
        raise OptionError(validation_message(exc, "option ")) from None


def _reproduction_of(spec: str | Path | ExperimentConfig | Mapping[str, Any]) -> tuple[Any, dict[str, Any]]:
    """The reproduction named or described by ``spec``, and a config's data when given as an object."""
    if isinstance(spec, ExperimentConfig):
        spec = spec.model_dump(mode="json")
    if isinstance(spec, Mapping):
        data = dict(spec)
        name = str(data.get("name", "experiment"))
        return config_reproduction(name, str(data.get("description", "")), None), data
    return find(str(spec)), {}


def run(
    name_or_spec: str | Path | ExperimentConfig | Mapping[str, Any],
    *,
    store: str | Path = "results/results.sqlite",
    out: str | Path = "results",
    jobs: int = 1,
    executor: str = "local",
    ray_address: str | None = None,
    force: bool = False,
    progress: bool = False,
    **overrides: Any,
) -> Results:
    """Run a reproduction (by name), a config (TOML path, :class:`ExperimentConfig` or dict) and return its results.

    ``overrides`` set options by name with Python values (``horizon=1000``,
    ``seeds=[0, 1]``); they are validated like ``-o`` on the command line. Units already in
    ``store`` are not recomputed. The report is written to ``out``.
    """
    from privbandits.experiments.store import ResultsStore

    reproduction, data = _reproduction_of(name_or_spec)
    if data:
        options = reproduction.parse({}, {**data, **overrides})
    else:
        options = _options(reproduction, overrides)
    with ResultsStore(store) as results:
        _, paper = run_reproduction(
            reproduction,
            options,
            results,
            Path(out),
            jobs=jobs,
            executor=executor,
            ray_address=ray_address,
            force=force,
            progress=progress,
        )
        tasks = reproduction.tasks(options)
        stored = results.results(tasks)
    rows, series = zip(*(_row(task, stored[task.key]) for task in tasks), strict=True) if tasks else ((), ())
    return Results(reproduction.name, list(rows), paper, list(series))


def report(name: str, *, store: str | Path = "results/results.sqlite", out: str | Path = "results", **overrides: Any):
    """Rebuild ``name``'s report from the store alone (the options it was last run with, plus ``overrides``)."""
    from privbandits.experiments.store import ResultsStore

    with ResultsStore(store) as results:
        reproduction = find(name, results)
        base = results.recall(reproduction.name) or {}
        options = reproduction.options_model().model_validate({**base, **overrides})
        return build_report(reproduction, options, results, Path(out))
