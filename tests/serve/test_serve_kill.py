"""SIGKILL of the service under a bounded client load, then a restart: nothing acknowledged is lost or doubled.

Each cycle starts ``privbandits serve`` (127.0.0.1, plain HTTP for development), drives it with a few client threads
(new decisions, rewards late and out of order, some sent twice) for a bounded time, and kills it with SIGKILL in the
middle. After the restart every acknowledged decision is still joinable (asked again: the same arm) and every
acknowledged reward is known (sent again: a duplicate). The kill comes after a random number of acknowledgements
(bounded in time too), so it lands mid-load however fast the machine is. At the end the service is stopped and its
final checkpoint, the live learner's state, is compared bit for bit with a reference learner fed the store's rewards
in the order they were absorbed: each acknowledged reward among them, each exactly once.
"""

from __future__ import annotations

import json
import random
import signal
import sqlite3
import threading
import time

import httpx
import pytest
from serve_process import add_token, start, write_reference

from privbandits.serve.client import ServeClient, ServeError
from privbandits.serve.decider import DecidedEvent
from privbandits.serve.reference import ReferenceDecider, ReferenceLearner

LEARNER = {"policy": "linucb", "n_arms": 3, "dim": 2, "alpha": 0.5}
CYCLES, THREADS, MOST_REQUESTS = 3, 4, 400
ACKS = (20, 60)  # each cycle is killed after a random number of acknowledgements in this range...
MOST_LOAD_S = 30.0  # ...or after this long, whichever comes first


class Load:
    """What the clients had acknowledged: decisions (event -> features, arm) and rewards (event -> reward)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.decided: dict[str, tuple[list[list[float]], int]] = {}
        self.rewarded: dict[str, float] = {}
        self.acks = 0

    def drive(self, url: str, token: str, cycle: int, thread: int, stop: threading.Event) -> None:
        rng = random.Random(cycle * 100 + thread)
        pending: list[str] = []
        with ServeClient(url, token, timeout_s=10) as client:
            for i in range(MOST_REQUESTS):
                if stop.is_set():
                    return
                try:
                    if pending and rng.random() < 0.5:  # a reward, for a random earlier event: out of order
                        event = pending.pop(rng.randrange(len(pending)))
                        value = float(rng.randint(0, 4))
                        client.reward(event, value)
                        with self.lock:
                            self.rewarded[event] = value
                            self.acks += 1
                        if rng.random() < 0.2:
                            assert client.reward(event, value).duplicate
                    else:
                        event = f"c{cycle}t{thread}e{i}"
                        rows = [[rng.uniform(-1, 1), rng.uniform(-1, 1)] for _ in range(3)]
                        decision = client.decide(event, f"u{i % 5}", rows)
                        with self.lock:
                            self.decided[event] = (rows, decision.arm)
                            self.acks += 1
                        pending.append(event)
                except (httpx.TransportError, ServeError):
                    return  # the service was killed under this request: unacknowledged


def _check_everything_acknowledged_survived(url: str, token: str, load: Load) -> None:
    with ServeClient(url, token, timeout_s=10) as client:
        for event, (rows, arm) in list(load.decided.items())[:: max(1, len(load.decided) // 100)]:  # 100 of them
            user = int(event.split("e")[-1]) % 5
            assert client.decide(event, f"u{user}", rows).arm == arm  # joinable: the same answer
        for event, value in load.rewarded.items():
            assert client.reward(event, value).duplicate  # known: absorbed before, not again


@pytest.mark.slow
def test_sigkill_under_load_loses_no_acknowledged_reward_or_decision(tmp_path) -> None:
    service_file = write_reference(tmp_path, LEARNER, checkpoint_every=7, reward_timeout_s=3600.0)
    token = add_token(tmp_path, LEARNER)
    load = Load()
    for cycle in range(CYCLES):
        process, url = start(service_file, "--dev-plain-http")
        try:
            if cycle:
                _check_everything_acknowledged_survived(url, token, load)
            stop = threading.Event()
            threads = [threading.Thread(target=load.drive, args=(url, token, cycle, t, stop)) for t in range(THREADS)]
            for thread in threads:
                thread.start()
            target = load.acks + random.Random(cycle).randint(*ACKS)
            deadline = time.monotonic() + MOST_LOAD_S
            while load.acks < target and time.monotonic() < deadline:
                time.sleep(0.01)
        finally:
            process.send_signal(signal.SIGKILL)
            process.wait(timeout=30)
        stop.set()
        for thread in threads:
            thread.join(timeout=30)
    assert len(load.rewarded) > 20, "the load was too light to test anything"
    process, url = start(service_file, "--dev-plain-http")
    try:
        _check_everything_acknowledged_survived(url, token, load)
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)
    with sqlite3.connect(tmp_path / "reference.serve.sqlite") as db:
        final = db.execute("SELECT state FROM checkpoints ORDER BY seq DESC LIMIT 1").fetchone()[0]
        absorbed = db.execute(
            "SELECT event_id, user_id, arm, event_state, reward FROM events"
            " WHERE status = 'rewarded' ORDER BY close_seq"
        ).fetchall()
    stored = {event: reward for event, _, _, _, reward in absorbed}
    assert all(stored[event] == value for event, value in load.rewarded.items())  # every acknowledged one, once
    assert len(stored) - len(load.rewarded) <= CYCLES * THREADS  # committed as the kill came, unacknowledged
    print(f"{len(load.decided)} decisions and {len(load.rewarded)} rewards acknowledged, {len(stored)} absorbed")
    reference = ReferenceDecider(ReferenceLearner(**LEARNER))
    for event, user, arm, state, reward in absorbed:
        reference.absorb(DecidedEvent(event, user, arm, None, 0, json.loads(state)), reward)
    assert reference.checkpoint() == bytes(final)
