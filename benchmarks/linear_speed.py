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
from _smoke import bench_extra, parse_args
from rich.console import Console
from rich.table import Table
from threadpoolctl import threadpool_info, threadpool_limits

from privbandits.envs import LinearGaussianBandit, normalised_gaussian
from privbandits.linear import LinUCB
from privbandits.validation import Real

with bench_extra("linear_speed.py"):  # the peer libraries
    from contextualbandits.linreg import LinearRegression as CBLinearRegression
    from contextualbandits.online import LinUCB as CBLinUCB
    from mabwiser.mab import MAB, LearningPolicy
    from river import bandit as river_bandit
    from river import linear_model as river_linear_model

CONFIGS = ((20, 10), (100, 10), (100, 100))
VARIANCE = 0.05  # contexts, parameters and noise, as in the env (spec §5.1)
REG = 1.0
COLUMNS = ("layout", "library", "runs", "rounds/s", "ours/peer", "same arms", "reward", "ours", "regret", "ours ")


@dataclass
class Workload:
    """Pre-drawn rounds: what the learner sees, every arm's reward, expected rewards."""

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
    return Workload(contexts, rewards, expected)


def disjoint_workload(dim: int, n_arms: int, rounds: int, seed: int) -> Workload:
    """One shared unit-norm context per round, a unit-norm ``θ_a`` per arm (module docstring)."""
    rng = np.random.default_rng(seed)
    thetas = normalised_gaussian(rng, (n_arms, dim), VARIANCE)
    contexts = normalised_gaussian(rng, (rounds, dim), VARIANCE)
    expected = contexts @ thetas.T
    noise = rng.normal(0.0, np.sqrt(VARIANCE), size=(rounds, 1))
    return Workload(contexts, expected + noise, expected)


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
        self.shared, self.alpha = layout == "shared", float(alpha)
        options = dict(lambda_=REG, fit_intercept=False, use_float=False, method="sm")
        if self.shared:
            self.model = CBLinearRegression(**options)
        else:
            self.cb = CBLinUCB(
                n_arms, alpha=self.alpha, ucb_from_empty=True, random_state=np.random.default_rng(seed), **options
            )

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
        self.shared = layout == "shared"
        prior, noise = REG / alpha**2, 1.0 / alpha**2  # module docstring
        if self.shared:
            self.model = river_linear_model.BayesianLinearRegression(alpha=prior, beta=noise)
        else:
            self.policy = river_bandit.LinUCBDisjoint(alpha=prior, beta=noise, seed=seed)
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
    work: Workload
    arms: np.ndarray  # arm chosen in each completed round
    seconds: float

    @property
    def rounds(self) -> int:
        return len(self.arms)

    @property
    def complete(self) -> bool:
        return self.rounds == len(self.work.rewards)

    def outcome(self, rounds: int | None = None) -> tuple[float, float]:
        """Cumulative realised reward and pseudo-regret over the first ``rounds``."""
        arms = self.arms[:rounds]
        t = np.arange(len(arms))
        expected = self.work.expected[t]
        regret = (expected.max(axis=1) - expected[t, arms]).sum()
        return float(self.work.rewards[t, arms].sum()), float(regret)


def play(adapter, work: Workload, budget_s: float) -> Run:
    """Timed select/update loop over the workload, stopped early after ``budget_s``."""
    contexts, rewards = work.contexts, work.rewards
    select, update = adapter.select, adapter.update
    arms = np.empty(len(rewards), dtype=np.int64)
    start = time.perf_counter()
    deadline = start + budget_s
    for t in range(len(rewards)):
        arm = select(contexts[t])
        update(contexts[t], arm, rewards[t, arm])
        arms[t] = arm
        if t % 50 == 49 and time.perf_counter() > deadline:
            arms = arms[: t + 1]
            break
    return Run(work, arms, time.perf_counter() - start)


def runs_of(adapter: type, setting: tuple, works: list[Workload], budget_s: float) -> list[Run]:
    """One fresh ``adapter(*setting)`` per workload while ``budget_s`` lasts; the first always runs."""
    runs: list[Run] = []
    spent = 0.0
    for work in works:
        if spent >= budget_s or (runs and not runs[-1].complete):
            break
        runs.append(play(adapter(*setting), work, budget_s - spent))
        spent += runs[-1].seconds
    return runs


