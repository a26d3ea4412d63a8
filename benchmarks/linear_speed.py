"""LinUCB speed and reward: privbandits versus mabwiser, contextualbandits and river.

Every library plays the same pre-drawn rounds with the same α and λ = 1; only
the select/update loop is timed. Two layouts (see ``privbandits.linear``):

``shared``
    One θ, per-arm contexts ``(K, d)`` from
    :class:`privbandits.envs.LinearGaussianBandit` (the vertical O3M paper's
    synthetic problem, spec ``vertical-o3m.md`` §5.1). Peers whose LinUCB is
    per-arm only run it as a single-arm ridge model scored on the K rows.
``disjoint``
    One ridge model per arm (Li et al. 2010) and one shared context per round:
    ``x ~ N(0, 0.05 I_d)`` normalised, a fixed unit-norm ``θ_a`` per arm drawn
    the same way, reward ``x^T θ_a + ε`` with ``ε ~ N(0, 0.05)``.

river has no LinUCB with a bonus ``α sqrt(x^T A^{-1} x)``; its ``LinUCBDisjoint``
scores ``μ + σ`` of a Bayesian linear regression. With prior precision ``λ/α²``
and noise precision ``1/α²`` its mean is the ridge estimate and
``σ = α sqrt(1 + x^T A^{-1} x)``: the closest configuration, not the same rule.

Run ``python benchmarks/linear_speed.py [--quick] [--repeat N]``.
"""

from __future__ import annotations

import argparse
import time
import warnings
from dataclasses import dataclass

import numpy as np
from rich.console import Console
from rich.table import Table

from privbandits.envs import LinearGaussianBandit, normalised_gaussian
from privbandits.linear import LinUCB

CONFIGS = ((20, 10), (100, 10), (100, 100))
VARIANCE = 0.05  # contexts, parameters and noise, as in the env (spec §5.1)
REG = 1.0


@dataclass
class Workload:
    """Pre-drawn rounds: what the learner sees, every arm's reward, expected rewards."""

    layout: str
    contexts: np.ndarray  # (T, K, d) shared layout, (T, d) disjoint layout
    rewards: np.ndarray  # (T, K) realised reward of every arm
    expected: np.ndarray  # (T, K)


def shared_workload(dim: int, n_arms: int, rounds: int, seed: int) -> Workload:
    """Rounds of ``LinearGaussianBandit(dim, n_arms)`` with every arm's reward recorded."""
    env = LinearGaussianBandit(dim=dim, n_arms=n_arms)
    env.reset(np.random.default_rng(seed))
    contexts = np.empty((rounds, n_arms, dim))
    rewards = np.empty((rounds, n_arms))
    expected = np.empty((rounds, n_arms))
    for t in range(rounds):
        contexts[t], expected[t] = env.next_round()
        rewards[t] = [env.reward(a) for a in range(n_arms)]
    return Workload("shared", contexts, rewards, expected)


def disjoint_workload(dim: int, n_arms: int, rounds: int, seed: int) -> Workload:
    """One shared unit-norm context per round, a unit-norm ``θ_a`` per arm (module docstring)."""
    rng = np.random.default_rng(seed)
    thetas = normalised_gaussian(rng, (n_arms, dim), VARIANCE)
    contexts = normalised_gaussian(rng, (rounds, dim), VARIANCE)
    expected = contexts @ thetas.T
    noise = rng.normal(0.0, np.sqrt(VARIANCE), size=(rounds, 1))
    return Workload("disjoint", contexts, expected + noise, expected)


# -- adapters: select(contexts) -> arm, update(contexts, arm, reward) ----------
class Ours:
    name = "privbandits"

    def __init__(self, layout: str, dim: int, n_arms: int, alpha: float, seed: int) -> None:
        self.policy = LinUCB(n_arms, dim, alpha=alpha, layout=layout, reg=REG, rng=seed)
        self.select, self.update = self.policy.select, self.policy.update


