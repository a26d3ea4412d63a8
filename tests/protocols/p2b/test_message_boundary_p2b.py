"""P2B's message boundary is real (issue 17, step 1): every party learns only from the messages it receives.

New agents rebuild the server's model from its ``ModelRelease``; the shuffler counts the reports it
received before the devices' side closed the batch; a message's sender is the party object that sent
it, never a name a caller passes; each party keeps its own ledger and the protocol's ledger composes
them, with the totals the single shared ledger had.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from protocol_harness import honest_run

from privbandits.comm import Endpoint, Envelope, ForgedSender, InMemoryNetwork, Party, ProtocolError
from privbandits.linear.population import CodeModel, DisjointModel
from privbandits.mpc import Engine
from privbandits.privacy import crowd_blending
from privbandits.privacy.ledger import LedgerEntry, PrivacyLedger
from privbandits.protocols.p2b.core import (
    CloseBatch,
    DeviceHost,
    EncodedReport,
    ModelRelease,
    NewAgents,
    P2BConfig,
    Server,
    Shuffler,
    compose_ledgers,
    simulate,
)


@pytest.fixture(scope="module")
def world():
    from privbandits.envs.p2b_synthetic import p2b_synthetic_interactions
    from privbandits.privacy.encoding import fit_encoder

    encoder = fit_encoder(4, 1, 16, seed=0)
    data = p2b_synthetic_interactions(3000, 8, 4, 5, mapping="linear", seed=3)
    return encoder, data


def _is_device(name: str, prefix: str = "device") -> bool:
    """A device's own identity (``device12``), not its host (``devices``)."""
    return re.fullmatch(rf"{prefix}\d+", name) is not None


# -- who hears whom -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("variant", ["one_hot", "scalar_code"])
def test_the_server_hears_only_the_shufflers_and_new_agents_only_the_server(variant):
    """The deployment's in-memory run (every message through codec bytes; that it drains every queue and equals the
    plain run is the contract suite's, tests/protocols/test_message_boundaries.py): each shuffler's batch ends with
    its host's CloseBatch, the server hears only the shufflers, and new agents get the model only from the server."""
    _, network = honest_run("p2b", variant)
    kinds = {(e.sender, e.receiver, e.message.kind) for e in network.transcript if not _is_device(e.sender)}
    assert kinds >= {
        ("devices", "shuffler", CloseBatch.kind),
        ("raw-devices", "raw_shuffler", CloseBatch.kind),
        ("server", "new_agents", ModelRelease.kind),
    }
    assert {e.sender for e in network.transcript if e.receiver == "server"} == {"shuffler", "raw_shuffler"}
    assert {e.sender for e in network.transcript if e.receiver == "new_agents"} == {"server"}


def test_pending_names_what_is_still_waiting():
    net = InMemoryNetwork()
    a, b = Party("a", net), Party("b", net)
    with net.phase("round"):
        a.send("b", CloseBatch())
        assert net.pending() == [("a", "b", CloseBatch.kind)] == net.pending("b")
        assert net.pending("a") == []
        b.receive(CloseBatch.kind, "a")
    assert net.pending() == []


# -- new agents learn the model only from the server's message --------------------------------------------
def _parties(network, threshold=2):
    shuffler = Shuffler("shuffler", network, threshold=threshold, participation=0.5, n_codes=8,
                        rng=np.random.default_rng(0), ledger=PrivacyLedger())  # fmt: skip
    server = Server("server", network, n_arms=3, participation=0.5)
    return DeviceHost("devices", network), shuffler, server, NewAgents("new_agents", network)


def test_new_agents_rebuild_exactly_the_published_model_from_bytes():
    network = InMemoryNetwork(serialize=True)
    devices, shuffler, server, agents = _parties(network)
    rng = np.random.default_rng(1)
    with network.phase("share"):
        for user in range(40):
            devices.send_report(user, "shuffler", EncodedReport(int(rng.integers(4)), int(rng.integers(3)), user % 2))
        devices.close_batch("shuffler")
        shuffler.release_encoded("server")
        server.publish_code_model(8, "new_agents")
        model = agents.receive_model(CodeModel)
    (published,) = server.published
    assert model is not published
    np.testing.assert_array_equal(model.counts, published.counts)
    np.testing.assert_array_equal(model.reward_sums, published.reward_sums)
    assert model.counts.sum() == shuffler.last_release["released"]
    assert network.pending() == []


class _ColdModels(InMemoryNetwork):
    """Replaces every published model in flight by the cold prior (A = I, b = 0; empty tables)."""

    def _deliver(self, envelope: Envelope, depth: int) -> None:
        message = envelope.message
        if message.kind == ModelRelease.kind:
            first = np.zeros_like(message.first) if message.first.ndim == 2 else np.broadcast_to(
                np.eye(message.first.shape[1]), message.first.shape).copy()  # fmt: skip
            envelope = envelope._replace(message=ModelRelease(first, np.zeros_like(message.second)))
        super()._deliver(envelope, depth)


