"""``privbandits evaluate LOG POLICY…``: tables of estimates and intervals, plaintext or DP (--epsilon), each policy a
unit of the results store, the report files, the error over ε; refusals in one line."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from privbandits.cli import app
from privbandits.datasets.cache import shared_data
from privbandits.experiments.evaluations import book_section
from privbandits.experiments.store import ResultsStore
from privbandits.logs import save_log, synthetic_feedback

runner = CliRunner()
OBD = shared_data("obd", "random", "all")


@pytest.fixture(scope="module")
def log_file(tmp_path_factory):
    return save_log(synthetic_feedback(600, 4, 3, seed=2), tmp_path_factory.mktemp("logs") / "log.npz")


def invoke(log_file, tmp_path, *args):
    where = ["--store", str(tmp_path / "s.sqlite"), "--out", str(tmp_path / "out")]
    return runner.invoke(app, ["evaluate", str(log_file), *args, *where], terminal_width=200, env={"COLUMNS": "200"})


@pytest.mark.parametrize("policy", ["linucb", "lints", "epsilon_greedy", "uniform", "dp_linucb"])
def test_prints_every_estimator_for_every_policy(log_file, tmp_path, policy):
    result = invoke(log_file, tmp_path, policy, "--seed", "3")
    assert result.exit_code == 0, result.output
    assert f"{policy}: trained on 300 rounds, evaluated on 300" in result.output
    for name in ("ips", "snips", "clipped_ips", "dm", "dr", "switch_dr", "95% low"):
        assert name in result.output


def test_each_policy_is_a_stored_unit_that_a_rerun_reuses(log_file, tmp_path):
    args = ["linucb", "uniform", "--estimators", "ips,dr", "--interval", "normal", "--train-fraction", "0"]
    first, second = (invoke(log_file, tmp_path, *args) for _ in range(2))
    assert first.exit_code == 0 and first.output == second.output
    assert "trained on 0 rounds, evaluated on 600" in first.output and "snips" not in first.output
    with ResultsStore(tmp_path / "s.sqlite") as store:
        assert store.count() == 2
        section = book_section(store)
    assert section is not None and section.startswith("## `privbandits evaluate`")
    report = json.loads((tmp_path / "out" / "evaluation.json").read_text())
    assert [unit["policy"] for unit in report["evaluations"]] == ["linucb", "uniform"]
    assert "| log.npz | uniform | 0 / 600 | ips |" in (tmp_path / "out" / "evaluation.md").read_text()


def test_a_dp_run_spends_its_budget_once_over_the_policies_and_estimators(log_file, tmp_path):
    result = invoke(log_file, tmp_path, "linucb", "dp_linucb", "--epsilon", "2", "--delta", "1e-6")
    assert result.exit_code == 0, result.output
    assert "dp_ips" in result.output and "dp_snips" in result.output and "gaussian" in result.output
    assert "ε = 1, δ = 5e-07 over 3 releases" in result.output  # each policy half of (2, 1e-6)
    assert "the learner's dp_linucb.joint.tree, ε = 1, δ = 1e-05 on the 300 training records" in result.output
    report = json.loads((tmp_path / "out" / "evaluation.json").read_text())
    rows = [row for unit in report["evaluations"] for row in unit["rows"]]
    assert {(row["epsilon"], row["delta"]) for row in rows} == {(1 / 3, 1e-6 / 6)}
    assert not any(row["seeded"] for row in rows) and "clipped_ips" not in result.output
    again = invoke(log_file, tmp_path, "linucb", "dp_linucb", "--epsilon", "2", "--delta", "1e-6")
    assert again.output == result.output  # stored: read back, no second release


def test_reproducible_noise_is_seeded_warned_and_recorded(log_file, tmp_path):
    first = invoke(log_file, tmp_path, "--epsilon", "1", "--reproducible", "--estimators", "ips")
    other = invoke(log_file, tmp_path / "b", "--epsilon", "1", "--reproducible", "--estimators", "ips")
    tables = [result.stdout.split("wrote ")[0] for result in (first, other)]
    assert first.exit_code == 0 and tables[0] == tables[1]  # two stores, the same seeded release
    # .output: stdout and stderr together on every click (kept apart only from click 8.2)
    assert "--reproducible draws the DP noise from --seed: reproducible, not secret" in first.output
    assert "(seeded noise: a reproducible run, not secret)" in first.stdout


def test_the_error_over_epsilon_is_a_table_and_a_figure(log_file, tmp_path):
    result = invoke(log_file, tmp_path, "uniform", "--over-epsilon", "1,10", "--repeats", "20", "--weight-clip", "10")
    assert result.exit_code == 0, result.output
    assert "DP estimators' error against the non-private estimates" in result.output
    assert (tmp_path / "out" / "dp-error.png").stat().st_size > 1000
    sweep = json.loads((tmp_path / "out" / "evaluation.json").read_text())["error_over_epsilon"][0]
    rmse = {(row["method"], row["epsilon"]): row["rmse"] for row in sweep["rows"]}
    assert all(rmse[(method, 10.0)] < rmse[(method, 1.0)] for method in ("dp_ips", "dp_snips", "dp_dr"))


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["oracle"], "POLICY must be one of linucb, lints, epsilon_greedy, uniform, dp_linucb, got 'oracle'"),
        (["--estimators", "ips,magic"], "--estimators: methods must be among ips, snips, clipped_ips, dm, dr,"),
        (["--epsilon", "1", "--estimators", "dm"], "--estimators: with --epsilon, DP versions exist of ips, snips, dr"),
        (["--train-fraction", "1"], "--train-fraction must be in [0, 1), got 1.0"),
        (["--threshold", "0"], "clipped_ips: threshold must be > 0, got 0.0"),
        (["--epsilon", "0"], "--epsilon must be > 0 (the whole command's budget), got 0.0"),
        (["--epsilon", "1", "--delta", "1"], "--delta must be in [0, 1) (0 = pure ε-DP, Laplace noise), got 1.0"),
        (["--delta", "0.1"], "--delta and --reproducible set the DP estimates' budget and noise: give --epsilon"),
        (["--epsilon", "1", "--reward-range", "1,0"], "--reward-range must be LOW,HIGH with LOW < HIGH, got '1,0'"),
        (["--epsilon", "1", "--reward-range", "1"], "--reward-range must be 2 finite numbers separated by commas"),
        (["--over-epsilon", "0,1"], "--over-epsilon must be numbers > 0, got '0,1'"),
        (["--repeats", "1"], "--repeats must be >= 2 (releases per ε), got 1"),
        (["dp_linucb", "--descriptor", "3"], "--descriptor must be START:STOP, column indices of the log's"),
    ],
)  # fmt: skip
def test_refusals(log_file, tmp_path, args, message):
    result = invoke(log_file, tmp_path, *args)
    assert result.exit_code == 2 and message in result.output, result.output


def test_a_missing_log_is_refused(tmp_path):
    result = invoke(tmp_path / "none.npz", tmp_path)
    assert result.exit_code == 2 and "does not exist" in result.output


@pytest.mark.skipif(OBD is None, reason="the Open Bandit Dataset sample is absent")
def test_the_obd_sample_evaluates(tmp_path):
    result = invoke(OBD, tmp_path, "linucb", "--estimators", "ips,snips,dr")
    assert result.exit_code == 0, result.output
    assert "linucb: trained on 5000 rounds, evaluated on 5000" in result.output and "dr" in result.output
