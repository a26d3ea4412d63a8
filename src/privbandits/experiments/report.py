"""Summaries over seeds (mean and t-interval), metric tables, CSV files and PNG plots of stored runs."""

from __future__ import annotations

import csv
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from scipy import stats  # noqa: E402

from privbandits.experiments.paper import atomic_path  # noqa: E402
from privbandits.experiments.store import RunRecord  # noqa: E402

CONFIDENCE = 0.95


class Metric(StrEnum):
    """Which cumulative series a plot shows."""

    REGRET = "regret"
    REWARD = "reward"


def mean_interval(values: np.ndarray, confidence: float = CONFIDENCE) -> tuple[np.ndarray, np.ndarray]:
    """Mean over axis 0 and the half-width of its Student-t confidence interval.

    With one seed the half-width is 0 (no spread can be estimated).
    """
    values = np.asarray(values, dtype=np.float64)
    mean = values.mean(axis=0)
    n = values.shape[0]
    if n < 2:
        return mean, np.zeros_like(mean)
    sem = values.std(axis=0, ddof=1) / np.sqrt(n)
    return mean, stats.t.ppf(0.5 + confidence / 2, n - 1) * sem


@dataclass(frozen=True)
class PolicySummary:
    """Final cumulative regret and reward of one policy over its seeds."""

    label: str
    n_seeds: int
    horizon: int
    regret_mean: float
    regret_half_width: float
    reward_mean: float
    reward_half_width: float
    wall_time_s: float


def group_by_policy(records: list[RunRecord]) -> dict[str, list[RunRecord]]:
    """Runs per policy label, policies in config order, seeds ascending."""
    groups: dict[str, list[RunRecord]] = {}
    for r in sorted(records, key=lambda r: (r.policy_index, r.label, r.seed)):
        groups.setdefault(r.label, []).append(r)
    return groups


def summarise(records: list[RunRecord]) -> list[PolicySummary]:
    """One :class:`PolicySummary` per policy (mean and 95% t-interval over seeds; NaN where a run has no series)."""
    summaries = []
    for label, runs in group_by_policy(records).items():
        regret_mean, regret_hw = mean_interval(np.array([r.final_regret for r in runs]))
        reward_mean, reward_hw = mean_interval(np.array([r.final_reward for r in runs]))
        summaries.append(
            PolicySummary(
                label=label,
                n_seeds=len(runs),
                horizon=runs[0].horizon,
                regret_mean=float(regret_mean),
                regret_half_width=float(regret_hw),
                reward_mean=float(reward_mean),
                reward_half_width=float(reward_hw),
                wall_time_s=float(np.mean([r.wall_time_s for r in runs])),
            )
        )
    return summaries


def has_series(records: list[RunRecord], metric: Metric | str) -> bool:
    """Whether any run has the per-round series of ``metric`` (not under replay's regret or a population run)."""
    metric = Metric(metric)
    return any(len(r.cumulative_regret if metric is Metric.REGRET else r.cumulative_reward) for r in records)


def interval_text(mean: float, half_width: float, digits: int = 2) -> str:
    """``mean ± half-width``, or ``–`` when the value does not exist (NaN)."""
    if mean != mean:
        return "–"
    return f"{mean:.{digits}f} ± {half_width:.{digits}f}"


_FIRST_METRICS = (
    "matched",
    "ctr",
    "cold",
    "warm_non_private",
    "warm_private",
    "communication",
    "uploads",
    "downloads",
    "bytes",
    "messages",
)
"""Metrics shown first (stored results keep keys sorted, so the order is set here)."""


def metric_names(records: list[RunRecord]) -> list[str]:
    """Every protocol metric some run reports: the headline ones first, then the rest by name."""
    names = {name for r in records for name in (r.metrics or {})}
    return [name for name in _FIRST_METRICS if name in names] + sorted(names - set(_FIRST_METRICS))


def metric_rows(records: list[RunRecord]) -> list[list[str]]:
    """A table of protocol metrics (header first): one row per policy, mean ± 95% CI over its seeds."""
    names = metric_names(records)
    if not names:
        return []
    rows = [["policy", "seeds", *names]]
    for label, runs in group_by_policy(records).items():
        cells = []
        for name in names:
            values = np.array([float((r.metrics or {}).get(name, np.nan)) for r in runs])
            finite = values[np.isfinite(values)]
            if finite.size == 0:
                cells.append("–" if not np.isinf(values).any() else "inf")
                continue
            mean, half = mean_interval(finite)
            digits = 0 if np.all(finite == np.round(finite)) and abs(float(mean)) >= 10 else 4
            cells.append(interval_text(float(mean), float(half), digits))
        rows.append([label, str(len(runs)), *cells])
    return rows


def write_metrics_csv(records: list[RunRecord], path: Path) -> Path:
    """Every run's protocol metrics as CSV (one row per run: label, seed, then each metric)."""
    names = metric_names(records)
    with atomic_path(path) as partial, partial.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["label", "seed", *names])
        for label, runs in group_by_policy(records).items():
            for r in runs:
                writer.writerow([label, r.seed, *[(r.metrics or {}).get(name, "") for name in names]])
    return path


def write_summary_csv(summaries: list[PolicySummary], path: Path) -> Path:
    """The summary table as CSV (one row per policy)."""
    fields = list(PolicySummary.__dataclass_fields__)
    with atomic_path(path) as partial, partial.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(fields)
        for s in summaries:
            writer.writerow([getattr(s, f) for f in fields])
    return path


def plot_cumulative(
    records: list[RunRecord],
    metric: Metric,
    path: Path,
    *,
    title: str,
    log_y: bool = False,
) -> Path:
    """PNG of the cumulative ``metric`` versus rounds: one line per policy, 95% CI band over seeds."""
    metric = Metric(metric)
    fig, ax = plt.subplots(figsize=(8, 5), dpi=120)
    for label, runs in group_by_policy(records).items():
        series = [r.cumulative_regret if metric is Metric.REGRET else r.cumulative_reward for r in runs]
        if not all(len(s) for s in series):  # no such series (replay's regret, a population run)
            continue
        rounds = runs[0].rounds
        length = min(len(s) for s in series)
        mean, half = mean_interval(np.array([s[:length] for s in series]))
        (line,) = ax.plot(rounds[:length], mean, label=f"{label} ({len(runs)} seeds)", linewidth=2)
        ax.fill_between(rounds[:length], mean - half, mean + half, color=line.get_color(), alpha=0.2)
    ax.set_xlabel("round t")
    ax.set_ylabel(f"cumulative {'pseudo-regret' if metric is Metric.REGRET else 'reward'}")
    if log_y:
        ax.set_yscale("log")
    ax.set_title(f"{title}\nline = mean, band = {CONFIDENCE:.0%} CI over seeds", fontsize=11)
    ax.grid(True, alpha=0.3)
    ax.legend(loc="best", fontsize=9)
    fig.tight_layout()
    with atomic_path(path) as partial:
        fig.savefig(partial, format="png")
    plt.close(fig)
    return path
