"""Bias, standard deviation, RMSE and interval coverage of the DP off-policy estimators against the true value, over ε.

On synthetic logs with known ground truth (0/1 rewards; ε-greedy logging at 0.5 over five actions keeps every pscore
at least 0.1, so λ = 10 clips no weight and every estimator aims at the policy's true value), each repeat draws a
fresh log and estimates a fixed near-greedy target's value with DP-IPS, DP-SNIPS and DP-DR at each ε (Laplace
noise, or Gaussian with ``--delta``; ε = inf is the non-private clipped estimator), DR's reward model fitted on an
independent log. Printed per estimator and ε: bias, standard deviation and RMSE against the truth, and the share of
95% intervals that cover it.

Run ``python benchmarks/dp_estimators.py [--rounds 2000 --repeats 200 --delta 0]``.
"""

from __future__ import annotations

import argparse
import math

import numpy as np
from _smoke import parse_args
from rich.console import Console
from rich.table import Table

from privbandits.evaluation import dp_dr, dp_ips, dp_snips, ridge_reward_model
from privbandits.logs import synthetic_feedback
from privbandits.validation import Integer, Real

PROBLEM = {"n_actions": 5, "dim": 4, "reward_type": "logistic", "policy": "epsilon_greedy", "epsilon": 0.5,
           "problem_seed": 7}  # fmt: skip
EPSILONS = (0.3, 1.0, 3.0, 10.0, 30.0, math.inf)


def target(log, exploration: float = 0.3) -> np.ndarray:
    """Near-greedy on the true expected reward: 1 − ε on the best action, ε spread evenly."""
    pi = np.full((log.n_rounds, log.n_actions), exploration / log.n_actions)
    pi[np.arange(log.n_rounds), log.expected_reward.argmax(axis=1)] += 1.0 - exploration
    return pi


def measure(rounds: int, repeats: int, epsilons: tuple[float, ...], delta: float) -> dict[tuple[str, float], list]:
    """``{(estimator, ε): [(estimate, covers the truth), …]}`` over ``repeats`` fresh logs."""
    big = synthetic_feedback(100_000, seed=10**6, **PROBLEM)
    truth = big.policy_value(target(big))
    found: dict[tuple[str, float], list] = {}
    for seed in range(repeats):
        log = synthetic_feedback(rounds, seed=seed, **PROBLEM)
        model = ridge_reward_model(log, fit_on=synthetic_feedback(rounds, seed=10**5 + seed, **PROBLEM))
        pi = target(log)
        for index, epsilon in enumerate(epsilons):
            options = {"epsilon": epsilon, "delta": delta if math.isfinite(epsilon) else 0.0, "weight_clip": 10.0,
                       "rng": np.random.default_rng([seed, index]), "seed": seed}  # fmt: skip
            for result in (dp_ips(log, pi, **options), dp_snips(log, pi, **options), dp_dr(log, pi, model, **options)):
                found.setdefault((result.method, epsilon), []).append((result.estimate - truth, result.covers(truth)))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2000, help="rounds of each synthetic log")
    parser.add_argument("--repeats", type=int, default=200, help="logs drawn (fresh data and noise each)")
    parser.add_argument("--delta", type=float, default=0.0, help="δ of each estimate (0: Laplace noise)")
    checks = {"rounds": Integer(2), "delta": Real(low=0, high=1, high_open=True)}
    args = parse_args(parser, checks, rounds=200, repeats=3)
    epsilons = EPSILONS if not args.smoke else (1.0, math.inf)
    found = measure(args.rounds, args.repeats, epsilons, args.delta)
    noise = "Laplace" if args.delta == 0 else f"Gaussian, δ = {args.delta:g}"
    table = Table(title=f"DP estimators against the truth: {args.repeats} logs of {args.rounds:,} rounds, {noise}")
    for column in ("estimator", "ε", "bias", "std", "RMSE", "95% coverage"):
        table.add_column(column, justify="right")
    for (method, epsilon), values in sorted(found.items()):
        errors = np.array([error for error, _ in values])
        coverage = np.mean([covered for _, covered in values])
        rmse = math.sqrt((errors**2).mean())
        table.add_row(method, "∞" if math.isinf(epsilon) else f"{epsilon:g}", f"{errors.mean():+.4f}",
                      f"{errors.std(ddof=1):.4f}", f"{rmse:.4f}", f"{coverage:.3f}")  # fmt: skip
    Console().print(table)


if __name__ == "__main__":
    main()
