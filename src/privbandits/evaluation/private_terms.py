"""What each logged record contributes to a DP off-policy estimator, clipped into a public range.

With the weight clipped, ``w̄_t = min(w_t, λ)``, the reward clipped, ``r̄_t = clip(r_t, r_lo, r_hi)``, and the reward
model clipped, ``q̄ = clip(q̂, r_lo, r_hi)``, every per-record term lies in a range fixed by ``(λ, r_lo, r_hi)``
alone: that range is the sensitivity of its sum (:class:`~privbandits.privacy.bounded_sums.Bound`). λ and the
reward range are public choices, never read from the log. Each term is clipped into its range once more at the end,
so float rounding (a row of ``pi_e`` sums to 1 within 1e-6) can never move a record beyond it.

=========  ===========================================  ========================================  ==============
estimator  statistic (summed over records)              range of one record's value               share
=========  ===========================================  ========================================  ==============
IPS        ``f = w̄ r̄``                                  ``[λ min(r_lo, 0), λ max(r_hi, 0)]``      1 − s
IPS        ``f²``                                       its square's range                        s
DR         ``f = q̄_t(π_e) + w̄ (r̄ − q̄(x_t, a_t))``      ``[r_lo − λΔr, r_hi + λΔr]``              1 − s
DR         ``f²``                                       its square's range                        s
SNIPS      ``w̄ r̄``, ``w̄``                               as IPS's ``f``; ``[0, λ]``                (1 − s)/2 each
SNIPS      ``(w̄ r̄)²``, ``w̄² r̄``, ``w̄²``                 their ranges                              s/3 each
=========  ===========================================  ========================================  ==============

``Δr = r_hi − r_lo``. The first statistic (SNIPS: the first two) gives the estimate; the others, with share
``s = interval_share``, the second moments its interval needs (:mod:`~privbandits.evaluation.private`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from privbandits.logs.feedback import LoggedFeedback
from privbandits.privacy.bounded_sums import Bound


@dataclass(frozen=True)
class Clipping:
    """The public clipping: ``weight`` = λ, the reward range ``[low, high]``."""

    weight: float
    low: float
    high: float


@dataclass(frozen=True)
class Statistics:
    """Per-record values, shape ``(n_rounds, k)``, and the k statistics' declarations (name, range, share)."""

    values: np.ndarray
    bounds: tuple[Bound, ...]


def _square_range(low: float, high: float) -> tuple[float, float]:
    squares = (low * low, high * high)
    return (0.0 if low <= 0.0 <= high else min(squares)), max(squares)


def _statistics(columns: list[np.ndarray], bounds: list[Bound]) -> Statistics:
    values = np.column_stack(
        [np.clip(column, bound.low, bound.high) for column, bound in zip(columns, bounds, strict=True)]
    )
    return Statistics(values, tuple(bounds))


def clipped_weights(feedback: LoggedFeedback, pi: np.ndarray, clip: Clipping) -> tuple[np.ndarray, np.ndarray]:
    """``w̄_t = min(π_e(a_t | x_t) / p_t, λ)`` and ``r̄_t = clip(r_t, r_lo, r_hi)``."""
    w = pi[np.arange(feedback.n_rounds), feedback.action] / feedback.pscore
    return np.minimum(w, clip.weight), np.clip(feedback.reward, clip.low, clip.high)


def _weighted_range(clip: Clipping, scale: float) -> tuple[float, float]:
    """The range of ``c · r̄`` for ``c`` in ``[0, scale]``."""
    return scale * min(clip.low, 0.0), scale * max(clip.high, 0.0)


def ips_statistics(feedback: LoggedFeedback, pi: np.ndarray, clip: Clipping, share: float) -> Statistics:
    """IPS's ``w̄ r̄`` and its square."""
    w, r = clipped_weights(feedback, pi, clip)
    low, high = _weighted_range(clip, clip.weight)
    f = w * r
    bounds = [Bound("sum", low, high, 1.0 - share), Bound("sum_of_squares", *_square_range(low, high), share)]
    return _statistics([f, f * f], bounds)


def dr_statistics(
    feedback: LoggedFeedback, pi: np.ndarray, q_hat: np.ndarray, clip: Clipping, share: float
) -> Statistics:
    """DR's ``q̄_t(π_e) + w̄ (r̄ − q̄(x_t, a_t))`` and its square."""
    w, r = clipped_weights(feedback, pi, clip)
    q = np.clip(q_hat, clip.low, clip.high)
    residual = r - q[np.arange(feedback.n_rounds), feedback.action]
    f = (pi * q).sum(axis=1) + w * residual
    spread = clip.weight * (clip.high - clip.low)
    low, high = clip.low - spread, clip.high + spread
    f = np.clip(f, low, high)
    bounds = [Bound("sum", low, high, 1.0 - share), Bound("sum_of_squares", *_square_range(low, high), share)]
    return _statistics([f, f * f], bounds)


def snips_statistics(feedback: LoggedFeedback, pi: np.ndarray, clip: Clipping, share: float) -> Statistics:
    """SNIPS's numerator ``w̄ r̄`` and denominator ``w̄``, then ``(w̄ r̄)²``, ``w̄² r̄`` and ``w̄²``."""
    w, r = clipped_weights(feedback, pi, clip)
    low, high = _weighted_range(clip, clip.weight)
    square_low, square_high = _weighted_range(clip, clip.weight * clip.weight)
    f = w * r
    bounds = [
        Bound("numerator", low, high, (1.0 - share) / 2), Bound("denominator", 0.0, clip.weight, (1.0 - share) / 2),
        Bound("numerator_squares", *_square_range(low, high), share / 3),
        Bound("cross", square_low, square_high, share / 3),
        Bound("denominator_squares", 0.0, clip.weight * clip.weight, share / 3),
    ]  # fmt: skip
    return _statistics([f, w, f * f, w * f, w * w], bounds)
