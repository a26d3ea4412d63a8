"""The MPC ε-greedy deployment served (``privbandits serve DEPLOY --as NAME``, one process per party, inter-party
links mutual TLS, each application's API over TLS with the party's certificate): a replay of the deployment's
synthetic data over HTTP decides exactly as ``deploy local`` / the in-memory run; a missing block refuses the decide
(503 naming the party) and changes nothing."""

from __future__ import annotations

import math
import threading
import time

import httpx
import pytest
from mpc_serving import decide, make_served_deployment, put_block, reward, served, synthetic

from privbandits.deploy.deployment import load_deployment
from privbandits.deploy.mpc_bandit.party import run_in_memory


def replay(running, rounds: int, start: int = 0) -> list[int]:
    """Each computing party's application puts its block of event t, the environment's asks decide(t), then
    reward(t) with the data file's reward of the chosen arm."""
    spec = running.spec
    blocks, rewards = synthetic(spec)
    clients = {name: running.client(name) for name in spec.parties}
    arms = []
    for t in range(start, start + rounds):
        event = f"event-{t}"
        for name in spec.names("computing"):
            assert put_block(clients[name], event, blocks[name][t]).status_code == 200
        answer = decide(clients["env"], event)
        assert answer.status_code == 200, answer.text
        arm = answer.json()["arm"]
        assert answer.json()["propensity"] is None  # the greedy arm it depends on is secret to everyone
        ack = reward(clients["env"], event, rewards[t, arm])
        assert ack.status_code == 200 and not ack.json()["duplicate"], ack.text
        arms.append(arm)
    return arms


@pytest.mark.slow
def test_a_replay_over_http_decides_as_deploy_local(tmp_path):
    path = make_served_deployment(tmp_path, rounds=6)
    spec = load_deployment(path)
    with served(path) as running:
        arms = replay(running, spec.protocol.rounds)
        ledger = running.client("env").get("/v1/ledger").json()
        computing = running.client("c0").get("/v1/ledger").json()
    assert arms == run_in_memory(spec)[0].arms.tolist()
    assert ledger["events"] == {"open": 0, "rewarded": 6, "expired": 0}
    assert ledger["learner"]["openings"] == 6 and ledger["learner"]["rounds_closed"] == 6
    eta = math.log(spec.protocol.n_arms / spec.protocol.epsilon)  # Theorem 1, per opening
    assert ledger["learner"]["epsilon_per_opening"] == pytest.approx(eta)
    assert ledger["learner"]["epsilon"] == pytest.approx(6 * eta)
    assert computing["learner"]["rounds_closed"] == 6


@pytest.mark.slow
def test_a_missing_block_refuses_the_decide_naming_the_party_and_changes_nothing_over_http(tmp_path):
    path = make_served_deployment(tmp_path, rounds=3, deadline_s=2.0)
    spec = load_deployment(path)
    blocks, rewards = synthetic(spec)
    with served(path) as running:
        c0, c1, env = (running.client(name) for name in ("c0", "c1", "env"))
        assert put_block(c0, "first", blocks["c0"][0]).status_code == 200
        started = time.monotonic()
        refused = decide(env, "first")  # c1's application never put its block
        assert refused.status_code == 503, refused.text
        assert refused.json()["error"]["field"] == "event_id"
        assert "'c1' has no block of event 'first'" in refused.json()["error"]["message"]
        assert time.monotonic() - started < 30
        assert env.get("/v1/ledger").json()["learner"]["openings"] == 0
        # one event, one block: another block under the same event id is refused
        again = put_block(c0, "first", blocks["c0"][1])
        assert again.status_code == 409 and again.json()["error"]["field"] == "key"
        # the block comes: the same event decides as round 1 of the replay would
        assert put_block(c1, "first", blocks["c1"][0]).status_code == 200
        answer = decide(env, "first")
        assert answer.status_code == 200, answer.text
        arm = answer.json()["arm"]
        # one event at a time: another decide before its reward is refused
        assert put_block(c0, "second", blocks["c0"][1]).status_code == 200
        assert put_block(c1, "second", blocks["c1"][1]).status_code == 200
        busy = decide(env, "second")
        assert busy.status_code == 409 and "'first' is still open" in busy.json()["error"]["message"]
        assert reward(env, "first", rewards[0, arm]).status_code == 200
        second = decide(env, "second").json()["arm"]
    assert [arm, second] == run_in_memory(spec)[0].arms.tolist()[:2]


