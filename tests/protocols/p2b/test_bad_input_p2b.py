"""Bad input never corrupts a P2B simulation or its parties, and always gets a clear error (issue 14).

Settings are refused at construction, not mid-run; a shuffler refuses a malformed report before it draws
its permutation or writes its ledger (its state digest unchanged), and then releases exactly as a twin
shuffler that never received the report.
"""

from __future__ import annotations

import numpy as np
import pytest
from bad_input import INF, NAN, digest, rejects

from privbandits.comm import InMemoryNetwork, ProtocolError
from privbandits.datasets.interactions import UserInteractions
from privbandits.privacy import crowd_blending
from privbandits.privacy.encoding import fit_encoder
from privbandits.privacy.ledger import PrivacyLedger
from privbandits.protocols.p2b.core import (
    DeviceHost,
    EncodedBatch,
    EncodedReport,
    P2BConfig,
    RawReport,
    Server,
    Shuffler,
    choose_reports,
    simulate,
)
from privbandits.validation import InvalidInputError

N_CODES = 4

# -- settings --------------------------------------------------------------------------------------
BAD_CONFIGS = [
    ({"negative_rate": 1.5}, "negative_rate must be in [0, 1], got 1.5"),
    ({"alpha": -1}, "alpha must be >= 0, got -1"),
    ({"alpha": NAN}, "alpha must be a finite real number >= 0, got nan"),
    ({"alpha": True}, "alpha must be a finite real number >= 0, got True"),
    ({"omega": -1}, "omega must be a finite real number > 0 or None (no δ), got -1"),
    ({"omega": 0.0}, "omega must be a finite real number > 0 or None (no δ), got 0.0"),
    ({"tie_break": "first"}, "tie_break must be one of 'lowest', 'random', got 'first'"),
    ({"threshold": "10"}, "threshold must be an integer >= 1, got '10'"),
    ({"threshold": 2.5}, "threshold must be an integer >= 1, got 2.5"),
    ({"threshold": 0}, "threshold must be >= 1, got 0"),
    ({"threshold": True}, "threshold must be an integer >= 1, got True"),
    ({"participation": 1.5}, "participation must be in [0, 1], got 1.5"),
    ({"participation": INF}, "participation must be a finite real number in [0, 1], got inf"),
    ({"early_fraction": 0.0}, "early_fraction must be in (0, 1), got 0.0"),
    ({"early_fraction": 1.0}, "early_fraction must be in (0, 1), got 1.0"),
    ({"shared_warm_agent": 1}, "shared_warm_agent must be a bool (True or False), got 1"),
    ({"representation": "onehot"}, "representation must be one of"),
]


@pytest.mark.parametrize(("kwargs", "message"), BAD_CONFIGS)
def test_p2b_config_refuses_bad_settings_at_construction(kwargs, message):
    with pytest.raises(InvalidInputError) as caught:
        P2BConfig(**kwargs)
    assert message in str(caught.value)


def _shuffler(network=None, **changes):
    args = {"threshold": 2, "participation": 0.5, "n_codes": N_CODES, "rng": np.random.default_rng(0),
            "ledger": PrivacyLedger(), "omega": None} | changes  # fmt: skip
    return Shuffler("shuffler", network if network is not None else InMemoryNetwork(), **args)


BAD_SHUFFLERS = [
    ({"participation": 1.5}, "participation must be in [0, 1], got 1.5"),
    ({"threshold": 0}, "threshold must be >= 1 (or None for no thresholding), got 0"),
    ({"threshold": 2.5}, "threshold must be an integer >= 1 (or None for no thresholding), got 2.5"),
    ({"n_codes": 0}, "n_codes must be >= 1, got 0"),
    ({"rng": 0}, "rng must be a numpy Generator, got 0"),
    ({"ledger": None}, "ledger must be an instance of PrivacyLedger, got None"),
    ({"omega": 0}, "omega must be > 0, got 0"),
]


