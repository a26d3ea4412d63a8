"""Reproductions: a named, typed spec, the tasks it needs, and a report built from stored results.

A reproduction owns no loop and no result file. ``run`` computes the units of its
grid that the store lacks (through :func:`~privbandits.experiments.executors.run_tasks`)
and remembers the options it ran with; ``report`` rebuilds the figures, tables and
paper-versus-ours claims from the stored rows alone. Two kinds exist:

* :class:`Reproduction`, a paper figure or table: its options model, grid and report
  are named by ``"module:attribute"`` strings, so listing and ``show`` import nothing
  heavy;
* :class:`ConfigReproduction`, a TOML experiment (one environment, several policies,
  several seeds), whose options are the config's own fields.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import AfterValidator, BaseModel, ConfigDict

from privbandits.experiments.config import ConfigError, ExperimentConfig, load_config, parse_config
from privbandits.experiments.overrides import (
    OptionError,
    apply_overrides,
    coerce,
    literal_value,
    unknown_key,
)
from privbandits.experiments.tasks import Task, resolve
from privbandits.experiments.tomlfile import read_toml


class Options(BaseModel):
    """Base of every reproduction's options: unknown keys refused, values frozen, reals finite.

    A field that may be infinite (e.g. η = ∞) says so with ``allow_inf_nan=True`` on its
    own ``Field``.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    def shown_options(self, changed: dict[str, str]) -> dict[str, str]:
        """The changed options (``-o`` key: value) a rerun command shows: all of them, unless the options know
        one is implied by another (a data set's folder resolved from the data cache, say)."""
        return changed


def _distinct(values: tuple) -> tuple:
    """Refuse an empty list and repeated values (each value is its own unit of work and point of the report)."""
    if not values:
        raise ValueError("must list at least one value")
    repeated = sorted({str(v) for v in values if values.count(v) > 1})
    if repeated:
        raise ValueError(f"values must be distinct (repeated: {', '.join(repeated)})")
    return values


Distinct = AfterValidator(_distinct)
"""For a tuple option of a reproduction: ``Annotated[tuple[X, ...], Distinct]``."""


class ReportError(RuntimeError):
    """A report asked for units that are not in the store."""


