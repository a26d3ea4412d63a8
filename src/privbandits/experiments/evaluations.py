"""Off-policy evaluations as results-store units, their report, the book's section and a page of the results site.

``privbandits evaluate`` plans one :class:`~privbandits.experiments.tasks.Task` per policy (and one per policy for the
error over ε when asked), computes those the store lacks (:func:`run_tasks`), and reports them: ``evaluation.md``,
``evaluation.json`` and a figure of the DP estimators' error over ε (:func:`write_report`). ``privbandits report
--book`` adds a ``privbandits evaluate`` section and ``privbandits site`` an ``evaluation/`` page, both from the stored
units alone (:func:`stored`).
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from privbandits.experiments.evaluation_units import FUNCTION, SAMPLERS, SWEEP
from privbandits.experiments.tasks import Task, file_identity

SECTION = "privbandits evaluate"


@dataclass(frozen=True)
class EvaluationPlan:
    """The units of one ``privbandits evaluate``: each policy's estimates, and its error over ε when
    ``over_epsilon`` is given. ``privacy`` holds the command's whole budget; each policy's unit gets an equal share
    (its ``epsilon`` and ``delta`` divided by the number of policies), so the command spends what it was given."""

    log: Path
    policies: tuple[str, ...]
    estimators: tuple[str, ...]
    seed: int = 0
    train_fraction: float = 0.5
    threshold: float = 100.0
    interval: str = "bootstrap"
    level: float = 0.95
    privacy: dict[str, Any] | None = None
    policy_options: dict[str, Any] = field(default_factory=dict)
    over_epsilon: tuple[float, ...] = ()
    repeats: int = 200
    sweep_options: dict[str, Any] = field(default_factory=dict)

    def _common(self, policy: str) -> dict[str, Any]:
        options = self.policy_options if policy == "dp_linucb" else {}
        return {"log": file_identity(self.log), "policy": policy, "policy_options": options, "seed": self.seed,
                "train_fraction": self.train_fraction, "samplers": SAMPLERS}  # fmt: skip

    def _privacy(self) -> dict[str, Any] | None:
        if self.privacy is None:
            return None
        share = len(self.policies)
        return {**self.privacy, "epsilon": self.privacy["epsilon"] / share, "delta": self.privacy["delta"] / share}

    def tasks(self) -> list[Task]:
        tasks = []
        for policy in self.policies:
            params = {**self._common(policy), "estimators": list(self.estimators), "threshold": self.threshold,
                      "interval": self.interval, "level": self.level, "privacy": self._privacy()}  # fmt: skip
            kind = "private" if self.privacy else "plaintext"
            tasks.append(Task(FUNCTION, params, label=f"evaluate {policy} on {self.log.name} ({kind})"))
        return tasks

    def sweep_tasks(self) -> list[Task]:
        """The error-over-ε units: their ε are ``over_epsilon``, each estimator's whole budget; δ, the clipping and
        the interval share from ``sweep_options`` (the same options as ``privacy``'s)."""
        if not self.over_epsilon:
            return []
        extra = {"epsilons": list(self.over_epsilon), "repeats": self.repeats, **SWEEP_DEFAULTS, **self.sweep_options}
        return [Task(SWEEP, {**self._common(policy), **extra}, label=f"error over ε of {policy} on {self.log.name}")
                for policy in self.policies]  # fmt: skip


SWEEP_DEFAULTS = {"delta": 0.0, "weight_clip": 100.0, "reward_range": [0.0, 1.0], "interval_share": 0.2}


def run_tasks(
    tasks: Iterable[Task], store, *, force: bool = False, progress: Callable[[str], None] | None = None
) -> list[dict[str, Any]]:
    """Each task's result: from ``store`` where stored (unless ``force``), else computed and stored at once."""
    results = []
    for task in tasks:
        stored = None if force else store.results([task]).get(task.key)
        if stored is None:
            start = time.perf_counter()
            stored = task.run()
            store.put(task, stored, time.perf_counter() - start, replace=force)
        results.append(stored)
        if progress is not None:
            progress(task.label)
    return results


def stored(store) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The stored estimates and error-over-ε units of this code's noise samplers, oldest first."""
    keep = [[unit.result for unit in store.units_of(fn) if unit.params.get("samplers") == SAMPLERS]
            for fn in (FUNCTION, SWEEP)]  # fmt: skip
    return keep[0], keep[1]


def _number(value: object) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return "∞" if math.isinf(value) else "—" if math.isnan(value) else f"{value:.4g}"
    return str(value)


ESTIMATE_HEADER = ["log", "policy", "rounds (train / evaluated)", "estimator", "estimate", "interval", "kind", "ESS",
                   "ε", "δ", "noise"]  # fmt: skip
SWEEP_HEADER = ["policy", "estimator", "ε", "bias", "std", "RMSE", "non-private half-width"]


def estimate_cells(units: list[dict[str, Any]]) -> list[list[str]]:
    lines = []
    for unit in units:
        for row in unit["rows"]:
            interval = f"[{_number(row['low'])}, {_number(row['high'])}]"
            lines.append([Path(unit["log"]).name, unit["policy"], f"{unit['n_train']} / {unit['n_test']}",
                          row["method"], _number(row["estimate"]), interval, row["interval"], _number(row["ess"]),
                          _number(row.get("epsilon")), _number(row.get("delta")), row.get("noise", "—")])  # fmt: skip
    return lines


def sweep_cells(sweeps: list[dict[str, Any]]) -> list[list[str]]:
    lines = []
    for sweep in sweeps:
        for row in sweep["rows"]:
            half = sweep["references"][row["method"].removeprefix("dp_")]["half_width"]
            lines.append([sweep["policy"], row["method"], _number(row["epsilon"]), _number(row["bias"]),
                          _number(row["std"]), _number(row["rmse"]), _number(half)])  # fmt: skip
    return lines


def _markdown_table(header: list[str], lines: list[list[str]]) -> list[str]:
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)] + ["| " + " | ".join(c) + " |" for c in lines]