class MabWiser:
    """``MAB`` with ``LearningPolicy.LinUCB``; shared layout: one arm scored on the K rows."""

    name = "mabwiser"

    def __init__(self, layout: str, dim: int, n_arms: int, alpha: float, seed: int) -> None:
        from mabwiser.mab import MAB, LearningPolicy

        self.shared = layout == "shared"
        arms = [0] if self.shared else list(range(n_arms))
        self.mab = MAB(arms, LearningPolicy.LinUCB(alpha=alpha, l2_lambda=REG), seed=seed)
        self.mab.fit([], [], np.empty((0, dim)))  # A = λI, b = 0 for every arm

    def select(self, contexts: np.ndarray) -> int:
        if self.shared:
            scores = self.mab.predict_expectations(contexts)
            return int(np.argmax([s[0] for s in scores]))
        return int(self.mab.predict(contexts[None]))

    def update(self, contexts: np.ndarray, arm: int, reward: float) -> None:
        x = contexts[arm] if self.shared else contexts
        self.mab.partial_fit([0 if self.shared else arm], [reward], x[None])


class ContextualBandits:
    """``online.LinUCB`` (double precision, Sherman–Morrison, no intercept, no prior).

    ``online.LinUCB`` needs at least two arms, so the shared layout uses its
    per-arm model, ``linreg.LinearRegression.predict_ucb``, on the K rows.
    """

    name = "contextualbandits"

    def __init__(self, layout: str, dim: int, n_arms: int, alpha: float, seed: int) -> None:
        from contextualbandits.linreg import LinearRegression
        from contextualbandits.online import LinUCB as CBLinUCB

        self.shared, self.alpha = layout == "shared", float(alpha)
        options = dict(lambda_=REG, fit_intercept=False, use_float=False, method="sm")
        if self.shared:
            self.model = LinearRegression(**options)
        else:
            self.cb = CBLinUCB(n_arms, alpha=self.alpha, ucb_from_empty=True,
                               random_state=np.random.default_rng(seed),
                               **options)

    def select(self, contexts: np.ndarray) -> int:
        if self.shared:
            return int(np.argmax(self.model.predict_ucb(contexts, self.alpha)))
        return int(self.cb.predict(contexts[None])[0])

    def update(self, contexts: np.ndarray, arm: int, reward: float) -> None:
        if self.shared:
            self.model.partial_fit(contexts[arm][None], np.array([reward]))
        else:
            self.cb.partial_fit(contexts[None], np.array([arm]), np.array([reward]))


class River:
    """``bandit.LinUCBDisjoint``; shared layout: its ``BayesianLinearRegression`` on the K rows."""

    name = "river"

    def __init__(self, layout: str, dim: int, n_arms: int, alpha: float, seed: int) -> None:
        from river import bandit, linear_model

        self.shared = layout == "shared"
        prior, noise = REG / alpha**2, 1.0 / alpha**2  # module docstring
        if self.shared:
            self.model = linear_model.BayesianLinearRegression(alpha=prior, beta=noise)
        else:
            self.policy = bandit.LinUCBDisjoint(alpha=prior, beta=noise, seed=seed)
            self.arms = list(range(n_arms))

    def select(self, contexts: np.ndarray) -> int:
        if self.shared:
            dists = [self.model.predict_one(dict(enumerate(x)), with_dist=True) for x in contexts]
            return int(np.argmax([d.mu + d.sigma for d in dists]))
        return self.policy.pull(self.arms, context=dict(enumerate(contexts)))

    def update(self, contexts: np.ndarray, arm: int, reward: float) -> None:
        if self.shared:
            self.model.learn_one(dict(enumerate(contexts[arm])), reward)
        else:
            self.policy.update(arm, dict(enumerate(contexts)), reward)


PEERS = (MabWiser, ContextualBandits, River)


