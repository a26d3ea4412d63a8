"""P2B's served roles in this process (no `privbandits serve`): what each takes from the others and refuses, the
device agent's refusals and budget, and what each keeps across a restart."""

from __future__ import annotations

import numpy as np
import pytest
from p2b_serving import served_copy

from privbandits.deploy.deployment import load_deployment
from privbandits.deploy.p2b.agent import AgentRefused, BudgetExceeded, DeviceAgent, host_network
from privbandits.deploy.p2b.device_host import ServedDeviceHost
from privbandits.deploy.p2b.messages import FetchModel, NumberedBatch, SealedReport
from privbandits.deploy.p2b.sealing import SEALED_BYTES, new_private_key, public_key, seal
from privbandits.deploy.p2b.served_wire import Refusal, exchange
from privbandits.deploy.p2b.serving import ServedServer, ServedShuffler, check_batch, serving_role

KEY = new_private_key()


def sealed(code: int, action: int, reward: int) -> SealedReport:
    return SealedReport(code, seal(public_key(KEY), code, action, reward))


@pytest.fixture
def spec(tmp_path, monkeypatch):
    monkeypatch.setenv("PRIVBANDITS_CACHE", str(tmp_path / "cache"))
    return load_deployment(served_copy(tmp_path, 100, 3, batch_window_s=3600))


def test_serving_roles_are_the_shuffler_and_the_server(spec):
    assert isinstance(serving_role(spec, "shuffler"), ServedShuffler)
    assert isinstance(serving_role(spec, "server"), ServedServer)
    assert isinstance(serving_role(spec, "hosta"), ServedDeviceHost)  # its devices over HTTP (or embedded)


def test_the_shuffler_checks_stores_and_deduplicates_reports_and_keeps_them_across_a_restart(spec):
    shuffler = ServedShuffler(spec, "shuffler")
    shuffler.start()
    network = host_network(spec, "hosta")
    try:
        send = lambda device, report: exchange(network, device, "shuffler", report, 10.0)  # noqa: E731
        assert send("hosta-device1", sealed(3, 1, 1)) is None  # stored
        assert send("hosta-device1", sealed(3, 1, 1)) is None  # sent again (sealed anew): acknowledged, kept once
        with pytest.raises(Refusal, match=r"one report per device per batch"):
            send("hosta-device1", sealed(4, 1, 1))
        with pytest.raises(Refusal, match=r"code must be in \[0, 31\], got 32$"):
            send("hosta-device2", sealed(32, 1, 1))
        with pytest.raises(Refusal, match=r"sealed must be 53 bytes"):  # (its action and reward: the server's to check)
            send("hosta-device2", SealedReport(3, np.zeros(7, np.uint8)))
        with pytest.raises(Refusal, match=r"sends one 'deploy.p2b.sealed_report' message; got 'deploy.p2b.fetch_"):
            send("hosta-device2", FetchModel(0))
        counts = shuffler.ledger()["reports"]
        assert (counts["accepted"], counts["duplicates"], counts["refused"]) == (1, 1, 4)
        key = shuffler.key
    finally:
        shuffler.stop()
    again = ServedShuffler(spec, "shuffler")
    again.start()
    try:  # the same key (a device sending again is still recognised), the open batch's report still held
        assert again.key == key and again.open_reports == 1 and again.ledger()["reports"]["accepted"] == 1
        assert exchange(network, "hosta-device1", "shuffler", sealed(3, 1, 1), 10.0) is None
        assert again.ledger()["reports"]["accepted"] == 1
    finally:
        again.stop()


def test_the_server_takes_batches_from_the_shuffler_only_and_sends_its_key_alone_before_a_model(spec):
    server = ServedServer(spec, "server")
    server.start()
    try:
        network = host_network(spec, "hosta")
        before = exchange(network, "hosta-device1", "server", FetchModel(0), 10.0).message  # version 0: no model yet
        assert before.version == 0 and before.first.size == 0 and before.public.shape == (32,)
        batch = NumberedBatch(0, np.array([1, 1]), np.zeros((2, SEALED_BYTES), np.uint8))
        with pytest.raises(Refusal, match="takes 'deploy.p2b.numbered_batch' from 'shuffler'"):
            exchange(network, "hosta-device1", "server", batch, 10.0)
        assert server.model_version == 0
    finally:
        server.stop()
    protocol = spec.protocol
    assert check_batch(batch, protocol) is None
    assert "codes must be in [0, 32)" in str(check_batch(NumberedBatch(0, np.array([32]),
                                                                     np.zeros((1, SEALED_BYTES), np.uint8)), protocol))
    wrong = NumberedBatch(0, np.array([1]), np.zeros((2, 9), np.uint8))
    assert "sealed must be a (1, 53) uint8 array" in str(check_batch(wrong, protocol))
    negative = NumberedBatch(-1, batch.codes, batch.sealed)
    assert "number must be an integer >= 0" in str(check_batch(negative, protocol))


