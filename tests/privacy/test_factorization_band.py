"""The banded square-root factorization (privacy/factorization.py): C keeps c_0 … c_{b−1}, the releases are
B·y with B = A·C⁻¹ (computed by a recurrence over the last b rows), its noise has covariance σ²·B·Bᵀ, a datum moves
only the b rows it enters, and the band chosen has the least noise of the bands whose memory fits."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.signal import lfilter

from privbandits.privacy.accountant import pld_epsilon
from privbandits.privacy.factorization import (
    MAX_STREAM_CELLS,
    BandedInverse,
    BandedOuterStream,
    BandedStream,
    FactorizationNoise,
    SqrtFactorization,
    candidate_bands,
    choose_band,
    column_norm,
    decoder_coefficients,
    factorization_noise,
    mean_variance,
    releases,
    sqrt_coefficients,
)
from privbandits.privacy.tree_mechanism import REPLACE_SENSITIVITY, augmented_coordinates


def _toeplitz(coefficients: np.ndarray, size: int) -> np.ndarray:
    lags = np.subtract.outer(np.arange(size), np.arange(size))
    padded = np.concatenate([coefficients, np.zeros(size)])
    return np.where(lags >= 0, padded[np.maximum(lags, 0)], 0.0)


@pytest.mark.parametrize("band", [1, 4, 16, 80])
def test_the_decoder_times_the_banded_factor_is_the_prefix_sum_matrix(band):
    horizon = 80
    c = _toeplitz(sqrt_coefficients(band), horizon)
    b = _toeplitz(decoder_coefficients(horizon, band), horizon)
    assert np.allclose(b @ c, np.tril(np.ones((horizon, horizon))), atol=1e-12, rtol=0)


def test_the_decoder_coefficients_are_the_running_sums_of_the_inverse_series():
    """Newton's FFT inversion against the recursion itself (scipy's IIR filter) over 5,000 rounds of a band of 64."""
    impulse = np.zeros(5000)
    impulse[0] = 1.0
    expected = np.cumsum(lfilter([1.0], sqrt_coefficients(64), impulse))
    assert np.abs(decoder_coefficients(5000, 64) - expected).max() < 1e-12
    assert np.array_equal(decoder_coefficients(300, 300), sqrt_coefficients(300))  # the full factor: B = C


def test_the_banded_streams_compute_the_dense_products():
    x = np.random.default_rng(4).normal(size=(50, 3))
    c = sqrt_coefficients(7)
    encoded = np.array([row for row in map(BandedStream(c, 3).push, x)])
    assert np.allclose(encoded, _toeplitz(c, 50) @ x, atol=1e-12, rtol=0)
    decoded = np.array([row for row in map(BandedInverse(c, 3).push, encoded)])
    assert np.allclose(decoded, np.cumsum(x, axis=0), atol=1e-11, rtol=0)


def _runs(mechanism: SqrtFactorization, data: np.ndarray) -> np.ndarray:
    return np.array([mechanism.release(row) for row in data])


def test_the_banded_noise_covariance_across_rounds_is_sigma_squared_b_b_transposed_and_unbiased():
    horizon, band, runs, std = 7, 3, 40_000, 2.0
    noise = FactorizationNoise(std, 2.0**-20, 1.0, column_norm(band), horizon, band)
    data = np.broadcast_to(np.random.default_rng(1).uniform(-1, 1, (horizon, 1)), (horizon, runs))
    error = _runs(SqrtFactorization(noise, (runs,), np.random.default_rng(0)), data) - np.cumsum(data, axis=0)
    b = _toeplitz(decoder_coefficients(horizon, band), horizon)
    expected = std**2 * b @ b.T
    assert np.abs(np.cov(error) - expected).max() < 0.04 * expected.max()
    variance = np.array([noise.variance(t) for t in range(1, horizon + 1)])
    assert np.allclose(np.diag(expected), variance) and noise.decoder_norm**2 * std**2 == pytest.approx(variance[-1])
    assert np.all(np.abs(error.mean(axis=1)) < 5 * np.sqrt(variance / runs))


@pytest.mark.parametrize("band", [300, 32])
def test_a_datum_moves_only_the_rows_it_enters_by_at_most_the_effective_sensitivity(band):
    """Two streams of ``z zᵀ`` (‖x‖ ≤ 1, |r| ≤ 1) that differ at round 17, with the same noise, through the full
    factor (band T = 300) and a band of 32: their ``y = snap(C x) + z`` (what the privacy rests on) lie on the
    noise's grid and differ exactly in the rows the datum enters (17 … T, or 17 … 48), by at most the calibrated
    sensitivity in all (in the measure of symmetric noise: the diagonal scaled by 1/√2) and no less than the exact
    ``C x`` differs less the most snapping adds."""
    dim, horizon, changed = 3, 300, 17
    noise = factorization_noise(1.0, 1e-5, horizon, REPLACE_SENSITIVITY, augmented_coordinates(dim), 1.0, band)
    assert noise.bandwidth == band and noise.banded == (band < horizon) and noise.column_norm == column_norm(band)
    rng = np.random.default_rng(3)
    x = rng.normal(size=(horizon, dim + 1))
    x /= np.linalg.norm(x[:, :dim], axis=1, keepdims=True) * 1.2
    x[:, dim] = rng.uniform(-1, 1, horizon)
    other = x.copy()
    other[changed - 1] = [*(-x[changed - 1, :dim][::-1]), -x[changed - 1, dim]]
    rows = []
    for data in (x, other):
        mechanism = SqrtFactorization(noise, (dim + 1,) * 2, np.random.default_rng(9), True, True, outer=band < 300)
        for z in data:
            mechanism.release_outer(z)
        rows.append(mechanism.noisy_rows.copy())
    assert np.array_equal(np.round(rows[0] / noise.grid) * noise.grid, rows[0])
    difference = rows[0] - rows[1]
    entered = list(range(changed - 1, min(horizon, changed - 1 + band)))
    assert np.flatnonzero(difference.any(axis=1)).tolist() == entered
    diagonal = np.array([i == j for i, j in zip(*np.triu_indices(dim + 1), strict=True)])
    measured = np.linalg.norm(np.where(diagonal, difference / math.sqrt(2), difference))
    change = np.outer(x[changed - 1], x[changed - 1]) - np.outer(other[changed - 1], other[changed - 1])
    scaled = np.where(diagonal, 1 / math.sqrt(2), 1.0) * change[np.triu_indices(dim + 1)]
    exact = np.linalg.norm(sqrt_coefficients(band)[: len(entered), None] * scaled)
    slack = noise.sensitivity - REPLACE_SENSITIVITY * noise.column_norm
    assert exact - slack <= measured <= noise.sensitivity


def test_at_d_100_the_full_factors_snapping_runs_away_where_the_chosen_band_stays_calibrated():
    """Joint-DP LinUCB's statistic at d = 100 (5,151 coordinates), T = 20,000, ε = 0.1: snapping all T rows of the
    full factor needs a σ hundreds of thousands of times the band's; the band chosen fits the memory bound, has the
    least mean variance of the candidates, and the accountant puts its one release at the claim."""
    horizon, coordinates = 20_000, augmented_coordinates(100)
    args = (0.1, 1e-5, horizon, REPLACE_SENSITIVITY, coordinates, 1.0)
    band = choose_band(*args)
    chosen = factorization_noise(*args)
    assert chosen.bandwidth == band < horizon and band * coordinates <= MAX_STREAM_CELLS
    assert factorization_noise(*args, horizon).std > 1e5 * chosen.std
    scores = {b: mean_variance(factorization_noise(*args, b)) for b in candidate_bands(horizon, coordinates)}
    assert min(scores, key=scores.__getitem__) == band
    assert pld_epsilon(releases(chosen), 1e-5) == pytest.approx(0.1, rel=0.01)


def test_the_chosen_band_is_never_noisier_than_the_full_factor_where_the_full_factor_fits():
    args = (1.0, 1e-5, 20_000, REPLACE_SENSITIVITY, augmented_coordinates(10), 1.0)
    assert 20_000 in candidate_bands(20_000, augmented_coordinates(10))
    assert mean_variance(factorization_noise(*args)) <= mean_variance(factorization_noise(*args, 20_000))
    assert choose_band(math.inf, *args[1:]) == candidate_bands(20_000, augmented_coordinates(10))[0]


def test_refusals_a_bad_band_a_release_past_the_horizon_and_rows_not_kept():
    with pytest.raises(ValueError, match="band must be an integer >= 1 or None"):
        factorization_noise(1.0, 1e-5, 10, REPLACE_SENSITIVITY, 3, 1.0, 0)
    noise = FactorizationNoise(1.0, 2.0**-20, 1.0, column_norm(2), 3, 2)
    mechanism = SqrtFactorization(noise, (2,), np.random.default_rng(0))
    for _ in range(3):
        mechanism.release(np.zeros(2))
    with pytest.raises(ValueError, match="all 3 releases were made"):
        mechanism.release(np.zeros(2))
    with pytest.raises(ValueError, match="keep_rows = True"):
        mechanism.noisy_rows  # noqa: B018


def test_the_outer_stream_forms_the_band_of_z_z_transposed_as_the_packed_stream_does():
    """Also through the mechanism: a banded symmetric factorization made without ``outer`` takes z zᵀ or z alike."""
    noise = FactorizationNoise(1.0, 2.0**-20, 1.0, column_norm(3), 5, 3)
    packed = SqrtFactorization(noise, (2, 2), np.random.default_rng(1), symmetric=True)
    outer = SqrtFactorization(noise, (2, 2), np.random.default_rng(1), symmetric=True, outer=True)
    for z in np.random.default_rng(2).normal(size=(5, 2)) / 2:
        assert np.allclose(packed.release(np.outer(z, z)), outer.release_outer(z), atol=1e-6, rtol=0)
    rng = np.random.default_rng(5)
    c, upper = sqrt_coefficients(6), np.triu_indices(4)
    packed, outer = BandedStream(c, len(upper[0])), BandedOuterStream(c, 4, upper)
    for z in rng.normal(size=(20, 4)):
        assert np.allclose(outer.push(z), packed.push(np.outer(z, z)[upper]), atol=1e-12, rtol=0)


def test_an_outer_factorization_takes_z_and_a_refused_release_changes_nothing():
    noise = FactorizationNoise(1.0, 2.0**-20, 1.0, column_norm(2), 2, 1)
    with pytest.raises(ValueError, match="outer needs symmetric"):
        SqrtFactorization(noise, (4,), None, outer=True)
    mechanism = SqrtFactorization(noise, (2, 2), np.random.default_rng(0), symmetric=True, outer=True)
    with pytest.raises(ValueError, match="takes z of each datum"):
        mechanism.release(np.eye(2))
    with pytest.raises(ValueError, match=r"z of shape \(2,\)"):
        mechanism.release_outer(np.ones(3))
    mechanism.release_outer(np.ones(2))
    mechanism.release_outer(np.ones(2))
    with pytest.raises(ValueError, match="all 2 releases were made"):
        mechanism.release_outer(np.ones(2))
    assert mechanism.releases == 2 and mechanism._data.count == 2
