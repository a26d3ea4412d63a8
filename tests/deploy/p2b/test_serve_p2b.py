"""P2B served: the shuffler and the server as `privbandits serve` processes, devices as in-process DeviceAgents.

Replay equivalence: ``deploy data``'s users, replayed through DeviceAgents (reproducible), one event at a time with
its reward right after, get exactly the decisions of the deployment's device hosts, the shuffler releases the batch
``deploy local`` releases, the server publishes the same model, and the late devices, warm from it, decide as the
in-memory run's late users do. Kill tests: a party SIGKILLed while devices drive it loses nothing it acknowledged and
the session ends as the uninterrupted one.
"""

from __future__ import annotations

import signal
from pathlib import Path

import numpy as np
import pytest
from p2b_serving import serve, served_copy, wait_model

from privbandits.deploy.deployment import load_deployment
from privbandits.deploy.p2b.agent import AgentRefused, BudgetExceeded, DeviceAgent
from privbandits.deploy.p2b.data import layout, load_host
from privbandits.deploy.p2b.outcome import run_in_memory
from privbandits.deploy.p2b.session import N_STREAMS, encoder_of
from privbandits.linear.population import CodeModel, run_population
from privbandits.protocols.p2b.core import EncodedBatch, ModelRelease


@pytest.fixture
def encoder_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PRIVBANDITS_CACHE", str(tmp_path / "cache"))  # the served processes inherit it


def reference(spec):
    """What ``deploy local`` gives (reproducible): the in-memory run, its private batch and model, and every user's
    arms as the device hosts play them (early users cold, late users warm from the private model)."""
    outcome, network = run_in_memory(spec)
    sent = [envelope.message for envelope in network.transcript]
    batch = next(message for message in sent if isinstance(message, EncodedBatch))
    model = [message for message in sent if isinstance(message, ModelRelease)][-1]  # the private one (after the raw)
    protocol, encoder = spec.protocol, encoder_of(spec.protocol)
    hosts = [load_host(spec, name) for name in spec.names("device_host")]
    streams = [np.random.default_rng(child) for child in np.random.SeedSequence(protocol.seed).spawn(N_STREAMS)]
    arms = {}
    for part, stream, start in (("early", 6, CodeModel.cold(protocol.n_actions, protocol.n_codes)),
                                ("late", 8, CodeModel(model.first, model.second))):  # fmt: skip
        contexts = np.concatenate([getattr(h, part).contexts for h in hosts])
        table = np.concatenate([getattr(h, part).reward_table for h in hosts])
        codes = encoder.encode(contexts.reshape(-1, protocol.dim)).reshape(contexts.shape[:2])
        log = run_population(start, codes, table, rng=streams[stream], alpha=protocol.alpha,
                             tie_break=protocol.tie_break)  # fmt: skip
        arms[part] = log.arms
    return outcome, batch, model, arms


def play(spec, store: Path, part: str, agents: dict | None = None, **options) -> dict[int, list[int]]:
    """Replay ``part``'s users (early or late) of every host through DeviceAgents, all created first (so every early
    device starts cold, as the deployment's do), then each event decided and its reward sent right after; the arms by
    user (index in the part). ``options``: the agents' (e.g. ``timeout_s``)."""
    n_early, created, arms = int(spec.protocol.early_fraction * spec.protocol.n_users), {}, {}
    for host in spec.names("device_host"):
        data, block = load_host(spec, host), layout(spec)[host]
        for local, user in enumerate(getattr(block, part)):
            device = DeviceAgent(spec, host, user if part == "early" else n_early + user, store, **options)
            created[user] = (device, getattr(data, part), local)
    for user, (device, users_of, local) in created.items():
        arms[user] = []
        for round in range(spec.protocol.interactions):
            decision = device.decide(users_of.contexts[local, round])
            device.reward(decision.event_id, int(users_of.rewards[local, round, decision.arm]))
            arms[user].append(decision.arm)
        if agents is not None:
            agents[user] = device
        else:
            device.close()
    return arms


@pytest.mark.parametrize(("n_users", "threshold"), [
    (100, 3), pytest.param(1000, 10, marks=pytest.mark.slow)], ids=["100-users", "1000-users"])  # fmt: skip
def test_replayed_devices_against_served_shuffler_and_server_equal_deploy_local(
    tmp_path, encoder_cache, n_users, threshold
):
    """100 users (70 early devices, about 35 reports; threshold 3, so some codes pass) or 1,000 (slow): decisions,
    batch, model and late decisions all equal."""
    path = served_copy(tmp_path, n_users, threshold)
    spec = load_deployment(path)
    outcome, batch, model, expected = reference(spec)
    size = f'name = "p2b"\nbatch_size = {outcome.encoded_tuples_shared}\n'  # the batch closes with the last report
    path.write_text(path.read_text().replace('name = "p2b"\n', size))
    spec = load_deployment(path)
    shuffler, server = serve(path, "shuffler", "server")
    try:
        agents: dict[int, DeviceAgent] = {}
        early = play(spec, tmp_path / "devices.sqlite", "early", agents)
        assert np.array_equal(np.array([early[u] for u in sorted(early)]), expected["early"])
        budgets = [agent.budget() for agent in agents.values()]
        assert sum(b["reports_sent"] for b in budgets) == outcome.encoded_tuples_shared > 0
        assert all(b["report_decisions"] == 1 and b["reports_pending"] == 0 for b in budgets)
        published = wait_model(spec, 1)
        assert published.version == 1
        assert np.array_equal(published.first, model.first) and np.array_equal(published.second, model.second)
        ledger = shuffler.ledger()["learner"]
        assert ledger["reports"]["accepted"] == outcome.encoded_tuples_shared and ledger["undelivered_batches"] == []
        assert ledger["releases"][0]["details"] == outcome.release
        assert server.ledger()["learner"]["batches"] == [0]

        late = play(spec, tmp_path / "devices.sqlite", "late")  # each warm from the published model
        assert np.array_equal(np.array([late[u] for u in sorted(late)]), expected["late"])

        # the budget: one report decision per device by default; another is refused, naming it
        agent = next(iter(agents.values()))
        with pytest.raises(BudgetExceeded, match=r"report_budget: .* has made 1 of its 1 report decision"):
            agent.report()
        assert agent.budget()["epsilon_spent"] == pytest.approx(np.log(2))
        with pytest.raises(AgentRefused, match="reward: must be 0 or 1"):
            agent.reward(agent.decide(np.full(spec.protocol.dim, 0.2)).event_id, 2)
        for agent in agents.values():
            agent.close()
    finally:
        assert shuffler.stop() in (0, -signal.SIGTERM) and server.stop() in (0, -signal.SIGTERM)
