"""Binary circuits and comparisons: AND, adder, A2B/B2A, LTZ, sign, AllMax and argmax (Alg. 2)."""

from __future__ import annotations

import numpy as np
import pytest
from mpc_openings import record_openings
from scipy import stats

from privbandits.mpc import ArithmeticShares, BinaryShares, Engine, encode, share_xor

INT64_EDGES = np.array([-(2**63), -(2**63) + 1, -1, 0, 1, 2**63 - 1], dtype=np.int64)


def _words(engine, values):
    """XOR shares of the words ``values`` (uint64), as if from the dealer."""
    return BinaryShares(share_xor(np.asarray(values, dtype=np.uint64), engine.n_parties, engine.rng))


@pytest.mark.parametrize("n", [2, 3, 4, 5])
def test_a2b_adds_the_shares_and_b2a_inverts_it(n):
    rng = np.random.default_rng(n)
    values = np.concatenate([rng.normal(scale=1e6, size=300), INT64_EDGES[2:5].astype(float)])
    engine = Engine(n, seed=n)
    with engine.phase("test"):
        x = engine.input(values)
        binary = engine.a2b(x)
        np.testing.assert_array_equal(engine.open_binary(binary), encode(values))
        back = engine.b2a(binary)
        assert back.scale == 0
        np.testing.assert_array_equal(engine.open(back), encode(values).view(np.int64).astype(float))
    csa_layers = {2: 0, 3: 1, 4: 2, 5: 3}[n]  # carry-save layers before the 7-round adder
    assert engine.traffic.rounds["test"] == 1 + (7 + csa_layers) + 1 + 1 + 1


def test_and_and_adder_match_numpy_on_random_words():
    rng = np.random.default_rng(11)
    a, b = rng.integers(0, 2**64, size=(2, 500), dtype=np.uint64)
    engine = Engine(3, seed=1)
    with engine.phase("test"):
        x, y = _words(engine, a), _words(engine, b)
        np.testing.assert_array_equal(engine.open_binary(engine.and_(x, y)), a & b)
        np.testing.assert_array_equal(engine.open_binary(engine.add_binary(x, y)), a + b)
        np.testing.assert_array_equal(engine.open(engine.b2a(x)), a.view(np.int64).astype(float))


@pytest.mark.parametrize(("n", "truncation"), [(2, "auto"), (3, "auto"), (5, "exact")])
def test_comparisons_are_exact_on_random_signed_values_ties_and_extremes(n, truncation):
    rng = np.random.default_rng(20 + n)
    limit = 2.0 ** (62 - 20)
    a = np.concatenate([rng.uniform(-limit, limit, 400), rng.normal(size=400), [0.0, 2**-20, -(2**-20), limit / 2]])
    b = np.concatenate([rng.uniform(-limit, limit, 400), a[400:800], [0.0, 0.0, 0.0, -limit / 2]])
    b[400:600] += rng.choice([-(2**-20), 2**-20], size=200)  # neighbours one unit apart
    engine = Engine(n, truncation=truncation, seed=n)
    with engine.phase("test"):
        x, y = engine.input_many([(a, None), (b, engine.names[-1])])
        ea, eb = np.rint(a * 2**20), np.rint(b * 2**20)
        np.testing.assert_array_equal(engine.open(engine.ge(x, y)), ea >= eb)
        np.testing.assert_array_equal(engine.open(engine.lt(x, y)), ea < eb)
        np.testing.assert_array_equal(engine.open(engine.ltz(x)), ea < 0)
        np.testing.assert_array_equal(engine.open(engine.sign(y)), np.where(eb >= 0, 1, -1))


def test_ltz_reads_the_sign_bit_of_any_word():
    engine = Engine(2, seed=2)
    with engine.phase("test"):
        words = engine.b2a(_words(engine, INT64_EDGES.view(np.uint64)))
        np.testing.assert_array_equal(engine.open(engine.ltz(words)), INT64_EDGES < 0)


def test_allmax_marks_every_maximum_and_argmax_is_one_hot():
    values = np.array([[1.0, 3.0, 2.0, 3.0], [0.0, 0.0, 0.0, 0.0], [-5.0, -1.0, -2.0, -7.0], [2.5, -1.0, 0.5, 2.0]])
    engine = Engine(3, seed=4)
    with engine.phase("test"):
        x = engine.input(values)
        np.testing.assert_array_equal(engine.open(engine.allmax(x)), values == values.max(axis=1, keepdims=True))
        onehot = engine.open(engine.argmax(x))
        single = engine.open(engine.argmax(engine.input([4.0])))
    assert set(np.unique(onehot)) <= {0.0, 1.0} and (onehot.sum(axis=1) == 1).all()
    assert (values[np.arange(4), onehot.argmax(axis=1)] == values.max(axis=1)).all()
    np.testing.assert_array_equal(onehot[2:], np.eye(4)[[1, 0]])  # distinct values: numpy's argmax
    np.testing.assert_array_equal(single, [1.0])


def test_argmax_equals_numpys_on_distinct_random_scores():
    scores = np.random.default_rng(8).normal(size=(200, 7))
    engine = Engine(2, seed=8)
    with engine.phase("test"):
        onehot = engine.open(engine.argmax(engine.input(scores)))
    np.testing.assert_array_equal(onehot, np.eye(7)[scores.argmax(axis=1)])


