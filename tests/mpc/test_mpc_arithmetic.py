"""Beaver products, truncation (local, Alg. 3, exact), exp and reciprocal; their communication cost."""

from __future__ import annotations

import numpy as np
import pytest

from privbandits.mpc import Engine
from privbandits.mpc.rounding import OPERATIONS, product_errors

L = 20
ULP = 2.0**-L
SETTINGS = [(2, "auto"), (3, "auto"), (5, "auto"), (2, "exact"), (3, "exact")]
TRUNCATION_SETTINGS = [(2, "local"), (2, "wraps"), (3, "wraps"), (5, "wraps"), (2, "exact"), (3, "exact")]


def _engine(n, truncation="auto", seed=0):
    return Engine(n, truncation=truncation, seed=seed)


@pytest.mark.parametrize(("n", "truncation"), SETTINGS)
def test_products_match_float64_within_fixed_point_tolerance(n, truncation):
    rng = np.random.default_rng(n)
    a, b = rng.normal(scale=3, size=(4, 6)), rng.normal(scale=3, size=(6, 5))
    vector = rng.normal(size=6)
    engine = _engine(n, truncation)
    with engine.phase("test"):
        x, y, v = engine.input_many([(a, None), (b, engine.names[-1]), (vector, None)])
        tolerance = (np.abs(a).max() + np.abs(b).max() + n) * ULP
        assert np.abs(engine.open(engine.mul(x, x)) - a * a).max() <= tolerance
        assert np.abs(engine.open(engine.mul(x, v)) - a * vector).max() <= tolerance  # broadcasting
        assert np.abs(engine.open(engine.square(x)) - a * a).max() <= tolerance
        assert np.abs(engine.open(engine.matmul(x, y)) - a @ b).max() <= 6 * tolerance
        assert np.abs(engine.open(engine.matmul(x, v)) - a @ vector).max() <= 6 * tolerance
        assert np.abs(engine.open(engine.matmul(v, y)) - vector @ b).max() <= 6 * tolerance
        assert np.abs(engine.open(engine.mul_public(x, 0.1)) - 0.1 * a).max() <= tolerance
        assert np.abs(engine.open(engine.truncate(x, 3)) - a / 8).max() <= n * ULP


def test_batched_matmul_and_integer_operands_need_no_truncation_error():
    rng = np.random.default_rng(4)
    a, b = rng.normal(size=(3, 4, 4)), rng.normal(size=(3, 4, 1))
    bits = rng.integers(0, 2, size=(3, 4, 4))
    engine = _engine(3)
    with engine.phase("test"):
        x, y = engine.input_many([(a, None), (b, None)])
        onehot = engine.input(bits, scale=0)
        assert np.abs(engine.open(engine.matmul(x, y)) - a @ b).max() <= 20 * ULP
        assert np.abs(engine.open(engine.matmul(x, y[0])) - a @ b[0]).max() <= 20 * ULP  # batch axes broadcast
        assert np.abs(engine.open(engine.matmul(x, y[0, :, 0])) - a @ b[0, :, 0]).max() <= 20 * ULP
        np.testing.assert_array_equal(engine.open(engine.mul(onehot, x)), bits * np.rint(a * 2**L) / 2**L)
        product = engine.mul(onehot, onehot)
        assert product.scale == 0
        np.testing.assert_array_equal(engine.open(product), bits)


@pytest.mark.parametrize("n", [2, 3])
def test_mul_many_runs_independent_products_in_the_rounds_of_one(n):
    rng = np.random.default_rng(6)
    u, x, bits = rng.normal(size=(3, 4)), rng.normal(size=4), rng.integers(0, 2, size=3)
    engine = _engine(n)
    with engine.phase("input"):
        su, sx = engine.input_many([(u, None), (x, None)])
        sbits = engine.input(bits, scale=0)
    with engine.phase("many"):
        outer, scaled, masked = engine.mul_many([(su[:, :, None], su[:, None, :]), (su, sx), (sbits, sx[:3])])
    assert [p.shape for p in (outer, scaled, masked)] == [(3, 4, 4), (3, 4), (3,)]
    assert (outer.scale, scaled.scale, masked.scale) == (L, L, L)
    words = 3 * 16 + 3 * 4 + 3
    truncated = (0, 0) if n == 2 else (1, 8 * n * (n - 1) * (3 * 16 + 3 * 4))  # bit x real needs none
    assert engine.traffic.rounds["many"] == 1 + truncated[0]
    assert engine.traffic.total("many").bytes == 16 * n * (n - 1) * words + truncated[1]
    with engine.phase("open"):
        assert np.abs(engine.open(outer) - u[:, :, None] * u[:, None, :]).max() <= 4 * ULP
        assert np.abs(engine.open(scaled) - u * x).max() <= 4 * ULP
        np.testing.assert_array_equal(engine.open(masked), bits * np.rint(x[:3] * 2**L) / 2**L)
    with pytest.raises(ValueError, match=r"at least one pair"):
        engine.mul_many([])