def test_the_warm_start_is_what_the_message_carries_not_the_servers_object(world):
    """With every ModelRelease replaced in flight by the cold prior, the warm users play exactly as cold ones."""
    encoder, data = world
    config = P2BConfig(tie_break="lowest")
    tampered = simulate(data, encoder, config, seed=4, network=_ColdModels())
    nothing_shared = simulate(data, encoder, P2BConfig(tie_break="lowest", participation=0.0), seed=4)
    honest = simulate(data, encoder, config, seed=4)
    assert tampered.encoded_tuples_shared == honest.encoded_tuples_shared > 0
    assert tampered.warm_non_private == tampered.cold == honest.cold
    assert tampered.warm_private == nothing_shared.warm_private != honest.warm_private


# -- the shuffler counts its batch ------------------------------------------------------------------------
def test_the_shufflers_count_is_the_reports_it_received(world):
    encoder, data = world
    out = simulate(data, encoder, P2BConfig(), seed=1)
    links = out.traffic.links.items()
    from_devices = {
        phase: sum(link.messages for (p, s, r), link in links if p == phase and r == receiver and _is_device(s, prefix))
        for phase, receiver, prefix in (
            ("share_raw", "raw_shuffler", "raw-device"),
            ("share_encoded", "shuffler", "device"),
        )
    }
    shuffler, raw_shuffler = out.ledgers["shuffler"].entries[-1], out.ledgers["raw_shuffler"].entries[-1]
    assert shuffler.details["received"] == from_devices["share_encoded"] == out.encoded_tuples_shared
    assert raw_shuffler.details["received"] == from_devices["share_raw"] == out.raw_tuples_shared
    assert out.ledgers["devices"].entries[-1].details["sent"] == out.encoded_tuples_shared
    assert out.traffic.total("share_encoded", sender="devices").messages == 1  # the end of the batch


def test_a_batch_is_what_arrived_before_its_close():
    network = InMemoryNetwork()
    devices, shuffler, server, _ = _parties(network, threshold=1)
    with network.phase("first"):
        for user in range(5):
            devices.send_report(user, "shuffler", EncodedReport(1, 0, 1))
        assert devices.close_batch("shuffler") == 5
        for user in range(5, 8):  # the next batch's reports, already waiting
            devices.send_report(user, "shuffler", EncodedReport(2, 0, 1))
        shuffler.release_encoded("server")
        assert shuffler.last_release["received"] == 5 and network.pending("shuffler") == [
            (f"device{user}", "shuffler", EncodedReport.kind) for user in range(5, 8)
        ]
        devices.close_batch("shuffler")
        shuffler.release_encoded("server")
    assert shuffler.last_release["received"] == 3
    assert [entry.details["sent"] for entry in devices.ledger.entries] == [5, 3]


# -- the sender is the party object -----------------------------------------------------------------------
def test_a_forged_sender_is_refused_with_a_clear_error():
    network, elsewhere = InMemoryNetwork(), InMemoryNetwork()
    devices, shuffler, *_ = _parties(network)
    stranger = Party("devices", elsewhere)
    with network.phase("share"):
        with pytest.raises(ForgedSender, match=r"sent as 'devices' by name: a party sends only through its own Party"):
            network.send("devices", "shuffler", CloseBatch())
        with pytest.raises(ForgedSender, match=r"endpoint of 'devices' that this network did not issue"):
            network.send(stranger.endpoint, "shuffler", CloseBatch())
        with pytest.raises(ForgedSender, match=r"send needs the sender's endpoint"):
            network.send(None, "shuffler", CloseBatch())
        with pytest.raises(ForgedSender):
            network.send(["devices"], "shuffler", CloseBatch())  # unhashable: refused, not a TypeError
        assert network.pending() == []  # nothing was sent
    with pytest.raises(TypeError, match=r"endpoints are issued by Network.register"):
        Endpoint("devices", network)
    with pytest.raises(ValueError, match=r"^a party named 'devices' is already on this network$"):
        Party("devices", network)  # a second object cannot take over a registered name
    assert issubclass(ForgedSender, ProtocolError)


def test_a_party_sends_as_itself_and_the_network_names_it():
    network = InMemoryNetwork(record=True)
    devices, *_ = _parties(network)
    with network.phase("share"):
        devices.send_report(7, "shuffler", EncodedReport(1, 0, 1))
        devices.close_batch("shuffler")
    assert [(e.sender, e.message.kind) for e in network.transcript] == [
        ("device7", EncodedReport.kind),
        ("devices", CloseBatch.kind),
    ]


