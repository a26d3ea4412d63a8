"""The report of a config experiment: summary table, CSV, regret and reward plots, and paper claims if any."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from privbandits.experiments.config import ExperimentConfig
from privbandits.experiments.paper import PaperReport
from privbandits.experiments.report import (
    Metric,
    has_series,
    interval_text,
    metric_rows,
    plot_cumulative,
    summarise,
    write_metrics_csv,
    write_summary_csv,
)
from privbandits.experiments.store import RunRecord
from privbandits.experiments.tasks import resolve


def config_report(
    config: ExperimentConfig, points: dict[str, dict[str, Any]], out: Path, panels: str | None = None
) -> PaperReport:
    """Everything a config's stored runs show: final values over seeds, plots, and the paper's claims (starting from
    ``panels``, the ``"module:function"`` of a layer's panels for this config, where it has them)."""
    records = [RunRecord.from_result(result) for result in points.values()]
    summaries = summarise(records)
    title = config.description or config.name
    report = PaperReport(config.name, title)
    if panels is not None:
        report = resolve(panels)(records, out)
    rows = [["policy", "seeds", "rounds", "cum. regret", "cum. reward", "s / run"]]
    rows += [
        [
            s.label,
            str(s.n_seeds),
            str(s.horizon),
            interval_text(s.regret_mean, s.regret_half_width),
            interval_text(s.reward_mean, s.reward_half_width),
            f"{s.wall_time_s:.2f}",
        ]
        for s in summaries
    ]
    tables = {f"{config.name}: final values, mean ± 95% CI over seeds": rows}
    metrics = metric_rows(records)
    if metrics:
        tables[f"{config.name}: protocol metrics, mean ± 95% CI over seeds"] = metrics
        report.files.append(write_metrics_csv(records, out / f"{config.name}-metrics.csv"))
    report.tables = {**tables, **report.tables}
    report.files.append(write_summary_csv(summaries, out / f"{config.name}-summary.csv"))
    for metric in Metric:
        if has_series(records, metric):
            path = out / f"{config.name}-{metric}.png"
            report.figures.append(plot_cumulative(records, metric, path, title=title))
    if config.environment.replay:
        report.notes.append(
            "Replay (Li et al. 2010): a round counts only when the policy chose the logged arm; 'matched' counts "
            "those rounds and 'ctr' is the mean reward over them. Pseudo-regret is unknown on logged data."
        )
    if config.environment.population:
        report.notes.append(
            "P2B population runs: cold, warm_non_private and warm_private are the late users' mean rewards over "
            "their interactions (spec p2b.md §2.7); there is no per-round series."
        )
    return report
