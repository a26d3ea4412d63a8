"""SIGKILL of a served vertical party while the active party's application drives decisions and rewards, then a
restart: every acknowledged reward is absorbed exactly once, every acknowledged decision is still joinable (asked
again, the same arm; its reward again, a duplicate), and the session goes on — to exactly the decisions of the
in-memory run, since a decision the kill cut short is made again from the same recovered state.

Each test starts the four parties as ``privbandits serve`` processes, so they are slow (tens of seconds on a busy
machine)."""

from __future__ import annotations

import threading
import time

import pytest
from vertical_serving import Party, announced, launch, preload_passive, replay, served, served_deployment, wait_linked

from privbandits.deploy.vertical.party import load_all, run_in_memory

ROUNDS = 80


def _kill_and_restart(path, parties: dict[str, Party], name: str) -> None:
    parties[name].kill()
    parties[name] = announced(launch(path, name))


def _when(arms: list[int], count: int, driver: threading.Thread) -> None:
    """Wait until ``count`` decisions were acknowledged (or the driver ended)."""
    while len(arms) < count and driver.is_alive():
        time.sleep(0.02)


def _served_through_kills(tmp_path, victims: list[str], **settings) -> None:
    path, spec = served_deployment(tmp_path, rounds=ROUNDS, api_ports=True, **settings)
    with served(path, spec) as (parties, clients):
        preload_passive(spec, clients)
        active = clients["active"]
        wait_linked(active)
        arms: list[int] = []
        failure: list[BaseException] = []
        running = threading.Event()
        running.set()

        def drive() -> None:
            try:
                for t in range(ROUNDS):
                    running.wait()
                    replay(spec, active, range(t, t + 1), arms)
            except BaseException as exc:  # reported below
                failure.append(exc)

        driver = threading.Thread(target=drive, daemon=True)
        driver.start()
        for index, victim in enumerate(victims):
            _when(arms, (index + 1) * ROUNDS // (len(victims) + 2), driver)
            assert len(arms) < ROUNDS  # killed while the application drives it
            if victim == "mask_generator":  # the others do not wait for it: hold the driver for the next kill
                running.clear()
            _kill_and_restart(path, parties, victim)
            running.set()
        driver.join(timeout=600)
        assert not driver.is_alive() and not failure, failure
        reference, _ = run_in_memory(spec)
        assert arms == reference.arms.tolist()
        ledger = active.ledger()
        assert ledger["events"] == {"open": 0, "rewarded": ROUNDS, "expired": 0}
        assert ledger["learner"]["rewards_absorbed"] == ROUNDS  # each acknowledged reward once
        data = load_all(spec, ["active"])["active"]
        for t in range(ROUNDS):  # every decision joinable: the same answer, its reward a duplicate
            again = active.decide(f"event-{t}", str(int(data.users[t])), data.features[t].tolist())
            assert again.arm == arms[t]
            assert active.reward(f"event-{t}", float(data.reward_table[t, arms[t]])).duplicate
        assert active.ledger()["learner"]["rewards_absorbed"] == ROUNDS
        for name in ("passive2", "passive3"):
            assert clients[name].ledger()["learner"]["users"] == ROUNDS  # every acknowledged put kept
        sessions = {name: clients[name].ledger()["learner"]["link_sessions"] for name in parties}
        assert all(count >= 1 for count in sessions.values()), sessions  # the restarted party linked again
        if victims != ["active"]:
            assert sessions["active"] >= 2, sessions  # the active party linked again with the restarted ones


@pytest.mark.slow
@pytest.mark.parametrize("policy", ["vfucb", "vfts"])
def test_the_active_party_killed_and_restarted_loses_nothing_acknowledged(tmp_path, policy):
    """VFTS: the learner's generator is in the checkpoint and each decision replayed from the journal redraws what it
    drew, so the restarted party draws on as the uninterrupted one would (reproducible mode)."""
    _served_through_kills(tmp_path, ["active"], policy=policy)


@pytest.mark.slow
def test_a_passive_party_killed_and_restarted_answers_from_its_recovered_rows(tmp_path):
    _served_through_kills(tmp_path, ["passive2"])


@pytest.mark.slow
def test_the_mask_generator_killed_and_restarted_sends_the_same_mask_at_the_next_link_session(tmp_path):
    """The parties serve on without it; a passive party killed afterwards makes everyone link again, with the
    restarted mask generator (the same Q from its seed file, or the active party would refuse to serve)."""
    _served_through_kills(tmp_path, ["mask_generator", "passive3"])