@pytest.mark.parametrize(("kwargs", "message"), BAD_SHUFFLERS)
def test_shuffler_refuses_bad_settings_before_joining_the_network(kwargs, message):
    network = InMemoryNetwork()
    before = digest(network)
    assert message in rejects(lambda: _shuffler(network, **kwargs), message.split()[0])
    assert digest(network) == before  # not registered


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: crowd_blending.epsilon(1.5), "participation p must be in [0, 1], got 1.5"),
        (lambda: crowd_blending.epsilon(NAN), "participation p must be a finite real number in [0, 1], got nan"),
        (lambda: crowd_blending.epsilon(0.5, NAN), "epsilon_bar must be a real number (not NaN) >= 0, got nan"),
        (lambda: crowd_blending.epsilon(0.5, -1.0), "epsilon_bar must be >= 0, got -1.0"),
        (lambda: crowd_blending.delta(0.5, -1, 1.0), "crowd size l must be >= 0, got -1"),
        (lambda: crowd_blending.delta(0.5, 3, 0.0), "omega must be > 0, got 0.0"),
        (lambda: crowd_blending.delta(True, 3, 1.0),
         "participation p must be a finite real number in [0, 1], got True"),
        (lambda: crowd_blending.optimal_crowd(10, 0), "n_codes must be >= 1, got 0"),
        (lambda: crowd_blending.optimal_crowd(-1, 4), "participating_users must be >= 0, got -1"),
        (lambda: choose_reports(np.ones((3, 2)), NAN, 0.1, np.random.default_rng(0)), "participation must be"),
        (lambda: choose_reports(np.ones((3, 2)), 0.5, -0.1, np.random.default_rng(0)), "negative_rate must be in"),
        (lambda: choose_reports(np.ones((3, 2)), 0.5, 0.1, 0), "rng must be a numpy Generator, got 0"),
        (lambda: choose_reports(np.ones(3), 0.5, 0.1, np.random.default_rng(0)),
         "rewards must be a (users, interactions) array, got shape (3,)"),
        (lambda: Server("server", InMemoryNetwork(), 0), "Server: n_arms must be >= 1, got 0"),
        (lambda: Server("server", InMemoryNetwork(), 2.5), "Server: n_arms must be an integer >= 1, got 2.5"),
        (lambda: Server("server", InMemoryNetwork(), True), "Server: n_arms must be an integer >= 1, got True"),
    ],
)  # fmt: skip
def test_privacy_functions_and_parties_refuse_bad_values(call, message):
    with pytest.raises(ValueError) as caught:
        call()
    assert message in str(caught.value)


def test_crowd_blending_still_gives_the_papers_epsilon():
    assert crowd_blending.epsilon(0.5) == pytest.approx(np.log(2))
    assert crowd_blending.epsilon(1.0, INF) == INF


# -- the shuffler's release --------------------------------------------------------------------------------
GOOD = [(1, 0, 1), (1, 2, 0), (3, 1, 1), (3, 1, 1), (0, 0, 0)]


def _party(reports, close=True):
    """A network with a shuffler, a server and a device host, the devices' ``reports`` (and the end of the
    batch, if ``close``) waiting at the shuffler."""
    network = InMemoryNetwork()
    shuffler, server = _shuffler(network), Server("server", network, 3)
    devices = DeviceHost("devices", network)
    _send(devices, reports, close)
    return network, shuffler, server, devices


def _send(devices, reports, close=True) -> None:
    with devices.network.phase("share"):
        for user, (code, action, reward) in enumerate(reports):
            devices.send_report(user, "shuffler", EncodedReport(code, action, reward))
        if close:
            devices.close_batch("shuffler")


BAD_REPORTS = [
    ((9, 0, 1), "a report's code must be an integer in [0, n_codes) = [0, 4), got 9"),
    ((-1, 0, 1), "a report's code must be an integer in [0, n_codes) = [0, 4), got -1"),
    ((1.5, 0, 1), "a report's code must be an integer in [0, n_codes) = [0, 4), got 1.5"),
    ((True, 0, 1), "a report's code must be an integer in [0, n_codes) = [0, 4), got True"),
    ((1, -1, 1), "a report's action must be an integer >= 0, got -1"),
    ((1, 0.5, 1), "a report's action must be an integer >= 0, got 0.5"),
    ((1, 0, 2), "a report's reward must be an integer 0 or 1, got 2"),
    ((1, 0, -1), "a report's reward must be an integer 0 or 1, got -1"),
    ((1, 0, 0.5), "a report's reward must be an integer 0 or 1, got 0.5"),
]


