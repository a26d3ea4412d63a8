"""Bad input never corrupts the MPC ε-greedy learner or its plaintext twin, and always gets a clear error (issue 14).

A refused context is refused before any draw or message: the learner's state digest (shares, dealer and
exploration generators, network counters, ledger) is unchanged and it then plays exactly as a learner that
never saw the call. A refused reward arrives after the arm was opened to p′: the round is void — the
opening stays in the ledger and in the traffic, the shared model is untouched — and the private learner
and its twin, which refuse the same rewards, go on in step.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from bad_input import INF, NAN, digest, rejects

from privbandits.comm import ROUND, InMemoryNetwork
from privbandits.protocols.mpc_bandit import MPCBanditConfig, PlaintextEpsilonGreedy, PrivateEpsilonGreedy
from privbandits.validation import InvalidInputError

PARTITION = (2, 2)
D = sum(PARTITION)
CONFIG = MPCBanditConfig(n_arms=3, partition=PARTITION, epsilon=0.3, precision=16)
REAL = MPCBanditConfig(n_arms=3, partition=PARTITION, epsilon=0.3, precision=16, binary_rewards=False)


# -- configuration ---------------------------------------------------------------------------------
BAD_CONFIGS = [
    ({"n_arms": 1}, "n_arms must be an integer >= 2, got 1"),
    ({"n_arms": True}, "n_arms must be an integer >= 2, got True"),
    ({"n_arms": 2.0}, "n_arms must be an integer >= 2, got 2.0"),
    ({"n_arms": "3"}, "n_arms must be an integer >= 2, got '3'"),
    ({"partition": (5,)}, "partition must give >= 2 parties a non-negative number of features"),
    ({"partition": (2.0, 2)}, "partition must give >= 2 parties a non-negative number of features, at least one "
                              "in all; got (2.0, 2)"),
    ({"partition": (True, 2)}, "got (True, 2)"),
    ({"partition": (-1, 3)}, "got (-1, 3)"),
    ({"partition": (0, 0)}, "at least one in all; got (0, 0)"),
    ({"partition": "22"}, "partition must give >= 2 parties"),
    ({"epsilon": -0.1}, "epsilon must be in [0, 1], got -0.1"),
    ({"epsilon": 1.5}, "epsilon must be in [0, 1], got 1.5"),
    ({"epsilon": NAN}, "epsilon must be in [0, 1], got nan"),
    ({"epsilon": True}, "epsilon must be in [0, 1], got True"),
    ({"precision": 0}, "precision must be an integer in [1, 26], got 0"),
    ({"precision": 27}, "precision must be an integer in [1, 26], got 27"),
    ({"precision": 20.0}, "precision must be an integer in [1, 26], got 20.0"),
    ({"nr_iterations": -1}, "nr_iterations must be an integer >= 0, got -1"),
    ({"nr_iterations": 7.0}, "nr_iterations must be an integer >= 0, got 7.0"),
    ({"truncation": "fast"}, "truncation must be one of ('auto', "),
    ({"partition": (1, 1, 1), "truncation": "local"},
     "truncation='local' is for 2 parties, got 3 (partition (1, 1, 1)): use one of 'auto', 'wraps', 'exact'"),
    ({"mask_encoding": "bits"}, "mask_encoding must be one of ('integer', 'fixed_point'), got 'bits'"),
    ({"truncation_rounding": "floor"}, "truncation_rounding must be one of ('unbiased',), got 'floor'"),
    ({"binary_rewards": 1}, "binary_rewards must be a bool (True or False), got 1"),
    ({"binary_rewards": "yes"}, "binary_rewards must be a bool (True or False), got 'yes'"),
    ({"puller": ""}, "puller must be a non-empty party name, got ''"),
    ({"rewarder": 3}, "rewarder must be a non-empty party name, got 3"),
]  # fmt: skip


@pytest.mark.parametrize(("kwargs", "message"), BAD_CONFIGS)
def test_config_refuses_bad_settings_naming_them(kwargs, message):
    with pytest.raises(InvalidInputError) as caught:
        MPCBanditConfig(**kwargs)
    assert message in str(caught.value)


BAD_LEARNERS = [
    (lambda: PrivateEpsilonGreedy({"n_arms": 3}), "config must be an instance of MPCBanditConfig, got {'n_arms': 3}"),
    (lambda: PlaintextEpsilonGreedy(None), "config must be an instance of MPCBanditConfig, got None"),
    (lambda: PrivateEpsilonGreedy(CONFIG, seed=1.5), "seed must be an integer >= 0 or a numpy SeedSequence"),
    (lambda: PrivateEpsilonGreedy(CONFIG, seed=-1), "or None (fresh entropy), got -1"),
    (lambda: PrivateEpsilonGreedy(CONFIG, seed=True), "seed must be an integer >= 0 or a numpy SeedSequence"),
    (lambda: PlaintextEpsilonGreedy(CONFIG, seed="0"), "seed must be an integer >= 0 or a numpy SeedSequence"),
    (lambda: PrivateEpsilonGreedy(CONFIG, network="tcp"), "network must be an instance of Network or None"),
    (lambda: PrivateEpsilonGreedy(CONFIG, ledger=[]), "ledger must be an instance of PrivacyLedger or None"),
]


@pytest.mark.parametrize(("make", "message"), BAD_LEARNERS)
def test_learners_refuse_bad_arguments(make, message):
    assert message in rejects(make, message.split()[0])


# -- contexts: refused before any draw or message ----------------------------------------------------
def _unit(rng: np.random.Generator) -> np.ndarray:
    x = rng.normal(size=D)
    return x / np.linalg.norm(x) * rng.uniform(0.2, 1.0)


def _reward(config: MPCBanditConfig):
    """Binary: 1 for arm 1. Real: never 0, whose product with x a truncation may turn into -2^-L, breaking the
    exact tie of never-rewarded arms that the twin keeps."""
    return (lambda arm: int(arm == 1)) if config.binary_rewards else (lambda arm: 0.25 + (arm == 1))


def _warm(learner, rounds: int = 3) -> np.random.Generator:
    rng = np.random.default_rng(11)
    for _ in range(rounds):
        learner.step(_unit(rng), _reward(learner.config))
    return rng


LEARNERS = {
    "private": lambda config=CONFIG: PrivateEpsilonGreedy(config, seed=3, network=InMemoryNetwork(record=True)),
    "twin": lambda config=CONFIG: PlaintextEpsilonGreedy(config, seed=3),
}
BAD_CONTEXTS = [
    (np.ones(D) * 7.5, "context must have L2 norm <= 1 (up to rounding: 1.00003052; normalise it, e.g. "
                       "x / max(1, |x|)), got norm 15"),
    (np.ones(D) * 1.5 / 2, "got norm 1.5"),
    (np.array([1.0, 0.0, 0.0, 1e-2]), "got norm 1.00005"),
    (np.full(D, 1e200), "got norm inf"),
    (np.array([NAN, 0.0, 0.0, 0.0]), "context must be finite (no NaN or inf), got nan at index 0"),
    (np.array([0.0, 0.0, -INF, 0.0]), "context must be finite (no NaN or inf), got -inf at index 2"),
    (np.ones(D + 1) / 4, "context must have shape (4,), got (5,)"),
    (np.ones(D - 1) / 4, "context must have shape (4,), got (3,)"),
    (np.ones((1, D)) / 4, "context must have shape (4,), got (1, 4)"),
    (["a"] * D, "context must be a real array of shape (4,), got ['a', 'a', 'a', 'a']"),
    (None, "context must have shape (4,), got ()"),
]  # fmt: skip


@pytest.mark.parametrize("kind", LEARNERS)
@pytest.mark.parametrize(("x", "message"), BAD_CONTEXTS)
def test_bad_context_is_refused_before_any_draw_or_message(kind, x, message):
    learner, twin = LEARNERS[kind](), LEARNERS[kind]()
    rng, _ = _warm(learner), _warm(twin)
    before = digest(learner)
    pulled = []
    assert message in rejects(lambda: learner.step(x, pulled.append), "context")
    assert pulled == [] and digest(learner) == before  # the environment was never asked
    good = _unit(rng)
    assert learner.step(good, lambda arm: 1) == twin.step(good, lambda arm: 1)
    assert digest(learner) != before
    np.testing.assert_array_equal(learner.checkpoint()[1], twin.checkpoint()[1])


def test_a_context_on_the_norm_limit_is_accepted_and_matches_the_twin():
    x = np.zeros(D)
    x[0] = CONFIG.context_norm_limit
    private, twin = LEARNERS["private"](), LEARNERS["twin"]()
    assert private.step(x, lambda arm: 1) == twin.step(x, lambda arm: 1)
    np.testing.assert_allclose(private.checkpoint()[0], twin.checkpoint()[0], atol=1e-3)


# -- rewards: the round is void, both learners refuse the same values -------------------------------------
BAD_BINARY = [0.5, 2, -1, NAN, INF, "1", None, [1]]
BAD_REAL = [NAN, INF, -INF, 2.0**40, True, "0.5", None]


def _model(learner) -> str:
    if isinstance(learner, PrivateEpsilonGreedy):
        return digest((learner.inverse, learner.b, learner.rounds))
    return digest((learner.inverse, learner.b, learner.weights, learner.rounds))


@pytest.mark.parametrize(("config", "reward"), [(CONFIG, r) for r in BAD_BINARY] + [(REAL, r) for r in BAD_REAL])
def test_refused_reward_voids_the_round_in_both_learners_alike(config, reward):
    private, twin = LEARNERS["private"](config), LEARNERS["twin"](config)
    rng, _ = _warm(private), _warm(twin)
    models = _model(private), _model(twin)
    openings = len(private.ledger.entries)
    x = _unit(rng)
    name = "rewards must be 0 or 1" if config.binary_rewards else "reward must be a finite real number"
    assert rejects(lambda: private.step(x, lambda arm: reward), name) == rejects(
        lambda: twin.step(x, lambda arm: reward), name
    )
    assert (_model(private), _model(twin)) == models  # no model update
    # the opening happened and is accounted: one ledger entry per action opened to p′, none pending
    to_puller = [e for e in private.engine.network.transcript if e.phase == ROUND and e.receiver == "puller"]
    assert len(private.ledger.entries) == openings + 1 == len(to_puller) // len(PARTITION)
    assert not private.engine.network.pending()
    for _ in range(4):  # still in step with the twin (same exploration draws consumed)
        x = _unit(rng)
        assert private.step(x, _reward(config)) == twin.step(x, _reward(config))
    np.testing.assert_allclose(private.checkpoint()[1], twin.checkpoint()[1], atol=1e-3)


@pytest.mark.parametrize("reward", [0, 1, 0.0, 1.0, True, np.int64(1), np.float32(0.0)])
def test_binary_rewards_accept_every_spelling_of_0_and_1(reward):
    private, twin = LEARNERS["private"](), LEARNERS["twin"]()
    x = np.full(D, 0.25)
    assert private.step(x, lambda arm: reward) == twin.step(x, lambda arm: reward)
    np.testing.assert_allclose(private.checkpoint()[1], twin.checkpoint()[1], atol=1e-3)


def test_real_reward_limit_is_named_with_the_precision():
    learner = LEARNERS["twin"](REAL)
    message = rejects(lambda: learner.step(np.full(D, 0.25), lambda arm: REAL.reward_limit * 2), "reward")
    assert "|reward| <= 2^(63 - 2L) = 2.14748e+09 at L = 16, got 4294967296.0" in message
    assert learner.step(np.full(D, 0.25), lambda arm: REAL.reward_limit) in range(3)
    assert math.isfinite(learner.weights.max())
