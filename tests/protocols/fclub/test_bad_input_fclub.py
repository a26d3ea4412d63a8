"""Bad input never corrupts FCLUB or its local baselines (CLUB, SCLUB, per-user LinUCB), and always gets a clear
error (issue 14).

Every refused round is refused before round t starts: the bandit's state digest (every local server's
statistics and privatizers' generators, the global server, the network's counters) is unchanged, and it
then plays exactly as a twin that never saw the call. Those refused calls (``select``, ``update``, in every variant
and baseline, scored rounds and detection rounds) are the refused-calls suite's
(tests/protocols/test_refused_calls_keep_state.py); here, what is particular to FCLUB's rounds, construction and
configs.
"""

from __future__ import annotations

import numpy as np
import pytest
from bad_input import INF, NAN, digest, rejects
from fclub_rounds import BANDITS, SERVERS, D, K, _round, _same_play

from privbandits.comm import InMemoryNetwork
from privbandits.protocols.fclub import FederatedClusteredBandit
from privbandits.protocols.fclub.baselines import BaselineConfig, LocalBaselineBandit
from privbandits.protocols.fclub.config import Calibration, FCLUBConfig
from privbandits.validation import InvalidInputError


# -- per round (the refused calls themselves: the refused-calls suite) ------------------------------
def test_fclub_checks_contexts_of_any_real_dtype_as_float64():
    bandit, twin = BANDITS["fclub"](), BANDITS["fclub"]()
    rng = np.random.default_rng(1)
    for _ in range(10):
        user, contexts = _round(rng)
        arm = bandit.select(user, contexts.astype(np.float32).astype(np.float64))
        assert arm == twin.select(np.int64(user), contexts.astype(np.float32))
        bandit.update(1.0)
        twin.update(np.float32(1.0))
    assert digest(bandit) == digest(twin)


def test_local_baselines_fix_n_arms_only_on_an_accepted_first_round():
    bandit, twin = BANDITS["club"](), BANDITS["club"]()
    before = digest(bandit)
    for bad, got in [(np.ones(D), "got shape (3,)"), (np.ones((0, D)), "got shape (0, 3)"), ([[1.0] * D], "got [[")]:
        message = rejects(lambda bad=bad: bandit.select(0, bad), "contexts")
        assert message.startswith("contexts must be a float array of shape (n_arms, dim) = (n_arms >= 1, 3), ")
        assert got in message
    rejects(lambda: bandit.select(0, np.ones((K, D + 1))), "contexts have shape (4, 4); expected (n_arms, dim)")
    assert digest(bandit) == before  # no round fixed n_arms
    _same_play(bandit, twin, np.random.default_rng(2))


# -- construction -------------------------------------------------------------------------------------
def _make(**changes):
    args = {"config": FCLUBConfig(horizon=64), "server_of_user": SERVERS, "dim": D, "n_arms": K,
            "rng": np.random.default_rng(0)}  # fmt: skip
    args |= changes
    config, servers, dim, n_arms = (args.pop(k) for k in ("config", "server_of_user", "dim", "n_arms"))
    return lambda: FederatedClusteredBandit(config, servers, dim, n_arms, **args)


OWNER = "FederatedClusteredBandit: "
BAD_BANDITS = [
    (_make(config={}), OWNER + "config must be an instance of FCLUBConfig, got {}"),
    (_make(dim=0), OWNER + "dim must be >= 1, got 0"),
    (_make(dim=3.0), OWNER + "dim must be an integer >= 1, got 3.0"),
    (_make(n_arms=True), OWNER + "n_arms must be an integer >= 1, got True"),
    (_make(rng=0), OWNER + "rng must be a numpy Generator, got 0"),
    (_make(network="tcp"), OWNER + "network must be an instance of Network or None"),
    (_make(event_hook=3), OWNER + "event_hook must be a callable or None, got 3"),
    (_make(server_of_user=np.zeros(0, int)), OWNER + "server_of_user must be a non-empty 1-D array"),
    (_make(server_of_user=np.zeros((2, 2), int)), OWNER + "server_of_user must be a non-empty 1-D array"),
    (_make(server_of_user=np.array([0.0, 1.0])), OWNER + "server_of_user must hold integers >= 0"),
    (_make(server_of_user=np.array([0, -1])), OWNER + "server_of_user must hold integers >= 0"),
    (_make(server_of_user=np.array([0, 0, 2, 2])),
     OWNER + "server_of_user must use every server index 0..L-1 = 0..2 at least once, got none for [1]"),
    (lambda: LocalBaselineBandit(BaselineConfig(), np.array([1, 1]), D, np.random.default_rng(0)),
     "LocalBaselineBandit: server_of_user must use every server index 0..L-1 = 0..1 at least once, got none for [0]"),
    (lambda: LocalBaselineBandit(BaselineConfig(), SERVERS, 0, np.random.default_rng(0)),
     "LocalBaselineBandit: dim must be >= 1, got 0"),
    (lambda: LocalBaselineBandit(FCLUBConfig(), SERVERS, D, np.random.default_rng(0)),
     "LocalBaselineBandit: config must be an instance of BaselineConfig"),
    (lambda: LocalBaselineBandit(BaselineConfig(), SERVERS, D, 7),
     "LocalBaselineBandit: rng must be a numpy Generator"),
    (lambda: Calibration(FCLUBConfig(), 0, 10, 2), "Calibration: dim must be >= 1, got 0"),
    (lambda: Calibration(FCLUBConfig(), 3, 0, 2), "Calibration: n_users must be >= 1, got 0"),
]  # fmt: skip


