"""P2B Fig. 3: ε as a function of the participation probability p (Eq. 2 with ε̄ = 0)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np

from privbandits.experiments.paper import Claim, PaperReport
from privbandits.experiments.tasks import Task
from privbandits.papers.p2b.options import Fig3Options
from privbandits.papers.p2b.reference import FIG3_P, SPEC_EPSILON
from privbandits.privacy import crowd_blending

_FN = "privbandits.papers.p2b.fig3:epsilon_table"


def epsilon_table(*, participation: list[float]) -> dict[str, Any]:
    """ε(p) by ``crowd_blending.epsilon`` and by Eq. 2 written out, at each p."""
    return {
        "epsilon": [crowd_blending.epsilon(p) for p in participation],
        "equation_2": [math.log(p * (2 - p) / (1 - p) + (1 - p)) for p in participation],
    }


def tasks(options: Fig3Options) -> list[Task]:
    return [Task(_FN, {"participation": FIG3_P}, "epsilon")]


def _claims(ours: list[float]) -> list[Claim]:
    table_gap = max(abs(round(e, 4) - s) for e, s in zip(ours, SPEC_EPSILON, strict=True))
    half, quarter = crowd_blending.epsilon(0.5), crowd_blending.epsilon(0.25)
    return [
        Claim("§3.5", "p = 0.5 gives ε ≈ 0.693", "0.693", f"{half:.6f} (= ln 2)", "reproduced"),
        Claim("§3.5", "p = 0.25 gives ε ≈ 0.28", "0.28", f"{quarter:.6f} (= ln 4/3)", "reproduced"),
        Claim(
            "Fig. 3",
            "ε grows with p and diverges as p → 1",
            "curve",
            f"max |ours − spec table| = {table_gap:.1e}",
            "reproduced",
        ),
    ]


def _figure() -> plt.Figure:
    grid = np.linspace(0.0, 0.99, 400)
    fig, ax = plt.subplots(figsize=(6.5, 4.2), dpi=110)
    ax.plot(grid, [crowd_blending.epsilon(p) for p in grid], label="ε = ln(p(2−p)/(1−p) + 1 − p) = −ln(1 − p)")
    ax.plot([0.25, 0.5], [crowd_blending.epsilon(0.25), crowd_blending.epsilon(0.5)], "ro", label="paper's two values")
    ax.set(
        xlabel="participation probability p",
        ylabel="ε",
        title="P2B Fig. 3: privacy loss of pre-sampling + crowd-blending (ε̄ = 0)",
    )
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    return fig


def report(options: Fig3Options, points: dict[str, dict[str, Any]], out: Path) -> PaperReport:
    result = points["epsilon"]
    paper = PaperReport("p2b-fig3", "P2B paper, Fig. 3 (ε versus participation probability p)")
    rows = [["p", "ε = crowd_blending.epsilon(p)", "Eq. 2 literally", "spec table"]]
    rows += [
        [f"{p:.2f}", f"{e:.4f}", f"{eq:.4f}", f"{s:.4f}"]
        for p, e, eq, s in zip(FIG3_P, result["epsilon"], result["equation_2"], SPEC_EPSILON, strict=True)
    ]
    paper.tables["ε(p), ε̄ = 0"] = rows
    paper.claims += _claims(result["epsilon"])
    paper.add_figure(_figure(), out / "p2b-fig3.png")
    paper.notes.append(
        "δ = exp(−Ω l (1 − p)²) (Eq. 3) needs Ω, which the paper never gives; it is reported only "
        "for an explicitly chosen Ω."
    )
    return paper
