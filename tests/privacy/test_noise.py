"""The DP noise sampler (privacy/noise.py): its law against the exact one, its grid, its bits."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from privbandits.privacy.noise import GRID_BITS, discrete_gaussian, discrete_integers, grid_step, snap
from privbandits.privacy.tree_mechanism import symmetric_gaussian
from privbandits.protocols.dp.local import LocalRandomizer


def exact_pmf(scale: float, support: np.ndarray) -> np.ndarray:
    """The discrete Gaussian's pmf on ``support`` (normalised over a support wide enough to hold the mass)."""
    wide = np.arange(-int(40 * scale) - 1, int(40 * scale) + 2)
    norm = np.exp(-(wide**2) / (2 * scale * scale)).sum()
    return np.exp(-(support**2) / (2 * scale * scale)) / norm


@pytest.mark.parametrize("scale", [0.7, 3.0, 12.5])
def test_integers_follow_the_exact_discrete_gaussian_chi_squared(scale):
    draws = discrete_integers(np.random.default_rng(7), scale, (200_000,))
    edge = int(math.ceil(3 * scale))  # cells -edge..edge, the two tails pooled into the end cells
    clipped = np.clip(draws, -edge, edge).astype(np.int64)
    observed = np.bincount(clipped + edge, minlength=2 * edge + 1)
    support = np.arange(-edge, edge + 1)
    expected = exact_pmf(scale, support)
    tail = (1.0 - expected.sum()) / 2.0
    expected[0] += tail
    expected[-1] += tail
    statistic, p = stats.chisquare(observed, expected * draws.size)
    assert p > 1e-3, (scale, statistic, p)


@pytest.mark.parametrize("std", [0.013, 1.0, 37.0])
def test_grid_noise_matches_the_gaussian_ks_and_moments(std):
    draws = discrete_gaussian(np.random.default_rng(11), std, (100_000,))
    assert stats.kstest(draws, stats.norm(0.0, std).cdf).pvalue > 1e-3
    assert abs(draws.mean()) < 4 * std / math.sqrt(draws.size)
    assert abs(draws.var() / std**2 - 1.0) < 4 * math.sqrt(2.0 / draws.size)


def test_a_wrong_scale_is_caught():
    """The same test rejects noise of 0.95 σ (it can fail)."""
    draws = discrete_gaussian(np.random.default_rng(11), 0.95, (100_000,))
    assert stats.kstest(draws, stats.norm(0.0, 1.0).cdf).pvalue < 1e-6


@pytest.mark.parametrize("std", [1e-3, 0.3, 1.0, 5.7, 1234.5])
def test_noise_and_snapped_values_lie_on_a_grid_4096_times_finer_than_sigma(std):
    step = grid_step(std)
    assert 2**GRID_BITS <= std / step < 2 ** (GRID_BITS + 1)
    assert math.log2(step) == int(math.log2(step))
    released = snap(np.random.default_rng(3).normal(size=50) * 10, std) + discrete_gaussian(None, std, (50,))
    ratio = released / step
    assert np.array_equal(ratio, np.round(ratio))


def test_released_bits_do_not_depend_on_the_value_below_the_grid():
    """Mironov's attack reads the input through the low bits: two values in one grid cell release the same."""
    std = 1.0
    a, b = np.array([0.3]), np.array([0.3 + 1e-9])
    noise_a = discrete_gaussian(np.random.default_rng(5), std, (1,))
    noise_b = discrete_gaussian(np.random.default_rng(5), std, (1,))
    assert snap(a, std) + noise_a == snap(b, std) + noise_b


def test_seeded_draws_repeat_and_os_entropy_draws_do_not():
    first = discrete_gaussian(np.random.default_rng(42), 2.0, (64,))
    again = discrete_gaussian(np.random.default_rng(42), 2.0, (64,))
    assert np.array_equal(first, again)
    assert not np.array_equal(discrete_gaussian(None, 2.0, (64,)), discrete_gaussian(None, 2.0, (64,)))
    secret = discrete_gaussian(None, 2.0, (100_000,))
    assert abs(secret.var() / 4.0 - 1.0) < 4 * math.sqrt(2.0 / secret.size)


