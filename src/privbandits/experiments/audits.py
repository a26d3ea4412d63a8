"""The empirical privacy audits as results-store units and a page of the results site.

``privbandits audit`` plans one :class:`~privbandits.experiments.tasks.Task` per mechanism
and weakening (:class:`AuditPlan`), computes those the store lacks (:func:`run_plan`) and
reports them; ``privbandits site`` adds an ``audit/`` page built from the stored units alone
(:func:`stored_audits`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from privbandits.audit import calibrations
from privbandits.audit.base import Weakening
from privbandits.audit.run import FUNCTION, MECHANISMS, default_samples, mechanism
from privbandits.experiments.tasks import Task
from privbandits.privacy.noise import NOISE_SAMPLER


@dataclass(frozen=True)
class AuditPlan:
    """The units of one ``privbandits audit``: each mechanism as calibrated, then its weakened copy."""

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
            audit = mechanism(name, chosen)
            samples = self.samples or sizes.get(name) or default_samples(name)
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


def stored_audits(store) -> list[dict[str, Any]]:
    """The stored audit units to show: per mechanism and weakening, the one with the most samples (then the
    latest), calibrated before weakened, mechanisms in registry order; only audits of this code's noise sampler."""
    best: dict[tuple[str, bool], tuple[tuple[int, str], dict[str, Any]]] = {}
    for unit in store.units_of(FUNCTION):
        if unit.params.get("noise_sampler") != NOISE_SAMPLER:
            continue  # an audit of an earlier sampler or calibration
        weak = Weakening(**unit.params["weakening"])
        key = (unit.params["mechanism_name"], not weak.none)
        rank = (unit.params["samples"], unit.finished_at)
        if key not in best or rank > best[key][0]:
            best[key] = (rank, unit.result)
    order = {name: index for index, name in enumerate(MECHANISMS)}
    return [best[key][1] for key in sorted(best, key=lambda k: (order.get(k[0], len(order)), k[1]))]


def book_section(store) -> str | None:
    """The book's ``privbandits audit`` section from the stored audits and tables (None before the first audit)."""
    from privbandits.audit.run import markdown, rows
    from privbandits.experiments.book import headed_section

    audits = stored_audits(store)
    if not audits:
        return None
    tables = stored_tables(store)
    return headed_section(
        "privbandits audit", markdown(rows(audits)) + ("\n" + calibrations.markdown(tables) if tables else "")
    )