def test_argmax_breaks_ties_uniformly_at_random():
    """Spec §8 point 4: each of k tied maxima wins with frequency 1/k (chi-square)."""
    rows = 3000
    values = np.tile([1.0, 3.0, 3.0, 0.0, 3.0], (rows, 1))
    engine = Engine(2, seed=5)
    with engine.phase("test"):
        onehot = engine.open(engine.argmax(engine.input(values)))
    assert (onehot.sum(axis=1) == 1).all() and not onehot[:, [0, 3]].any()
    assert stats.chisquare(onehot[:, [1, 2, 4]].sum(axis=0)).pvalue > 1e-3


@pytest.mark.parametrize("scale_bits", [0, 40])
def test_packed_argmax_picks_what_alg_2_picks_in_half_the_rounds(scale_bits):
    """One AllMax of the keys x·2^k + γ selects Alg. 2's element (the maximum with the largest γ):
    on 400 rows of 10 scores with many ties, same one-hot from the same γ, in half the rounds
    (13 instead of 26, as measured)."""
    rng = np.random.default_rng(8)
    rows, m = 400, 10
    values = rng.integers(-3, 3, size=(rows, m)).astype(float) * 0.25
    engine = Engine(2, seed=9, precision=20)
    with engine.phase("input"):
        x = engine.input(values)
        if scale_bits:  # scores at scale 2L, as the learner compares them
            x = ArithmeticShares(x.shares * np.uint64(1 << 20), 40)
        gamma = engine.dealer.permutation(m, (rows,))
    chosen = {}
    for packed in (False, True):
        with engine.phase(f"packed={packed}"):
            chosen[packed] = engine.open(engine.argmax(x, gamma, packed=packed))
    np.testing.assert_array_equal(chosen[True], chosen[False])
    assert (chosen[True].sum(axis=1) == 1).all()
    best = values == values.max(axis=1, keepdims=True)
    assert best[chosen[True].astype(bool)].all()
    assert (engine.traffic.rounds["packed=True"], engine.traffic.rounds["packed=False"]) == (13, 26)


def test_argmax_rounds_and_bytes_for_ten_arms_and_two_parties():
    """2 x (8-round comparison + ⌈log2 9⌉ = 4 product rounds) + 1 round for the γ product;
    bytes: 2 links x (|A|(|A|−1) comparisons of 12 ANDs x 16 bytes + packed daBits, |A|(|A|−2) tree products
    of 16 bytes) per AllMax, and |A| products for γ."""
    engine, m = Engine(2, seed=6), 10
    with engine.phase("input"):
        x = engine.input(np.arange(m, dtype=float))
    with engine.phase("argmax"):
        engine.argmax(x)
    comparisons = m * (m - 1)
    ltz_bytes = 2 * (12 * 16 * comparisons + -(-comparisons // 8))  # 12 ANDs of 16 bytes a word, packed daBits
    tree_bytes = 2 * 16 * m * (m - 2)  # each product of the tree (9 → 5 → 3 → 2 → 1 bits) removes one bit
    assert engine.traffic.rounds["argmax"] == 25
    assert engine.traffic.total("argmax").bytes == 2 * ltz_bytes + 2 * tree_bytes + 2 * 16 * m


@pytest.mark.parametrize("n", [2, 3])
def test_allmax_by_lookup_marks_what_the_product_tree_marks_in_one_round(n):
    """lookup: arm i is a maximum iff Σ_j [x_i ≥ x_j] = |A|−1, read by one masked lookup. On 300 rows with
    many ties, for 2 to 17 elements, the same bits as the tree and Alg. 2's argmax (one-hot, a maximum); the
    tree's ⌈log2(|A|−1)⌉ rounds become one where that is fewer (|A| > 3)."""
    rng = np.random.default_rng(n)
    for size in (2, 3, 4, 5, 10, 17):
        values = rng.integers(-3, 3, size=(300, size)).astype(float)
        bits, onehot, rounds = {}, {}, {}
        for lookup in (False, True):
            engine = Engine(n, seed=1)
            with engine.phase("input"):
                x = engine.input(values)
            with engine.phase("allmax"):
                bits[lookup] = engine.open(engine.allmax(x, lookup=lookup))
            rounds[lookup] = engine.traffic.rounds["allmax"] - 1  # less the opening
            with engine.phase("argmax"):
                onehot[lookup] = engine.open(engine.argmax(x, lookup=lookup))
        np.testing.assert_array_equal(bits[True], values == values.max(axis=1, keepdims=True))
        np.testing.assert_array_equal(bits[True], bits[False])
        assert (onehot[True].sum(axis=1) == 1).all() and bits[True][onehot[True].astype(bool)].all()
        tree = int(np.ceil(np.log2(size - 1)))
        assert rounds[False] - rounds[True] == (tree - 1 if size > 3 else 0), size


def test_count_is_reads_each_count_from_a_uniform_opening():
    """[count = value] for every count in 0..value; what each party sends is its share of count + r mod m,
    uniform in 0..m−1 whatever the count (chi-square over 4,000 equal counts)."""
    from privbandits.mpc.comparison import count_is

    engine = Engine(2, seed=3)
    counts = np.concatenate([np.arange(10), np.full(4000, 9)])
    sent = record_openings(engine)
    with engine.phase("count"):
        result = engine.open(count_is(engine, engine.input(counts, scale=0), 9))
    np.testing.assert_array_equal(result, counts == 9)
    opened = sent[0]
    assert opened.max() < 16
    assert stats.chisquare(np.bincount(opened[0, 10:].astype(int), minlength=16)).pvalue > 1e-3
    assert stats.chisquare(np.bincount(((opened[0] + opened[1]) & 15)[10:].astype(int), minlength=16)).pvalue > 1e-3
