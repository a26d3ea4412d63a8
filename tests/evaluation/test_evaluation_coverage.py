"""Coverage (issue 49 acceptance): over repeats of one synthetic problem, the 95% intervals of IPS, SNIPS and DR
cover the true value at a rate inside the 99.9% binomial band around 0.95.

The truth is the target's value over the context distribution, ``E_x[Σ_a π_e(a|x) q(x, a)]``, which the
estimators estimate; it is measured on one large draw of the same problem (200 000 rounds: its own error,
about 1e-3, is far below the intervals' half-widths, about 0.05). The DP estimators' parametric intervals are held
to the same band on a problem with 0/1 rewards and no clipped weight. Slow: run with ``pytest -m slow``.
"""

from __future__ import annotations

from math import comb

import numpy as np
import pytest

from privbandits.evaluation import dr, ips, snips
from privbandits.logs import synthetic_feedback

REPEATS = 500
DP_REPEATS = 400
ROUNDS = 1000
PROBLEM = {"n_actions": 5, "dim": 4, "noise": 0.5, "problem_seed": 7}


def greedy_target(log, epsilon=0.3):
    pi = np.full((log.n_rounds, log.n_actions), epsilon / log.n_actions)
    pi[np.arange(log.n_rounds), log.expected_reward.argmax(axis=1)] += 1.0 - epsilon
    return pi


def binomial_band(n: int, p: float, mass: float) -> tuple[float, float]:
    """The central ``mass`` interval of Binomial(n, p), as rates: the largest k_low with P(X < k_low) <= tail and
    the smallest k_high with P(X > k_high) <= tail."""
    tail = (1.0 - mass) / 2.0
    pmf = [comb(n, k) * p**k * (1 - p) ** (n - k) for k in range(n + 1)]
    cdf = np.cumsum(pmf)
    low = int(np.searchsorted(cdf, tail, side="right"))  # P(X <= low - 1) <= tail
    high = int(np.searchsorted(cdf, 1.0 - tail, side="left"))
    return low / n, high / n


def coverage_rates(repeats: int = REPEATS) -> dict[str, float]:
    big = synthetic_feedback(200_000, seed=10**6, **PROBLEM)
    truth = big.policy_value(greedy_target(big))
    covered = {"ips": 0, "snips": 0, "dr": 0, "ips normal": 0, "dr normal": 0}
    for seed in range(repeats):
        log = synthetic_feedback(ROUNDS, seed=seed, **PROBLEM)
        pi = greedy_target(log)
        results = {
            "ips": ips(log, pi, n_bootstrap=400, seed=seed), "snips": snips(log, pi, n_bootstrap=400, seed=seed),
            "dr": dr(log, pi, n_bootstrap=400, seed=seed), "ips normal": ips(log, pi, interval="normal"),
            "dr normal": dr(log, pi, interval="normal"),
        }  # fmt: skip
        for name, result in results.items():
            covered[name] += result.covers(truth)
    return {name: count / repeats for name, count in covered.items()}


@pytest.mark.slow
def test_intervals_cover_the_true_value_at_their_nominal_rate():
    low, high = binomial_band(REPEATS, 0.95, 0.999)
    rates = coverage_rates()
    print(f"coverage over {REPEATS} repeats, band [{low:.3f}, {high:.3f}]: {rates}")
    for name, rate in rates.items():
        assert low <= rate <= high, f"{name}: coverage {rate:.3f} outside [{low:.3f}, {high:.3f}]"


DP_PROBLEM = {"n_actions": 5, "dim": 4, "reward_type": "logistic", "policy": "epsilon_greedy", "epsilon": 0.5,
              "problem_seed": 7}  # fmt: skip
"""0/1 rewards in the DP estimators' reward range; ε-greedy logging over 5 actions at 0.5 keeps every pscore >= 0.1,
so λ = 10 clips no weight and the clipped estimators estimate the policy's value itself."""


def dp_coverage_rates(repeats: int = DP_REPEATS, epsilon: float = 1.0) -> dict[str, float]:
    from privbandits.evaluation import dp_dr, dp_ips, dp_snips, ridge_reward_model

    big = synthetic_feedback(200_000, seed=10**6, **DP_PROBLEM)
    truth = big.policy_value(greedy_target(big))
    covered = {"dp_ips": 0, "dp_snips": 0, "dp_dr": 0}
    options = {"epsilon": epsilon, "weight_clip": 10.0}
    for seed in range(repeats):
        log = synthetic_feedback(ROUNDS, seed=seed, **DP_PROBLEM)
        model = ridge_reward_model(log, fit_on=synthetic_feedback(ROUNDS, seed=10**5 + seed, **DP_PROBLEM))
        pi = greedy_target(log)
        results = [dp_ips(log, pi, rng=seed, seed=seed, **options), dp_snips(log, pi, rng=seed, seed=seed, **options),
                   dp_dr(log, pi, model, rng=seed, seed=seed, **options)]  # fmt: skip
        for result in results:
            covered[result.method] += result.covers(truth)
    return {name: count / repeats for name, count in covered.items()}


@pytest.mark.slow
def test_dp_intervals_cover_the_true_value_at_their_nominal_rate():
    """The DP estimators' parametric intervals (sampling error from the released second moments, the noise's own
    law) cover the true value at 95% over repeats of one problem, at ε = 1 per estimate (Laplace noise)."""
    low, high = binomial_band(DP_REPEATS, 0.95, 0.999)
    rates = dp_coverage_rates()
    print(f"DP coverage over {DP_REPEATS} repeats, band [{low:.3f}, {high:.3f}]: {rates}")
    for name, rate in rates.items():
        assert low <= rate <= high, f"{name}: coverage {rate:.3f} outside [{low:.3f}, {high:.3f}]"