def test_matmul_refuses_mismatched_shapes():
    engine = _engine(2)
    with engine.phase("test"):
        x, y = engine.input_many([(np.ones((2, 3)), None), (np.ones((2, 3)), None)])
        with pytest.raises(ValueError, match=r"matmul shapes \(2, 3\) and \(2, 3\) do not match: 3 != 2"):
            engine.matmul(x, y)
        with pytest.raises(ValueError, match=r"at least one axis"):
            engine.matmul(x[0, 0], y)


def _truncation_failures(n, truncation, raw_bits, count=4000, seed=1):
    """Truncate ``count`` copies of ±2^raw_bits (a word of scale L) by L bits; return the errors in words."""
    engine = _engine(n, truncation, seed)
    signs = np.where(np.arange(count) % 2 == 0, 1.0, -1.0)
    with engine.phase("test"):
        x = engine.input(signs * 2.0 ** (raw_bits - L))
        result = engine.open(engine.truncate(x, L)) * 2**L  # the words of x / 2^L
    return result - signs * 2.0 ** (raw_bits - L), signs


@pytest.mark.parametrize(("n", "truncation"), [(2, "local"), (3, "wraps"), (5, "wraps")])
def test_skipping_the_wrap_correction_fails_with_probability_x_over_q_by_q_over_2_to_l(n, truncation):
    """Spec §3.6: P(η_xr ≠ 0) = |x|/Q for any |P|; a failure is off by ∓Q/2^L in words."""
    count = 4000
    errors, signs = _truncation_failures(n, truncation, raw_bits=60, count=count)
    failed = np.abs(errors) > n
    p = 2.0**60 / 2.0**64
    assert abs(failed.sum() - p * count) <= 4 * np.sqrt(count * p * (1 - p))
    np.testing.assert_allclose(errors[failed], -signs[failed] * 2.0 ** (64 - L), rtol=1e-12)
    small, _ = _truncation_failures(n, truncation, raw_bits=40, count=count)
    assert np.abs(small).max() <= n  # at |x| = 2^40 a failure has probability 2^-24: none expected


@pytest.mark.parametrize("n", [2, 3, 5])
def test_exact_truncation_never_fails_while_x_is_below_2_to_62(n):
    errors, _ = _truncation_failures(n, "exact", raw_bits=61, count=2000)
    assert np.abs(errors).max() <= n


def test_reciprocal_error_follows_the_spec_table():
    """Spec §3.10: |1 − d·y_k| for y_0 = 3e^(0.5−d) + 0.003; at the fixed-point floor after 7 on [1, 5]."""
    d = np.array([1.0, 1.5, 2.0, 5.0, 10.0])
    table = {3: [0.21, 0.036, 2.0e-4, 0.20, 0.77], 5: [1.9e-3, 1.7e-6, 0.0, 1.6e-3, 0.35]}
    engine = _engine(2, seed=3)
    with engine.phase("test"):
        shared = engine.input(d)
        for iterations, expected in table.items():
            residual = np.abs(1 - d * engine.open(engine.reciprocal(shared, iterations)))
            np.testing.assert_allclose(residual, expected, rtol=0.35, atol=1e-5)
        residual = np.abs(1 - d * engine.open(engine.reciprocal(shared)))
    assert residual[:4].max() <= 1e-5
    assert residual[4] == pytest.approx(0.015, rel=0.1)


