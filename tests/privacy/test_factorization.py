"""The square-root factorization mechanism (privacy/factorization.py): C·C = A, its sensitivity, the law of its noise
(covariance σ²·C·Cᵀ across rounds, unbiased prefix sums) and its variance against the tree's at equal (ε, δ); the
banded factor (B·C = A with B = A·C⁻¹, its streams, its noise, the band chosen) in test_factorization_band.py."""

from __future__ import annotations

import math

import numpy as np
import pytest

from privbandits.privacy.accountant import pld_epsilon
from privbandits.privacy.factorization import (
    FactorizationNoise,
    SqrtFactorization,
    ToeplitzStream,
    column_norm,
    factorization_noise,
    releases,
    sqrt_coefficients,
    sqrt_factor,
    tree_variance_ratio,
)
from privbandits.privacy.tree_mechanism import REPLACE_SENSITIVITY, augmented_coordinates
from privbandits.protocols.dp.joint import joint_noise_std


def test_the_factor_squared_is_the_prefix_sum_matrix():
    c = sqrt_factor(64)
    assert np.allclose(c @ c, np.tril(np.ones((64, 64))), atol=1e-12, rtol=0)
    assert sqrt_coefficients(5).tolist() == [1.0, 0.5, 0.375, 0.3125, 0.2734375]  # binom(2k, k)/4^k


@pytest.mark.parametrize("length", [1, 2, 17, 1000])
def test_the_sensitivity_factor_is_the_largest_column_norm_computed_directly(length):
    assert column_norm(length) == pytest.approx(np.linalg.norm(sqrt_factor(length), axis=0).max(), rel=1e-14)


@pytest.mark.parametrize("block", [1, 3, 7, 64])
def test_the_stream_gives_the_rows_of_the_toeplitz_product(block):
    rng = np.random.default_rng(4)
    x = rng.normal(size=(40, 3))
    stream = ToeplitzStream(sqrt_coefficients(40), 3, block)
    rows = np.array([stream.push(row) for row in x])
    assert np.allclose(rows, sqrt_factor(40) @ x, atol=1e-12, rtol=0)
    with pytest.raises(ValueError, match="all 40 rows"):
        stream.push(x[0])


def _noise(std: float, horizon: int) -> FactorizationNoise:
    return FactorizationNoise(std, 2.0**-20, 1.0, column_norm(horizon), horizon)


def _runs(mechanism: SqrtFactorization, data: np.ndarray) -> np.ndarray:
    """Releases (T, runs) of ``mechanism``, whose datum shape is (runs,): independent streams side by side."""
    return np.array([mechanism.release(row) for row in data])


def test_the_noise_covariance_across_rounds_is_sigma_squared_c_c_transposed():
    horizon, runs, std = 6, 40_000, 2.0
    mechanism = SqrtFactorization(_noise(std, horizon), (runs,), np.random.default_rng(0))
    noise = _runs(mechanism, np.zeros((horizon, runs)))
    expected = std**2 * sqrt_factor(horizon) @ sqrt_factor(horizon).T
    assert np.abs(np.cov(noise) - expected).max() < 0.04 * expected.max()  # standard error about 1% of the largest


def test_the_released_prefix_sums_are_unbiased():
    """Mean of the releases minus the prefix sums: within 5 standard errors of 0 (the snapping of each row toward
    zero moves the mean by at most grid·Σc, 2^-20·3 here, far below them)."""
    horizon, runs, std = 8, 20_000, 1.0
    data = np.broadcast_to(np.random.default_rng(1).uniform(-1, 1, (horizon, 1)), (horizon, runs))
    mechanism = SqrtFactorization(_noise(std, horizon), (runs,), np.random.default_rng(2))
    error = _runs(mechanism, data) - np.cumsum(data, axis=0)
    variance = std**2 * np.cumsum(sqrt_coefficients(horizon) ** 2)
    assert np.all(np.abs(error.mean(axis=1)) < 5 * np.sqrt(variance / runs))
    assert np.allclose(error.var(axis=1), variance, rtol=0.05)


def test_a_symmetric_datum_gets_symmetric_noise_and_no_noise_at_infinite_epsilon():
    noise = factorization_noise(math.inf, 1e-5, 5, REPLACE_SENSITIVITY, augmented_coordinates(2), 1.0)
    exact = SqrtFactorization(noise, (3, 3), np.random.default_rng(0), symmetric=True)
    datum = np.outer([1.0, 0.5, -0.25], [1.0, 0.5, -0.25])
    assert np.allclose(exact.release(datum), datum) and np.allclose(exact.release(datum), 2 * datum)
    noisy = SqrtFactorization(_noise(1.0, 5), (3, 3), np.random.default_rng(0), symmetric=True)
    released = noisy.release(datum)
    assert np.array_equal(released, released.T) and not np.allclose(released, datum)
    with pytest.raises(ValueError, match=r"shape \(3, 3\)"):
        noisy.release(np.zeros(3))


def test_the_calibration_is_one_gaussian_release_that_the_accountant_puts_at_the_claim():
    """PLD of the one release at the effective sensitivity equals the claimed ε to 1%; the effective sensitivity is
    Δ·‖C‖_col plus a few per cent of snapping (and float rounding) at d = 10, T = 20,000."""
    horizon, dim = 20_000, 10
    noise = factorization_noise(1.0, 1e-5, horizon, REPLACE_SENSITIVITY, augmented_coordinates(dim), 1.0, horizon)
    assert pld_epsilon(releases(noise), 1e-5) == pytest.approx(1.0, rel=0.01)
    base = REPLACE_SENSITIVITY * column_norm(horizon)
    assert base < noise.sensitivity < 1.05 * base


def test_the_variance_at_the_horizon_is_below_the_trees_at_equal_epsilon_and_delta():
    """Joint-DP LinUCB's statistic at d = 10, ε = 1, δ = 1e-5, T = 20,000, both analytic and snapped: the tree's
    per-coordinate variance at release T (popcount(T) = 6 nodes of σ_tree) is 4.2 times the factorization's
    (σ² Σ_{k<T} c_k²); its largest over the run 11.8 times the factorization's largest, its mean over the rounds
    6.3 times; it is the lower only at the three rounds of one node whose factorization noise has grown past
    one node's (4096, 8192, 16384: the tree's variance there 0.96, 0.90, 0.86 of it)."""
    horizon, dim = 20_000, 10
    noise = factorization_noise(1.0, 1e-5, horizon, REPLACE_SENSITIVITY, augmented_coordinates(dim), 1.0, horizon)
    tree = joint_noise_std(1.0, 1e-5, horizon, "analytic", dim=dim)
    assert tree_variance_ratio(horizon, tree, noise) == pytest.approx(4.21, abs=0.01)
    rounds = np.arange(1, horizon + 1)
    trees = np.array([t.bit_count() for t in range(1, horizon + 1)]) * tree**2
    ours = noise.std**2 * np.cumsum(sqrt_coefficients(horizon) ** 2)
    assert trees.max() / ours.max() == pytest.approx(11.79, abs=0.01)
    assert trees.mean() / ours.mean() == pytest.approx(6.34, abs=0.01)
    assert rounds[trees <= ours].tolist() == [4096, 8192, 16384]
    assert (trees / ours)[[4095, 8191, 16383]] == pytest.approx([0.957, 0.903, 0.855], abs=0.001)