def points_of(tasks: list[Task], results: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """``{task.label: result}``: what a report reads (labels are unique within a reproduction)."""
    labels = [task.label for task in tasks]
    if len(set(labels)) != len(labels):
        repeated = sorted({label for label in labels if labels.count(label) > 1})
        raise ValueError(f"task labels must be unique within a reproduction; repeated: {repeated[:5]}")
    return {task.label: results[task.key] for task in tasks}


@dataclass(frozen=True)
class Reproduction:
    """A paper figure or table: options model, grid function and report function, named lazily.

    ``grid(options) -> list[Task]``; ``report(options, points, out) -> PaperReport`` where
    ``points`` maps each task's label to its stored result.
    """

    name: str
    description: str
    options: str
    grid: str
    report: str

    def options_model(self) -> type[Options]:
        return resolve(self.options)

    def parse(self, raw: dict[str, str], base: dict[str, Any] | None = None) -> Options:
        """Options from ``base`` (default: the defaults) with ``raw`` ``KEY=VALUE`` strings on top."""
        return apply_overrides(self.options_model(), base or {}, raw, self.name)

    def tasks(self, options: BaseModel) -> list[Task]:
        """The grid of ``options`` (an instance of :meth:`options_model`, as :meth:`parse` makes)."""
        return list(resolve(self.grid)(options))

    def build_report(self, options: BaseModel, points: dict[str, dict[str, Any]], out: Path):
        return resolve(self.report)(options, points, out)


@dataclass(frozen=True)
class ConfigReproduction:
    """A TOML experiment: every (policy, seed) pair is one task; the report is the summary and plots."""

    name: str
    description: str
    path: Path | None
    """The TOML file; None for an experiment known only from the store (its remembered config)."""
    panels: str | None = None
    """``"module:function"`` of a layer's paper panels and claims its report starts from (the catalog's
    ``config_reports`` for this name), or None."""

    def options_model(self) -> type[BaseModel]:
        return ExperimentConfig

    def parse(self, raw: dict[str, str], base: dict[str, Any] | None = None) -> ExperimentConfig:
        """The config (or ``base``) with ``raw`` overrides: ``horizon=1000``, ``seeds=0,1``, ``policies.0.alpha=2``."""
        if base is None and not raw and self.path is not None:
            return load_config(self.path)
        if base is None:
            if self.path is None:
                raise ConfigError(f"experiment {self.name!r} has no config file and no remembered config")
            base = _read_toml(self.path)
        data = override_config(base, raw, self.name)
        try:
            return parse_config(data, source=str(self.path or self.name))
        except ConfigError as exc:
            if not raw:
                raise
            problems = str(exc).split("\n")[1:]
            raise OptionError("; ".join(line.strip() for line in problems)) from None

    def tasks(self, config: BaseModel) -> list[Task]:
        from privbandits.experiments.runner import run_tasks_of

        return run_tasks_of(_experiment(config))

    def build_report(self, config: BaseModel, points: dict[str, dict[str, Any]], out: Path):
        from privbandits.experiments.config_report import config_report  # matplotlib: only when a report is made

        return config_report(_experiment(config), points, out, self.panels)


def _experiment(options: BaseModel) -> ExperimentConfig:
    """A :class:`ConfigReproduction`'s options: an experiment config (what its :meth:`~ConfigReproduction.parse`
    makes)."""
    if not isinstance(options, ExperimentConfig):
        raise TypeError(f"a TOML experiment's options are an ExperimentConfig, got {type(options).__name__}")
    return options


@dataclass(frozen=True)
class Catalog:
    """The reproductions a layer on top of the library contributes (:mod:`privbandits.experiments.catalog` finds it
    through the entry point group ``privbandits.reproductions``).

    ``config_reports`` maps a config experiment's name to a ``"module:function"``
    ``(records, out) -> PaperReport`` whose panels and claims that experiment's report starts from.
    """

    reproductions: tuple[Reproduction, ...]
    config_reports: Mapping[str, str] = field(default_factory=dict)


def _read_toml(path: Path) -> dict[str, Any]:
    return read_toml(path, ConfigError)


def override_config(data: dict[str, Any], raw: dict[str, str], where: str) -> dict[str, Any]:
    """``data`` with dotted ``KEY=VALUE`` overrides (``policies.0.alpha=0.3``); top-level keys typed by the schema."""
    data = copy.deepcopy(data)
    fields = ExperimentConfig.model_fields
    for key, text in raw.items():
        parts = key.split(".")
        if parts[0] not in fields:
            raise unknown_key(parts[0], list(fields), where)
        target: Any = data
        for depth, part in enumerate(parts[:-1]):
            target = _descend(target, part, ".".join(parts[: depth + 1]))
        last = parts[-1]
        if len(parts) == 1:
            try:
                value = coerce(text, fields[last].annotation) if last != "environment" else literal_value(text)
            except ValueError as exc:
                raise OptionError(f"option {key}: {exc} (got {text!r})") from None
        else:
            value = literal_value(text)
        if isinstance(target, list):
            target[_index(last, target, key)] = value
        else:
            target[last] = value
    return data


def _index(part: str, items: list, where: str) -> int:
    if not part.isdigit() or int(part) >= len(items):
        raise OptionError(f"option {where}: {part!r} is not an index 0..{len(items) - 1}")
    return int(part)


def _descend(target: Any, part: str, where: str) -> Any:
    if isinstance(target, list):
        return target[_index(part, target, where)]
    if not isinstance(target, dict) or part not in target:
        raise OptionError(f"option {where}: no such section")
    return target[part]


# -- finding, running and reporting ----------------------------------------------------
def resolve_options(reproduction: Reproduction | ConfigReproduction, raw: dict[str, str], store=None) -> BaseModel:
    """The options to use: the defaults (or, with no overrides, those the store last ran) plus ``raw``."""
    base = None
    if store is not None and not raw:
        base = store.recall(reproduction.name)
    return reproduction.parse(raw, base)


def run(
    reproduction: Reproduction | ConfigReproduction,
    options: BaseModel,
    store,
    out: Path,
    *,
    jobs: int = 1,
    executor: str = "local",
    ray_address: str | None = None,
    force: bool = False,
    progress: bool = True,
    build: bool = True,
):
    """Compute what the store lacks for ``options``, remember them, and return the report (``build=False``: None,
    and nothing is drawn or written in ``out``)."""
    from privbandits.experiments.executors import run_tasks
    from privbandits.experiments.runner import task_progress

    tasks = reproduction.tasks(options)
    pending = len(tasks) if force else len({t.key for t in tasks} - store.stored_keys(t.key for t in tasks))
    with task_progress(progress, pending, reproduction.name) as advance:
        summary = run_tasks(
            tasks, store, jobs=jobs, executor=executor, ray_address=ray_address, force=force, on_done=advance
        )
    store.remember(reproduction.name, options.model_dump(mode="json"))
    return summary, report(reproduction, options, store, out) if build else None


def report(reproduction: Reproduction | ConfigReproduction, options: BaseModel, store, out: Path):
    """The reproduction's report for ``options``, from stored rows alone."""
    tasks = reproduction.tasks(options)
    results = store.results(tasks)
    missing = [task for task in tasks if task.key not in results]
    if missing:
        raise ReportError(
            f"{len(missing)} of {len(tasks)} units of {reproduction.name} are not in {store.path} "
            f"(first: {missing[0].label}); run `privbandits run {reproduction.name}` with the same options first"
        )
    return reproduction.build_report(options, points_of(tasks, results), out)
