"""Masked table lookups (one-time truth tables), the 3-round comparison and the AllMax built on them."""

from __future__ import annotations

import numpy as np
import pytest
from mpc_openings import record_openings
from scipy import stats

from privbandits.comm import InMemoryNetwork, Party
from privbandits.mpc import Engine, lookup
from privbandits.mpc.approximations import goldschmidt_steps, reciprocal
from privbandits.mpc.dealer import Dealer, Material, RecordingDealer, RemoteDealer, party_words, replay
from privbandits.mpc.overlap import run_steps
from privbandits.mpc.sharing import share, share_xor

INT64_EDGES = np.array([-(2**63), -(2**63) + 1, -(2**62), -1, 0, 1, 2**62, 2**63 - 1], dtype=np.int64)


def test_pack_unpack_and_entry_round_trip_at_every_width():
    rng = np.random.default_rng(0)
    for width in (1, 2, 4, 8):
        values = rng.integers(0, 1 << width, size=(3, 5, 256), dtype=np.uint8)
        words = lookup.pack(values, width)
        assert words.shape == (3, 5, 4 * width) and words.dtype == np.uint64
        np.testing.assert_array_equal(lookup.unpack(words, width), values)
        index = rng.integers(0, 256, size=(3, 5), dtype=np.uint8)
        chosen = np.take_along_axis(values, index[..., None], -1)[..., 0]
        np.testing.assert_array_equal(lookup.entry(words, index, width), chosen)


