"""FCLUB's free-running schedule (deploy/fclub.py): the local servers and the global server no longer wait for
each other, the users keep rounds in flight, and messages that cross a phase start follow the documented rules.
With a phase start every round (the synchronous FCLUB preset) every round is a barrier and the crossing rules
alone must reproduce the in-memory run; with the faithful CDP-FCLUB-DC every download sent is received and
counted, and regret stays near lock-step's (benchmarks/fclub_free_running.py compares them over seeds)."""

from __future__ import annotations

import numpy as np
import pytest
from test_deploy_fclub import certs, local_copy
from typer.testing import CliRunner

from privbandits.deploy.cli import standalone
from privbandits.deploy.deployment import DeploymentError, load_deployment
from privbandits.deploy.fclub import outcome, run_in_memory

FREE = {"seed = 0 ": 'seed = 0\nschedule = "free-running"\n#'}


def run(path) -> dict:
    result = CliRunner().invoke(standalone, ["deploy", "local", str(path), "--no-progress"])
    assert result.exit_code == 0, result.output
    return outcome(load_deployment(path))


def test_with_a_phase_start_every_round_free_running_equals_the_in_memory_run(tmp_path):
    path = local_copy(tmp_path, servers=2, **FREE, **{'variant = "cdp-fclub-dc"': 'variant = "fclub"',
                                                      'preset = "paper"': 'preset = "reference"',
                                                      "horizon = 4095": "horizon = 63"})  # fmt: skip
    certs(path)
    got = run(path)
    reference = run_in_memory(load_deployment(path))
    assert np.array_equal(got["regret"], reference.regret)
    assert got["counts"].uploads == reference.bandit.communication.uploads == 63


def test_free_running_faithful_session_counts_every_message_that_crossed(tmp_path):
    horizon = 255  # three local servers: about 120 downloads cross a phase start
    path = local_copy(tmp_path, servers=3, **FREE, **{"horizon = 4095": f"horizon = {horizon}"})
    certs(path)
    got = run(path)
    spec, results = load_deployment(path), got["results"]
    reference = run_in_memory(spec)
    locals_ = [results[name] for name in spec.names("local_server")]
    assert results["users"]["served"] == horizon and results["global"]["lost"] == {}
    # every download the global server sent reached its local server and was applied or dropped by the rules
    sent = sum(sum(counts) for counts in results["global"]["downloads_per_upload"].values())
    assert sum(local["counts"]["downloads"] for local in locals_) == sent == got["counts"].downloads
    crossings = {key: sum(local["crossings"][key] for local in locals_) for key in locals_[0]["crossings"]}
    assert set(crossings) == {"stale_downloads", "crossed_downloads", "late_downloads"}
    assert set(results["global"]["crossings"]) == {"crossed_uploads"}
    assert sum(crossings.values()) > 0  # downloads did cross phase starts at this size
    # the same public clock, and a regret near lock-step's (one seed; the benchmark compares over seeds)
    for local in locals_:
        assert [t for t, *_ in local["phases"]] == reference.bandit.phase_starts
    assert abs(got["regret"][-1] - reference.regret[-1]) < 0.25 * reference.regret[-1]


def test_a_bad_schedule_names_the_field(tmp_path):
    path = local_copy(tmp_path, **{"seed = 0 ": 'seed = 0\nschedule = "async"\n#'})
    with pytest.raises(DeploymentError, match=r"protocol\.schedule: Input should be 'lock-step' or 'free-running'"):
        load_deployment(path)
