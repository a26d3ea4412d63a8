"""Vertical O3M with every party in its own OS process over mutual TLS on 127.0.0.1.

The processes' decisions and per-link payload bytes must equal the in-memory run's; a
passive party killed mid-run makes every other party exit non-zero, naming it, in time.
"""

from __future__ import annotations

import os
import re
import signal
import tempfile
import time
from pathlib import Path

import pytest
from forked_parties import party_server  # noqa: F401 (a fixture)
from project_paths import SHIPPED_DEPLOYMENTS
from typer.testing import CliRunner
from vertical_deployment import NAMES, assert_same_as_in_memory, make_deployment, results

from privbandits.deploy import checkpoint
from privbandits.deploy.cli import standalone
from privbandits.deploy.deployment import load_deployment
from privbandits.deploy.local import start_parties, wait_parties
from privbandits.deploy.party import EXIT_LOST
from privbandits.deploy.vertical.party import run_in_memory


@pytest.mark.parametrize("prefetch", [1, 8])
def test_vfucb_as_processes_decides_as_in_memory_with_the_same_bytes_per_link(tmp_path, prefetch):
    """prefetch = 8: the active party keeps 4 to 8 rounds' requests in flight, written together, and the passive
    parties answer those they read together in one write (``TlsNetwork.batch``): same decisions and ledger."""
    path = make_deployment(tmp_path, lacking={"passive3": [3, 50, 51]}, prefetch=prefetch)  # passive3: zeros
    result = CliRunner().invoke(standalone, ["deploy", "local", str(path), "--no-progress"])
    assert result.exit_code == 0, result.output
    assert "200 rounds, cumulative reward" in result.output
    spec = load_deployment(path)
    assert_same_as_in_memory(spec)
    assert results(spec)["passive3"]["users_known"] == 197


@pytest.mark.parametrize("secure", [pytest.param(False, marks=pytest.mark.slow), True])  # chunked alone: slow
def test_chunked_requests_as_processes_decide_as_in_memory_in_fewer_messages(tmp_path, secure):
    """chunk_requests with prefetch = 8: each top-up of requests is one message to a passive party and one answer
    back; the decisions and the bytes per link are the in-memory run's."""
    path = make_deployment(
        tmp_path, lacking={"passive3": [3, 50, 51]}, prefetch=8, chunk_requests=True, secure_aggregation=secure
    )
    result = CliRunner().invoke(standalone, ["deploy", "local", str(path), "--no-progress"])
    assert result.exit_code == 0, result.output
    spec = load_deployment(path)
    assert_same_as_in_memory(spec)
    traffic = [row for result in results(spec).values() for row in result["traffic"] if row[0] == "round"]
    messages = {(row[1], row[2]): row[3] for row in traffic}
    # rounds 1-8 asked in round 1; then in round t + 1 whenever rounds t + 1 .. t + 3 are all that is asked for,
    # back to t + 8: 5 at a time, so 1 + ceil(192 / 5) = 40 top-ups
    assert messages == dict.fromkeys(messages, 40) and len(messages) == 4


def test_vfts_with_secure_aggregation_as_processes_decides_as_in_memory(tmp_path):
    path = make_deployment(tmp_path, policy="vfts", secure_aggregation=True, rounds=200)
    result = CliRunner().invoke(standalone, ["deploy", "local", str(path), "--no-progress"])
    assert result.exit_code == 0, result.output
    spec = load_deployment(path)
    assert_same_as_in_memory(spec)
    seeds = [row for row in results(spec)["passive2"]["traffic"] if row[2] == "passive3"]
    assert seeds == [["setup", "passive2", "passive3", 1, 32, 1]]


