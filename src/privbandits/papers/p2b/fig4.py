"""P2B Fig. 4: average reward versus users, |A| ∈ {10, 20, 50}, d = 10, t = 10, k = 2^10 (synthetic)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt

from privbandits.experiments.paper import Claim, PaperReport
from privbandits.experiments.tasks import Task
from privbandits.papers.p2b.common import EARLY_FRACTION, ordering_claim, plot_settings
from privbandits.papers.p2b.options import Fig4Options
from privbandits.papers.p2b.reference import REFERENCE_FIG4, cells

SYNTHETIC_FN = "privbandits.papers.p2b.simulations:synthetic_point"
ROUNDS = 10


def label(n_actions: int, early: int) -> str:
    return f"A={n_actions},early={early}"


def tasks(options: Fig4Options) -> list[Task]:
    common = {"rounds": ROUNDS, "dim": options.dim, "n_codes": options.n_codes, "mapping": options.mapping}
    return [
        Task(SYNTHETIC_FN, {**common, "early": u, "n_actions": a, "mode": "default", "seed": options.seed}, label(a, u))
        for a in options.n_actions
        for u in options.early_users
    ]


def _table(mine: dict[int, dict[str, Any]], n_actions: int) -> list[list[str]]:
    rows = [["early users", "total users", "cold", "warm NP", "warm P", "reference (cold / NP / P)", "released"]]
    for u, v in mine.items():
        rows.append(
            [
                f"{u:,}",
                f"{round(u / EARLY_FRACTION):,}",
                f"{v['cold']:.5f}",
                f"{v['warm_non_private']:.5f}",
                f"{v['warm_private']:.5f}",
                cells(REFERENCE_FIG4.get(n_actions, {}).get(u), 5),
                f"{v['released']:,} of {v['shared']:,}",
            ]
        )
    return rows


def _gap_claim(mine: dict[int, dict[str, Any]], n_actions: int) -> Claim:
    (u_first, first), (u_last, last) = next(iter(mine.items())), list(mine.items())[-1]
    gap_first, gap_last = first["warm_private"] - first["cold"], last["warm_private"] - last["cold"]
    return Claim(
        f"Fig. 4, |A| = {n_actions}",
        "the warm gap over cold grows with users",
        "yes",
        f"private − cold {gap_first:+.4f} at {u_first:,} → {gap_last:+.4f} at {u_last:,}",
        "reproduced" if gap_last > gap_first else "not reproduced",
    )


def _panel(ax, mine: dict[int, dict[str, Any]], n_actions: int) -> None:
    plot_settings(ax, mine, REFERENCE_FIG4.get(n_actions))
    ax.set(xscale="log", xlabel="number of early (sharing) users", ylabel="average reward", title=f"|A| = {n_actions}")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, title="solid: ours, dotted: reference", title_fontsize=7)


def report(options: Fig4Options, points: dict[str, dict[str, Any]], out: Path) -> PaperReport:
    n_actions, early_users, mapping = options.n_actions, options.early_users, options.mapping
    paper = PaperReport(
        "p2b-fig4", f"P2B paper, Fig. 4 (synthetic, d = {options.dim}, t = 10, k = {options.n_codes}, {mapping})"
    )
    fig, axes = plt.subplots(1, len(n_actions), figsize=(5.2 * len(n_actions), 4.2), dpi=110, squeeze=False)
    for ax, a in zip(axes[0], n_actions, strict=True):
        mine = {u: points[label(a, u)] for u in early_users}
        paper.tables[f"|A| = {a}"] = _table(mine, a)
        _panel(ax, mine, a)
        paper.claims += [ordering_claim(f"Fig. 4, |A| = {a}", mine), _gap_claim(mine, a)]
    top = {a: points[label(a, early_users[-1])]["warm_non_private"] for a in n_actions}
    paper.claims.append(
        Claim(
            "Fig. 4",
            "more actions lower the reward",
            "yes",
            ", ".join(f"|A|={a}: {r:.4f}" for a, r in top.items()),
            "reproduced" if list(top.values()) == sorted(top.values(), reverse=True) else "partly",
        )
    )
    fig.suptitle("P2B Fig. 4 reproduced: mean reward of late users over their t = 10 rounds")
    paper.add_figure(fig, out / "p2b-fig4.png")
    epsilon = points[label(n_actions[-1], early_users[-1])]["epsilon"]
    paper.notes += [
        f"Generator: {mapping} ({'the reference code' if mapping == 'linear' else 'the paper'}'s, spec §9.5); "
        "one-hot codes, a copied warm model per late user, random tie-breaking (spec §9.1, §9.2).",
        "x = early (sharing) users as in the reference; total users = x / 0.7; 30% are measured (spec §9.17).",
        "Reference numbers: spec §5.2.1 (|A| = 10 from the stored run; |A| = 50 read off the reference plot).",
        f"Privacy: ε = {epsilon:.4f} (p = 0.5); every released code had a crowd ≥ 10.",
    ]
    return paper
