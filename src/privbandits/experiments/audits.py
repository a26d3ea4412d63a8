"""The empirical privacy audits as results-store units and a page of the results site.

``privbandits audit`` plans one :class:`~privbandits.experiments.tasks.Task` per mechanism
and weakening, and one per mutant of the mutation suite (:class:`AuditPlan`), computes those the
store lacks (:func:`run_plan`) and reports them; ``privbandits site`` adds an ``audit/`` page built
from the stored units alone (:func:`stored_audits`, :func:`stored_mutants`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from privbandits.audit import calibrations, mutants
from privbandits.audit.base import Weakening
from privbandits.audit.run import FUNCTION, MECHANISMS, default_samples, mechanism
from privbandits.experiments.tasks import Task
from privbandits.privacy.noise import NOISE_SAMPLER


@dataclass(frozen=True)
class AuditPlan:
    """The units of one ``privbandits audit``: each mechanism as calibrated, then its weakened copy; each mutant
    (a name in :data:`~privbandits.audit.mutants.MUTANTS`) driven by its end-to-end audit."""

    names: tuple[str, ...]
    samples: int | None = None
    seed: int = 0
    options: tuple[tuple[str, tuple[tuple[str, Any], ...]], ...] = ()
    """Per mechanism, the options ``-o KEY=VALUE`` set (its factory's keywords), in the unit's key."""
    sizes: tuple[tuple[str, int], ...] = ()
    """Per mechanism, samples per side where ``samples`` is None (``--quick``'s sizes); else its default."""

    def calibration_task(self) -> Task:
        """The σ and accounting tables (no sampling: one unit whatever the mechanisms)."""
        return Task(calibrations.FUNCTION, {}, label="calibration tables")

    def tasks(self) -> list[Task]:
        tasks = []
        options, sizes = dict(self.options), dict(self.sizes)
        for name in self.names:
            chosen = dict(options.get(name, ()))
            samples = self.samples or sizes.get(name) or default_samples(name)
            if name in mutants.MUTANTS:
                params = mutants.mutant_task_params(name, chosen, samples, self.seed)
                tasks.append(Task(mutants.FUNCTION, params, label=f"audit {name} (mutant, by {params['audit']})"))
                continue
            audit = mechanism(name, chosen)
            weakenings = (Weakening(),) if audit.weakened.none else (Weakening(), audit.weakened)  # end to end: none
            for weak in weakenings:
                params = {"mechanism_name": name, "options": chosen, "samples": samples, "seed": self.seed,
                          "weakening": weak.as_dict(), "noise_sampler": NOISE_SAMPLER}  # fmt: skip
                tasks.append(
                    Task(FUNCTION, params, label=f"audit {name} ({weak.describe(audit.dropped, audit.scaled)})")
                )
        return tasks


def _unit(task: Task, store, force: bool) -> dict[str, Any]:
    """``task``'s result: read from ``store`` where stored (unless ``force``), else computed and stored."""
    stored = None if force else store.results([task]).get(task.key)
    if stored is None:
        start = time.perf_counter()
        stored = task.run()
        store.put(task, stored, time.perf_counter() - start, replace=force)
    return stored


def run_plan(
    plan: AuditPlan, store, *, force: bool = False, progress: Callable[[str], None] | None = None
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Each audit unit of ``plan`` and the calibration tables, from ``store`` or computed (and stored)."""
    results = []
    for task in [*plan.tasks(), plan.calibration_task()]:
        results.append(_unit(task, store, force))
        if progress is not None:
            progress(task.label)
    return results[:-1], results[-1]


def stored_tables(store) -> dict[str, Any] | None:
    """The latest stored calibration tables (None before the first ``privbandits audit``)."""
    units = store.units_of(calibrations.FUNCTION)
    return units[-1].result if units else None


def _largest(units, key: Callable[[Any], Any]) -> dict[Any, dict[str, Any]]:
    """Per ``key(unit)``, the result of the stored unit with the most samples (then the latest); only units of this
    code's noise sampler."""
    best: dict[Any, tuple[tuple[int, str], dict[str, Any]]] = {}
    for unit in units:
        if unit.params.get("noise_sampler") != NOISE_SAMPLER:
            continue  # an audit of an earlier sampler or calibration
        rank = (unit.params["samples"], unit.finished_at)
        if key(unit) not in best or rank > best[key(unit)][0]:
            best[key(unit)] = (rank, unit.result)
    return {found: result for found, (_, result) in best.items()}


def stored_audits(store) -> list[dict[str, Any]]:
    """The stored audit units to show: per mechanism and weakening, the one with the most samples (then the
    latest), calibrated before weakened, mechanisms in registry order; only audits of this code's noise sampler."""
    best = _largest(
        store.units_of(FUNCTION),
        lambda unit: (unit.params["mechanism_name"], not Weakening(**unit.params["weakening"]).none),
    )
    order = {name: index for index, name in enumerate(MECHANISMS)}
    return [best[key] for key in sorted(best, key=lambda k: (order.get(k[0], len(order)), k[1]))]


def stored_mutants(store) -> list[dict[str, Any]]:
    """The stored mutant units to show: per mutant, the one with the most samples (then the latest), in registry
    order (mutants no longer registered last); only units of this code's noise sampler."""
    best = _largest(store.units_of(mutants.FUNCTION), lambda unit: unit.params["mutant"])
    order = {name: index for index, name in enumerate(mutants.MUTANTS)}
    return [best[name] for name in sorted(best, key=lambda name: (order.get(name, len(order)), name))]


def book_section(store) -> str | None:
    """The book's ``privbandits audit`` section from the stored audits, mutants and tables (None before the first
    audit)."""
    from privbandits.audit.run import markdown, rows
    from privbandits.experiments.book import headed_section

    audits, mutant_units = stored_audits(store), stored_mutants(store)
    if not audits and not mutant_units:
        return None
    tables = stored_tables(store)
    return headed_section(
        "privbandits audit",
        markdown(rows(audits), mutant_units) + ("\n" + calibrations.markdown(tables) if tables else ""),
    )