@pytest.mark.parametrize("name", sorted(lookup.TABLES))
def test_a_lookup_gives_the_table_entry_of_every_index_from_a_uniform_opening(name):
    """Every 8-bit index, 40 times over: the shares (XOR, or adding up modulo 2^width) give f(I) in 1 round;
    what is opened is I ⊕ R, uniform whatever I (chi-square on 2,000 lookups of one index)."""
    table = lookup.TABLES[name]
    tail = table.values.shape[:-1]
    engine = Engine(2, seed=4)
    sent = record_openings(engine)
    index = np.tile(np.arange(256, dtype=np.uint8), 40)
    if tail:
        index = np.broadcast_to(index[:, None], (len(index), *tail)).copy()
    shares = share_xor(index.astype(np.uint64), 2, engine.rng).astype(np.uint8)
    with engine.phase("lookup"):
        out = lookup.lookup(engine, shares, name)
    combined = (out[0] + out[1]) if table.additive else out[0] ^ out[1]
    combined &= np.uint8((1 << table.width) - 1)
    want = np.take_along_axis(table.values.T, index, axis=0) if tail else table.values[index]
    np.testing.assert_array_equal(combined, want)
    assert engine.traffic.rounds["lookup"] == 1
    constant = np.zeros((2, 2000 // int(np.prod(tail)), *tail), dtype=np.uint8)
    constant[0] = 77
    with engine.phase("constant"):
        lookup.lookup(engine, constant, name)
    opened = lookup.words_to_bytes(sent[-1][0] ^ sent[-1][1], (2000,))
    assert stats.chisquare(np.bincount(opened, minlength=256)).pvalue > 1e-3


def _ltz(engine, values, width=4):
    words = share(np.asarray(values, dtype=np.int64).view(np.uint64), 2, engine.rng)
    with engine.phase("ltz"):
        out = lookup.ltz(engine, words, width)
    return (out.astype(np.int64).sum(axis=0) % (1 << width)), engine.traffic.rounds["ltz"]


def test_the_lookup_comparison_reads_the_sign_bit_of_any_word_in_three_rounds():
    """Random words, the extremes, and shares whose low 63 bits carry into the sign bit or just do not."""
    engine = Engine(2, seed=9)
    rng = np.random.default_rng(9)
    values = np.concatenate([rng.integers(-(2**63), 2**63 - 1, 5000, dtype=np.int64), INT64_EDGES])
    for width in (4, 8):
        got, rounds = _ltz(engine, values, width)
        np.testing.assert_array_equal(got, values < 0)
        assert rounds == 3 * (width // 4)  # the phase is counted again on the second call
    # every digit pair equal but one: x0 = A, x1 chosen so that B = A ± 1 at each digit position
    low = np.uint64(2**63 - 1)
    a = rng.integers(0, 2**63 - 1, 64, dtype=np.int64).view(np.uint64) & low
    steps = (np.uint64(1) << (4 * np.arange(16, dtype=np.uint64))) & low
    for sign in (np.uint64(0), np.uint64(1) << np.uint64(63)):
        for delta in (steps, np.zeros_like(steps)):
            x1 = (low - (a[:, None] + delta[None, :])) & low | sign  # B = A + delta: no carry; delta = 0: no carry
            x0 = np.broadcast_to(a[:, None], x1.shape)
            shares = np.stack([x0.ravel(), x1.ravel()])
            with engine.phase("edge"):
                out = lookup.ltz(engine, shares)
            want = ((x0 + x1).ravel().view(np.int64) < 0).astype(np.int64)
            np.testing.assert_array_equal(out.astype(np.int64).sum(axis=0) % 16, want)


def test_the_lookup_comparison_and_the_dealer_refuse_other_than_two_parties():
    engine = Engine(3, seed=1)
    with pytest.raises(ValueError, match=r"^the lookup comparison is for 2 computing parties, got 3$"):
        lookup.ltz(engine, np.zeros((3, 4), dtype=np.uint64))
    with pytest.raises(ValueError, match=r"^lookup tables are dealt to 2 computing parties, got 3$"):
        Dealer(3, np.random.default_rng(0)).lookup_table("combine", (4,))
    with pytest.raises(ValueError, match=r"^table 'digits' is for indices of shape \(\.\.\., 16\), got \(4, 15\)$"):
        Dealer(2, np.random.default_rng(0)).lookup_table("digits", (4, 15))


@pytest.mark.parametrize("distinct", [False, True])
def test_the_tabled_allmax_marks_every_maximum_in_four_rounds(distinct):
    """On 300 rows (many ties unless distinct), for 2 to 17 elements: the bits of the product-tree AllMax, in 4
    rounds; on distinct values only half the pairs are compared, so the online bytes fall."""
    from privbandits.mpc.comparison import allmax

    rng = np.random.default_rng(3)
    for size in (2, 3, 10, 17):
        if distinct:
            values = np.argsort(rng.random((300, size)), axis=1).astype(float)
        else:
            values = rng.integers(-3, 3, size=(300, size)).astype(float)
        engine = Engine(2, seed=2)
        with engine.phase("input"):
            x = engine.input(values)
        with engine.phase("tabled"):
            bits = engine.open(allmax(engine, x, lookup=True, tabled=True, distinct=distinct))
        np.testing.assert_array_equal(bits, values == values.max(axis=1, keepdims=True))
        assert engine.traffic.rounds["tabled"] == 4 + 1  # and the opening


def test_the_tabled_allmax_refuses_more_values_than_a_byte_counts():
    from privbandits.mpc.comparison import allmax

    engine = Engine(2, seed=1)
    with engine.phase("input"):
        x = engine.input(np.zeros(257))
    with pytest.raises(ValueError, match=r"^the lookup AllMax counts up to 255 wins, so it takes at most 256 values"):
        allmax(engine, x, lookup=True, tabled=True)


def test_the_tabled_argmax_for_ten_arms_takes_four_rounds_and_two_kilobytes():
    """Packed keys are distinct: 45 comparisons of 16 + 4 + 1 lookups (bytes rounded up to words), then the count:
    2 links x (8·⌈720/8⌉ + 8·⌈180/8⌉ + 8·⌈45/8⌉ + 8·10) bytes, against 9 rounds and 34,744 bytes without tables."""
    engine, m = Engine(2, seed=6), 10
    with engine.phase("input"):
        x = engine.input(np.arange(m, dtype=float))
    with engine.phase("argmax"):
        onehot = engine.argmax(x, lookup=True, tabled=True, packed=True)
    with engine.phase("open"):
        np.testing.assert_array_equal(engine.open(onehot), np.eye(m)[m - 1])
    assert engine.traffic.rounds["argmax"] == 4
    assert engine.traffic.total("argmax").bytes == 2 * 8 * (90 + 23 + 6 + 10)


def test_a_remote_dealer_reads_a_party_its_own_rows_of_the_lookup_material():
    """The dealer's process replays the calls of a round and sends each party its words; the party's RemoteDealer
    answers the same calls with its rows of the same material."""
    recorder = RecordingDealer(Dealer(2, np.random.default_rng(5)))
    recorder.lookup_table("digits", (3, 16))
    recorder.lookup_table("ltz4", (3,))
    made = replay(Dealer(2, np.random.default_rng(7)), recorder.calls, lambda kind: None)
    network = InMemoryNetwork()
    dealer = Party("dealer", network)
    for row, name in enumerate(("p0", "p1")):
        Party(name, network)
        with network.phase("offline"):
            dealer.send(name, Material(1, party_words(made, row)))
        remote = RemoteDealer(network, name, "dealer", 2, lead=row == 0)
        got = [remote.lookup_table("digits", (3, 16)), remote.lookup_table("ltz4", (3,))]
        for mine, theirs in zip(got, made, strict=True):
            np.testing.assert_array_equal(mine.mask.shares[0], theirs.mask.shares[row])
            np.testing.assert_array_equal(mine.table.shares[0], theirs.table.shares[row])


def test_goldschmidt_gives_n_over_d_in_one_round_more_than_its_iterations():
    """u/d and 1/d for d in [1, 2], |u| <= 1: 1 + k rounds (Newton–Raphson: 2k), within 2(k + 1)·2^-20 of the
    exact values at L = 20 (measured: 3.1 and 2.1 ulps after 3 iterations from the linear start, 6.8 and 5.1
    after 7 from the paper's exp start; both parties flooring, before issue 29: 7.9, 6.7, 25 and 23), where
    Newton–Raphson's 1/d stays within 2·2^-20 (1.7): Goldschmidt's truncations add up."""
    engine = Engine(2, seed=3)
    rng = np.random.default_rng(1)
    d, u = 1 + rng.random(200), rng.uniform(-1, 1, (200, 20))
    with engine.phase("input"):
        shared_d, shared_u = engine.input(d), engine.input(u)
    for start, iterations in (("linear", 3), ("exp", 7)):
        with engine.phase(f"gold {start}"):
            ratio = run_steps(engine, goldschmidt_steps(engine, shared_d, iterations, start, shared_u))
        with engine.phase(f"gold inverse {start}"):
            inverse = run_steps(engine, goldschmidt_steps(engine, shared_d, iterations, start))
        with engine.phase(f"newton {start}"):
            newton = reciprocal(engine, shared_d, iterations, start)
        start_rounds = 0 if start == "linear" else 8
        assert engine.traffic.rounds[f"gold {start}"] == start_rounds + 1 + iterations
        assert engine.traffic.rounds[f"gold inverse {start}"] == start_rounds + 1 + iterations
        assert engine.traffic.rounds[f"newton {start}"] == start_rounds + 2 * iterations
        with engine.phase("open"):
            opened = [engine.open(value) for value in (ratio, inverse, newton)]
        bound = 2 * (iterations + 1) * 2.0**-20
        assert np.abs(opened[0] - u / d[:, None]).max() < bound
        assert np.abs(opened[1] - 1 / d).max() < bound
        assert np.abs(opened[2] - 1 / d).max() < 2 * 2.0**-20


def test_goldschmidt_checks_its_arguments_when_made():
    engine = Engine(2, seed=3)
    with engine.phase("input"):
        d, u = engine.input(np.ones(4)), engine.input(np.ones((3, 2)))
    with pytest.raises(ValueError, match=r"^Goldschmidt iterations must be >= 0, got -1$"):
        goldschmidt_steps(engine, d, -1, "linear")
    with pytest.raises(ValueError, match=r"^reciprocal start must be one of \('exp', 'linear'\), got 'cubic'$"):
        goldschmidt_steps(engine, d, 3, "cubic")
    with pytest.raises(ValueError, match=r"^the numerator's shape must extend the denominator's \(4,\), got \(3, 2\)$"):
        goldschmidt_steps(engine, d, 3, "linear", u)


def test_a_kept_factor_multiplies_the_argmax_at_no_cost():
    """The dealer's one-hot times its secret factor (0 or 1 here, as 1 − y_t): the AllMax comes out multiplied by
    it in the same rounds, with and without table comparisons; the replayed schedule takes the factor of the
    round; kept needs the lookup AllMax."""
    from privbandits.mpc.comparison import Kept, allmax

    rng = np.random.default_rng(2)
    values = rng.integers(-4, 4, size=(50, 10)).astype(float)
    factor = rng.integers(0, 2, size=50).astype(np.uint64)
    for tabled in (False, True):
        engine = Engine(2, seed=3)
        with engine.phase("input"):
            x = engine.input(values)
        with engine.phase("kept"):
            bits = allmax(engine, x, lookup=True, tabled=tabled, kept=Kept(factor[:, None], "exploiting"))
        with engine.phase("plain"):
            allmax(engine, x, lookup=True, tabled=tabled)
        assert engine.traffic.rounds["kept"] == engine.traffic.rounds["plain"]
        with engine.phase("open"):
            got = engine.open(bits)
        np.testing.assert_array_equal(got, (values == values.max(axis=1, keepdims=True)) * factor[:, None])
    engine = Engine(2, seed=3)
    with engine.phase("input"):
        x = engine.input(values)
        with pytest.raises(ValueError, match=r"^kept needs the lookup AllMax \(lookup=True\) of 2 values or more"):
            allmax(engine, x, kept=Kept(factor, "exploiting"))
        with pytest.raises(ValueError, match=r"^kept needs the lookup AllMax \(lookup=True\) of 2 values or more"):
            allmax(engine, x[:, :1], lookup=True, kept=Kept(factor, "exploiting"))  # one value: nothing to scale
    recorder = RecordingDealer(Dealer(2, np.random.default_rng(5)))
    recorder.rotated_onehot((4,), 16, factor=np.ones(4, np.uint64), factor_kind="exploiting")
    (made,) = replay(Dealer(2, np.random.default_rng(5)), recorder.calls, lambda kind: np.zeros(4, np.uint64))
    assert not (made.onehot.shares[0] + made.onehot.shares[1]).any()
