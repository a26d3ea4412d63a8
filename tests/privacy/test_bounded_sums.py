"""Noisy sums of bounded statistics (privacy/bounded_sums.py): calibration, accounting, the exact part, refusals."""

from __future__ import annotations

import math

import dp_accounting
import numpy as np
import pytest

from privbandits.privacy.bounded_sums import Bound, BoundedSums
from privbandits.privacy.noise import snap_to

BOUNDS = (Bound("sum", 0.0, 10.0, 0.8), Bound("squares", 0.0, 100.0, 0.2))


def values(n: int = 50) -> np.ndarray:
    f = np.random.default_rng(0).uniform(0, 10, n)
    return np.column_stack([f, f * f])


def test_laplace_splits_epsilon_by_share_at_the_snapped_sensitivity():
    """b_j = Δ_eff / (s_j ε), Δ_eff = Δ + one grid step; the statistics' ε add up to at most ε."""
    sums = BoundedSums(BOUNDS, 2.0, 0.0, 50)
    assert sums.mechanism == "laplace"
    for bound, noise in zip(BOUNDS, sums.noise, strict=True):
        assert noise.sensitivity == bound.width + noise.grid
        assert noise.epsilon == pytest.approx(bound.share * 2.0, rel=1e-7) and noise.epsilon <= bound.share * 2.0
        assert noise.std == pytest.approx(math.sqrt(2) * noise.scale)
    assert sums.accounted_epsilon <= 2.0


def test_gaussian_is_one_mechanism_whose_pld_epsilon_is_the_claim():
    """σ_j = Δ_eff σ₁/√s_j: the normalised change has L2 norm 1/σ₁ and dp-accounting's PLD gives back ε."""
    sums = BoundedSums(BOUNDS, 1.0, 1e-6, 50)
    unit = dp_accounting.get_sigma_gaussian(1.0, 1e-6)
    assert sums.mechanism == "gaussian"
    assert sums.normalised_sensitivity == pytest.approx(1.0 / unit, rel=1e-6)
    assert sums.accounted_epsilon == pytest.approx(1.0, abs=1e-3)
    for bound, noise in zip(BOUNDS, sums.noise, strict=True):
        assert noise.std == pytest.approx(noise.sensitivity * unit / math.sqrt(bound.share), rel=1e-6)


def test_a_release_is_the_snapped_sum_plus_the_noise_drawn_from_the_same_generator():
    sums = BoundedSums(BOUNDS, 1.0, 0.0, 50)
    data = values()
    exact = sums.exact(data)
    for j, noise in enumerate(sums.noise):
        assert exact[j] == snap_to(data[:, j], noise.grid).sum()
        assert abs(exact[j] - data[:, j].sum()) <= 50 * noise.grid
    released = sums.release(data, np.random.default_rng(3))
    assert np.array_equal(released, exact + sums.noise_draws(np.random.default_rng(3), 1)[0])
    steps = released / np.array([noise.grid for noise in sums.noise])
    assert np.array_equal(steps, np.round(steps))  # on each statistic's grid


def test_without_privacy_the_sums_are_exact_and_the_ledger_says_so():
    sums = BoundedSums(BOUNDS, math.inf, 0.0, 50)
    data = values()
    assert sums.mechanism == "none" and np.array_equal(sums.release(data, None), [data[:, 0].sum(), data[:, 1].sum()])
    entry = sums.ledger_entry("evaluation.dp_ips", "one record")
    assert entry.mechanism == "evaluation.dp_ips.plaintext" and entry.epsilon == math.inf and entry.delta is None


def test_the_ledger_entry_carries_the_claim_and_every_statistics_noise():
    entry = BoundedSums(BOUNDS, 1.0, 0.0, 50).ledger_entry("evaluation.dp_ips", "one record", {"weight_clip": 10.0})
    assert (entry.epsilon, entry.delta, entry.unit) == (1.0, 0.0, "one record")
    assert entry.details["noise"] == "laplace" and entry.details["sampler"].startswith("discrete_laplace")
    assert set(entry.details["statistics"]) == {"sum", "squares"} and entry.details["weight_clip"] == 10.0


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="shares must sum to 1, got 0.9"):
        BoundedSums((Bound("a", 0, 1, 0.5), Bound("b", 0, 1, 0.4)), 1.0, 0.0, 5)
    with pytest.raises(ValueError, match=r"a: need finite low < high, got \[1, 1\]"):
        Bound("a", 1, 1, 1.0)
    with pytest.raises(ValueError, match=r"need epsilon > 0, 0 <= delta < 1"):
        BoundedSums(BOUNDS, 0.0, 0.0, 5)
    sums = BoundedSums(BOUNDS, 1.0, 0.0, 2)
    with pytest.raises(ValueError, match=r"sum: every value must lie in \[0.0, 10.0\] \(clip first\)"):
        sums.exact(np.array([[11.0, 1.0], [1.0, 1.0]]))
    with pytest.raises(ValueError, match=r"values must have shape \(2, 2\), got \(3, 2\)"):
        sums.exact(np.ones((3, 2)))
