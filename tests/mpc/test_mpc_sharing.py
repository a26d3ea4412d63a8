"""MPC sharing and fixed point: round trips, uniform shares, local operations, bad input."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from privbandits.mpc import (
    ArithmeticShares,
    BinaryShares,
    concatenate,
    decode,
    encode,
    reconstruct,
    reconstruct_xor,
    share,
    share_xor,
    stack,
)
from privbandits.mpc.ring import add_with_wraps, count_wraps

WORDS = np.array([0, 1, 2**63, 2**64 - 1, 12345678901234567890], dtype=np.uint64)


@pytest.mark.parametrize("n", [2, 3, 5])
def test_reconstruct_inverts_share_for_arithmetic_and_xor(n):
    rng = np.random.default_rng(n)
    secret = np.concatenate([WORDS, rng.integers(0, 2**64, size=200, dtype=np.uint64)])
    shares = share(secret, n, rng, owner=n - 1)
    assert shares.shape == (n, secret.size)
    np.testing.assert_array_equal(reconstruct(shares), secret)
    np.testing.assert_array_equal(reconstruct_xor(share_xor(secret, n, rng)), secret)


@pytest.mark.parametrize("n", [2, 3, 5])
@pytest.mark.parametrize("xor", [False, True])
def test_every_single_share_is_uniform_and_independent_of_the_secret(n, xor):
    """Top-4-bit histograms of each party's share: uniform (chi-square) and the same for two secrets."""
    rng = np.random.default_rng(10 + n)
    split = share_xor if xor else share
    histograms = []
    for secret in (np.zeros(4096, dtype=np.uint64), np.full(4096, 2**63 + 5, dtype=np.uint64)):
        shares = split(secret, n, rng)
        counts = np.stack([np.bincount((row >> np.uint64(60)).astype(np.int64), minlength=16) for row in shares])
        for party_counts in counts:
            assert stats.chisquare(party_counts).pvalue > 1e-3
        histograms.append(counts)
    for party in range(n):
        table = np.stack([histograms[0][party], histograms[1][party]])
        assert stats.chi2_contingency(table).pvalue > 1e-3


def test_fixed_point_round_trip_is_within_half_a_unit_in_the_last_place():
    rng = np.random.default_rng(1)
    for precision in (14, 20, 26):
        values = np.concatenate([rng.normal(scale=1000, size=1000), [0.0, -1.0, 2.0 ** (62 - precision)]])
        error = np.abs(decode(encode(values, precision), precision) - values)
        assert error.max() <= 2.0 ** -(precision + 1)
    assert encode(-1.0, 20).dtype == np.uint64
    assert int(encode(-1.0, 20)) == 2**64 - 2**20


@pytest.mark.parametrize("bad", [np.inf, np.nan, 2.0**43, -(2.0**43) - 1])
def test_encode_refuses_values_outside_the_ring(bad):
    with pytest.raises(ValueError, match=r"finite with \|x\| < 2\^43"):
        encode([1.0, bad], 20)


