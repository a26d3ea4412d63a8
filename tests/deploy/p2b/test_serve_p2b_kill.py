"""P2B served: each role SIGKILLed while devices drive it, then restarted: nothing it acknowledged is lost or taken
twice, and the session ends as the uninterrupted one (reproducible: the same decisions, batch and model as
``deploy local``).

* the device agent (an application's process killed mid-session): every acknowledged reward is absorbed once, every
  acknowledged decision can still be rewarded, and the device's decisions go on as the deployment's device host's;
* the shuffler, killed while devices send their reports: every acknowledged report is in the released batch once;
* the server, killed after it published: its model is not taken again from the shuffler's batch, and late devices
  warm from it decide as the in-memory run's late users.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from p2b_deployment import _held_reports
from p2b_serving import play, reference, serve, served_copy, wait_model

from privbandits.deploy.deployment import load_deployment
from privbandits.deploy.p2b.agent import DeviceAgent
from privbandits.deploy.p2b.data import layout, load_host


@pytest.fixture
def encoder_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PRIVBANDITS_CACHE", str(tmp_path / "cache"))  # the processes inherit it


def sized(tmp_path, n_users: int = 100, threshold: int = 3):
    """A served deployment whose batch closes with its last report; the spec and the reference run."""
    path = served_copy(tmp_path, n_users, threshold)
    expected = reference(load_deployment(path))
    size = f'name = "p2b"\nbatch_size = {expected[0].encoded_tuples_shared}\n'
    path.write_text(path.read_text().replace('name = "p2b"\n', size))
    return path, load_deployment(path), expected


def kill_when(process, ready, limit: float = 120.0) -> None:
    """SIGKILL ``process`` once ``ready()`` (polled), or after ``limit`` seconds."""
    stop = time.monotonic() + limit
    while not ready() and time.monotonic() < stop:
        time.sleep(0.01)
    process.send_signal(signal.SIGKILL)


DEVICE = """
import sys
from privbandits.deploy.deployment import load_deployment
from privbandits.deploy.p2b.agent import DeviceAgent
from privbandits.deploy.p2b.data import layout, load_host
spec = load_deployment(sys.argv[1])
host = spec.names("device_host")[0]
data = load_host(spec, host)
agent = DeviceAgent(spec, host, 0, sys.argv[2], fetch_model=False, timeout_s=0.5)
for round in range(spec.protocol.interactions):
    decision = agent.decide(data.early.contexts[0, round], event_id=f"event-{round}")
    print("decided", decision.event_id, decision.arm, flush=True)
    agent.reward(decision.event_id, int(data.early.rewards[0, round, decision.arm]))
    print("rewarded", decision.event_id, flush=True)