@pytest.mark.parametrize("chunked", [False, True])
def test_a_killed_passive_party_stops_everyone_naming_it_and_resume_gives_the_uninterrupted_decisions(
    tmp_path,
    chunked,
    party_server,  # noqa: F811
):
    deadline = 4.0
    path = make_deployment(
        tmp_path, deadline_s=deadline, partition=[2, 2, 2], n_arms=3, rounds=3000, prefetch=16, chunk_requests=chunked
    )
    spec = load_deployment(path)
    # with requests in flight and held (batch) when passive2 dies
    parties = start_parties(spec, tmp_path, server=party_server)
    try:
        by_name = {party.name: party for party in parties}
        start = time.monotonic()
        for line in by_name["active"].process.stdout:  # the active party prints `progress t T` lines
            if int(line.split()[1]) >= 600 or time.monotonic() - start > 60:
                break
        os.kill(by_name["passive2"].process.pid, signal.SIGKILL)
        killed = time.monotonic()
        codes = wait_parties(parties, deadline)
        elapsed = time.monotonic() - killed
    finally:
        for party in parties:
            if party.process.poll() is None:
                party.process.kill()
    assert codes["passive2"] == -signal.SIGKILL
    assert elapsed < deadline + 5.0
    for name in ("mask_generator", "active", "passive3"):
        line = by_name[name].last_error
        assert codes[name] == EXIT_LOST, (name, by_name[name].stderr)
        assert line.startswith(f"party {name!r}: lost peer 'passive2' in round "), line
        assert "killed by the launcher" not in "".join(by_name[name].stderr)
    # nothing half-written: no result file for a session that did not finish, a whole checkpoint
    assert not any(spec.result_path(name).exists() for name in NAMES)
    saved = checkpoint.load(spec.checkpoint_path("active"))
    assert saved is not None and 600 <= saved[1]["round"] < 3000 and saved[1]["round"] % 100 == 0

    # every party restarted with --resume: the session ends as if it had never stopped
    with tempfile.TemporaryDirectory() as workdir:
        parties = start_parties(spec, Path(workdir), resume=True, server=party_server)
        codes = wait_parties(parties, deadline)
    assert all(code == 0 for code in codes.values()), {p.name: p.stderr for p in parties}
    got = results(spec)
    assert got["active"]["resumed_after"] == saved[1]["round"]
    assert got["passive3"]["resumed_after"] == saved[1]["round"]
    reference, _ = run_in_memory(spec)
    assert got["active"]["arms"] == reference.arms.tolist()


def test_a_stalled_passive_party_is_reported_by_the_active_party_and_everyone_stops(tmp_path, party_server):  # noqa: F811
    deadline = 2.0
    path = make_deployment(tmp_path, deadline_s=deadline, partition=[2, 2, 2], n_arms=3, rounds=3000)
    spec = load_deployment(path)
    parties = start_parties(spec, tmp_path, server=party_server)
    by_name = {party.name: party for party in parties}
    try:
        start = time.monotonic()
        for line in by_name["active"].process.stdout:
            if int(line.split()[1]) >= 300 or time.monotonic() - start > 60:
                break
        os.kill(by_name["passive3"].process.pid, signal.SIGSTOP)  # alive, but silent
        stalled = time.monotonic()
        others = [by_name[name].process for name in ("mask_generator", "active", "passive2")]
        while any(process.poll() is None for process in others) and time.monotonic() - stalled < deadline + 10:
            time.sleep(0.05)
        elapsed = time.monotonic() - stalled
    finally:
        for party in parties:
            if party.process.poll() is None:
                party.process.kill()
        wait_parties(parties, deadline)
    assert elapsed < deadline + 5.0
    for name in ("mask_generator", "active", "passive2"):
        assert by_name[name].process.returncode == EXIT_LOST, (name, by_name[name].stderr)
        assert by_name[name].last_error.startswith(f"party {name!r}: lost peer 'passive3' in round ")
    assert "within the 2 s deadline" in by_name["active"].last_error


def test_the_shipped_example_runs_with_certs_data_and_local(tmp_path):
    example = SHIPPED_DEPLOYMENTS / "vertical-vfucb.toml"
    text = re.sub(r'address = "127\.0\.0\.1:\d+"', 'address = "127.0.0.1:0"', example.read_text())
    path = tmp_path / "vertical-vfucb.toml"
    path.write_text(text.replace("rounds = 500", "rounds = 100"))
    runner = CliRunner()
    for command in (["deploy", "certs", str(path)], ["deploy", "data", str(path)]):
        result = runner.invoke(standalone, command)
        assert result.exit_code == 0, result.output
    result = runner.invoke(standalone, ["deploy", "local", str(path), "--no-progress"])
    assert result.exit_code == 0, result.output
    assert "100 rounds, cumulative reward" in result.output
    spec = load_deployment(path)  # the shipped file's default: OS randomness (VFUCB draws nothing: equal anyway)
    assert not spec.reproducible and {result["randomness"] for result in results(spec).values()} == {"os"}
    assert_same_as_in_memory(spec)


def test_vfts_samples_from_os_entropy_by_default(tmp_path):
    """Without ``reproducible``, the active party's VFTS samples come from fresh OS entropy: two runs choose other
    arms, and neither the seeded run's (whose draws anyone holding the file could recompute)."""
    import numpy as np

    spec = load_deployment(make_deployment(tmp_path, policy="vfts", v=1.0, seeded=False))
    first, second = (run_in_memory(spec)[0].arms for _ in range(2))
    seeded = run_in_memory(spec.model_copy(update={"reproducible": True}))[0].arms
    assert not np.array_equal(first, second) and not np.array_equal(first, seeded)
    assert np.array_equal(seeded, run_in_memory(spec.model_copy(update={"reproducible": True}))[0].arms)