@pytest.mark.parametrize(("make", "message"), BAD_BANDITS)
def test_constructors_refuse_bad_arguments(make, message):
    assert message in rejects(make, message.split(": ")[1].split()[0])


def test_a_refused_network_argument_leaves_the_network_unused():
    network = InMemoryNetwork()
    before = digest(network)
    rejects(_make(network=network, event_hook="hook"), "event_hook")
    assert digest(network) == before  # no party registered on it


BAD_CONFIGS = [
    ({"epsilon": INF}, "epsilon must be a finite real number > 0, got inf"),
    ({"epsilon": 0.0}, "epsilon must be > 0, got 0.0"),
    ({"epsilon": True}, "epsilon must be a finite real number > 0, got True"),
    ({"horizon": 2.5}, "horizon must be an integer >= 1, got 2.5"),
    ({"horizon": 0}, "horizon must be >= 1, got 0"),
    ({"delta": 1.0}, "delta must be in (0, 1), got 1.0"),
    ({"delta": NAN}, "delta must be a finite real number in (0, 1), got nan"),
    ({"upload_threshold": 1.0}, "upload_threshold must be > 1, got 1.0"),
    ({"alpha": 0.0}, "alpha must be a finite real number in (0, 1) or None (= 1/(8T)), got 0.0"),
    ({"m_bound": 0}, "m_bound must be an integer >= 1 or None (= n users), got 0"),
    ({"lambda_x": 2.0}, "lambda_x must be a finite real number in (0, 1] or None (= 1/d), got 2.0"),
    ({"refresh_every": -1}, "refresh_every must be >= 0 (0 = never), got -1"),
    ({"private": 1}, "private must be a bool (True or False), got 1"),
    ({"pd_repair": "fix"}, "pd_repair must be one of 'clip', 'shift', got 'fix'"),
    ({"tie_break": "first"}, "tie_break must be one of 'lowest', 'random', got 'first'"),
    ({"detect_every_round": True}, "detect_every_round needs synchronous=True (the reference code's FCLUB, spec §7.6)"),
    ({"private": False, "noise_in_trigger_only": True}, "noise_in_trigger_only needs private=True"),
]


@pytest.mark.parametrize(("kwargs", "message"), BAD_CONFIGS)
def test_fclub_config_refuses_bad_values(kwargs, message):
    with pytest.raises(InvalidInputError) as caught:
        FCLUBConfig(**kwargs)
    assert message in str(caught.value)


def test_unknown_variant_is_named_with_the_allowed_ones():
    message = rejects(lambda: FCLUBConfig.for_variant("fclub-x"), "variant")
    assert message == "variant must be one of 'cdp-fclub-dc', 'fclub-dc', 'fclub', 'homo-dc', 'homo', got 'fclub-x'"


BAD_BASELINES = [
    ({"kind": "foo"}, "kind must be one of 'club', 'sclub', 'linucb', got 'foo'"),
    ({"tie_break": "first"}, "tie_break must be one of 'lowest', 'random', got 'first'"),
    ({"horizon": 0}, "horizon must be >= 1, got 0"),
    ({"horizon": 10.0}, "horizon must be an integer >= 1, got 10.0"),
    ({"ridge": 0}, "ridge must be > 0, got 0"),
    ({"alpha_club": NAN}, "alpha_club must be a finite real number > 0, got nan"),
    ({"beta_scale": -1.0}, "beta_scale must be >= 0, got -1.0"),
    ({"beta_a": -1}, "beta_a must be a finite real number > 0 or None (the reference value of kind), got -1"),
]


@pytest.mark.parametrize(("kwargs", "message"), BAD_BASELINES)
def test_baseline_config_refuses_bad_values(kwargs, message):
    with pytest.raises(InvalidInputError) as caught:
        BaselineConfig(**kwargs)
    assert str(caught.value) == message


@pytest.mark.parametrize("alpha", [0.0, 1.0])
@pytest.mark.parametrize("value", [NAN, INF, -INF, 1e200])
def test_the_scoring_kernel_marks_a_row_whose_norm_is_not_finite_with_nan(alpha, value):
    """The fold of the finiteness check into scoring (``RoundChecks``) relies on this, even where θ is 0 and
    ``alpha`` is 0 (so no product with the bad entry would be NaN by itself)."""
    from privbandits.linear._kernels import shared_ucb_scores

    contexts = np.full((K, D), 0.5)
    contexts[2, 1] = value
    scores = shared_ucb_scores(contexts, np.eye(D), np.zeros(D), alpha)
    assert np.isnan(scores[2]) and np.isfinite(np.delete(scores, 2)).all()