def test_wrap_counts_match_python_integers():
    rng = np.random.default_rng(2)
    shares = rng.integers(0, 2**64, size=(4, 300), dtype=np.uint64)
    for signed in (False, True):
        rows = [[int(v) - (2**64 if signed and v >= 2**63 else 0) for v in row] for row in shares]
        sums = [sum(col) for col in zip(*rows, strict=True)]
        expected = []
        for total in sums:
            value = total % 2**64
            if signed and value >= 2**63:
                value -= 2**64
            expected.append((total - value) // 2**64)
        np.testing.assert_array_equal(count_wraps(shares, signed=signed), expected)
    total, wraps = add_with_wraps(np.array([2**63 - 1], np.uint64), np.array([1], np.uint64), signed=True)
    assert int(total[0]) == 2**63 and wraps.tolist() == [1]


def _shares(values, n=3, scale=20, seed=0):
    return ArithmeticShares(share(encode(values, scale), n, np.random.default_rng(seed)), scale)


def _value(x):
    return decode(reconstruct(x.shares), x.scale)


def test_local_linear_operations_follow_plaintext_with_broadcasting():
    a, b = np.array([[1.5, -2.0, 3.25]]), np.array([[0.5], [-4.0]])
    x, y = _shares(a), _shares(b, seed=1)
    np.testing.assert_array_equal(_value(x + y), a + b)
    np.testing.assert_array_equal(_value(x - y), a - b)
    np.testing.assert_array_equal(_value(2.0 - x), 2.0 - a)
    np.testing.assert_array_equal(_value(x + np.array([1.0, 2.0, 3.0])), a + [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(_value(-x * 3), -3 * a)
    np.testing.assert_array_equal(_value(np.array([[2], [-1]]) * x), [[2], [-1]] * a)
    np.testing.assert_array_equal(_value((x + y).sum(axis=0)), (a + b).sum(axis=0))
    np.testing.assert_array_equal(_value(x.sum()), [a.sum()])
    np.testing.assert_array_equal(_value(concatenate([x, x[:, :1]])), np.concatenate([a, a[:, :1]], axis=-1))
    np.testing.assert_array_equal(_value(stack([x[0], x[0]])), np.stack([a[0], a[0]]))
    np.testing.assert_array_equal(_value((x + y).mT), (a + b).T)
    np.testing.assert_array_equal(_value(x.reshape(3, 1)), a.reshape(3, 1))


def test_binary_shares_xor_and_shift_locally():
    rng = np.random.default_rng(3)
    words = rng.integers(0, 2**64, size=50, dtype=np.uint64)
    other = rng.integers(0, 2**64, size=50, dtype=np.uint64)
    x, y = BinaryShares(share_xor(words, 3, rng)), BinaryShares(share_xor(other, 3, rng))
    np.testing.assert_array_equal(reconstruct_xor((x ^ y).shares), words ^ other)
    np.testing.assert_array_equal(reconstruct_xor((x ^ other).shares), words ^ other)
    np.testing.assert_array_equal(reconstruct_xor((x & other).shares), words & other)
    np.testing.assert_array_equal(reconstruct_xor((x >> 63).shares), words >> np.uint64(63))
    np.testing.assert_array_equal(reconstruct_xor((x << 5)[:10].shares), (words << np.uint64(5))[:10])


def test_bad_operands_are_refused_with_clear_errors():
    x = _shares([1.0, 2.0])
    with pytest.raises(ValueError, match=r"scale 20 over 3 parties with shares of scale 0 over 3 parties"):
        x + ArithmeticShares(x.shares, 0)
    with pytest.raises(TypeError, match=r"only by public integers; use Engine.mul"):
        x * 0.5
    with pytest.raises(TypeError, match=r"only by public integers"):
        x * x
    with pytest.raises(TypeError, match=r"cannot mix arithmetic and binary shares"):
        x + BinaryShares(x.shares)
    with pytest.raises(TypeError, match=r"use Engine.and_"):
        BinaryShares(x.shares) & BinaryShares(x.shares)
    with pytest.raises(ValueError, match=r"public operand of shape \(3,\) does not fit shares of shape \(2,\)"):
        BinaryShares(x.shares) ^ np.zeros(3, dtype=np.uint64)
    with pytest.raises(ValueError, match=r"one party's shares .* must say whether that party is party 0"):
        ArithmeticShares(np.zeros((1, 3), dtype=np.uint64), 20)
    with pytest.raises(ValueError, match=r"with a party axis, got int64"):
        BinaryShares(np.zeros((2, 3), dtype=np.int64))
    with pytest.raises(ValueError, match=r"n_parties >= 2, got 1"):
        share(np.zeros(2, dtype=np.uint64), 1, np.random.default_rng())
    with pytest.raises(ValueError, match=r"different scales \[0, 20\]"):
        concatenate([x, ArithmeticShares(x.shares, 0)])
