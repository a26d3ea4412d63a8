"""Fig. 2: average reward during one sweep of the private learner and its twin for four ε (paper: 10 runs)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from privbandits.experiments.paper import Claim, PaperReport
from privbandits.experiments.tasks import Task
from privbandits.papers.mpc.common import data_of, short_name, stand_in_note, title, verdict
from privbandits.papers.mpc.options import Fig2Options
from privbandits.papers.mpc.plots import axes, finish
from privbandits.papers.mpc.reference import PAPER_REWARD_LEVEL
from privbandits.papers.mpc.sweeps import data_params, rewards_of, sweep_task
from privbandits.privacy.epsilon_greedy import action_privacy_loss
from privbandits.protocols.mpc_bandit import MPCBanditConfig

KINDS = ("private", "plain")


def _label(eps: float, kind: str, run: int) -> str:
    return f"eps={eps},{kind},run={run}"


def tasks(options: Fig2Options) -> list[Task]:
    data = data_params(options.data, options.mnist)
    return [
        sweep_task(_label(e, kind, r), MPCBanditConfig(epsilon=e), private=kind == "private", seed=options.seed + r,
                   data=data)
        for e in options.epsilons
        for kind in KINDS
        for r in range(options.runs)
    ]  # fmt: skip


def running_mean(rewards: np.ndarray, points: int = 40) -> tuple[list[int], np.ndarray]:
    """The running average reward at ``points`` rounds spread over the sweep."""
    at = np.unique(np.linspace(1, len(rewards), points).round().astype(int))
    return at.tolist(), np.cumsum(rewards)[at - 1] / at


def last_quarter(rewards: np.ndarray) -> float:
    """Average reward over the last quarter of a sweep: the learned policy's level, not the warm-up's."""
    return float(rewards[-max(1, len(rewards) // 4) :].mean())


def report(options: Fig2Options, points: dict[str, dict[str, Any]], out: Path) -> PaperReport:
    data, runs = data_of(points), options.runs
    rounds = data["train"]
    result = PaperReport("mpc-fig2", f"MPC paper, Fig. 2 (reward during training, {runs} runs, |P| = 2)")
    fig, ax = axes()
    rows = [["ε", "η = log(|A|/ε)", "private (mean ± sd over runs)", "plaintext twin", "|difference|",
             "last quarter of the sweep: private / twin"]]  # fmt: skip
    diverged = []
    late = {}
    same = []
    for index, eps in enumerate(options.epsilons):
        curves = {k: [running_mean(rewards_of(points[_label(eps, k, r)])) for r in range(runs)] for k in KINDS}
        at = curves["private"][0][0]
        private, plain = (np.array([curve for _, curve in curves[k]]) for k in KINDS)
        colour = f"C{index}"
        ax.plot(at, private.mean(axis=0), color=colour, label=f"ε = {eps} private")
        ax.fill_between(at, private.min(axis=0), private.max(axis=0), color=colour, alpha=0.2)
        ax.plot(at, plain.mean(axis=0), ":", color=colour, label=f"ε = {eps} plaintext")
        p, q = (np.array([points[_label(eps, k, r)]["mean"] for r in range(runs)]) for k in KINDS)
        gap = abs(p.mean() - q.mean())
        late[eps], late_twin = (
            float(np.mean([last_quarter(rewards_of(points[_label(eps, k, r)])) for r in range(runs)])) for k in KINDS
        )
        if late_twin - late[eps] > 0.05:
            diverged.append((eps, sum(points[_label(eps, "private", r)]["invalid"] or 0 for r in range(runs))))
        same.append(gap <= 3 * math.sqrt(0.25 / (rounds * runs)) * math.sqrt(2))
        rows.append(
            [str(eps), f"{action_privacy_loss(10, eps):.2f}", f"{p.mean():.4f} ± {p.std():.4f}", f"{q.mean():.4f}",
             f"{gap:.4f}", f"{late[eps]:.4f} / {late_twin:.4f}"]
        )  # fmt: skip
    result.tables["Average reward over the sweep"] = rows
    finish(ax, {"fontsize": 7, "ncol": 2}, xlabel="rounds", ylabel="average reward so far",
           title=title(data, "Fig. 2: private (solid, band: min–max) vs twin"))  # fmt: skip
    result.add_figure(fig, out / "mpc-fig2.png")
    result.claims.append(
        Claim(
            "Fig. 2 / §6",
            "private and non-private ε-greedy give the same rewards for a range of ε",
            "same observed rewards (values not given)",
            f"|private − plaintext| within 3 binomial sd at {sum(same)}/{len(options.epsilons)} ε",
            verdict(all(same), any(same)),
        )
    )
    small = min(options.epsilons)
    level = float(np.mean([points[_label(small, "private", r)]["mean"] for r in range(runs)]))
    real_mnist = not data["stand_in"] and short_name(data).startswith("MNIST")
    result.claims.append(
        Claim(
            "Fig. 2 / Fig. 8",
            f"reward level of the private learner on MNIST (ε = {small}, L = 20)",
            f"≈ {PAPER_REWARD_LEVEL} (Fig. 8's only y-tick; the curves are not in the text), 60,000 rounds",
            f"{late[small]:.4f} over the last quarter, {level:.4f} over all {rounds:,} rounds of {short_name(data)}",
            verdict(abs(late[small] - PAPER_REWARD_LEVEL) <= 0.05, abs(late[small] - PAPER_REWARD_LEVEL) <= 0.1)
            if real_mnist
            else f"not comparable ({'stand-in' if data['stand_in'] else 'other'} data)",
        )
    )
    result.notes.append(stand_in_note(data))
    if diverged:
        result.notes.append(
            f"At ε = {', '.join(str(e) for e, _ in diverged)} the private learner falls more than 0.05 below its twin "
            f"late in the sweep ({rounds:,} rounds; invalid openings: {', '.join(str(n) for _, n in diverged)}): "
            "fixed-point precision loss (spec §6.6). Once an "
            "arm has been pulled n times, its Sherman–Morrison downdate u uᵀ/d is of order 1/n², below the "
            "resolution 2^-L after about 2^(L/2) pulls; a truncation that rounds without bias (this project's) "
            "keeps W⁻¹ on track there (issue 29), so a gap this large points at another cause."
        )
    result.notes.append(
        "The paper's 'average reward' may be a running or a windowed mean (spec A11); the reward level is judged "
        "on the last quarter of the sweep, the running mean from round 1 includes the warm-up. "
        "The paper's four ε values are not in the text (spec A11); ours are a choice. The twin uses the same "
        "exploration samples, so differences come only from fixed-point error: at near-ties, and over long sweeps "
        "in the model itself."
    )
    return result
