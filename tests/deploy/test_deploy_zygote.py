"""`deploy local` forks its parties from one process that imported their code once (deploy/zygote.py).

Each forked party must behave as a party started with ``python -m privbandits.deploy.cli``: its own
process (not the launcher's child, not the server), its stdout and stderr reaching the launcher, its
exit code (a signal as Popen gives it), and the same session as the one started the old way.
"""

from __future__ import annotations

import os
import signal
import time

import pytest
from mpc_deployment import assert_same_as_in_memory, make_deployment

from privbandits.deploy import zygote
from privbandits.deploy.deployment import load_deployment
from privbandits.deploy.local import child_environment, start_parties, wait_parties

pytestmark = pytest.mark.skipif(not zygote.available(), reason="forking parties needs fork and descriptor passing")


@pytest.fixture
def server():
    forks = zygote.ForkServer(["privbandits.deploy.cli"], child_environment())
    yield forks
    forks.close()


def test_a_forked_command_writes_to_its_own_pipes_and_reports_its_exit_code(server, tmp_path):
    helped = server.start(["-m", "privbandits.deploy.cli", "--help"], capture_stdout=True, listen_fd=None)
    refused = server.start(["-m", "privbandits.deploy.cli", "party", "run", str(tmp_path / "none.toml"), "--as", "x"],
                           capture_stdout=False, listen_fd=None)  # fmt: skip
    usage = helped.stdout.read()
    assert "Usage: python -m privbandits.deploy.cli" in usage and helped.wait(timeout=30) == 0
    assert refused.stdout is None and refused.wait(timeout=30) == 2
    assert "none.toml" in refused.stderr.read()
    assert len({helped.pid, refused.pid, os.getpid()}) == 3


def test_a_killed_party_reports_the_signal_as_popen_does(tmp_path):
    spec = load_deployment(make_deployment(tmp_path, rounds=300))
    parties = start_parties(spec, tmp_path)
    by_name = {party.name: party for party in parties}
    for line in by_name["env"].process.stdout:
        if int(line.split()[1]) >= 5:
            break
    assert _parent(by_name["c1"].process.pid) not in (os.getpid(), 1)  # forked by the server, not by us
    assert by_name["c1"].process.poll() is None
    by_name["c1"].process.kill()
    codes = wait_parties(parties, spec.deadline_s)
    assert codes["c1"] == -signal.SIGKILL
    assert {codes[name] for name in ("dealer", "c0", "env")} == {3}


def _parent(pid: int) -> int:
    """The parent process id of ``pid`` (Linux's /proc)."""
    with open(f"/proc/{pid}/stat") as stat:
        return int(stat.read().rsplit(")", 1)[1].split()[1])


FORKED_ALSO_IN_TEST_DEPLOY_MPC = pytest.param(True, marks=pytest.mark.slow)
"""Forked, this session is test_deploy_mpc's ``test_short_session_as_processes_decides_as_in_memory[2]`` (the same
file: 2 computing parties, 20 rounds, seed 3; ``deploy local`` forks its parties), which asserts the same: every
party exits 0 and the run equals its in-memory twin."""
STARTED_ALSO_IN_TEST_DEPLOY_HOSTS = pytest.param(False, marks=pytest.mark.slow)
"""Started (each party a ``python -m privbandits.deploy.cli`` process), 3 to 6 s on 2 cores and flaky on busy ones:
test_deploy_hosts' vertical session (in the default suite) starts each of its parties so, and asserts the same."""


@pytest.mark.parametrize("fork", [FORKED_ALSO_IN_TEST_DEPLOY_MPC, STARTED_ALSO_IN_TEST_DEPLOY_HOSTS])
def test_forked_and_started_parties_play_the_same_session(tmp_path, fork):
    spec = load_deployment(make_deployment(tmp_path, rounds=20))
    start = time.monotonic()
    codes = wait_parties(start_parties(spec, tmp_path, fork=fork), spec.deadline_s)
    assert set(codes.values()) == {0}, codes
    assert time.monotonic() - start < 120
    assert_same_as_in_memory(spec)
