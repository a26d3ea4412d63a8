"""The map's figure: one panel per environment, utility against ε, one marker per privacy model."""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
from matplotlib.figure import Figure
from matplotlib.ticker import NullFormatter

from privbandits.papers.privacy_map.environments import MapEnvironment
from privbandits.papers.privacy_map.summary import PointSummary

STYLES: dict[str, tuple[str, str]] = {
    "Uniform random (uses no data)": ("_", "silver"),
    "LinUCB (non-private)": ("*", "black"),
    "O3M VFUCB": ("D", "tab:blue"),
    "O3M VFUCB + secure aggregation": ("d", "tab:cyan"),
    "FCLUB-DC (non-private)": ("P", "tab:olive"),
    "CDP-FCLUB-DC": ("X", "tab:green"),
    "MPC ε-greedy (plaintext twin)": ("o", "tab:purple"),
    "MPC ε-greedy (secret-shared)": ("o", "tab:pink"),
    "P2B (warm, private)": ("s", "tab:orange"),
    "P2B non-private (raw contexts)": ("s", "tab:brown"),
    "cold start (nothing shared)": ("_", "tab:gray"),
    "Joint-DP LinUCB": ("^", "tab:red"),
    "Joint-DP LinUCB (sqrt factorization)": ("^", "orangered"),
    "Local-DP LinUCB": ("v", "darkred"),
    "Shuffle-DP LinUCB": ("<", "salmon"),
}
LOSSLESS_OFFSETS = {"O3M VFUCB": 1.25, "O3M VFUCB + secure aggregation": 1.56}
"""Horizontal nudges at ε = ∞, so the lossless points (equal to LinUCB) stay visible beside it."""


def infinity_position(rows: list[PointSummary]) -> float:
    """Where ε = ∞ sits on the log axis: four times the largest finite ε."""
    finite = [r.point.epsilon for r in rows if 0 < r.point.epsilon < math.inf]
    return 4.0 * max(finite, default=10.0)


def _x(row: PointSummary, at_infinity: float) -> float:
    if row.point.epsilon == math.inf:
        return at_infinity * LOSSLESS_OFFSETS.get(row.point.system, 1.0)
    return row.point.epsilon


def _panel(axis, env: MapEnvironment, rows: list[PointSummary]) -> None:
    at_infinity = infinity_position(rows)
    systems = dict.fromkeys(row.point.system for row in rows)
    for system in systems:
        marker, colour = STYLES.get(system, ("o", None))
        mine = sorted((r for r in rows if r.point.system == system), key=lambda r: r.point.epsilon)
        if mine[0].point.epsilon == 0:
            axis.axhline(mine[0].mean, color=colour, linestyle=":", label=f"{system} (ε = 0)")
            continue
        xs = [_x(r, at_infinity) for r in mine]
        hollow = "none" if system == "MPC ε-greedy (secret-shared)" else colour
        axis.errorbar(
            xs,
            [r.mean for r in mine],
            yerr=[r.half for r in mine],
            marker=marker,
            color=colour,
            markerfacecolor=hollow,
            linestyle="-" if len(mine) > 1 else "none",
            capsize=3,
            label=system,
        )
    axis.axvline(at_infinity / 1.6, color="lightgray", linewidth=0.8)
    axis.set_xscale("log")
    ticks = [t for t in (0.1, 1, 10) if t < at_infinity / 1.6] + [at_infinity]
    axis.set_xticks(ticks, [f"{t:g}" for t in ticks[:-1]] + ["∞\n(lossless /\nnon-private)"])
    axis.xaxis.set_minor_formatter(NullFormatter())
    axis.set_title(env.title, fontsize=9)
    axis.set_xlabel("ε (DP baselines, FCLUB), η per round (MPC), −ln(1−p) (P2B)", fontsize=8)
    axis.set_ylabel(env.metric_name, fontsize=8)
    axis.legend(fontsize=6, loc="best")


def map_figure(panels: list[tuple[MapEnvironment, list[PointSummary]]]) -> Figure:
    """One panel per environment (two columns), mean and 95% interval over seeds at each point."""
    columns = min(2, len(panels))
    rows = math.ceil(len(panels) / columns)
    figure, axes = plt.subplots(rows, columns, figsize=(7.5 * columns, 5.0 * rows), squeeze=False)
    for axis, (env, summaries) in zip(axes.flat, panels, strict=False):
        _panel(axis, env, summaries)
    for axis in list(axes.flat)[len(panels) :]:
        axis.set_visible(False)
    figure.suptitle("Privacy–utility map: O3M at ε = ∞ is lossless but leaks geometry (see the semantics table)")
    return figure
