"""SIGKILL of a served FCLUB party while a client drives requests, then a restart (issue 46): nothing acknowledged is
lost or absorbed twice, and the federation goes on.

A client thread sends the shipped deployment's synthetic rounds (decision, then its reward) to the users' local
servers over HTTPS, retrying a request the killed party could not answer (the same event id: a repeat gets the same
answer). After some acknowledgements one party is killed (a local server, or the global server) and started again
on the same addresses; its peers link again and resynchronise at a phase start. Then every acknowledged decision is
still joinable (asked again: the same arm), every acknowledged reward is known (sent again: a duplicate), each local
server's learner absorbed exactly the rewards its store holds, and the global server's clock counts exactly the
rewards all local servers absorbed. Each kill costs a party's restart (interpreter, imports, links): slow.
"""

from __future__ import annotations

import signal
import threading
import time

import httpx
import pytest
from fclub_serving import (
    START_S,
    add_token,
    announced,
    arrivals,
    client,
    launch,
    owner_of,
    serve_all,
    served_copy,
    stop_all,
)

from privbandits.serve.client import ServeError

ACKS_BEFORE, ACKS_AFTER = 12, 12
MOST_S = 240.0


class Driver:
    """One client, sequential: each round's decision at its user's local server, then its reward; a request that
    fails on the way (the party is down, or relinking) is sent again until answered."""

    def __init__(self, spec, urls: dict[str, str], tokens: dict[str, str]) -> None:
        self.spec, self.urls, self.tokens = spec, urls, tokens
        self.decided: dict[str, tuple[str, int, list, int]] = {}  # event -> (server, user, features, arm)
        self.rewarded: dict[str, tuple[str, float]] = {}  # event -> (server, reward)
        self.acks = 0
        self.stop = threading.Event()
        self.failure: BaseException | None = None

    def call(self, server: str, method: str, *args):
        """``ServeClient.method(*args)`` at ``server``, sent again until answered (or the driver is stopped)."""
        while not self.stop.is_set():
            try:
                with client(self.spec, server, self.urls[server], self.tokens[server]) as api:
                    return getattr(api, method)(*args)
            except (httpx.HTTPError, ServeError) as exc:
                if isinstance(exc, ServeError) and exc.status < 500:
                    raise
                time.sleep(0.2)
        raise TimeoutError("stopped")

    def run(self) -> None:
        owner = owner_of(self.spec)
        try:
            for t, (user, contexts, rewards) in enumerate(arrivals(self.spec)):
                event, server, features = f"round-{t + 1}", owner[user], contexts.tolist()
                arm = self.call(server, "decide", event, str(user), features).arm
                self.decided[event] = (server, user, features, arm)
                self.acks += 1
                self.call(server, "reward", event, float(rewards[arm]))
                self.rewarded[event] = (server, float(rewards[arm]))
                self.acks += 1
        except TimeoutError:
            return
        except BaseException as exc:
            self.failure = exc


def wait_acks(driver: Driver, count: int) -> None:
    until = time.monotonic() + MOST_S
    while driver.acks < count and time.monotonic() < until and driver.failure is None:
        time.sleep(0.05)
    assert driver.failure is None, driver.failure
    assert driver.acks >= count, f"only {driver.acks} acknowledgements"


@pytest.mark.slow
@pytest.mark.parametrize("victim", ["local0", "global"])
def test_a_killed_party_restarts_and_nothing_acknowledged_is_lost_or_doubled(tmp_path, victim):
    spec = served_copy(tmp_path, servers=2, horizon=255, fixed_ports=True,
                       **{"connect_deadline_s = 60": "connect_deadline_s = 180"})  # fmt: skip
    names = ["global", *spec.names("local_server")]
    tokens = {name: add_token(spec, name) for name in names}
    processes, urls = serve_all(spec)
    driver = Driver(spec, urls, tokens)
    thread = threading.Thread(target=driver.run, daemon=True)
    try:
        thread.start()
        wait_acks(driver, ACKS_BEFORE)
        processes[victim].send_signal(signal.SIGKILL)
        processes[victim].wait()
        processes[victim] = launch(spec, victim)
        assert announced(processes[victim], time.monotonic() + START_S + spec.connect_deadline_s) == urls[victim]
        wait_acks(driver, driver.acks + ACKS_AFTER)
        driver.stop.set()
        thread.join(timeout=MOST_S)
        driver.stop.clear()
        for event, (server, user, features, arm) in driver.decided.items():  # joinable: the same answer
            assert driver.call(server, "decide", event, str(user), features).arm == arm
        for event, (server, reward) in driver.rewarded.items():  # known: a duplicate
            assert driver.call(server, "reward", event, reward).duplicate
        ledgers = {name: driver.call(name, "ledger") for name in names}
    finally:
        driver.stop.set()
        stop_all(processes)
    absorbed = 0
    for name in spec.names("local_server"):
        events, learner = ledgers[name]["events"], ledgers[name]["learner"]
        acknowledged = sum(server == name for server, _ in driver.rewarded.values())
        assert learner["rewards_absorbed"] == events["rewarded"] >= acknowledged
        absorbed += learner["rewards_absorbed"]
    assert ledgers["global"]["learner"]["rounds"] == absorbed  # every absorbed reward counted once by the clock
    if victim != "global":  # the global server went on: it linked again and resynchronised
        assert ledgers["global"]["learner"]["relinks"] >= 1