def test_the_linear_start_reaches_fixed_point_precision_on_1_to_2_in_3_iterations_without_a_round_for_it():
    """y_0 = 24/17 − 8/17·d is within 1/17 of 1/d on [1, 2]; each Newton–Raphson step squares the error."""
    d = np.linspace(1.0, 2.0, 11)
    engine = _engine(2, seed=4)
    with engine.phase("start"):
        start = engine.open(engine.reciprocal(engine.input(d), 0, "linear"))
    assert np.abs(1 - d * start).max() == pytest.approx(1 / 17, rel=1e-3)
    with engine.phase("three"):
        shared = engine.input(d)
        residual = np.abs(1 - d * engine.open(engine.reciprocal(shared, 3, "linear")))
    assert residual.max() <= 4 * 2.0**-20
    assert engine.traffic.rounds["start"] == 2  # the input and the opening: the start itself is local
    with pytest.raises(ValueError, match=r"reciprocal start must be one of \('exp', 'linear'\), got 'taylor'"):
        with engine.phase("bad"):
            engine.reciprocal(shared, 3, "taylor")


def test_exp_is_the_limit_approximation():
    u = np.array([-9.5, -2.0, -0.5, 0.0, 1.0])
    engine = _engine(3, seed=5)
    with engine.phase("test"):
        result = engine.open(engine.exp(engine.input(u)))
    limit = (1 + u / 256) ** 256
    np.testing.assert_allclose(result, limit, rtol=1e-3, atol=5e-5)
    assert np.abs(result / np.exp(u) - 1)[1:].max() < 0.01  # (1 + u/256)^256 is within u²/512 of e^u


def test_exp_and_reciprocal_refuse_integer_shares_and_negative_iterations():
    engine = _engine(2)
    with engine.phase("test"):
        bits = engine.input([1, 0], scale=0)
        with pytest.raises(ValueError, match=r"reciprocal needs fixed-point shares of scale 20, got scale 0"):
            engine.reciprocal(bits)
        with pytest.raises(ValueError, match=r"Newton-Raphson iterations must be >= 0, got -1"):
            engine.reciprocal(engine.input([2.0]), -1)
        with pytest.raises(ValueError, match=r"truncation bits must be in \[0, 62\), got 70"):
            engine.truncate(bits, 70)


def _cost(engine, name, operation):
    with engine.phase(name):
        operation()
    return engine.traffic.rounds[name], engine.traffic.total(name).bytes


@pytest.mark.parametrize("n", [2, 3, 5])
def test_communication_matches_the_cost_formulas(n):
    """Per link-direction pair, n(n−1) messages; 8 bytes per opened word; 1 round per opening."""
    engine, k, links = _engine(n), 12, n * (n - 1)
    with engine.phase("input"):
        x, y, m, w = engine.input_many(
            [(np.ones(k), None), (np.ones(k), engine.names[1]), (np.ones((3, 4)), None), (np.ones((4, 5)), None)]
        )
    assert engine.traffic.rounds["input"] == 1
    assert engine.traffic.total("input").bytes == 8 * (2 * k + 12 + 20) * (n - 1)
    truncation = (0, 0) if n == 2 else (1, 8 * links)  # rounds, bytes per truncated word
    assert _cost(engine, "open", lambda: engine.open(x)) == (1, 8 * k * links)
    assert _cost(engine, "mul", lambda: engine.mul(x, y)) == (1 + truncation[0], (16 * links + truncation[1]) * k)
    assert _cost(engine, "square", lambda: engine.square(x)) == (1 + truncation[0], (8 * links + truncation[1]) * k)
    assert _cost(engine, "matmul", lambda: engine.matmul(m, w)) == (
        1 + truncation[0],
        8 * (12 + 20) * links + 15 * truncation[1],
    )
    assert _cost(engine, "reciprocal", lambda: engine.reciprocal(y)) == (
        22 * (1 + truncation[0]) + truncation[0],  # exp starts with a division by 2^8
        (8 * (8 * links + truncation[1]) + 14 * (16 * links + truncation[1]) + truncation[1]) * k,
    )
    assert engine.dealer.issued["triple"] == 3 * n * 8 * (k + 14 * k)


