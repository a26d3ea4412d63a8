"""The exact discrete Laplace sampler (privacy/laplace.py): its law, its grid, its stream of words."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from privbandits.privacy import laplace
from privbandits.privacy.laplace import DENOMINATOR, discrete_laplace, discrete_laplace_integers, laplace_grid
from privbandits.privacy.noise import GRID_BITS


def exact_pmf(t: float, support: np.ndarray) -> np.ndarray:
    """``P(z) = (1 − q)/(1 + q) · q^|z|``, q = e^{−1/t}: the discrete Laplace of scale t."""
    q = math.exp(-1.0 / t)
    return (1 - q) / (1 + q) * q ** np.abs(support)


@pytest.mark.parametrize(("numerator", "denominator"), [(1, 1), (3, 2), (70, 8)])
def test_integers_follow_the_exact_discrete_laplace_chi_squared(numerator, denominator):
    t = numerator / denominator
    draws = discrete_laplace_integers(np.random.default_rng(5), numerator, 200_000, denominator)
    edge = int(math.ceil(4 * t))
    observed = np.bincount(np.clip(draws, -edge, edge) + edge, minlength=2 * edge + 1)
    expected = exact_pmf(t, np.arange(-edge, edge + 1))
    tail = (1.0 - expected.sum()) / 2.0
    expected[0] += tail
    expected[-1] += tail
    statistic, p = stats.chisquare(observed, expected * draws.size)
    assert p > 1e-3, (t, statistic, p)


def test_the_same_test_catches_a_wrong_scale():
    draws = discrete_laplace_integers(np.random.default_rng(5), 3, 200_000, 2)
    edge = 6
    observed = np.bincount(np.clip(draws, -edge, edge) + edge, minlength=2 * edge + 1)
    expected = exact_pmf(1.35, np.arange(-edge, edge + 1))  # 0.9 × the scale drawn
    expected[0] += (1.0 - expected.sum()) / 2.0
    expected[-1] += 1.0 - expected.sum()
    assert stats.chisquare(observed, expected * draws.size).pvalue < 1e-6


def test_a_batch_continued_on_more_words_draws_what_one_long_stream_draws(monkeypatch):
    """Draws are a function of the word stream: fetched 64 words at a time (every draw but a few resumed on a longer
    stream) they equal the draws from one fetch."""
    whole = discrete_laplace_integers(np.random.default_rng(9), 70_000_000, 2_000)
    monkeypatch.setattr(laplace, "WORDS_PER_DRAW", 0)  # fetch the minimum, 64 words, each time
    pieces = discrete_laplace_integers(np.random.default_rng(9), 70_000_000, 2_000)
    assert np.array_equal(whole, pieces)


@pytest.mark.parametrize("scale", [1e-3, 0.37, 1.0, 5.7, 1234.5])
def test_noise_lies_on_the_grid_at_a_scale_rounded_up_by_less_than_two_to_the_minus_26(scale):
    grid = laplace_grid(scale)
    assert 2**GRID_BITS <= scale / grid.grid < 2 ** (GRID_BITS + 1)
    assert scale <= grid.scale < scale * (1 + 2**-26)
    assert grid.scale == grid.numerator * grid.grid / DENOMINATOR
    steps = discrete_laplace(np.random.default_rng(1), scale, (200,)) / grid.grid
    assert np.array_equal(steps, np.round(steps))


@pytest.mark.parametrize("scale", [0.02, 1.0, 40.0])
def test_grid_noise_matches_the_laplace_ks_and_variance(scale):
    draws = discrete_laplace(np.random.default_rng(2), scale, (100_000,))
    assert stats.kstest(draws, stats.laplace(0.0, scale).cdf).pvalue > 1e-3
    assert abs(draws.var() / (2 * scale**2) - 1.0) < 0.03


def test_os_entropy_draws_differ_and_a_seed_repeats():
    assert not np.array_equal(discrete_laplace(None, 1.0, (50,)), discrete_laplace(None, 1.0, (50,)))
    first, again = (discrete_laplace(np.random.default_rng(4), 1.0, (50,)) for _ in range(2))
    assert np.array_equal(first, again)
    assert not discrete_laplace(None, 0.0, (3,)).any()


def test_bad_parameters_are_refused():
    with pytest.raises(ValueError, match="need integers numerator, denominator >= 1"):
        discrete_laplace_integers(None, 0, 5)
