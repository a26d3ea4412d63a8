"""``privbandits evaluate LOG --policy …``: a table of estimates and intervals, refusals in one line."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from privbandits.cli import app
from privbandits.datasets.cache import shared_data
from privbandits.logs import save_log, synthetic_feedback

runner = CliRunner()
OBD = shared_data("obd", "random", "all")


@pytest.fixture(scope="module")
def log_file(tmp_path_factory):
    return save_log(synthetic_feedback(600, 4, 3, seed=2), tmp_path_factory.mktemp("logs") / "log.npz")


@pytest.mark.parametrize("policy", ["linucb", "lints", "epsilon_greedy", "uniform"])
def test_prints_every_estimator_for_every_policy(log_file, policy):
    result = runner.invoke(app, ["evaluate", str(log_file), "--policy", policy, "--seed", "3"], terminal_width=160)
    assert result.exit_code == 0, result.output
    assert f"{policy}: trained on 300 rounds, evaluated on 300" in result.output
    for name in ("ips", "snips", "clipped_ips", "dm", "dr", "switch_dr", "95% low"):
        assert name in result.output


def test_is_seeded_and_takes_a_subset_of_estimators(log_file):
    args = ["evaluate", str(log_file), "--estimators", "ips,dr", "--interval", "normal", "--train-fraction", "0"]
    first, second = (runner.invoke(app, args, terminal_width=160) for _ in range(2))
    assert first.exit_code == 0 and first.output == second.output
    assert "trained on 0 rounds, evaluated on 600" in first.output
    assert "normal" in first.output and "snips" not in first.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--policy", "oracle"], "--policy must be one of linucb, lints, epsilon_greedy, uniform, got 'oracle'"),
        (["--estimators", "ips,magic"],
         "methods must be among ips, snips, clipped_ips, dm, dr, switch_dr, got 'magic'"),
        (["--train-fraction", "1"], "--train-fraction must be in [0, 1), got 1.0"),
        (["--threshold", "0"], "clipped_ips: threshold must be > 0, got 0.0"),
    ],
)  # fmt: skip
def test_refusals(log_file, args, message):
    result = runner.invoke(app, ["evaluate", str(log_file), *args], terminal_width=300)
    assert result.exit_code == 2 and message in result.output, result.output


def test_a_missing_log_is_refused(tmp_path):
    result = runner.invoke(app, ["evaluate", str(tmp_path / "none.npz")], terminal_width=300)
    assert result.exit_code == 2 and "does not exist" in result.output


@pytest.mark.skipif(OBD is None, reason="the Open Bandit Dataset sample is absent")
def test_the_obd_sample_evaluates():
    args = ["evaluate", str(OBD), "--policy", "linucb", "--estimators", "ips,snips,dr"]
    result = runner.invoke(app, args, terminal_width=160)
    assert result.exit_code == 0, result.output
    assert "linucb: trained on 5000 rounds, evaluated on 5000" in result.output and "dr" in result.output
