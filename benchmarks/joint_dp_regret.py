"""Joint-DP LinUCB at its defaults: final regret as a share of uniform random's (issue 47, "tight by default").

The problem is the privacy map's linear-Gaussian panel at d = 10, K = 10
(:class:`privbandits.envs.LinearGaussianBandit`:
unit-norm contexts and θ*, Gaussian reward noise, every variance 0.05). The learner is
:class:`privbandits.protocols.dp.JointDPLinUCB` with ε = 1 (``--epsilon``), δ = 1e-5, its horizon T and nothing
else set: what a user who takes the defaults gets. Regret is the pseudo-regret, ``Σ_t max_a E[r_a] − E[r_{a_t}]``;
uniform random's is its expectation, ``Σ_t max_a E[r_a] − mean_a E[r_a]``, on the same rounds.
``--calibration paper`` shows the paper's σ (the default before issue 47) on the same seeds. Target: at most 15%
of uniform random's at T = 20,000. ``--continual-release tree sqrt_factorization`` compares the tree (the default)
with the square-root matrix factorization (:mod:`privbandits.privacy.factorization`) at equal ε on the same seeds
(the same problems and rounds; the learners' noise differs): each seed's regret with the factorization over the
tree's.

Run ``python benchmarks/joint_dp_regret.py [--horizon T] [--seeds 0 1 2] [--calibration analytic paper]
[--continual-release tree sqrt_factorization] [--epsilon 1]``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from _smoke import parse_args

from privbandits.envs import LinearGaussianBandit
from privbandits.protocols.dp import JointDPLinUCB
from privbandits.validation import Integer, Real

TARGET = 0.15


def run(
    seed: int, horizon: int, dim: int, n_arms: int, calibration: str | None, release: str = "tree", epsilon: float = 1.0
) -> tuple[float, float, float]:
    """(the learner's final pseudo-regret, uniform random's, its noise σ) of one seed."""
    env_rng, learner_rng = (np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(2))
    env = LinearGaussianBandit(dim=dim, n_arms=n_arms)
    env.reset(env_rng)
    options: dict[str, str] = {} if calibration is None else {"calibration": calibration}
    if release != "tree":
        options["continual_release"] = release
    learner = JointDPLinUCB(n_arms, dim, epsilon=epsilon, delta=1e-5, horizon=horizon, rng=learner_rng, **options)
    regret = uniform = 0.0
    for _ in range(horizon):
        round_ = env.next_round()
        arm = learner.select(round_.contexts)
        best = float(round_.expected_rewards.max())
        regret += best - float(round_.expected_rewards[arm])
        uniform += best - float(round_.expected_rewards.mean())
        learner.update(round_.contexts, arm, env.reward(arm))
    return regret, uniform, learner.noise_std


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--horizon", type=int, default=20_000, help="T, rounds per seed (default 20,000)")
    parser.add_argument("--dim", type=int, default=10, help="d (default 10)")
    parser.add_argument("--arms", type=int, default=10, help="K (default 10)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2], help="seeds (default 0 1 2)")
    parser.add_argument("--calibration", nargs="+", default=["default"], choices=["default", "analytic", "paper"],
                        help="the learner's calibration: default (none set), analytic or paper")  # fmt: skip
    parser.add_argument("--continual-release", nargs="+", default=["tree"], choices=["tree", "sqrt_factorization"],
                        help="how the prefix sums are released: tree (default) and/or sqrt_factorization")  # fmt: skip
    parser.add_argument("--epsilon", type=float, default=1.0, help="the privacy ε (default 1)")
    checks = {"horizon": Integer(2, note="rounds per seed"), "dim": Integer(1), "arms": Integer(1),
              "epsilon": Real(low=0, low_open=True)}  # fmt: skip
    args = parse_args(parser, checks, horizon=300, seeds=[0])
    print(f"joint-DP LinUCB, ε = {args.epsilon:g}, δ = 1e-5, d = {args.dim}, K = {args.arms}, T = {args.horizon:,}, "
          f"seeds {', '.join(map(str, args.seeds))}")  # fmt: skip
    for calibration in args.calibration:
        regrets = {}
        for release in args.continual_release:
            if release != "tree" and calibration == "paper":
                print(f"{calibration} / {release}: not run (the factorization needs the analytic calibration)")
                continue
            regrets[release] = measure(args, None if calibration == "default" else calibration, release)
        if len(regrets) == 2:
            ratios = [ours / tree for ours, tree in zip(regrets["sqrt_factorization"], regrets["tree"], strict=True)]
            print(f"{calibration}: the factorization's regret over the tree's, per seed "
                  f"{', '.join(f'{ratio:.3f}' for ratio in ratios)}; mean {np.mean(ratios):.3f}")  # fmt: skip


def measure(args: argparse.Namespace, calibration: str | None, release: str) -> list[float]:
    """Run every seed with one calibration and continual release, print each and the mean share; the regrets."""
    label = f"{calibration or 'default'} / {release}"
    start = time.perf_counter()
    results = [run(seed, args.horizon, args.dim, args.arms, calibration, release, args.epsilon) for seed in args.seeds]
    shares = [regret / uniform for regret, uniform, _ in results]
    for seed, (regret, uniform, std), share in zip(args.seeds, results, shares, strict=True):
        print(f"  {label} seed {seed}: regret {regret:9.1f}, uniform random {uniform:9.1f}, "
              f"{100 * share:5.1f}% (σ = {std:.4g})")  # fmt: skip
    mean = float(np.mean(shares))
    verdict = "meets" if mean <= TARGET else "MISSES"
    print(f"{label}: mean {100 * mean:.1f}% of uniform random's regret ({verdict} the {100 * TARGET:.0f}% "
          f"target; {time.perf_counter() - start:.1f} s)")  # fmt: skip
    return [regret for regret, _, _ in results]


if __name__ == "__main__":
    main()
