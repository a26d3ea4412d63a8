"""P2B served: the shuffler and the server as `privbandits serve` processes, devices as in-process DeviceAgents.

Replay equivalence: ``deploy data``'s users, replayed through DeviceAgents (reproducible), one event at a time with
its reward right after, get exactly the decisions of the deployment's device hosts, the shuffler releases the batch
``deploy local`` releases, the server publishes the same model, and the late devices, warm from it, decide as the
in-memory run's late users do. Kill tests: a party SIGKILLed while devices drive it loses nothing it acknowledged and
the session ends as the uninterrupted one.
"""

from __future__ import annotations

import signal

import numpy as np
import pytest
from p2b_serving import play, reference, serve, served_copy, wait_model

from privbandits.deploy.deployment import load_deployment
from privbandits.deploy.p2b.agent import AgentRefused, BudgetExceeded, DeviceAgent


@pytest.fixture
def encoder_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PRIVBANDITS_CACHE", str(tmp_path / "cache"))  # the served processes inherit it


@pytest.mark.slow  # two served processes and a deploy local run: about 50 s on a busy 2-core machine
@pytest.mark.parametrize(("n_users", "threshold"), [(100, 3), (1000, 10)], ids=["100-users", "1000-users"])
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
