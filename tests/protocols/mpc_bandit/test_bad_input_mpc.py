"""Bad input never corrupts the MPC ε-greedy learner or its plaintext twin, and always gets a clear error (issue 14).

A refused context is refused before any draw or message: the learner's state digest (shares, dealer and
exploration generators, network counters, ledger) is unchanged and it then plays exactly as a learner that
never saw the call (each refused context, with its exact message: the refused-calls suite,
tests/protocols/test_refused_calls_keep_state.py). A refused reward arrives after the arm was opened to p′: the
round is void — the opening stays in the ledger and in the traffic, the shared model is untouched — and the private
learner and its twin, which refuse the same rewards, go on in step.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from bad_input import INF, NAN, digest, rejects
from mpc_rounds import CONFIG, LEARNERS, PARTITION, REAL, D, _reward, _unit, _warm

from privbandits.comm import ROUND
from privbandits.protocols.mpc_bandit import MPCBanditConfig, PlaintextEpsilonGreedy, PrivateEpsilonGreedy
from privbandits.validation import InvalidInputError

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


# -- contexts: refused before any draw or message (each refused one: the refused-calls suite) --------
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