print("done", flush=True)
"""


@pytest.mark.slow  # a process of its own and the reference run: over the default suite's 10 s on 2 busy cores
@pytest.mark.parametrize("after", [3, 8])
def test_a_device_killed_mid_session_loses_no_acknowledged_reward_and_decides_on_as_the_deployment(
    tmp_path, encoder_cache, after
):
    """The application's process SIGKILLed after ``after`` printed lines (a decision or a reward acknowledged);
    reopened, the device holds each acknowledged reward once, takes the reward of its last decision, and its rounds
    give the deployment's device host's arms for that user."""
    path = served_copy(tmp_path, 100, 3)
    spec = load_deployment(path)
    *_, arms = reference(spec)
    store = tmp_path / "device.sqlite"
    env = os.environ | {"PYTHONPATH": os.pathsep.join(sys.path)}
    process = subprocess.Popen([sys.executable, "-c", DEVICE, str(path), str(store)], stdout=subprocess.PIPE,
                               text=True, env=env)  # fmt: skip
    assert process.stdout is not None
    lines = [process.stdout.readline().split() for _ in range(after)]
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)
    decided = {line[1]: int(line[2]) for line in lines if line[0] == "decided"}
    rewarded = [line[1] for line in lines if line[0] == "rewarded"]

    host = spec.names("device_host")[0]
    data = load_host(spec, host)
    agent = DeviceAgent(spec, host, 0, store, fetch_model=False, auto_report=False)
    stored = {event for event, e in agent.events.items() if e.reward is not None}
    assert set(rewarded) <= stored  # none lost (one more may be stored: committed, killed before it was acknowledged)
    assert set(decided) <= set(agent.events)  # every acknowledged decision is still there
    learned = int(agent.learner.local_counts.sum())  # type: ignore[attr-defined]
    assert learned == agent.rewarded == sum(e.reward is not None for e in agent.events.values())  # each once
    got = []
    for round in range(spec.protocol.interactions):
        decision = agent.decide(data.early.contexts[0, round], event_id=f"event-{round}")  # a repeat: the same
        assert decided.get(decision.event_id, decision.arm) == decision.arm
        duplicate = agent.reward(decision.event_id, int(data.early.rewards[0, round, decision.arm]))
        assert duplicate == (decision.event_id in stored)  # sent again after the kill: learnt once
        got.append(decision.arm)
    assert got == list(arms["early"][0])
    assert int(agent.learner.local_counts.sum()) == spec.protocol.interactions  # type: ignore[attr-defined]
    agent.close()


@pytest.mark.slow
def test_the_shuffler_killed_while_devices_report_loses_no_acknowledged_report(tmp_path, encoder_cache):
    """SIGKILL the shuffler while the early devices play and report; restarted, it releases the batch ``deploy local``
    releases (every acknowledged report once, the unacknowledged ones sent again by their devices)."""
    path, spec, (outcome, _, model, expected) = sized(tmp_path)
    shuffler, server = serve(path, "shuffler", "server")
    try:
        early: dict[int, DeviceAgent] = {}
        queue = Path(spec.output) / "queues" / "shuffler.serve.sqlite"
        killer = threading.Thread(target=kill_when, args=(shuffler.process, lambda: _held_reports(queue) >= 10))
        killer.start()  # SIGKILL once 10 reports are stored, while the others are being sent
        arms = play(spec, tmp_path / "devices.sqlite", "early", early, timeout_s=1.0)
        killer.join()
        assert shuffler.process.wait(timeout=30) == -signal.SIGKILL
        assert np.array_equal(np.array([arms[u] for u in sorted(arms)]), expected["early"])
        (shuffler,) = serve(path, "shuffler")
        assert sum(agent.flush() for agent in early.values()) == 0  # the pending reports, sent again
        budgets = [agent.budget() for agent in early.values()]
        assert sum(b["reports_sent"] for b in budgets) == outcome.encoded_tuples_shared
        published = wait_model(spec, 1)
        assert np.array_equal(published.first, model.first) and np.array_equal(published.second, model.second)
        reports = shuffler.ledger()["learner"]["reports"]
        assert reports["accepted"] == outcome.encoded_tuples_shared and reports["released_batches"] == 1
        assert shuffler.ledger()["learner"]["releases"][0]["details"] == outcome.release
        for agent in early.values():
            agent.close()
    finally:
        shuffler.stop()
        server.stop()


@pytest.mark.slow
def test_the_server_killed_after_publishing_keeps_its_model_once(tmp_path, encoder_cache):
    """The early devices play while no server runs (each report waits, pending, for the server's public key), the
    server starts, the devices reopened send their reports (sealed to it), the shuffler releases; the server is
    SIGKILLed once it published, and restarted: still version 1 of the one batch (the shuffler's batch not taken
    again), the deployment's model; late devices warm from it decide as the in-memory run's late users."""
    path, spec, (_, _, model, expected) = sized(tmp_path)
    (shuffler,) = serve(path, "shuffler")
    server = None
    try:
        play(spec, tmp_path / "devices.sqlite", "early", timeout_s=0.5)  # no server yet: cold, as before a model
        (server,) = serve(path, "server")
        for host, block in layout(spec).items():  # reopened, each device sends its pending report
            for user in block.early:
                DeviceAgent(spec, host, user, tmp_path / "devices.sqlite", fetch_model=False).close()
        assert wait_model(spec, 1).version == 1
        server.process.send_signal(signal.SIGKILL)
        assert server.process.wait(timeout=30) == -signal.SIGKILL
        (server,) = serve(path, "server")
        time.sleep(1.0)  # a delivery sent again would come now
        published = wait_model(spec, 1)
        assert published.version == 1 and server.ledger()["learner"]["batches"] == [0]
        assert np.array_equal(published.first, model.first) and np.array_equal(published.second, model.second)
        late = play(spec, tmp_path / "devices.sqlite", "late")
        assert np.array_equal(np.array([late[u] for u in sorted(late)]), expected["late"])
        assert shuffler.ledger()["learner"]["reports"]["delivered_batches"] == 1
    finally:
        shuffler.stop()
        if server is not None:
            server.stop()