def _until_answered(running, name: str, call, *args, limit_s: float = 120.0):
    """``call(party name's client, *args)`` again while the parties relink (503) or the party restarts (no
    connection), within ``limit_s``."""
    stop = time.monotonic() + limit_s
    what = f"{call.__name__}{args[:1]} at {name}"
    while True:
        try:
            answer = call(running.client(name), *args)
        except httpx.TransportError:
            answer = None
        if answer is not None and answer.status_code != 503:
            return answer
        assert time.monotonic() < stop, f"{what}: {answer.text if answer is not None else 'no connection'}"
        time.sleep(0.3)


@pytest.mark.slow
@pytest.mark.parametrize("victim", ["c1", "env", "dealer"])
def test_a_party_killed_while_an_event_is_open_restarts_and_the_session_goes_on(tmp_path, victim):
    """SIGKILL one party after a decision was acknowledged and before its reward; restart it: the reward is absorbed
    exactly once (the next rounds decide as the in-memory run, which absorbs each reward once), the decision stays
    joinable, and every party closes every round."""
    rounds, kill_at = 6, 2
    path = make_served_deployment(tmp_path, rounds=rounds, deadline_s=3.0)
    spec = load_deployment(path)
    blocks, rewards = synthetic(spec)
    arms = []
    with served(path) as running:
        for t in range(rounds):
            event = f"event-{t}"
            for name in spec.names("computing"):
                put = _until_answered(running, name, put_block, event, blocks[name][t])
                assert put.status_code == 200, put.text
            answer = _until_answered(running, "env", decide, event)
            assert answer.status_code == 200, answer.text
            arm = answer.json()["arm"]
            arms.append(arm)
            if t == kill_at:
                running.kill(victim)
                running.start(victim)
                running.wait_started(victim)
            ack = _until_answered(running, "env", reward, event, rewards[t, arm])
            assert ack.status_code == 200 and not ack.json()["duplicate"], ack.text
            again = reward(running.client("env"), event, rewards[t, arm])  # joinable, absorbed once
            assert again.status_code == 200 and again.json()["duplicate"], again.text
        ledgers = {name: running.client(name).get("/v1/ledger").json() for name in spec.parties}
    assert arms == run_in_memory(spec)[0].arms.tolist()
    assert ledgers["env"]["events"] == {"open": 0, "rewarded": rounds, "expired": 0}
    assert ledgers["env"]["learner"]["rounds_closed"] == rounds
    assert all(ledgers[name]["learner"]["rounds_closed"] == rounds for name in spec.names("computing"))
    assert ledgers["c0"]["learner"]["sessions"] >= 2  # a party never killed linked again


@pytest.mark.slow
@pytest.mark.parametrize(("victim", "after_s"), [("c0", 0.7), ("env", 1.1), ("dealer", 0.4)])
def test_a_party_killed_at_any_moment_under_requests_loses_nothing_acknowledged(tmp_path, victim, after_s):
    """SIGKILL a party at a moment the test does not choose (mid-round, mid-put, between requests) while the
    applications drive events; restart it: the session goes on and decides exactly as the in-memory run (each
    acknowledged reward absorbed once), and a reward reported again is a duplicate."""
    rounds = 10
    path = make_served_deployment(tmp_path, rounds=rounds, deadline_s=3.0)
    spec = load_deployment(path)
    blocks, rewards = synthetic(spec)
    arms = []
    with served(path) as running:
        killed = []

        def kill_and_restart() -> None:  # the driver retries meanwhile; the party's new API address replaces the old
            killed.append(time.monotonic())
            running.kill(victim)
            running.start(victim)
            running.wait_started(victim)

        killer = threading.Timer(after_s, kill_and_restart)
        killer.start()
        for t in range(rounds):
            event = f"event-{t}"
            if t == rounds - 1:  # the parties ran ahead of the timer: the kill comes before the last event at latest
                killer_fired = time.monotonic() + 30.0
                while not killed and time.monotonic() < killer_fired:
                    time.sleep(0.01)
            for name in spec.names("computing"):
                assert _until_answered(running, name, put_block, event, blocks[name][t]).status_code == 200
            answer = _until_answered(running, "env", decide, event)
            assert answer.status_code == 200, answer.text
            arm = answer.json()["arm"]
            arms.append(arm)
            assert _until_answered(running, "env", reward, event, rewards[t, arm]).status_code == 200
        finished = time.monotonic()
        killer.join()
        assert killed and killed[0] < finished  # it was killed while the applications drove events
        again = _until_answered(running, "env", reward, "event-0", rewards[0, arms[0]])
        assert again.json()["duplicate"]
        ledgers = {name: running.client(name).get("/v1/ledger").json() for name in spec.parties}
    assert arms == run_in_memory(spec)[0].arms.tolist()
    assert ledgers["env"]["events"] == {"open": 0, "rewarded": rounds, "expired": 0}
    assert all(ledgers[name]["learner"]["rounds_closed"] == rounds for name in ("env", *spec.names("computing")))