def test_exact_truncation_costs_an_opening_a_prefix_carry_and_a_dabit():
    """1 + 6 + 1 = 8 rounds; 8 bytes (z) + 11 ANDs x 16 bytes + 1 bit per word and link."""
    engine, k = _engine(3, "exact"), 16
    with engine.phase("input"):
        x = engine.input(np.ones(k))
    assert _cost(engine, "truncate", lambda: engine.truncate(x, L)) == (8, (8 * k + 11 * 16 * k + k // 8) * 6)


@pytest.mark.parametrize(("n", "truncation"), TRUNCATION_SETTINGS)
def test_every_truncation_mode_rounds_products_without_bias(n, truncation):
    """Issue 29: over 10^5 results of each operation that truncates (products of random reals in [−1, 1)),
    the mean error is within ±0.05 ulp (measured: within ±0.004; each of n parties flooring its share, as
    before, gave −n/2 ulp: −1.000 with 2 parties), every result within n/2 ulps; 0·x has a mean error within
    ±0.05 ulp too, and with 2 parties it is exactly 0 on every sharing (party 0 floors, party 1 ceils)."""
    for operation in OPERATIONS:
        errors = product_errors(n, truncation, operation, 100_000, seed=1)
        zeros = product_errors(n, truncation, operation, 100_000, zero=True, seed=2)
        assert abs(errors.mean()) <= 0.05 and abs(zeros.mean()) <= 0.05, (operation, errors.mean(), zeros.mean())
        assert max(np.abs(errors).max(), np.abs(zeros).max()) <= n / 2, operation
        if n == 2:
            assert not zeros.any(), operation


def test_local_truncation_is_the_same_in_each_partys_own_process():
    """A party in its own process (its row only) rounds its share as the simulator does: party 0 floors,
    party 1 ceils, so a shared 0 is exactly 0 from the parties' own quotients."""
    from privbandits.mpc.sharing import ArithmeticShares, reconstruct, share
    from privbandits.mpc.truncation import truncate

    rng = np.random.default_rng(9)
    engine = _engine(2)
    values = np.concatenate([np.zeros(2000, dtype=np.int64), rng.integers(-(2**40), 2**40, size=4000)])
    shares = ArithmeticShares(share(values.view(np.uint64), 2, rng), 0, True)
    by_party = [
        truncate(Engine(2, seed=0, local=name), ArithmeticShares(shares.shares[[row]], 0, row == 0), L).shares
        for row, name in enumerate(engine.names)
    ]
    np.testing.assert_array_equal(np.concatenate(by_party), truncate(engine, shares, L).shares)
    np.testing.assert_array_equal(reconstruct(np.concatenate(by_party))[:2000], 0)


@pytest.mark.parametrize("parties", [2, 3])
def test_matmul_inputs_takes_the_owners_blocks_in_the_products_round(parties):
    """[W @ x] and [x] for x the owners' plaintext blocks (one party may hold none) in the rounds of the product
    alone (1 with 2 parties, and Alg. 3's truncation with 3), where input then product take one more. Each
    party's share of the opened x − B is its own block (uniform: chi-square of the low byte over 4,000
    elements) and 0 elsewhere, and the product is within 2^-17 of W @ x (8 rounded terms)."""
    from mpc_openings import record_openings
    from scipy import stats

    from privbandits.mpc.arithmetic import matmul_inputs

    engine = Engine(parties, seed=5)
    rng = np.random.default_rng(5)
    weights = rng.uniform(-1, 1, (3, 5, 8))
    x = rng.uniform(-1, 1, 8)
    blocks = {2: [(x[:5], "p0"), (x[5:], "p1")], 3: [(x[:3], "p0"), (x[3:], "p2")]}[parties]
    with engine.phase("input"):
        shared = engine.input(weights)
    sent = record_openings(engine)
    with engine.phase("product"):
        product, context = matmul_inputs(engine, shared, blocks)
    assert engine.traffic.rounds["product"] == (1 if parties == 2 else 2)  # and Alg. 3's truncation round
    with engine.phase("open"):
        assert np.abs(engine.open(product) - weights @ x).max() < 2.0**-17
        np.testing.assert_allclose(engine.open(context), x, atol=2.0**-21)
    opened_y = sent[0][:, -8:]
    owner = np.array([0] * 5 + [1] * 3) if parties == 2 else np.array([0] * 3 + [2] * 5)
    for row in range(parties):
        assert not opened_y[row][owner != row].any()
    big = rng.uniform(-1, 1, 4000)
    with engine.phase("uniform"):
        sent.clear()
        matmul_inputs(engine, engine.input(np.ones((1, 4000))), [(big, "p0")])
    low_bytes = (sent[0][0, -4000:] & np.uint64(255)).astype(int)
    assert stats.chisquare(np.bincount(low_bytes, minlength=256)).pvalue > 1e-3