def test_zero_std_is_no_noise_and_a_bad_std_is_refused():
    assert np.array_equal(discrete_gaussian(None, 0.0, (2, 2)), np.zeros((2, 2)))
    with pytest.raises(ValueError, match=r"std: must be a positive finite number \(got -1.0\)"):
        grid_step(-1.0)


def test_tree_node_noise_has_the_symmetric_gaussian_variances():
    rng = np.random.default_rng(9)
    nodes = np.stack([symmetric_gaussian(rng, 4, 0.5) for _ in range(20_000)])
    assert np.array_equal(nodes, nodes.transpose(0, 2, 1))
    off = nodes[:, 0, 1]
    diagonal = nodes[:, 2, 2]
    tolerance = 4 * math.sqrt(2.0 / nodes.shape[0])
    assert abs(off.var() / 0.25 - 1.0) < tolerance
    assert abs(diagonal.var() / 0.5 - 1.0) < tolerance


def test_local_report_is_on_the_grid_and_unbiased():
    randomizer = LocalRandomizer(0.8, np.random.default_rng(1))
    x = np.array([0.6, 0.0, -0.8])
    reports = [randomizer.report(x, 0.5) for _ in range(4000)]
    grams = np.stack([g for g, _ in reports])
    vectors = np.stack([v for _, v in reports])
    step = grid_step(0.8)
    assert np.array_equal(grams / step, np.round(grams / step))
    assert np.allclose(grams.mean(0), np.outer(x, x), atol=4 * 0.8 / math.sqrt(4000))
    assert np.allclose(vectors.mean(0), 0.5 * x, atol=4 * 0.8 / math.sqrt(4000))


def _spec(policy: dict, environment: dict | None = None) -> dict:
    from privbandits.experiments.config import parse_config

    environment = environment or {"kind": "linear_gaussian", "dim": 4, "n_arms": 3}
    data = {"name": "t", "horizon": 10, "seeds": [0], "environment": environment, "policies": [policy]}
    return parse_config(data).run_spec(0)


def test_only_runs_that_draw_dp_noise_name_the_sampler_in_their_store_key():
    from privbandits.privacy.noise import NOISE_SAMPLER

    for kind in ("joint_dp_linucb", "local_dp_linucb", "shuffle_dp_linucb"):
        assert _spec({"kind": kind, "epsilon": 1.0})["noise_sampler"] == NOISE_SAMPLER
    assert "noise_sampler" not in _spec({"kind": "linucb"})
    clustered = {"kind": "clustered_users", "n_users": 4, "n_clusters": 2, "n_servers": 2, "dim": 3, "n_arms": 3}
    assert _spec({"kind": "fclub"}, clustered)["noise_sampler"] == NOISE_SAMPLER  # cdp-fclub-dc by default
    assert "noise_sampler" not in _spec({"kind": "fclub", "variant": "fclub-dc"}, clustered)
    # private FCLUB's uploads are snapped to the noise grid since issue 31: their runs moved, so their keys did
    assert _spec({"kind": "fclub"}, clustered)["fclub_uploads"] == "snapped"
    assert "fclub_uploads" not in _spec({"kind": "joint_dp_linucb", "epsilon": 1.0})
    assert "fclub_uploads" not in _spec({"kind": "fclub", "variant": "fclub-dc"}, clustered)


@pytest.mark.parametrize("std", [3.7, 0.02, 1234.5])
def test_the_guided_search_gives_searchsorted_magnitudes_for_every_word_even_at_the_edges(std):
    """The sampler's bucketed search is the plain binary search over the whole table, word for word: random words,
    every threshold and the word below it, and every bucket boundary (the draws, so the noise, are unchanged)."""
    from privbandits.privacy.noise import GUIDE_BITS, _magnitudes, _table

    scale = std / grid_step(std)
    table = _table(scale)
    random = np.random.default_rng(5).bit_generator.random_raw(200_000) >> np.uint64(1)
    boundaries = np.arange(1 << GUIDE_BITS, dtype=np.uint64) << np.uint64(63 - GUIDE_BITS)
    edges = np.concatenate([table[:-1], table[:-1] - np.uint64(1), boundaries, boundaries - np.uint64(1)])
    for words in (random, edges[edges < np.uint64(2**63)], random[:100]):
        assert np.array_equal(_magnitudes(scale, words), np.searchsorted(table, words, side="right"))
