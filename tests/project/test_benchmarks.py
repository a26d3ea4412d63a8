"""Every benchmark script runs: ``--smoke`` (tiny sizes, seconds) of each script in ``benchmarks/``, so that none
rots unnoticed (issue 30). A script that needs the optional ``bench`` extra is skipped, naming the missing package,
when that package is not installed."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib

import pytest
from project_paths import ROOT

SCRIPTS = sorted(path.name for path in (ROOT / "benchmarks").glob("*.py") if not path.name.startswith("_"))
SLOW = {
    "network_latency.py": "starts about twenty processes over mutual TLS (about 40 s on 2 cores; its VFUCB part "
    "alone, without --skip-p2b --skip-fclub --skip-mpc's sessions, took 6 s)",
    "fclub_free_running.py": "four FCLUB sessions of seven processes each (82 s at a load average of 18 on 2 cores); "
    "the default suite runs free-running sessions in tests/deploy/fclub/test_deploy_fclub_free_running.py",
    "shuffler_throughput.py": "starts a shuffler, a server and two device drivers five times (about 45 s on 2 cores; "
    "one front end with one worker alone took 6.5 s); the default suite drives the shuffler with deploy load in "
    "tests/deploy/p2b/test_p2b_front.py",
    "p2b_million.py": "starts a shuffler, its workers, a server and two device drivers (6 s on 2 busy cores); the "
    "default suite drives the shuffler with deploy load in tests/deploy/p2b/test_p2b_front.py",
    "p2b_front_ends.py": "starts a PostgreSQL server and two P2B services (the default suite drives front ends in "
    "tests/deploy/p2b/test_deploy_p2b_postgres.py)",
    "batched_agents.py": "compiles the population kernels and times them against a loop (6 s on 2 cores); the "
    "default suite checks the kernels against per-user learners in tests/linear/test_batched.py",
    "ray_overhead.py": "runs a sweep through the local process pool, whose workers start fresh interpreters (4 to 6.6 "
    "s on 2 cores)",
    "party_start.py": "starts a four-party MPC deployment twice each way, forked and started (5 to 5.7 s on 2 cores); "
    "the default suite starts deployments both ways in tests/deploy",
    "mpc_tracking.py": "plays the private learner against its twin on digits (2.4 to 4 s on 2 cores); the default "
    "suite does so in tests/protocols/mpc_bandit",
    "serve_load.py": "starts a privbandits serve process and drives it over HTTP (19 s on 2 busy cores); the default "
    "suite serves over HTTP in tests/serve",
    "serve_cpu.py": "starts the vertical deployment's four privbandits serve processes and deploy local, and drives "
    "them over HTTP (23 s on 2 busy cores); the default suite serves the vertical deployment in process in "
    "tests/deploy/vertical/test_serve_vertical_batch.py",
    "p2b_agent_decide.py": "fits the encoder and times a device agent's decides (13 s on 2 busy cores); the default "
    "suite runs the agent in tests/deploy/p2b/test_serve_p2b_roles.py",
    "delayed_feedback.py": "replays two learners at each delay through a served store (8 s on 2 busy cores); the "
    "default suite checks the delayed replay in tests/serve/test_serve_replay.py",
    "dp_estimators.py": "runs the DP estimators over many synthetic logs (8 s on 2 busy cores); the default suite "
    "checks them in tests/evaluation",
    "serve_stages.py": "runs deploy local and then every MPC party's service in one process (15 s on 2 busy cores); "
    "the default suite runs the served MPC roles in tests/deploy/mpc_bandit/test_serve_mpc_roles.py",
    "p2b_scale.py": "fits an encoder and simulates P2B at two population sizes against a loop (3.4 to 4.9 s on 2 "
    "cores); the default suite runs the simulation in tests/protocols/p2b",
}
"""Scripts whose smoke run is marked slow (about 3 s or more on 2 cores, the default suite running beside it), with
the reason and where the default suite covers what they run."""


def bench_extra() -> set[str]:
    """Import names of the ``bench`` extra's packages (pyproject.toml)."""
    extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["bench"]
    return {re.split(r"[<>=!~ \[]", requirement, maxsplit=1)[0].replace("-", "_") for requirement in extra}


def cases() -> list:
    return [pytest.param(name, [], id=name, marks=[pytest.mark.slow] if name in SLOW else []) for name in SCRIPTS]


@pytest.mark.parametrize(("name", "extra"), cases())
def test_benchmark_smoke_run(name, extra, tmp_path):
    """The script's ``--smoke`` run exits 0 from an empty folder (so it writes nothing into the checkout)."""
    command = [sys.executable, str(ROOT / "benchmarks" / name), "--smoke", *extra]
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    missing = re.search(r"No module named '([^'.]+)", done.stderr)
    if done.returncode != 0 and missing and missing.group(1) in bench_extra():
        pytest.skip(f"{name} needs the optional bench extra: {missing.group(1)} is not installed (make bench)")
    assert done.returncode == 0, f"{name} --smoke failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    assert "smoke run: tiny sizes" in done.stderr
    assert list(tmp_path.iterdir()) == []


def test_every_benchmark_is_run_here():
    """The list is the folder: a new script is smoke-tested without editing this file, and SLOW names real ones."""
    assert len(SCRIPTS) >= 11 and set(SLOW) <= set(SCRIPTS)


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="pinning cores needs os.sched_setaffinity (Linux)")
@pytest.mark.parametrize("value", ["1,x", "0"])
def test_the_shuffler_benchmark_refuses_bad_service_cores_before_starting_anything(value, tmp_path):
    """``--service-cores`` outside 1 .. cores - 1 (or not integers) ends the script with one line naming the option,
    the allowed counts and the value given, before any party starts."""
    command = [sys.executable, str(ROOT / "benchmarks" / "shuffler_throughput.py"), "--smoke", "--service-cores", value]
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    cores = len(os.sched_getaffinity(0))
    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1] == (
        f"--service-cores takes core counts from 1 to {cores - 1} (this process may run on {cores} cores), "
        f"comma-separated; got {value!r}"
    )
    assert "P2B shuffler" not in done.stdout
