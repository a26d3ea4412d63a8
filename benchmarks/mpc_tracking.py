"""How closely the private ε-greedy learner (MPC paper Alg. 1) tracks its float64 twin on real data.

Both learners play the same sweep(s) of a data set's training images (the order of ``mpc-fig2``'s units:
seeded ``1000 + seed``) with the same exploration draws (seed ``seed``), one round each in turn. Printed:
the fraction of rounds in which they pull the same arm (overall and in the last quarter), the average
reward of each over the last quarter (the learned policy's level, as ``mpc-fig2`` reports it), and the
private learner's invalid openings. A rounding bias in the fixed-point updates shows as agreement
falling with the pulls per arm (issue 29).

Run ``python benchmarks/mpc_tracking.py [--data mnist5k] [--sweeps 3] [--epsilon 0.01] [--seed 0]``
(``privbandits data fetch mnist5k`` first, or ``fashion-mnist`` / ``mnist`` for the 60,000-image sets;
``--data digits`` needs nothing).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from _smoke import parse_args

from privbandits.datasets.cache import cached_folder
from privbandits.papers.mpc.sweeps import DIGITS, data_params, dataset, environment
from privbandits.protocols.mpc_bandit import MPCBanditConfig, PlaintextEpsilonGreedy, PrivateEpsilonGreedy


def track(data: str, sweeps: float, epsilon: float, seed: int, rounds: int | None = None) -> dict[str, float]:
    """Arms and rewards of the private learner and its twin, round by round; their agreement and levels."""
    params = data_params(data, cached_folder("mnist") if data == "mnist" else None)
    images = dataset(params["mnist"], params.get("data"))
    config = MPCBanditConfig(epsilon=epsilon)
    learners = [PrivateEpsilonGreedy(config, seed=seed), PlaintextEpsilonGreedy(config, seed=seed)]
    envs = [environment(images, params["mnist"], DIGITS, params.get("data")) for _ in learners]
    for env in envs:
        env.reset(np.random.default_rng(1000 + seed))
    total = rounds if rounds is not None else round(sweeps * len(images.train.labels))
    arms, rewards = np.empty((2, total), dtype=int), np.empty((2, total))
    for t in range(total):
        for k, (learner, env) in enumerate(zip(learners, envs, strict=True)):
            arms[k, t] = learner.step(env.next_round().contexts, env.reward)
            rewards[k, t] = env.reward(arms[k, t])
    quarter = slice(total - max(1, total // 4), total)
    same = arms[0] == arms[1]
    return {
        "rounds": total,
        "agreement": float(same.mean()),
        "agreement_last_quarter": float(same[quarter].mean()),
        "private_last_quarter": float(rewards[0, quarter].mean()),
        "twin_last_quarter": float(rewards[1, quarter].mean()),
        "invalid": learners[0].invalid_openings,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="mnist5k", choices=("mnist5k", "fashion", "mnist", "digits"))
    parser.add_argument("--sweeps", type=float, default=1.0, help="passes over the training images")
    parser.add_argument("--rounds", type=int, default=None, help="rounds (instead of --sweeps)")
    parser.add_argument("--epsilon", type=float, default=0.01)
    parser.add_argument("--seed", type=int, nargs="+", default=[0])
    args = parse_args(parser, data="digits", rounds=60)
    for seed in args.seed:
        start = time.perf_counter()
        result = track(args.data, args.sweeps, args.epsilon, seed, args.rounds)
        print(
            f"{args.data} ε = {args.epsilon} seed {seed}: {result['rounds']} rounds, arm agreement "
            f"{result['agreement']:.4f} (last quarter {result['agreement_last_quarter']:.4f}), last-quarter reward "
            f"private {result['private_last_quarter']:.4f} / twin {result['twin_last_quarter']:.4f}, "
            f"invalid openings {result['invalid']} ({time.perf_counter() - start:.0f} s)",
            flush=True,
        )


if __name__ == "__main__":
    main()
