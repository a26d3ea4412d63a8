"""The command line: run, report, list, errors, and resume after a hard kill."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from privbandits.cli import app
from privbandits.experiments import ResultsStore, load_config, run_single

runner = CliRunner()

TINY = """
name = "tiny-cli"
description = "CLI smoke test"
horizon = 200
seeds = [0, 1]
[environment]
kind = "linear_gaussian"
dim = 6
n_arms = 3
[[policies]]
kind = "linucb"
label = "ucb"
[[policies]]
kind = "random"
"""


@pytest.fixture
def tiny_config(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.toml"
    path.write_text(TINY)
    return path


def test_run_then_report_writes_table_csv_and_plots(tmp_path, tiny_config):
    store, out = tmp_path / "r.sqlite", tmp_path / "out"
    result = runner.invoke(app, ["run", str(tiny_config), "--store", str(store), "--out", str(out), "--no-progress"])
    assert result.exit_code == 0, result.output
    assert "ran 4 run(s), skipped 0" in result.output
    assert {p.name for p in out.iterdir()} == {
        "tiny-cli-summary.csv",
        "tiny-cli-regret.png",
        "tiny-cli-reward.png",
    }
    assert (out / "tiny-cli-regret.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    again = runner.invoke(app, ["run", str(tiny_config), "--store", str(store), "--no-report", "--no-progress"])
    assert "ran 0 run(s), skipped 4" in again.output

    report = runner.invoke(
        app, ["report", "tiny-cli", "--store", str(store), "--out", str(out), "--metric", "regret", "--log-y"]
    )
    assert report.exit_code == 0, report.output
    assert "ucb" in report.output and "random" in report.output and "± " in report.output
    csv_lines = (out / "tiny-cli-summary.csv").read_text().splitlines()
    assert csv_lines[0].startswith("label,n_seeds,horizon,regret_mean") and len(csv_lines) == 3


def test_cli_errors_are_one_clear_line(tmp_path, tiny_config):
    bad = tmp_path / "bad.toml"
    bad.write_text(TINY.replace("dim = 6", "dim = -6"))
    result = runner.invoke(app, ["run", str(bad), "--store", str(tmp_path / "r.sqlite")])
    assert result.exit_code == 2
    assert "environment.dim: must be >= 1 (got -6)" in result.output

    missing = runner.invoke(app, ["run", "no-such-thing"])
    assert missing.exit_code == 2 and "no config file or reproduction named 'no-such-thing'" in missing.output

    nostore = runner.invoke(app, ["report", "--store", str(tmp_path / "none.sqlite")])
    assert nostore.exit_code == 2 and "does not exist; run `privbandits run CONFIG` first" in nostore.output

    runner.invoke(app, ["run", str(tiny_config), "--store", str(tmp_path / "r.sqlite"), "--no-report", "--no-progress"])
    unknown = runner.invoke(app, ["report", "other", "--store", str(tmp_path / "r.sqlite")])
    assert unknown.exit_code == 2 and "no stored runs for experiment 'other'" in unknown.output


def test_list_shows_policies_environments_and_reproductions():
    result = runner.invoke(app, ["list"], terminal_width=200)
    assert result.exit_code == 0
    for name in ("linucb", "lints", "epsilon_greedy", "random", "linear_gaussian", "digits", "vertical-synthetic-demo"):
        assert name in result.output
    for name in ("vfucb", "vfts", "vertical-fig4", "vertical-fig6", "vertical-fig5", "vertical-audit", "vertical-obd"):
        assert name in result.output


def test_a_vertical_paper_config_prints_and_writes_paper_vs_ours(tmp_path, tiny_config):
    config = tmp_path / "fig4.toml"
    config.write_text(
        TINY.replace('name = "tiny-cli"', 'name = "vertical-fig4"')
        + '[[policies]]\nkind = "linucb"\nlabel = "partial"\nvisible_features = 2\n'
        + '[[policies]]\nkind = "vfucb"\nlabel = "vf"\npartition = [2, 4]\n'
    )
    out = tmp_path / "out"
    result = runner.invoke(
        app,
        ["run", str(config), "--store", str(tmp_path / "r.sqlite"), "--out", str(out), "--no-progress"],
        terminal_width=200,
    )
    assert result.exit_code == 0, result.output
    assert "paper vs ours" in result.output  # the claims table is printed
    assert "identical actions in 2/2 seeds" in (out / "vertical-fig4-paper.md").read_text()
    assert (out / "vertical-fig4.png").is_file()


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_a_computed_reproduction_runs_from_one_command(tmp_path):
    out = tmp_path / "out"
    result = runner.invoke(app, ["run", "vertical-audit", "--out", str(out), "--no-progress"], terminal_width=200)
    assert result.exit_code == 0, result.output
    assert "paper vs ours" in result.output
    assert {p.name for p in out.iterdir()} == {"vertical-audit.png", "vertical-audit-paper.md"}
    assert "weaker than it sounds" in (out / "vertical-audit-paper.md").read_text()


def test_computed_reproductions_take_options_as_python_literals_or_paths(tmp_path, monkeypatch):
    from privbandits.experiments.paper import PaperReport
    from privbandits.experiments.reproductions import COMPUTED, ComputedReproduction

    received = {}

    def fake(out, *, horizon=10, codes=(32,), path=None, progress=None):
        received.update(horizon=horizon, codes=codes, path=path)
        return PaperReport("fake", "a fake reproduction")

    monkeypatch.setitem(COMPUTED, "fake", ComputedReproduction("fake", "a fake reproduction", fake))
    run = ["run", "fake", "--out", str(tmp_path), "--no-progress"]
    result = runner.invoke(app, [*run, "-o", "horizon=131070", "-o", "codes=(32, 128)", "-o", "path=/data/train.txt"])
    assert result.exit_code == 0, result.output
    assert received == {"horizon": 131070, "codes": (32, 128), "path": "/data/train.txt"}
    result = runner.invoke(app, [*run, "-o", "seeds=3"], terminal_width=200)
    assert result.exit_code == 2
    assert "fake has no option 'seeds'; its options: horizon, codes, path" in result.output
    result = runner.invoke(app, [*run, "-o", "horizon"], terminal_width=200)
    assert result.exit_code == 2 and "--option must look like KEY=VALUE, got 'horizon'" in result.output


def test_help_explains_each_command():
    result = runner.invoke(app, ["--help"], terminal_width=200)
    assert result.exit_code == 0
    assert "privbandits run vertical-synthetic-demo" in result.output
    for command in ("run", "report", "list"):
        assert command in result.output


SLOW_ENOUGH = (
    TINY.replace("horizon = 200", "horizon = 6000")
    .replace("seeds = [0, 1]", "seeds = [0, 1, 2, 3]")
    .replace("dim = 6", "dim = 60")
    .replace('name = "tiny-cli"', 'name = "killed"')
)


def _stored(path: Path) -> int:
    try:
        with sqlite3.connect(path) as db:
            return db.execute("SELECT COUNT(*) FROM runs").fetchone()[0]
    except sqlite3.OperationalError:
        return 0


def test_sweep_killed_with_sigkill_resumes_and_matches_a_clean_run(tmp_path):
    config_path = tmp_path / "killed.toml"
    config_path.write_text(SLOW_ENOUGH)
    store = tmp_path / "r.sqlite"
    command = [sys.executable, "-m", "privbandits.cli", "run", str(config_path), "--store", str(store)]
    command += ["--no-report", "--no-progress"]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 120
    while _stored(store) < 2 and time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.05)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    at_kill = _stored(store)
    assert 2 <= at_kill < 8, "the sweep should be killed part-way"

    resumed = subprocess.run(command, capture_output=True, text=True, check=True)
    assert f"ran {8 - at_kill} run(s), skipped {at_kill}" in resumed.stdout

    config = load_config(config_path)
    with ResultsStore(store) as results:
        records = results.load("killed")
    assert len(records) == 8
    for record in records:
        assert record.actions_digest == run_single(config, record.policy_index, record.seed).actions_digest