def test_the_device_agent_refuses_bad_input_and_enforces_its_report_budget(spec, tmp_path):
    agent = DeviceAgent(spec, "hosta", 5, tmp_path / "d.sqlite", fetch_model=False, report_budget=2, timeout_s=0.2)
    dim = spec.protocol.dim
    for context, message in (([0.5] * (dim - 1), "context: must be 5 finite numbers"),
                             ([float("nan")] * dim, "context: must be 5 finite numbers"),
                             ("text", "context: must be 5 numbers")):  # fmt: skip
        with pytest.raises(AgentRefused, match=message):
            agent.decide(context)
    with pytest.raises(AgentRefused, match=r"arms: must be distinct arms in \[0, 4\]"):
        agent.decide([0.2] * dim, arms=[1, 1])
    decision = agent.decide([0.2] * dim, arms=[3, 4])
    assert decision.arm in (3, 4) and agent.decide([0.2] * dim, event_id=decision.event_id) == decision
    with pytest.raises(AgentRefused, match="event_id: 'nope' has no decision"):
        agent.reward("nope", 1)
    assert agent.reward(decision.event_id, 1) is False and agent.reward(decision.event_id, 1) is True
    with pytest.raises(AgentRefused, match="already rewarded 1"):
        agent.reward(decision.event_id, 0)
    agent.report(), agent.report()  # no shuffler: the reports taken part in stay pending
    with pytest.raises(BudgetExceeded, match=r"report_budget: device 'hosta-device5' has made 2 of its 2"):
        agent.report()
    spent = agent.budget()
    assert spent["report_decisions"] == 2 and spent["epsilon_spent"] == pytest.approx(2 * np.log(2))
    assert spent["reports_sent"] == 0 and spent["reports_pending"] == spent["took_part"]
    agent.close()
    again = DeviceAgent(spec, "hosta", 5, tmp_path / "d.sqlite", fetch_model=False, timeout_s=0.2)
    assert again.budget() | {"model_version": 0} == spent | {"model_version": 0}  # kept: budget, spent, pending
    again.close()


def test_a_device_host_serves_its_users_devices_as_a_decider_and_decides_as_the_deployment(spec, tmp_path):
    """Through the service (its store, its idempotency), hosta's early users' devices, one per user id, decide as the
    deployment's device host; a repeat gets the same answer; bad input is refused naming the field."""
    from p2b_serving import reference

    from privbandits.deploy.p2b.data import layout, load_host
    from privbandits.serve.decider import DecideInput, Refused
    from privbandits.serve.service import DecisionService

    *_, expected = reference(spec)
    server, shuffler = ServedServer(spec, "server"), ServedShuffler(spec, "shuffler")
    server.start()  # the devices' model fetch is answered (none yet: they start cold)
    shuffler.start()  # and their reports taken
    service = DecisionService.open(ServedDeviceHost(spec, "hosta"), tmp_path / "hosta.serve.sqlite")
    try:
        data, users = load_host(spec, "hosta"), list(layout(spec)["hosta"].early)[:5]
        for local, user in enumerate(users):
            arms = []
            for round in range(spec.protocol.interactions):
                request = DecideInput(f"{user}-{round}", str(user), data.early.contexts[local, round][None])
                event = service.decide(request)
                assert service.decide(request) == event  # a repeat: the same answer
                service.reward(event.event_id, float(data.early.rewards[local, round, event.arm]))
                arms.append(event.arm)
            assert arms == list(expected["early"][user])
        for request, field in ((DecideInput("x", "alice", data.early.contexts[0, 0][None]), "user_id"),
                               (DecideInput("y", "1", data.early.contexts[0, :2]), "features")):  # fmt: skip
            with pytest.raises(Refused, match=field):
                service.decide(request)
        event = service.decide(DecideInput("z", "1", data.early.contexts[0, 0][None]))
        with pytest.raises(Refused, match="reward: must be 0 or 1"):
            service.reward(event.event_id, 0.5)
        assert service.ledger()["learner"]["report_decisions"] == len(users)
        assert service.ledger()["learner"]["reports_pending"] == 0
    finally:
        service.close()
        server.stop()
        shuffler.stop()


def test_a_served_shuffler_keeps_its_queue_in_the_deployments_postgresql_database(tmp_path, monkeypatch,
                                                                                postgres_server):
    """Where the deployment names a PostgreSQL queue (``queue_url``, what its front ends share), the served shuffler
    keeps its reports there too (schema ``shuffler_serve``, apart from ``deploy``'s), held across a restart, and writes
    no SQLite queue; the rows there are the code and the ciphertext, never the action or reward."""
    import psycopg

    monkeypatch.setenv("PRIVBANDITS_CACHE", str(tmp_path / "cache"))
    url = postgres_server.database()
    spec = load_deployment(served_copy(tmp_path, 100, 3, batch_window_s=3600, queue_url=url))
    network = host_network(spec, "hosta")
    for attempt in range(2):  # the second: a restarted shuffler, its report still held and recognised
        shuffler = ServedShuffler(spec, "shuffler")
        shuffler.start()
        try:
            assert shuffler.open_reports == attempt  # held from before the restart
            assert exchange(network, "hosta-device1", "shuffler", sealed(3, 1, 1), 10.0) is None
            assert (shuffler.open_reports, shuffler.ledger()["reports"]["accepted"]) == (1, 1)
        finally:
            shuffler.stop()
    assert not list(spec.output.glob("queues/*.sqlite"))
    with psycopg.connect(url) as connection:
        columns = [row[0] for row in connection.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_schema = 'shuffler_serve'")]  # fmt: skip
    assert "sealed" in columns
