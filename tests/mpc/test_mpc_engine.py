"""The engine: configuration errors, who receives what (transcript audit), seeds, party counts."""

from __future__ import annotations

import numpy as np
import pytest

from privbandits.comm import InMemoryNetwork, Party, ProtocolError
from privbandits.mpc import Engine


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"parties": 1}, r"at least 2 computing parties, got 1"),
        ({"parties": ["a"]}, r"at least 2 computing parties, got 1"),
        ({"parties": ["a", "a"]}, r"party names must be distinct, got \['a', 'a'\]"),
        ({"precision": 0}, r"precision must be in \[1, 30\] bits, got 0"),
        ({"precision": 31}, r"precision must be in \[1, 30\] bits, got 31"),
        ({"truncation": "round"}, r"truncation must be one of \('auto', 'local', 'wraps', 'exact'\), got 'round'"),
        ({"parties": 3, "truncation": "local"}, r"local truncation is for 2 parties, got 3"),
    ],
)
def test_bad_configuration_is_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        Engine(**kwargs)


def test_auto_truncation_is_the_papers_choice():
    assert Engine(2).truncation == "local"
    assert Engine(3).truncation == "wraps"
    assert Engine(["bank", "shop", "telco"], truncation="exact").names == ("bank", "shop", "telco")


def test_protocols_run_only_inside_a_phase():
    engine = Engine(2, seed=0)
    with pytest.raises(ProtocolError, match=r"outside any phase"):
        engine.input([1.0])


def test_transcript_shows_only_masked_openings_and_targeted_reveals():
    """Spec §8 point 9: inputs go from their owner, a reveal only to its receiver, and a product
    opens only Beaver-masked words that look nothing like the operands."""
    network = InMemoryNetwork(record=True, serialize=True)
    engine = Engine(3, seed=1, network=network)
    Party("puller", network)
    rewarder = Party("rewarder", network)  # outside the computation: it inputs through its own Party
    with engine.phase("round"):
        x = engine.input(np.full(64, 2.0))
        reward = engine.input([1.0], owner=rewarder)
        network.transcript.clear()
        engine.mul(x, reward)
        opened = [envelope.message.words for envelope in network.transcript if envelope.receiver == "p0"]
        network.transcript.clear()
        chosen = engine.open_to(x[:3], "puller")
    assert {(e.sender, e.receiver) for e in network.transcript} == {
        ("p0", "puller"),
        ("p1", "puller"),
        ("p2", "puller"),
    }
    np.testing.assert_array_equal(chosen, [2.0, 2.0, 2.0])
    words = np.concatenate(opened)
    assert len(opened) == 2 * 2  # the product's masked opening and Alg. 3's masked z, from 2 senders each
    assert len(np.unique(words)) == words.size  # uniform masks: no repeated word, so no encoded 2.0 or 1.0
    assert network.traffic.total("round", sender="rewarder").messages == 3


def test_unknown_parties_and_scales_are_refused():
    engine = Engine(2, seed=0)
    with engine.phase("round"):
        x = engine.input([1.0])
        with pytest.raises(ValueError, match=r"unknown receiver 'nobody'; parties on the network: \['p0', 'p1'\]"):
            engine.open_to(x, "nobody")
        with pytest.raises(ValueError, match=r"unknown input owner 'ghost'"):
            engine.input([1.0], owner="ghost")
        with pytest.raises(ValueError, match=r"input scale must be in \[0, 20\] fractional bits, got 21"):
            engine.input([1.0], scale=21)


def _run(parties, seed, truncation="auto"):
    engine = Engine(parties, seed=seed, truncation=truncation)
    rng = np.random.default_rng(99)
    a, b = rng.normal(size=(5, 5)), rng.normal(size=5)
    with engine.phase("run"):
        x, y = engine.input_many([(a, None), (b, engine.names[-1])])
        scores = engine.matmul(x, y)
        inverse = engine.reciprocal(1.0 + engine.mul(y, y))
        return engine.open(scores), engine.open(inverse), engine.open(engine.argmax(scores)), x.shares


def test_a_seed_reproduces_every_share_and_none_draws_fresh_randomness():
    first, again, fresh = _run(2, 7), _run(2, 7), _run(2, None)
    for left, right in zip(first, again, strict=True):
        np.testing.assert_array_equal(left, right)
    assert not np.array_equal(first[3], fresh[3])


def test_two_three_and_five_parties_compute_the_same_results():
    reference = _run(2, 0)
    for parties, truncation in [(3, "wraps"), (5, "wraps"), (5, "exact")]:
        scores, inverse, onehot, _ = _run(parties, 1, truncation)
        np.testing.assert_allclose(scores, reference[0], atol=5 * parties * 2.0**-20)
        np.testing.assert_allclose(inverse, reference[1], atol=1e-4)
        np.testing.assert_array_equal(onehot, reference[2])


def test_dealer_randomness_is_private_and_uniform_draws_are_fixed_point():
    engine = Engine(2, seed=3)
    with engine.phase("round"):
        coin, uniforms = engine.bernoulli(0.5, (1000,)), engine.uniform((1000,))
        gamma = engine.permutation(4, (2,))
        assert (coin.scale, uniforms.scale, gamma.scale) == (0, 20, 0)
        assert set(engine.open(coin).tolist()) == {0.0, 1.0}
        values = engine.open(uniforms)
        np.testing.assert_array_equal(np.sort(engine.open(gamma), axis=1), [[1, 2, 3, 4]] * 2)
    assert values.min() >= 0 and values.max() < 1 and np.all(values * 2**20 == np.rint(values * 2**20))
    assert engine.traffic.rounds["round"] == 3  # one per opening: the dealer adds no online traffic
