"""FCLUB's ``--resume``: SIGKILL one party mid-run, let the session end, restart every party with ``--resume``,
and the session finishes as the uninterrupted lock-step one does (regret, communication, ledger, protocol traffic
and the uploads the global server received all equal the in-memory run); the checkpoints are the parties' own
(0600, one per phase start, refused for another deployment)."""

from __future__ import annotations

import json
import os
import signal
import stat
import time

import pytest
from fclub_deployment import assert_equals_in_memory, small

from privbandits.deploy.deployment import DeploymentError
from privbandits.deploy.fclub.resume import load, saved_phases

KILL_AFTER = 300
"""The users' progress at which the party is killed: after the phase start at t = 255, before the last, at 511."""


def kill_and_resume(spec, folder, victim: str) -> dict[str, int]:
    """Start the session, SIGKILL ``victim`` once the users have passed KILL_AFTER rounds, wait for the others to
    end, then restart every party with --resume; the exit codes of the first run."""
    from privbandits.deploy.local import run_local, start_parties, survivable, wait_parties

    parties = start_parties(spec, folder)
    try:
        by_name = {party.name: party for party in parties}
        start = time.monotonic()
        for line in by_name["users"].process.stdout:  # "progress t T"
            if int(line.split()[1]) >= KILL_AFTER or time.monotonic() - start > 120:
                break
        os.kill(by_name[victim].process.pid, signal.SIGKILL)
        codes = wait_parties(parties, spec.deadline_s, survivable=survivable(spec))
    finally:
        for party in parties:
            if party.process.poll() is None:
                party.process.kill()
    assert codes[victim] == -signal.SIGKILL
    assert max(saved_phases(spec, victim)) == 255  # killed between the phase starts at 255 and 511
    resumed, processes = run_local(spec, resume=True)
    assert resumed == dict.fromkeys(resumed, 0), {p.name: p.last_error for p in processes}
    return codes


def assert_resumed(spec) -> None:
    got = assert_equals_in_memory(spec)
    results = got["results"]
    assert {result["resumed_at"] for result in results.values()} == {255}
    assert results["users"]["served"] == spec.protocol.horizon and results["global"]["lost"] == {}


@pytest.mark.parametrize("victim", ["global", pytest.param("users", marks=pytest.mark.slow),
                                    pytest.param("local1", marks=pytest.mark.slow)])  # fmt: skip
def test_a_killed_party_resumes_and_the_session_equals_the_uninterrupted_one(tmp_path, victim):
    spec = small(tmp_path)
    codes = kill_and_resume(spec, tmp_path, victim)
    if victim == "local1":  # a lost local server: the others finished without it before the resumed session
        assert {name: code for name, code in codes.items() if name != victim} == {"global": 0, "users": 0, "local0": 0}
    assert_resumed(spec)
    for name in spec.parties:
        phases = saved_phases(spec, name)
        assert phases == [1, 3, 7, 15, 31, 63, 127, 255, 511], (name, phases)
        path = spec.checkpoint_path(name).with_name(f"{name}.t511.npz")
        assert stat.S_IMODE(path.stat().st_mode) == 0o600


@pytest.mark.slow
def test_a_free_running_session_resumes_from_its_phase_start_barrier(tmp_path):
    """Free-running, the phase start is still a barrier with nothing in flight, so the checkpoints form one state:
    a killed local server's session resumes and serves every round (regret is not the in-memory run's here)."""
    spec = small(tmp_path, **{"seed = 0 ": 'seed = 0\nschedule = "free-running"\n#'})
    kill_and_resume(spec, tmp_path, "local0")
    got = {name: json.loads(spec.result_path(name).read_text()) for name in spec.parties}
    assert got["users"]["served"] == spec.protocol.horizon and got["global"]["lost"] == {}
    assert {result["resumed_at"] for result in got.values()} == {255}
    sent = sum(sum(counts) for counts in got["global"]["downloads_per_upload"].values())
    assert sum(got[name]["counts"]["downloads"] for name in spec.names("local_server")) == sent


def test_a_checkpoint_of_another_deployment_is_refused(tmp_path):
    from privbandits.comm import InMemoryNetwork, Traffic
    from privbandits.deploy.fclub.resume import save

    spec = small(tmp_path)
    network = InMemoryNetwork()
    network.received = Traffic()
    save(spec, "global", 7, {"counts": [1, 2]}, network)
    assert load(spec, "global", 7, network) == {"counts": [1, 2]}
    other = spec.model_copy(update={"protocol": spec.protocol.model_copy(update={"epsilon": 2.0})})
    with pytest.raises(DeploymentError, match=r"global\.t7\.npz was written for another deployment"):
        load(other, "global", 7, network)
