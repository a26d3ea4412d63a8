"""A party that stalls (SIGSTOP: alive, its sockets open, silent) mid-run, one role at a time.

Its peers learn of it only from their receive deadlines. The README's Deploy section states what each role's
stall does; this checks it. Where the session ends (every role but FCLUB's local server), every other party
exits with the lost-peer code within the longest receive deadline + a margin, each naming the stalled party
and the round, and no party writes a result. An FCLUB local server's stall ends nothing: the users name it
(with the round) and go on, the global server drops it, the others finish. Stalls already tested elsewhere:
a vertical passive party (test_deploy_vertical), an MPC computing party (test_deploy_mpc_stall, slow). In the
default suite: the vertical mask generator's stall here and the passive party's; the rest with ``-m slow``.
"""

from __future__ import annotations

import os
import signal
import time

import pytest
from small_deployments import assert_equals_in_memory, deployment, results, wait_mid_run

from privbandits.deploy.deployment import load_deployment
from privbandits.deploy.fclub import session as fclub
from privbandits.deploy.local import start_parties, survivable, wait_parties
from privbandits.deploy.party import EXIT_LOST, protocol_of

DEADLINE = 2.0
MARGIN = 5.0
"""Seconds past the longest receive deadline by which every other party has exited."""


def stall(tmp_path, kind: str, victim: str) -> tuple[object, dict, dict, float]:
    """Run ``kind``'s small deployment and SIGSTOP ``victim`` mid-run: the spec, the exit codes, the parties' last
    lines, and the seconds from the stop until every other party had exited."""
    # the dealer's material runs ahead of the rounds (about 4x as fast, read ahead by the computing parties): with
    # 100 rounds it can be done before round 10, when its stall holds up no one, so it gets a session it cannot finish
    rounds = 1000 if (kind, victim) == ("mpc", "dealer") else 100
    spec = load_deployment(deployment(kind, tmp_path, deadline_s=DEADLINE, mpc_rounds=rounds))
    parties = start_parties(spec, tmp_path)
    by_name = {party.name: party for party in parties}
    others = [party.process for party in parties if party.name != victim]
    try:
        wait_mid_run(kind, spec, parties)
        os.kill(by_name[victim].process.pid, signal.SIGSTOP)
        stopped = time.monotonic()
        while any(process.poll() is None for process in others) and time.monotonic() - stopped < 60:
            time.sleep(0.05)
        elapsed = time.monotonic() - stopped
    finally:
        os.kill(by_name[victim].process.pid, signal.SIGKILL)
        for party in parties:
            if party.process.poll() is None:
                party.process.kill()
        codes = wait_parties(parties, DEADLINE, survivable=survivable(spec))
    return spec, codes, {party.name: party.last_error for party in parties}, elapsed


def longest_wait(spec, victim: str) -> float:
    """The longest any other party waits for a message (FCLUB's idle servers wait longer than their deadline)."""
    protocol = protocol_of(spec)
    longest = max(protocol.receive_deadline(spec, name) for name in spec.parties if name != victim)
    return max(longest, fclub.IDLE * spec.deadline_s if spec.protocol.name == "fclub" else 0.0)


@pytest.mark.slow  # about 2 min in all on 2 cores
@pytest.mark.parametrize(
    ("kind", "victim"),
    [
        ("vertical", "active"),
        ("mpc", "dealer"),
        ("mpc", "env"),
        ("p2b", "shuffler"),
        ("p2b", "server"),
        ("p2b", "hosta"),
        ("fclub", "global"),
        ("fclub", "users"),
    ],
)
def test_a_stalled_party_is_named_by_every_other_party_in_time(tmp_path, encoder_cache, kind, victim):
    spec, codes, lines, elapsed = stall(tmp_path, kind, victim)
    assert codes.pop(victim) == -signal.SIGKILL
    assert codes == dict.fromkeys(codes, EXIT_LOST), lines
    assert elapsed < longest_wait(spec, victim) + MARGIN
    for name in codes:
        assert lines[name].startswith(f"party {name!r}: lost peer {victim!r} in "), lines[name]
    assert not any(spec.result_path(name).exists() for name in spec.parties)


@pytest.mark.slow  # 9.5 s on 2 cores, most of it waiting out the deadlines; stalls in the default suite: the vertical
# mask generator's below and a passive party's (test_deploy_vertical.py)
def test_a_stalled_fclub_local_server_is_named_by_the_users_with_the_round_and_the_others_finish(
    tmp_path, encoder_cache
):
    spec, codes, lines, elapsed = stall(tmp_path, "fclub", "local1")
    assert codes.pop("local1") == -signal.SIGKILL
    assert codes == dict.fromkeys(codes, 0), lines
    got = results(spec)
    assert list(got["users"]["lost"]) == list(got["global"]["lost"]) == ["local1"]
    assert got["users"]["lost"]["local1"].startswith("lost peer 'local1' in round "), got["users"]["lost"]
    assert got["global"]["lost"]["local1"].startswith("lost peer 'local1' in the phase from round ")
    assert got["users"]["served"] < spec.protocol.horizon
    assert not spec.result_path("local1").exists()


def test_a_vertical_mask_generator_stalled_after_setup_holds_up_no_one(tmp_path, encoder_cache):
    """Its part ends at set-up (the masks are dealt): the others finish and decide as in memory."""
    spec, codes, lines, _ = stall(tmp_path, "vertical", "mask_generator")
    assert codes.pop("mask_generator") == -signal.SIGKILL
    assert codes == dict.fromkeys(codes, 0), lines
    assert_equals_in_memory("vertical", spec)
