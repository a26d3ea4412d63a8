"""The dealer: correlations hold, private samples have the right distributions, cost is counted."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from privbandits.mpc import Dealer, decode, reconstruct, reconstruct_xor
from privbandits.mpc.dealer import POOL_ITEMS
from privbandits.mpc.ring import count_wraps


@pytest.fixture
def dealer():
    return Dealer(3, np.random.default_rng(7))


def _open(x):
    return reconstruct(x.shares)


def test_beaver_triples_and_square_pairs_are_correlated(dealer):
    a, b, c = dealer.triple((50,))
    np.testing.assert_array_equal(_open(a) * _open(b), _open(c))
    a, b, c = dealer.matrix_triple((2, 3, 4), (4, 5))
    np.testing.assert_array_equal(np.matmul(_open(a), _open(b)), _open(c))
    a, b = dealer.square_pair((50,))
    np.testing.assert_array_equal(_open(a) * _open(a), _open(b))
    a, b, c = dealer.binary_triple((50,))
    np.testing.assert_array_equal(reconstruct_xor(a.shares) & reconstruct_xor(b.shares), reconstruct_xor(c.shares))


def test_dabits_word_masks_and_wrap_pairs_agree_across_representations(dealer):
    arithmetic, binary = dealer.dabits((200,))
    bits = _open(arithmetic)
    assert set(bits.tolist()) == {0, 1}
    np.testing.assert_array_equal(reconstruct_xor(binary.shares), bits)
    binary, bits = dealer.word_mask((20,))
    weights = np.left_shift(np.ones(64, dtype=np.uint64), np.arange(64, dtype=np.uint64))
    np.testing.assert_array_equal((_open(bits) * weights).sum(axis=-1, dtype=np.uint64), reconstruct_xor(binary.shares))
    for signed in (True, False):
        r, theta, words = dealer.wrap_pair((100,), signed=signed, binary=not signed)
        np.testing.assert_array_equal(_open(theta).view(np.int64), count_wraps(r.shares, signed=signed))
        assert (words is None) == signed
    np.testing.assert_array_equal(reconstruct_xor(words.shares), _open(r))
    zeros = dealer.zero_xor((4, 6))
    assert not reconstruct_xor(zeros.shares).any() and zeros.shares.any()


def test_private_bernoulli_mean_is_within_a_binomial_bound(dealer):
    count = 20000
    for p in (0.01, 0.3):
        coins = _open(dealer.bernoulli(p, (count,)))
        assert set(coins.tolist()) <= {0, 1}
        assert abs(coins.sum() - p * count) <= 4 * np.sqrt(count * p * (1 - p))
    assert not _open(dealer.bernoulli(0.0, (100,))).any() and _open(dealer.bernoulli(1.0, (100,))).all()
    with pytest.raises(ValueError, match=r"Bernoulli probability must be in \[0, 1\], got 1.5"):
        dealer.bernoulli(1.5, (3,))


def test_private_uniforms_cover_the_unit_interval_evenly(dealer):
    samples = dealer.uniform((20000,), 20)
    assert samples.scale == 20
    values = decode(_open(samples), 20)
    assert values.min() >= 0.0 and values.max() < 1.0
    assert stats.kstest(values, "uniform").pvalue > 1e-3


def test_permutations_are_permutations_with_uniform_positions(dealer):
    gamma = _open(dealer.permutation(5, (3000,)))
    np.testing.assert_array_equal(np.sort(gamma, axis=-1), np.broadcast_to(np.arange(1, 6), (3000, 5)))
    assert stats.chisquare(np.bincount(gamma[:, 0].astype(int), minlength=6)[1:]).pvalue > 1e-3
    with pytest.raises(ValueError, match=r"permutation size must be >= 1, got 0"):
        dealer.permutation(0)


def test_issued_bytes_count_every_share_sent_offline(dealer):
    dealer.triple((10,))
    dealer.dabits((4,))
    assert dealer.issued["triple"] == 3 * 3 * 10 * 8
    assert dealer.issued["dabits"] == 2 * 3 * 4 * 8


def test_batched_material_is_fresh_and_correlated_in_every_item(dealer):
    """Items come from batches (POOL_ITEMS at a time): each one holds the correlation, none repeats, and
    a caller writing into one item (as A2B does with its zero sharing) leaves the next untouched."""
    triples = [dealer.triple((5,)) for _ in range(POOL_ITEMS + 3)]
    for a, b, c in triples:
        np.testing.assert_array_equal(_open(a) * _open(b), _open(c))
    assert len({_open(a).tobytes() for a, _, _ in triples}) == len(triples)
    first = dealer.zero_xor((2, 3))
    first.shares[...] = 1
    assert not reconstruct_xor(dealer.zero_xor((2, 3)).shares).any()
    for _ in range(POOL_ITEMS + 1):
        a, b, c = dealer.matrix_triple((4, 3), (3,))
        np.testing.assert_array_equal(np.matmul(_open(a), _open(b)), _open(c))
    assert (a.shape, b.shape, c.shape) == ((4, 3), (3,), (4,))
    assert dealer.issued["triple"] == (POOL_ITEMS + 3) * 3 * 3 * 5 * 8


def test_the_dealer_serves_at_least_two_parties():
    with pytest.raises(ValueError, match=r"n_parties >= 2, got 1"):
        Dealer(1, np.random.default_rng())
