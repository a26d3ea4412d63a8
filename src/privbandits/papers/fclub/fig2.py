"""Fig. 2: cumulative regret of every algorithm, synthetic and MovieLens (real data), mean ± std over seeds."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from privbandits.experiments.paper import Claim, PaperReport
from privbandits.experiments.tasks import Task
from privbandits.papers.fclub.options import FAITHFUL, Fig2Options
from privbandits.papers.fclub.panels import compute_note, mode_notes, settings, title
from privbandits.papers.fclub.runs import Setting, curves, kept_rounds, run_task, runs_of

_HEADER = ["algorithm", "final regret (mean ± std)", "last-quarter slope / mean slope", "clusters found",
           "ms / round", "releases with ‖H‖ > ρ"]  # fmt: skip


def panels(options: Fig2Options) -> tuple[dict[Setting, int], list[str]]:
    return settings(
        options.include_movielens, options.horizon, options.movielens_horizon, options.data_dir,
        options.movielens_ratings,
    )  # fmt: skip


def tasks(options: Fig2Options) -> list[Task]:
    """Every algorithm × seed on every setting (the runs Fig. 4 shares)."""
    found, _ = panels(options)
    return [
        run_task(a, s, T, seed) for s, T in found.items() for seed in range(options.seeds) for a in options.algorithms
    ]


def report(options: Fig2Options, points: dict[str, dict], out: Path) -> PaperReport:
    horizon, seeds = options.horizon, options.seeds
    report = PaperReport("fclub-fig2", f"FCLUB paper, Fig. 2 (cumulative regret, T = {horizon:,}, {seeds} seeds)")
    out.mkdir(parents=True, exist_ok=True)
    found, report.notes = panels(options)
    fig, axes = plt.subplots(2, len(found), figsize=(7 * len(found), 9), dpi=110, squeeze=False)
    for ax, zoom, (setting, T) in zip(axes[0], axes[1], found.items(), strict=True):
        finals, linearity = _panel(report, options, points, setting, T, (ax, zoom))
        where = f"Fig. 2, {setting.kind}"
        if all(a in finals for a in ("FCLUB", "FCLUB-DC", "CLUB", "SCLUB", "LinUCB")) and seeds > 1:
            report.claims += [ordering_claim(where, finals, cdp) for cdp in ("CDP-FCLUB-DC", FAITHFUL) if cdp in finals]
        if any(n in linearity for n in ("Homo", "Homo-DC")) and "FCLUB-DC" in linearity:
            report.claims.append(_homo_claim(where, linearity))
    fig.suptitle("FCLUB Fig. 2 reproduced: cumulative regret (mean ± 1 std over seeds)")
    report.add_figure(fig, out / "fclub-fig2.png")
    runs = [(points[t.label], t.params["horizon"]) for t in tasks(options)]
    report.notes += mode_notes(horizon, seeds) + [
        compute_note([r for r, _ in runs], [T for _, T in runs]),
        "Slope ratio: regret slope over the last quarter of T divided by R(T)/T (1 = linear, → 0 = flattening).",
        "‖H‖ > ρ: privatizer releases whose noise broke Eq. 7's spectral bound, summed over seeds (by design for "
        "the reference noise scale, which uses the variance formula as a std).",
        "'clusters found': the final partition equals the true clusters (global ones for the FCLUB family, each "
        "server's cells for SCLUB and CLUB); LinUCB has none.",
    ]
    return report


def _panel(report: PaperReport, options: Fig2Options, points: dict, setting: Setting, T: int, axes) -> tuple:
    """One setting: its table and curves; returns per-seed final regrets and slope ratios by algorithm."""
    rounds, seeds = kept_rounds(T), options.seeds
    rows, finals, linearity = [list(_HEADER)], {}, {}
    for name in options.algorithms:
        regret = curves(points, name, setting, T, seeds, "regret")
        mean, std = regret.mean(axis=0), regret.std(axis=0)
        finals[name], linearity[name] = regret[:, -1], linear(mean, rounds)
        rows.append(_row(name, runs_of(points, name, setting, T, seeds), mean, std, linearity[name]))
        for panel in axes:
            (line,) = panel.plot(rounds, mean, label=name, ls="--" if name == FAITHFUL else "-")
            panel.fill_between(rounds, mean - std, mean + std, color=line.get_color(), alpha=0.15)
    report.tables[f"Fig. 2, {title(setting, T)}"] = rows
    ax, zoom = axes
    ax.set(xlabel="round t", ylabel="cumulative regret", title=title(setting, T))
    sublinear = [finals[n].mean() for n in finals if n not in (FAITHFUL, "Homo", "Homo-DC")]
    zoom.set(xlabel="round t", ylabel="cumulative regret", title="zoom: without the linear curves",
             ylim=(0, 1.3 * max(sublinear, default=1.0)))  # fmt: skip
    for panel in axes:
        panel.grid(True, alpha=0.3)
        panel.legend(fontsize=7)
    return finals, linearity


def _row(name: str, runs: list[dict], mean: np.ndarray, std: np.ndarray, slope: float) -> list[str]:
    found = [run["clusters_found"] for run in runs]
    exceeded = "–"
    if name in (FAITHFUL, "CDP-FCLUB-DC"):
        counted = [run["rho_exceeded"] for run in runs if "rho_exceeded" in run]
        exceeded = str(sum(counted)) if len(counted) == len(runs) else "not counted (older cache)"
    return [name, f"{mean[-1]:,.0f} ± {std[-1]:,.0f}", f"{slope:.2f}",
            "–" if found[0] is None else f"{sum(found)}/{len(runs)}",
            f"{np.mean([run['ms_per_round'] for run in runs]):.3f}", str(exceeded)]  # fmt: skip


def _homo_claim(where: str, linearity: dict[str, float]) -> Claim:
    homo = {n: linearity[n] for n in ("Homo", "Homo-DC") if n in linearity}
    linear_ = all(v > 0.7 for v in homo.values())
    contrast = linearity["FCLUB-DC"] < 0.5  # clustering flattens the curve, merging everything does not
    verdict = "reproduced" if linear_ and contrast else "partly (FCLUB-DC is as linear)" if linear_ else "no"
    return Claim(
        where, "Homo and Homo-DC suffer linear regret (FCLUB-DC does not)", "yes",
        ", ".join(f"{n} slope ratio {v:.2f}" for n, v in homo.items())
        + f" (FCLUB-DC {linearity['FCLUB-DC']:.2f}; 1 = linear)", verdict,
    )  # fmt: skip


def paired(first: np.ndarray, second: np.ndarray) -> tuple[float, float]:
    """Mean and standard error over seeds of ``first − second`` (same seed = same users, items, rewards)."""
    difference = first - second
    return float(difference.mean()), float(difference.std(ddof=1) / np.sqrt(len(difference)))


def ordering_claim(where: str, finals: dict[str, np.ndarray], cdp: str) -> Claim:
    """FCLUB ≤ FCLUB-DC ≤ cdp < CLUB, SCLUB, LinUCB, judged on paired per-seed final regrets.

    Reproduced: every ≤ holds on average and every < is significant (difference below −2 SE).
    Partly: the < hold significantly and no ≤ is significantly reversed (above +2 SE).
    """
    chain = [paired(finals[a], finals[b]) for a, b in (("FCLUB", "FCLUB-DC"), ("FCLUB-DC", cdp))]
    beats = {b: paired(finals[cdp], finals[b]) for b in ("CLUB", "SCLUB", "LinUCB")}
    significant = all(mean < -2 * se for mean, se in beats.values())
    in_order = all(mean <= 0 for mean, _ in chain)
    not_reversed = all(mean <= 2 * se for mean, se in chain)
    means = {n: f"{finals[n].mean():,.0f}" for n in finals}
    ours = (
        f"FCLUB {means['FCLUB']}, FCLUB-DC {means['FCLUB-DC']}, {cdp} {means[cdp]} vs CLUB {means['CLUB']}, "
        f"SCLUB {means['SCLUB']}, LinUCB {means['LinUCB']}; paired differences (mean ± SE over seeds): "
        f"FCLUB − FCLUB-DC {chain[0][0]:+,.0f} ± {chain[0][1]:,.0f}, FCLUB-DC − {cdp} {chain[1][0]:+,.0f} ± "
        f"{chain[1][1]:,.0f}, " + ", ".join(f"{cdp} − {b} {m:+,.0f} ± {se:,.0f}" for b, (m, se) in beats.items())
    )
    verdict = (
        "reproduced"
        if significant and in_order
        else "partly (the ≤ chain is within 2 SE)"
        if significant and not_reversed
        else "partly"
        if significant or in_order
        else "not reproduced"
    )
    return Claim(where, f"FCLUB ≤ FCLUB-DC ≤ {cdp} < CLUB, SCLUB, LinUCB (final regret)", "yes", ours, verdict)


def linear(curve: np.ndarray, rounds: np.ndarray) -> float:
    """Slope of the last quarter over the mean slope: ≈ 1 for linear regret, → 0 for sublinear."""
    quarter = np.searchsorted(rounds, 3 * rounds[-1] // 4)
    slope = (curve[-1] - curve[quarter]) / (rounds[-1] - rounds[quarter])
    return float(slope / (curve[-1] / rounds[-1]))