@pytest.mark.parametrize(("bad", "message"), BAD_REPORTS)
def test_shuffler_refuses_a_malformed_report_before_shuffling(bad, message):
    network, shuffler, _, devices = _party([*GOOD, bad])
    twin_network, twin, *_ = _party(GOOD)
    state = digest((shuffler.rng, shuffler.ledger, shuffler.last_release))
    with network.phase("release"):
        assert rejects(lambda: shuffler.release_encoded("server"), "report") == message
    assert digest((shuffler.rng, shuffler.ledger, shuffler.last_release)) == state
    assert network.pending() == [] and shuffler.held == 0  # nothing was released, the refused batch is gone
    _send(devices, GOOD)  # the devices send again; the shuffler releases as its twin
    for net, party in ((network, shuffler), (twin_network, twin)):
        with net.phase("release"):
            party.release_encoded("server")
    batches = [net.receive("server", EncodedBatch.kind) for net in (network, twin_network)]
    for field in ("codes", "actions", "rewards"):
        np.testing.assert_array_equal(getattr(batches[0], field), getattr(batches[1], field))
    assert shuffler.last_release == twin.last_release
    assert digest(shuffler.ledger) == digest(twin.ledger)


def test_release_before_the_batch_is_closed_is_refused_and_loses_no_report():
    """The batch is what the shuffler received before the devices' side closed it, never a count it is given."""
    network, shuffler, _, devices = _party(GOOD, close=False)
    twin_network, twin, *_ = _party(GOOD)
    state = digest((shuffler.rng, shuffler.ledger, shuffler.last_release))
    with network.phase("release"):
        with pytest.raises(ProtocolError) as caught:
            shuffler.release_encoded("server")
    assert "'shuffler' expected a 'p2b.encoded_report' or 'p2b.close_batch' message" in str(caught.value)
    assert digest((shuffler.rng, shuffler.ledger, shuffler.last_release)) == state
    assert shuffler.held == len(GOOD)  # accepted reports stay held for the batch
    _send(devices, [], close=True)  # the host closes the batch: the shuffler releases as its twin
    for net, party in ((network, shuffler), (twin_network, twin)):
        with net.phase("release"):
            party.release_encoded("server")
    assert shuffler.last_release == twin.last_release and shuffler.last_release["received"] == len(GOOD)
    batches = [net.receive("server", EncodedBatch.kind) for net in (network, twin_network)]
    np.testing.assert_array_equal(batches[0].codes, batches[1].codes)


def test_raw_release_refuses_a_malformed_reward():
    network = InMemoryNetwork()
    shuffler = _shuffler(network, threshold=None, n_codes=None)
    devices = DeviceHost("raw", network, prefix="raw")
    with network.phase("share"):
        devices.send_report(0, "shuffler", RawReport(np.ones(3), 0, 2))
        devices.close_batch("shuffler")
    state = digest((shuffler.rng, shuffler.ledger))
    with network.phase("release"):
        message = rejects(lambda: shuffler.release_raw("server"), "reward")
    assert message == "a report's reward must be an integer 0 or 1, got 2"
    assert digest((shuffler.rng, shuffler.ledger)) == state


# -- data, encoder and the simulation ------------------------------------------------------------------------
def _data(users: int = 20, dim: int = 3) -> UserInteractions:
    rng = np.random.default_rng(0)
    return UserInteractions(rng.dirichlet(np.ones(dim), (users, 4)), rng.integers(0, 2, (users, 4, 3)), "t",
                            "synthetic test")  # fmt: skip