@dataclass
class Run:
    rounds: int
    seconds: float
    rewards: np.ndarray  # cumulative realised reward after each round
    regret: float

    @property
    def rate(self) -> float:
        return self.rounds / self.seconds


def play(adapter, work: Workload, budget_s: float) -> Run:
    """Select/update over the workload until done or ``budget_s`` is spent."""
    n_rounds = len(work.rewards)
    got = np.empty(n_rounds)
    regret = 0.0
    contexts, rewards, expected = work.contexts, work.rewards, work.expected
    select, update = adapter.select, adapter.update
    start = time.perf_counter()
    deadline = start + budget_s
    t = 0
    while t < n_rounds:
        arm = select(contexts[t])
        update(contexts[t], arm, rewards[t, arm])
        got[t] = rewards[t, arm]
        regret += expected[t].max() - expected[t, arm]
        t += 1
        if t % 50 == 0 and time.perf_counter() > deadline:
            break
    seconds = time.perf_counter() - start
    return Run(t, seconds, np.cumsum(got[:t]), regret)


def best_of(make, work: Workload, repeat: int, budget_s: float) -> Run:
    """Fastest of ``repeat`` fresh runs (all on the same rounds); later repeats share the budget."""
    runs: list[Run] = []
    spent = 0.0
    for _ in range(repeat):
        runs.append(play(make(), work, budget_s - spent if runs else budget_s))
        spent += runs[-1].seconds
        if runs[-1].rounds < len(work.rewards) or spent >= budget_s:
            break
    return min(runs, key=lambda r: (-r.rounds, r.seconds))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="T = 500 rounds instead of 5000")
    parser.add_argument("--rounds", type=int, default=None, help="override T")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per library (best kept)")
    parser.add_argument("--alpha", type=float, default=0.5, help="LinUCB α (β_t = 0.5 in the paper)")
    parser.add_argument("--budget", type=float, default=120.0, help="seconds per peer and setting")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.repeat < 1 or args.budget <= 0:
        parser.error("--repeat must be >= 1 and --budget > 0")
    n_rounds = args.rounds or (500 if args.quick else 5000)

    console = Console()
    console.print(
        f"LinUCB, α = {args.alpha}, λ = {REG}, T = {n_rounds}, best of {args.repeat}, "
        f"seed {args.seed}; peers stop after {args.budget:.0f} s (rounds column says where)."
    )
    warnings.filterwarnings("ignore")  # peers' deprecation chatter
    worst = np.inf
    for dim, n_arms in CONFIGS:
        table = Table(title=f"d = {dim}, K = {n_arms}")
        for col in ("layout", "library", "rounds", "rounds/s", "ours/peer", "cum. reward",
                    "ours, same rounds", "cum. regret"):
            table.add_column(col, justify="left" if col in ("layout", "library") else "right")
        for layout, build in (("shared", shared_workload), ("disjoint", disjoint_workload)):
            work = build(dim, n_arms, n_rounds, args.seed)
            args_ = (layout, dim, n_arms, args.alpha, args.seed)
            ours = best_of(lambda: Ours(*args_), work, args.repeat, np.inf)
            table.add_row(layout, Ours.name, f"{ours.rounds}", f"{ours.rate:,.0f}", "",
                          f"{ours.rewards[-1]:.2f}", "", f"{ours.regret:.2f}")
            for peer in PEERS:
                run = best_of(lambda: peer(*args_), work, args.repeat, args.budget)
                ratio = ours.rate / run.rate
                worst = min(worst, ratio)
                table.add_row("", peer.name, f"{run.rounds}", f"{run.rate:,.0f}", f"{ratio:.1f}x",
                              f"{run.rewards[-1]:.2f}", f"{ours.rewards[run.rounds - 1]:.2f}",
                              f"{run.regret:.2f}")
            table.add_section()
        console.print(table)
    console.print(f"Smallest speed-up over a peer: {worst:.1f}x")


if __name__ == "__main__":
    main()
