"""The statistics of an empirical privacy audit: a distinguishing test and a lower bound on ε.

A mechanism M is (ε, δ)-DP only if every test that tells ``M(D)`` from ``M(D′)`` on
neighbouring inputs has false-positive rate α and false-negative rate β with
``1 − β ≤ e^ε α + δ`` (Kairouz, Oh & Viswanath 2015). So any test with measured rates
gives ``ε ≥ ln((1 − δ − β)/α)``.

:func:`audit_samples` turns the released outputs of many runs on each side into such
a bound, honestly: the samples are split in halves; the first half fits the test
statistic (a likelihood ratio) and chooses its threshold; the second half alone
estimates the chosen test's α and β, each with a one-sided Clopper–Pearson upper bound at
``1 − (1 − confidence)/2`` (a union bound, so both hold with the stated confidence).
The bound is therefore a ``confidence`` lower bound on the mechanism's true ε.

:func:`gaussian_pair_epsilon` is the exact ε at δ of a Gaussian mechanism whose two
neighbouring outputs are ``μ`` noise standard deviations apart (Balle & Wang 2018,
Theorem 8): the best any test can reach on that pair.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import optimize, special, stats

__all__ = [
    "AuditBound",
    "audit_samples",
    "clopper_pearson_upper",
    "epsilon_lower_bound",
    "gaussian_pair_delta",
    "gaussian_pair_epsilon",
]


def clopper_pearson_upper(successes: np.ndarray | int, trials: int, confidence: float) -> np.ndarray:
    """One-sided Clopper–Pearson upper bound on a binomial rate (1 where every trial succeeded)."""
    k = np.asarray(successes, dtype=np.float64)
    upper = stats.beta.ppf(confidence, k + 1.0, np.maximum(trials - k, 1e-300))
    return np.where(k >= trials, 1.0, upper)


def epsilon_lower_bound(alpha: np.ndarray | float, beta: np.ndarray | float, delta: float) -> np.ndarray:
    """``max(ln((1 − δ − β)/α), 0)`` for rates (or their upper bounds) α, β; swap them for the mirror test."""
    alpha, beta = np.asarray(alpha, dtype=np.float64), np.asarray(beta, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        bound = np.log(np.maximum(1.0 - delta - beta, 0.0)) - np.log(alpha)
    return np.maximum(np.nan_to_num(bound, nan=0.0, neginf=0.0, posinf=np.inf), 0.0)


@dataclass(frozen=True)
class AuditBound:
    """What one audit measured on the held-out half: the test's rates and the ε lower bound.

    ``epsilon_lower`` is the one-sided ``confidence`` lower bound on ε at ``delta``;
    ``epsilon_point`` the same formula on the raw rates (no confidence margin);
    ``false_positives``/``false_negatives`` count the held-out errors of ``trials`` per side.
    """

    epsilon_lower: float
    epsilon_point: float
    false_positives: int
    false_negatives: int
    trials: int
    threshold: float
    mirror: bool
    delta: float
    confidence: float

    def as_dict(self) -> dict[str, float]:
        return {
            "epsilon_lower": self.epsilon_lower,
            "epsilon_point": self.epsilon_point,
            "false_positives": self.false_positives,
            "false_negatives": self.false_negatives,
            "held_out_trials": self.trials,
            "threshold": self.threshold,
            "mirror": self.mirror,
            "delta": self.delta,
            "confidence": self.confidence,
        }


def _discrete_statistic(fit0: np.ndarray, fit1: np.ndarray):
    """Log-likelihood ratio of each output value (one integer column), from the fitting half's counts
    (+½ smoothing; a value unseen there scores 0)."""
    levels = np.unique(np.concatenate([fit0[:, 0], fit1[:, 0]]))
    counts0 = np.bincount(np.searchsorted(levels, fit0[:, 0]), minlength=len(levels)) + 0.5
    counts1 = np.bincount(np.searchsorted(levels, fit1[:, 0]), minlength=len(levels)) + 0.5
    ratio = np.log(counts1 / counts0)

    def statistic(rows: np.ndarray) -> np.ndarray:
        index = np.minimum(np.searchsorted(levels, rows[:, 0]), len(levels) - 1)
        return np.where(levels[index] == rows[:, 0], ratio[index], 0.0)

    return statistic


def _linear_statistic(fit0: np.ndarray, fit1: np.ndarray):
    """Fisher's discriminant ``(x − m₀)ᵀ Σ⁻¹ (m₁ − m₀)``: the likelihood ratio of two Gaussians with one
    covariance, fitted on the fitting half (a tiny ridge keeps coordinates without noise decisive)."""
    m0, m1 = fit0.mean(axis=0), fit1.mean(axis=0)
    centred = np.concatenate([fit0 - m0, fit1 - m1])
    cov = centred.T @ centred / max(len(centred) - 2, 1)
    ridge = 1e-12 * max(1.0, float(np.trace(cov)) / len(cov))
    weights = np.linalg.solve(cov + ridge * np.eye(len(cov)), m1 - m0)
    return lambda rows: (rows - m0) @ weights


def _best_threshold(s0: np.ndarray, s1: np.ndarray, delta: float, level: float) -> tuple[float, bool]:
    """The test with the largest bound on the fitting half: its threshold t and whether it is the mirror.

    The test says D′ when ``s > t`` (its errors: α = P_D(s > t), β = P_D′(s ≤ t)); the mirror says D
    when ``s ≤ t`` (α and β swapped). Candidates lie midway between consecutive observed values;
    among equally good ones the middle is taken, so a perfectly separating test keeps its margin.
    """
    values = np.unique(np.concatenate([s0, s1]))
    if len(values) > 4000:
        values = np.unique(np.quantile(values, np.linspace(0.0, 1.0, 4000)))
    candidates = np.concatenate([[-np.inf], values[:-1] + 0.5 * np.diff(values)])
    s0, s1 = np.sort(s0), np.sort(s1)
    alpha = clopper_pearson_upper(len(s0) - np.searchsorted(s0, candidates, side="right"), len(s0), level)
    beta = clopper_pearson_upper(np.searchsorted(s1, candidates, side="right"), len(s1), level)
    bounds = np.concatenate([epsilon_lower_bound(alpha, beta, delta), epsilon_lower_bound(beta, alpha, delta)])
    best = np.flatnonzero(bounds == bounds.max())
    index = int(best[len(best) // 2])
    return float(candidates[index % len(candidates)]), index >= len(candidates)


def audit_samples(
    out0: np.ndarray, out1: np.ndarray, delta: float, *, discrete: bool, confidence: float = 0.95
) -> AuditBound:
    """The ε lower bound the outputs ``out0`` (of D) and ``out1`` (of D′), shape (n, k), support at ``delta``.

    ``discrete``: the output is one integer column with few values (an arm, a count): the test
    statistic is the fitted log-likelihood ratio of each value; otherwise Fisher's linear discriminant.
    """
    out0, out1 = np.atleast_2d(out0.T).T, np.atleast_2d(out1.T).T
    half = min(len(out0), len(out1)) // 2
    if half < 1:
        raise ValueError(f"an audit needs at least 2 samples per side, got {len(out0)} and {len(out1)}")
    level = 1.0 - (1.0 - confidence) / 2.0
    fit = _discrete_statistic if discrete else _linear_statistic
    statistic = fit(out0[:half], out1[:half])
    threshold, mirror = _best_threshold(statistic(out0[:half]), statistic(out1[:half]), delta, level)
    held0, held1 = out0[half : 2 * half], out1[half : 2 * half]
    above0 = int(np.count_nonzero(statistic(held0) > threshold))
    at_most1 = int(np.count_nonzero(statistic(held1) <= threshold))
    false_pos, false_neg = (at_most1, above0) if mirror else (above0, at_most1)
    lower = epsilon_lower_bound(
        clopper_pearson_upper(false_pos, half, level), clopper_pearson_upper(false_neg, half, level), delta
    )
    point = epsilon_lower_bound(false_pos / half, false_neg / half, delta)
    return AuditBound(float(lower), float(point), false_pos, false_neg, half, threshold, mirror, delta, confidence)


def gaussian_pair_delta(mu: float, epsilon: float) -> float:
    """δ(ε) of a Gaussian pair μ standard deviations apart: ``Φ(μ/2 − ε/μ) − e^ε Φ(−μ/2 − ε/μ)``."""
    if mu <= 0:
        return 0.0
    if math.isinf(mu):
        return 1.0
    first = special.ndtr(mu / 2 - epsilon / mu)
    second = math.exp(epsilon + special.log_ndtr(-mu / 2 - epsilon / mu)) if epsilon < 700 else 0.0
    return float(max(first - second, 0.0))


def gaussian_pair_epsilon(mu: float, delta: float) -> float:
    """The smallest ε with ``δ(ε) ≤ delta`` for a Gaussian pair μ apart (exact; ∞ when μ = ∞)."""
    if math.isinf(mu):
        return math.inf
    if gaussian_pair_delta(mu, 0.0) <= delta:
        return 0.0
    high = 1.0
    while gaussian_pair_delta(mu, high) > delta:
        high *= 2.0
    return float(optimize.brentq(lambda e: gaussian_pair_delta(mu, e) - delta, 0.0, high, xtol=1e-10))
