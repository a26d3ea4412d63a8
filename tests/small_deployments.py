"""Small deployments of the four protocols for the flood and stall tests: built by one helper, checked against
their in-memory twins by another."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import fclub_deployment
import mpc_deployment
import numpy as np
import p2b_deployment
import vertical_deployment
from deploy_files import reproducible
from typer.testing import CliRunner

from privbandits.deploy.cli import standalone
from privbandits.deploy.fclub import party as fclub_party
from privbandits.deploy.mpc_bandit import party as mpc_party
from privbandits.deploy.p2b import outcome as p2b_outcome
from privbandits.deploy.vertical import party as vertical_party

KINDS = ("vertical", "mpc", "p2b", "fclub")
FCLUB_SMALL = {"horizon = 4095": "horizon = 127", "n_users = 40": "n_users = 12", "n_clusters = 4": "n_clusters = 2"}
"""Two local servers (local0, local1), 127 rounds: a small FCLUB deployment."""


def deployment(kind: str, folder: Path, deadline_s: float = 10.0, mpc_rounds: int = 100) -> Path:
    """A small deployment of ``kind`` (certificates and data made), the one every flood and stall test runs."""
    path = _build(kind, folder, deadline_s, mpc_rounds)
    text = path.read_text()  # equality with the in-memory twin needs the seeded streams
    if not re.search(r"^reproducible\s*=", text, re.M):
        path.write_text(reproducible(text))
    return path


def _build(kind: str, folder: Path, deadline_s: float, mpc_rounds: int) -> Path:
    if kind == "vertical":
        return vertical_deployment.make_deployment(folder, deadline_s=deadline_s, rounds=200)
    if kind == "mpc":
        return mpc_deployment.make_deployment(folder, deadline_s=deadline_s, rounds=mpc_rounds)
    if kind == "fclub":
        path = fclub_deployment.local_copy(folder, **FCLUB_SMALL, **{"deadline_s = 10": f"deadline_s = {deadline_s:g}"})
        path.write_text(path.read_text().split("[parties.local2]")[0])  # local0 and local1 only
        fclub_deployment.certs(path)
        return path
    path = p2b_deployment.local_copy(
        folder, **{"n_users = 3000": "n_users = 400", "deadline_s = 30": f"deadline_s = {deadline_s:g}"}
    )
    runner = CliRunner()
    for command in (["deploy", "certs", str(path)], ["deploy", "data", str(path)]):
        result = runner.invoke(standalone, command)
        assert result.exit_code == 0, result.output
    return path


def results(spec) -> dict[str, dict]:
    """The result files the parties wrote (a lost party writes none)."""
    paths = {name: spec.result_path(name) for name in spec.parties}
    return {name: json.loads(path.read_text()) for name, path in paths.items() if path.is_file()}


def assert_equals_in_memory(kind: str, spec, *, flooded: bool = True) -> None:
    """The parties' results equal the in-memory twin's; ``flooded``: the P2B shuffler dropped flood connections."""
    got = results(spec)
    if kind == "vertical":
        reference, _ = vertical_party.run_in_memory(spec)
        assert got["active"]["arms"] == reference.arms.tolist()
    elif kind == "mpc":
        reference, _, _ = mpc_party.run_in_memory(spec)
        assert got["env"]["arms"] == reference.arms.tolist()
    elif kind == "fclub":
        outcome, reference = fclub_party.outcome(spec), fclub_party.run_in_memory(spec)
        assert np.array_equal(outcome["regret"], reference.regret)
        assert np.array_equal(outcome["communication"], reference.communication)
    else:
        outcome, (reference, _) = p2b_outcome.outcome(spec), p2b_outcome.run_in_memory(spec)
        assert len(outcome["batches"]["encoded"]["codes"]) == reference.release["released"]
        for setting in p2b_outcome.SETTINGS:
            assert outcome["late"][setting]["mean"] == getattr(reference, setting).mean
        assert bool(got["shuffler"]["dropped"]) == flooded, "the mid-run flood reached the shuffler's device listener"


def wait_mid_run(kind: str, spec, parties) -> None:
    """Until the run is under way: the P2B shuffler holds reports of the encoded batch; elsewhere the party that
    reports progress has passed a few rounds."""
    stop = time.monotonic() + 60
    if kind == "p2b":
        from privbandits.deploy.p2b.party import queue_path

        while p2b_deployment._held_reports(queue_path(spec, "shuffler")) < 5 and time.monotonic() < stop:
            time.sleep(0.005)
        return
    reporter = next(party for party in parties if party.process.stdout is not None)
    for line in reporter.process.stdout:  # `progress t T`
        if int(line.split()[1]) >= 10 or time.monotonic() > stop:
            return