def privacy_notes(units: list[dict[str, Any]]) -> list[str]:
    """One line per private unit: what its releases spent on the evaluated records, and the DP learner's entry."""
    notes = []
    for unit in units:
        where = f"{unit['policy']} on {Path(unit['log']).name}"
        if unit["spent"]:
            seeded = " (seeded noise: a reproducible run, not secret)" if unit["reproducible"] else ""
            notes.append(f"{where}: the {unit['n_test']} evaluated records, ε = {_number(unit['spent']['epsilon'])}, "
                         f"δ = {_number(unit['spent']['delta'])} over {len(unit['rows'])} releases (basic "
                         f"composition){seeded}")  # fmt: skip
        for entry in unit["ledger"]:
            if entry["mechanism"].startswith("dp_linucb"):
                notes.append(f"{where}: the learner's {entry['mechanism']}, ε = {_number(entry['epsilon'])}, δ = "
                             f"{_number(entry['delta'])} on the {unit['n_train']} training records")  # fmt: skip
    return notes


def audit_table(audits: list[dict[str, Any]]) -> list[str]:
    """The DP estimators' rows of the empirical audit (:mod:`privbandits.audit.evaluation`), as ``privbandits
    audit`` reports them; nothing when none is stored."""
    from privbandits.audit.run import HEADER, cells, rows

    mine = rows([audit for audit in audits if audit["mechanism"].startswith("evaluation.")])
    if not mine:
        return []
    intro = ("`privbandits audit evaluation.dp_ips …`: ε ≥ is a one-sided 95% lower bound on ε at the claimed δ; pair "
             "ε the exact ε of the neighbouring logs used.")  # fmt: skip
    return ["", "## The DP estimators' audit", "", intro, ""] + _markdown_table(HEADER, [cells(row) for row in mine])


def markdown(
    units: list[dict[str, Any]], sweeps: list[dict[str, Any]], audits: list[dict[str, Any]] | None = None
) -> str:
    """The report: the estimates, the privacy spent, the error over ε (and the estimators' audit, when stored)."""
    lines = ["# Off-policy evaluation", ""]
    if units:
        lines += ["Each policy is trained on the first rounds of the log and evaluated on the rest (`parametric`: "
                  "a DP estimate's interval, from its privately released second moments).", ""]  # fmt: skip
        lines += _markdown_table(ESTIMATE_HEADER, estimate_cells(units))
    notes = privacy_notes(units)
    if notes:
        lines += ["", "## Privacy spent", ""] + [f"- {note}." for note in notes]
    if sweeps:
        first = sweeps[0]
        noise = "Laplace noise" if first["delta"] == 0 else f"Gaussian noise, δ = {_number(first['delta'])}"
        lines += ["", "## DP estimators' error over ε", "",
                  "Error of each DP estimate against its non-private clipped counterpart on the same evaluated rounds "
                  f"({sweeps[0]['repeats']} seeded releases per ε; λ = {_number(sweeps[0]['weight_clip'])}, rewards "
                  f"in [{', '.join(_number(v) for v in sweeps[0]['reward_range'])}], "
                  f"{noise}); the non-private interval's half-width is the sampling error, for scale.", ""]  # fmt: skip
        lines += _markdown_table(SWEEP_HEADER, sweep_cells(sweeps))
    lines += audit_table(audits or [])
    return "\n".join(lines) + "\n"


def figure(sweeps: list[dict[str, Any]], path: Path) -> Path:
    """RMSE of each DP estimator over ε (log-log), the non-private half-widths dashed, one panel per policy."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(sweeps), figsize=(4.5 * len(sweeps), 3.6), squeeze=False)
    for axis, sweep in zip(axes[0], sweeps, strict=True):
        for index, method in enumerate(dict.fromkeys(row["method"] for row in sweep["rows"])):
            rows = [row for row in sweep["rows"] if row["method"] == method]
            colour = f"C{index}"
            axis.loglog([r["epsilon"] for r in rows], [r["rmse"] for r in rows], "o-", color=colour, label=method)
            half = sweep["references"][method.removeprefix("dp_")]["half_width"]
            if half > 0:  # a degenerate interval (every term 0) has no width to draw on a log scale
                axis.axhline(half, color=colour, ls="--", lw=0.8)
        epsilons = sorted({row["epsilon"] for row in sweep["rows"]})
        axis.set_xticks(epsilons, [f"{e:g}" for e in epsilons])
        axis.minorticks_off()
        axis.set(title=f"{sweep['policy']} on {Path(sweep['log']).name}", xlabel="ε", ylabel="RMSE vs non-private")
        axis.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def write_report(units: list[dict[str, Any]], sweeps: list[dict[str, Any]], out: Path) -> list[Path]:
    """``evaluation.json``, ``evaluation.md`` and, with sweeps, ``dp-error.png`` under ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    json_path, md_path = out / "evaluation.json", out / "evaluation.md"
    json_path.write_text(json.dumps({"evaluations": units, "error_over_epsilon": sweeps}, indent=1, default=str))
    md_path.write_text(markdown(units, sweeps))
    return [json_path, md_path] + ([figure(sweeps, out / "dp-error.png")] if sweeps else [])


def book_section(store) -> str | None:
    """The book's ``privbandits evaluate`` section from the stored units (None before the first evaluation)."""
    from privbandits.experiments.audits import stored_audits
    from privbandits.experiments.book import headed_section

    units, sweeps = stored(store)
    return headed_section(SECTION, markdown(units, sweeps, stored_audits(store))) if units or sweeps else None