def bonus_floor_us(dim: int, n_arms: int, repeats: int = 200) -> float:
    """Fastest time of the product ``X @ A_inv`` that every exact shared-layout round needs."""
    rng = np.random.default_rng(0)
    contexts, inverse = rng.standard_normal((n_arms, dim)), rng.standard_normal((dim, dim))
    best = np.inf
    for _ in range(repeats):
        start = time.perf_counter()
        contexts @ inverse
        best = min(best, time.perf_counter() - start)
    return best * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="T = 500 rounds instead of 5000")
    parser.add_argument("--rounds", type=int, default=None, help="override T")
    parser.add_argument(
        "--repeat", type=int, default=3, help="runs per library, run r on seed + r (fastest timed run kept)"
    )
    parser.add_argument("--alpha", type=float, default=0.5, help="LinUCB α (β_t = 0.5 in the paper)")
    parser.add_argument("--budget", type=float, default=120.0, help="seconds per peer and setting")
    parser.add_argument("--blas-threads", type=int, default=1, help="BLAS threads (0: library default)")
    parser.add_argument("--seed", type=int, default=0)
    budget = Real(0, low_open=True, note="seconds per peer and setting")
    args = parse_args(parser, {"budget": budget}, rounds=20, repeat=1, budget=5.0)
    n_rounds = args.rounds or (500 if args.quick else 5000)
    if args.blas_threads:  # after every import, so that each BLAS copy loaded is limited
        threadpool_limits(args.blas_threads)
    blas = ", ".join(f"{i['internal_api']} {i['num_threads']}" for i in threadpool_info())

    console = Console(width=128)
    console.print(
        f"LinUCB, α = {args.alpha}, λ = {REG}, T = {n_rounds}, {args.repeat} runs per library "
        f"(seeds {args.seed}..{args.seed + args.repeat - 1}), BLAS threads: {blas}.\n"
        "rounds/s: fastest run. reward, regret: mean per run; 'ours' beside them is privbandits "
        "on the same seeds and rounds. ours/peer: privbandits timed again right after each peer. A peer past its "
        f"{args.budget:.0f} s budget stops early ('runs' says where; a cut run counts only if no "
        "run finished). 'same arms': rounds of seed 0 before the first arm differing from ours."
    )
    warnings.filterwarnings("ignore")  # peers' deprecation chatter
    worst = np.inf
    floors: list[tuple[int, int, float, float]] = []
    for dim, n_arms in CONFIGS:
        table = Table(title=f"d = {dim}, K = {n_arms}")
        for col in COLUMNS:
            table.add_column(col, justify="left" if col in ("layout", "library") else "right")
        for layout, build in (("shared", shared_workload), ("disjoint", disjoint_workload)):
            works = [build(dim, n_arms, n_rounds, args.seed + r) for r in range(args.repeat)]
            setting = (layout, dim, n_arms, args.alpha, args.seed)
            ours = runs_of(Ours, setting, works, np.inf)
            ours_rate = max(run.rounds / run.seconds for run in ours)
            reward, regret = np.mean([run.outcome() for run in ours], axis=0)
            runs = f"{args.repeat}×{n_rounds}"
            table.add_row(layout, Ours.name, runs, f"{ours_rate:,.0f}", "", "", f"{reward:.2f}", "", f"{regret:.2f}")
            fastest_peer = 0.0
            for peer in PEERS:
                theirs = runs_of(peer, setting, works, args.budget)
                rate = max(run.rounds / run.seconds for run in theirs)
                # ours again right after the peer, so that slow drift of the machine's speed
                # between the two measurements does not enter the ratio
                adjacent = max(run.rounds / run.seconds for run in runs_of(Ours, setting, works, np.inf))
                ratio = max(ours_rate, adjacent) / rate
                worst = min(worst, ratio)
                fastest_peer = max(fastest_peer, rate)
                full = sum(run.complete for run in theirs)
                cut = [] if theirs[-1].complete else [f"{theirs[-1].rounds} (cut)"]
                runs = " + ".join(([f"{full}×{n_rounds}"] if full else []) + cut)
                pairs = list(zip(theirs, ours, strict=False))  # same seeds
                scored = [(run, own) for run, own in pairs if run.complete] or pairs[:1]
                reward, regret = np.mean([run.outcome() for run, _ in scored], axis=0)
                mine = np.mean([own.outcome(run.rounds) for run, own in scored], axis=0)
                differ = np.flatnonzero(theirs[0].arms != ours[0].arms[: theirs[0].rounds])
                table.add_row(
                    "",
                    peer.name,
                    runs,
                    f"{rate:,.0f}",
                    f"{ratio:.1f}x",
                    f"{differ[0]}" if differ.size else "all",
                    f"{reward:.2f}",
                    f"{mine[0]:.2f}",
                    f"{regret:.2f}",
                    f"{mine[1]:.2f}",
                )
            table.add_section()
            if layout == "shared":
                floors.append((dim, n_arms, bonus_floor_us(dim, n_arms), fastest_peer))
        console.print(table)
    console.print(f"Smallest speed-up over a peer: {worst:.1f}x")
    console.print(
        "Shared-layout floor: every LinUCB round computes all K bonuses x^T A^-1 x, at least one (K×d)·(d×d) "
        "product; timed alone (BLAS, fastest of 200) it caps any exact implementation at:"
    )
    for dim, n_arms, floor_us, peer_rate in floors:
        cap = 1e6 / floor_us
        console.print(
            f"  d = {dim}, K = {n_arms}: {floor_us:.1f} µs per round → at most {cap:,.0f} rounds/s, "
            f"{cap / peer_rate:.1f}x the fastest peer"
        )


if __name__ == "__main__":
    main()
