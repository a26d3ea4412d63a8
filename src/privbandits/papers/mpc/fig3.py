"""Fig. 3: average reward vs η = log(|A|/ε) for three data set sizes T (plaintext twin, 5 runs), and
the private learner at a few η (one run, full sweep) as a check.

Every unit is a whole sweep; the first T rounds of a random-order sweep are a sweep over a random
T-subset, so the sizes are prefixes of the stored rewards and other ``fractions`` reuse the runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from privbandits.experiments.paper import Claim, PaperReport
from privbandits.experiments.tasks import Task
from privbandits.papers.mpc.common import data_of, eta_axis, eta_grid, stand_in_note, title, verdict
from privbandits.papers.mpc.options import Fig3Options
from privbandits.papers.mpc.plots import axes, finish
from privbandits.papers.mpc.sweeps import data_params, rewards_of, sweep_task
from privbandits.privacy.epsilon_greedy import exploration_for_loss
from privbandits.protocols.mpc_bandit import MPCBanditConfig

ARMS = 10


def _twin(eta: float, run: int) -> str:
    return f"eta={eta},run={run}"


def _private(eta: float) -> str:
    return f"private,eta={eta}"


def _config(eta: float) -> MPCBanditConfig:
    return MPCBanditConfig(epsilon=exploration_for_loss(ARMS, eta))


def tasks(options: Fig3Options) -> list[Task]:
    seed, data = options.seed, data_params(options.data, options.mnist)
    twins = [
        sweep_task(_twin(e, r), _config(e), private=False, seed=seed + r, data=data)
        for e in eta_grid(ARMS)
        for r in range(options.runs)
    ]
    private = [sweep_task(_private(e), _config(e), private=True, seed=seed, data=data) for e in options.private_etas]
    return twins + private


def sizes_of(options: Fig3Options, rounds: int) -> list[int]:
    """The data set sizes T: ``fractions`` of one sweep of ``rounds``."""
    return [max(1, round(f * rounds)) for f in options.fractions]


def _prefix_means(points: dict[str, dict[str, Any]], label: str, sizes: list[int]) -> dict[int, float]:
    rewards = rewards_of(points[label])
    return {size: float(rewards[:size].mean()) for size in sizes}


def report(options: Fig3Options, points: dict[str, dict[str, Any]], out: Path) -> PaperReport:
    data, runs, etas = data_of(points), options.runs, eta_grid(ARMS)
    sizes = sizes_of(options, data["train"])
    twin = {(e, r): _prefix_means(points, _twin(e, r), sizes) for e in etas for r in range(runs)}
    private = {e: _prefix_means(points, _private(e), sizes) for e in options.private_etas}
    means = {s: [float(np.mean([twin[e, r][s] for r in range(runs)])) for e in etas] for s in sizes}
    result = PaperReport("mpc-fig3", "MPC paper, Fig. 3 (reward vs privacy loss η, |A| = 10)")
    fig, ax = axes()
    x = eta_axis(etas)
    rows = [["η", "ε"] + [f"T = {s}" for s in sizes] + ["private, run 0 (T = full)", "twin, run 0"]]
    for size in sizes:
        ax.plot(x, means[size], "o-", label=f"T = {size}")
    for i, e in enumerate(etas):
        check = private.get(e)
        rows.append(
            [f"{e:g}", f"{exploration_for_loss(ARMS, e):.4g}"]
            + [f"{means[s][i]:.4f}" for s in sizes]
            + [f"{check[sizes[-1]]:.4f}" if check else "–", f"{twin[e, 0][sizes[-1]]:.4f}"]
        )
        if check:
            ax.plot(x[i], check[sizes[-1]], "k*", markersize=10)
    result.tables["Average reward (twin, mean over runs; private and twin of run 0 paired: same samples)"] = rows
    finish(ax, xlabel="η (rightmost: ∞, no exploration)", ylabel="average reward",
           title=title(data, "Fig. 3 (★ private learner)"))  # fmt: skip
    result.add_figure(fig, out / "mpc-fig3.png")
    result.claims += _claims(sizes, etas, means)
    result.notes += [
        stand_in_note(data),
        "The paper's three T values are not given (spec A11): ours are fractions of one sweep; the first T rounds of "
        "a random-order sweep are a sweep over a random T-subset, so one run gives all three.",
        "Curves: plaintext twin (same exploration samples as the private learner); ★: private learner.",
    ]
    return result


def _claims(sizes: list[int], etas: list[float], means: dict[int, list[float]]) -> list[Claim]:
    beats = []
    for size in sizes:
        best = int(np.argmax(means[size][:-1]))
        beats.append((etas[best], means[size][best] - means[size][-1]))
    drop = [means[s][0] for s in sizes]
    top = [max(means[s]) for s in sizes]
    return [
        Claim(
            "Fig. 3",
            "at some privacy levels the private learner beats the non-private one (η = ∞)",
            "yes",
            "; ".join(
                f"T = {s}: best finite η = {e:g}, {g:+.4f} vs η = ∞" for s, (e, g) in zip(sizes, beats, strict=True)
            ),
            verdict(all(g > 0 for _, g in beats), any(g > 0 for _, g in beats)),
        ),
        Claim(
            "Fig. 3",
            "strong privacy (small η) lowers reward: too much exploration",
            "yes",
            "; ".join(
                f"T = {s}: {d:.3f} at η = {etas[0]:g} vs best {t:.3f}" for s, d, t in zip(sizes, drop, top, strict=True)
            ),
            verdict(all(d < t - 0.05 for d, t in zip(drop, top, strict=True))),
        ),
    ]
