"""A computing party of the private ε-greedy bandit that stalls (alive, silent) stops the session in time.

SIGSTOP keeps its process and sockets open, so no connection closes: the others learn of it only
from their receive deadline. Every other party must exit with the lost-peer code within the longest
receive deadline among them (the dealer and the environment wait twice ``deadline_s``) + 5 s, each
naming the stalled party, and leave no result file.
"""

from __future__ import annotations

import os
import signal
import time

import pytest
from mpc_deployment import make_deployment

from privbandits.deploy.deployment import load_deployment
from privbandits.deploy.local import start_parties, wait_parties
from privbandits.deploy.party import EXIT_LOST, protocol_of


@pytest.mark.slow  # 4 to 7 s on 2 cores, mostly waiting out twice the deadline; stalls in the default suite: the
# vertical deployment's (tests/deploy/test_deploy_stall.py, tests/deploy/vertical/test_deploy_vertical.py)
def test_a_stalled_computing_party_is_named_by_every_other_party_within_the_deadline(tmp_path):
    deadline = 2.0
    spec = load_deployment(make_deployment(tmp_path, deadline_s=deadline, rounds=3000, checkpoint_every=500))
    parties = start_parties(spec, tmp_path)
    by_name = {party.name: party for party in parties}
    others = [by_name[name].process for name in ("dealer", "c0", "env")]
    try:
        start = time.monotonic()
        for line in by_name["env"].process.stdout:  # `progress t T` lines
            if int(line.split()[1]) >= 30 or time.monotonic() - start > 60:
                break
        os.kill(by_name["c1"].process.pid, signal.SIGSTOP)
        stalled = time.monotonic()
        while any(process.poll() is None for process in others) and time.monotonic() - stalled < 2 * deadline + 10:
            time.sleep(0.05)
        elapsed = time.monotonic() - stalled
    finally:
        os.kill(by_name["c1"].process.pid, signal.SIGKILL)
        for party in parties:
            if party.process.poll() is None:
                party.process.kill()
        wait_parties(parties, deadline)
    longest = max(protocol_of(spec).receive_deadline(spec, name) for name in ("dealer", "c0", "env"))
    assert longest == 2 * deadline  # the dealer's and the environment's (c0's is deadline)
    assert elapsed < longest + 5.0
    for name in ("dealer", "c0", "env"):
        party = by_name[name]
        assert party.process.returncode == EXIT_LOST, (name, party.stderr)
        assert party.last_error.startswith(f"party {name!r}: lost peer 'c1' in "), party.last_error
    assert not any(spec.result_path(name).exists() for name in spec.parties)