@pytest.fixture(scope="module")
def encoder():
    return fit_encoder(3, 1, N_CODES)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda e: simulate(_data(), fit_encoder(4, 1, N_CODES), P2BConfig(), 0),
         "simulate: encoder.dim must equal data.dim = 3 (the encoder codes the users' contexts), got 4"),
        (lambda e: simulate(_data(), e, {}, 0), "simulate: config must be an instance of P2BConfig, got {}"),
        (lambda e: simulate(np.zeros((2, 2, 2)), e, P2BConfig(), 0),
         "simulate: data must be an instance of UserInteractions"),
        (lambda e: simulate(_data(), None, P2BConfig(), 0), "simulate: encoder must be an instance of ContextEncoder"),
        (lambda e: simulate(_data(), e, P2BConfig(), -1),
         "simulate: seed must be an integer >= 0 or a numpy SeedSequence, got -1"),
        (lambda e: simulate(_data(), e, P2BConfig(), 1.5),
         "simulate: seed must be an integer >= 0 or a numpy SeedSequence, got 1.5"),
        (lambda e: simulate(_data(users=1), e, P2BConfig(), 0),
         "early_fraction=0.7 of 1 users gives 0 early users; both the early and the late part must be non-empty"),
    ],
)  # fmt: skip
def test_simulate_refuses_bad_arguments_before_any_user_plays(encoder, make, message):
    with pytest.raises(InvalidInputError) as caught:
        make(encoder)
    assert message in str(caught.value)


def _interactions(**changes):
    args = {"contexts": np.full((2, 3, 2), 0.5), "rewards": np.zeros((2, 3, 4), int), "name": "t",
            "source": "synthetic", "observed": None} | changes  # fmt: skip
    return lambda: UserInteractions(**args)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (_interactions(contexts=np.full((2, 3, 2), NAN)),
         "contexts must be finite (no NaN or inf), got nan at index (0, "),
        (_interactions(contexts=np.full((2, 3, 2), "a")), "contexts must be a real (users, interactions, dim) array"),
        (_interactions(contexts=np.ones((2, 3))), "contexts must be a non-empty (users, interactions, dim) array"),
        (_interactions(rewards=np.full((2, 3, 4), 2)), "rewards must be 0 or 1, got 2"),
        (_interactions(rewards=np.full((2, 3, 4), 0.5)), "rewards must be 0 or 1, got 0.5"),
        (_interactions(rewards=np.zeros((2, 2, 4), int)),
         "rewards must have shape (2, 3, n_actions >= 1), got (2, 2, 4)"),
        (_interactions(observed=np.ones((2, 3, 4))), "observed must be a bool array of shape (2, 3, 4)"),
        (_interactions(name=""), "name must be a non-empty string"),
        (_interactions(source="mine"), "source must start with one of 'real data', 'offline stand-in', 'synthetic'"),
        (lambda: _data().first(0), "t must be in [1, 4], got 0"),
        (lambda: _data().first(1.5), "t must be an integer in [1, 4], got 1.5"),
        (lambda: _data().split(0.0), "early_fraction must be in (0, 1), got 0.0"),
        (lambda: _data().split(NAN), "early_fraction must be a finite real number in (0, 1), got nan"),
        (lambda: _data(users=2).split(0.4), "early_fraction=0.4 of 2 users gives 0 early users; both the early"),
    ],
)  # fmt: skip
def test_user_interactions_refuse_bad_arrays(make, message):
    with pytest.raises(InvalidInputError) as caught:
        make()
    assert message in str(caught.value)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda e: e.encode(np.ones(4) / 4), "contexts must be one context (3,) or a batch (m, 3), got shape (4,)"),
        (lambda e: e.encode(np.ones((2, 2, 3))), "contexts must be one context (3,) or a batch (m, 3)"),
        (lambda e: e.encode(np.array([NAN, 0.5, 0.5])), "contexts must be finite (no NaN or infinity)"),
        (lambda e: fit_encoder(3, 1, 0), "n_codes must be an integer between 1 and the grid size n=66, got 0"),
        (lambda e: fit_encoder(3, 1, True), "n_codes must be an integer between 1 and the grid size n=66, got True"),
        (lambda e: fit_encoder(3, 1, 67), "n_codes must be an integer between 1 and the grid size n=66, got 67"),
        (lambda e: fit_encoder(3, 1, 4, seed=-1), "seed must be an integer >= 0, got -1"),
    ],
)
def test_encoder_refuses_bad_contexts_and_settings(encoder, call, message):
    before = digest(encoder)
    with pytest.raises(ValueError) as caught:
        call(encoder)
    assert message in str(caught.value)
    assert digest(encoder) == before
    assert encoder.encode(np.array([1.0, 0.0, 0.0])) in range(N_CODES)