def test_an_mpc_input_from_outside_the_computation_needs_its_owners_party():
    network = InMemoryNetwork(record=True)
    engine = Engine(2, seed=0, network=network)
    rewarder = Party("rewarder", network)
    with engine.phase("round"):
        with pytest.raises(ValueError, match=r"input owner 'rewarder' is not a computing party: .* its own Party"):
            engine.input([1.0], owner="rewarder")
        with pytest.raises(ValueError, match=r"unknown input owner 'ghost'"):
            engine.input([1.0], owner="ghost")
        reward = engine.input([1.0], owner=rewarder)
        np.testing.assert_allclose(engine.open(reward), [1.0])
    assert {(e.sender, e.receiver) for e in network.transcript if e.sender == "rewarder"} == {
        ("rewarder", "p0"),
        ("rewarder", "p1"),
    }


# -- each party's ledger, composed --------------------------------------------------------------------------
OLD_LEDGER = {  # the single shared ledger before issue 17, on the same world and seeds
    1: [("p2b.raw_baseline", math.inf, None, {"received": 1076, "released": 1076, "dropped": 0}),
        ("p2b.shuffler", 0.6931471805599453, None, {"received": 1022, "released": 997, "dropped": 25, "threshold": 10,
                                             "min_released_crowd": 11, "optimal_crowd_u_over_k": 63.875})],
    3: [("p2b.raw_baseline", math.inf, None, {"received": 1034, "released": 1034, "dropped": 0}),
        ("p2b.shuffler", 0.6931471805599453, 0.011108996538242306,
         {"received": 1066, "released": 1045, "dropped": 21, "threshold": 10, "min_released_crowd": 18,
          "optimal_crowd_u_over_k": 66.625})],
}  # fmt: skip


@pytest.mark.parametrize("seed", sorted(OLD_LEDGER))
def test_the_composed_ledger_has_the_old_single_ledgers_entries_and_totals(world, seed):
    encoder, data = world
    out = simulate(data, encoder, P2BConfig(omega=1.0 if seed == 3 else None), seed=seed)
    assert [(e.mechanism, e.epsilon, e.delta, e.details) for e in out.ledger.entries] == OLD_LEDGER[seed]
    old = PrivacyLedger()
    for mechanism, epsilon, delta, details in OLD_LEDGER[seed]:
        old.record(LedgerEntry(mechanism, epsilon, delta, "unit", details))
    for mechanism in (None, "p2b.shuffler", "p2b.raw_baseline"):
        assert out.ledger.basic_composition(mechanism) == pytest.approx(old.basic_composition(mechanism))
    assert out.ledger.entries[-1].epsilon == crowd_blending.epsilon(0.5)
    # each party holds only its own records
    assert set(out.ledgers) == {"raw-devices", "raw_shuffler", "devices", "shuffler", "server"}
    assert {e.mechanism for e in out.ledgers["devices"].entries} == {"p2b.devices"}
    assert {e.mechanism for e in out.ledgers["shuffler"].entries} == {"p2b.shuffler"}
    server = {e.mechanism: e for e in out.ledgers["server"].entries}
    assert set(server) == {"p2b.server.raw", "p2b.server.encoded"}
    received = server["p2b.server.encoded"]  # what the server itself saw: the crowds, and ε under the public p
    assert received.details == {"received": out.release["released"], "min_crowd": out.release["min_released_crowd"]}
    assert (received.epsilon, received.delta) == (out.ledger.entries[-1].epsilon, out.ledger.entries[-1].delta)


def test_composition_refuses_ledgers_that_disagree(world):
    encoder, data = world
    out = simulate(data, encoder, P2BConfig(), seed=1)
    lost = dict(out.ledgers, server=PrivacyLedger())  # the server recorded no batch
    with pytest.raises(ProtocolError, match=r"ledgers disagree: p2b.shuffler released \[997\], but p2b.server.encoded"):
        compose_ledgers(lost)
    assert compose_ledgers(out.ledgers).entries == out.ledger.entries


def test_a_server_not_told_p_claims_no_guarantee():
    network = InMemoryNetwork()
    server = Server("server", network, n_arms=2)
    devices, shuffler = DeviceHost("devices", network), Shuffler(
        "shuffler", network, threshold=1, participation=0.5, n_codes=4, rng=np.random.default_rng(0),
        ledger=PrivacyLedger())  # fmt: skip
    NewAgents("new_agents", network)
    with network.phase("share"):
        devices.send_report(0, "shuffler", EncodedReport(1, 0, 1))
        devices.close_batch("shuffler")
        shuffler.release_encoded("server")
        server.publish_scalar_code_model("new_agents")
    (entry,) = server.ledger.entries
    assert entry.epsilon == math.inf and entry.details == {"received": 1, "min_crowd": 1}
    assert isinstance(server.published[0], DisjointModel)
    assert network.pending() == [("server", "new_agents", ModelRelease.kind)]  # published, not yet fetched
