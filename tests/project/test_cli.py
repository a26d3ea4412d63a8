"""The command line: run, report, list, errors, and resume after a hard kill."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Annotated

import pytest
from pydantic import Field, FilePath
from typer.testing import CliRunner

from privbandits.cli import app
from privbandits.experiments import ResultsStore, load_config, run_single
from privbandits.experiments.catalog import REPRODUCTIONS
from privbandits.experiments.paper import PaperReport
from privbandits.experiments.reproduction import Options, Reproduction
from privbandits.experiments.tasks import Task

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
    assert "computed 4 unit(s); 0 already in" in result.output
    assert {p.name for p in out.iterdir()} == {
        "tiny-cli-summary.csv",
        "tiny-cli-regret.png",
        "tiny-cli-reward.png",
    }
    assert (out / "tiny-cli-regret.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    untouched = tmp_path / "untouched"
    again = runner.invoke(app, ["run", str(tiny_config), "--store", str(store), "--out", str(untouched),
                                "--no-report", "--no-progress"])  # fmt: skip
    assert "computed 0 unit(s); 4 already in" in again.output
    assert not untouched.exists()  # --no-report draws and writes nothing (it once wrote the figures and CSV)

    (out / "tiny-cli-summary.csv").unlink()
    report = runner.invoke(app, ["report", "tiny-cli", "--store", str(store), "--out", str(out)])
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
    assert nostore.exit_code == 2 and "does not exist; run `privbandits run NAME` first" in nostore.output

    runner.invoke(app, ["run", str(tiny_config), "--store", str(tmp_path / "r.sqlite"), "--no-report", "--no-progress"])
    unknown = runner.invoke(app, ["report", "other", "--store", str(tmp_path / "r.sqlite")])
    assert unknown.exit_code == 2 and "no config file or reproduction named 'other'" in unknown.output
    never_run = runner.invoke(app, ["report", "vertical-fig6", "--store", str(tmp_path / "r.sqlite")])
    assert never_run.exit_code == 2 and "no stored runs of 'vertical-fig6'" in never_run.output

    as_file = runner.invoke(
        app, ["report", "tiny-cli", "--store", str(tmp_path / "r.sqlite"), "--out", str(tiny_config)]
    )
    assert as_file.exit_code == 2 and "--out must be a folder" in as_file.output

    bad_name = runner.invoke(app, ["run", str(tiny_config), "-o", "name=A B", "--store", str(tmp_path / "x.sqlite")])
    assert bad_name.exit_code == 2 and "name: must match ^[a-z0-9][a-z0-9_-]*$ (got 'A B')" in bad_name.output
    assert not (tmp_path / "x.sqlite").exists()


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
    command = ["run", "vertical-audit", "--out", str(out), "--store", str(out / "r.sqlite"), "--no-progress"]
    result = runner.invoke(app, command, terminal_width=200)
    assert result.exit_code == 0, result.output
    assert "paper vs ours" in result.output
    assert {p.name for p in out.iterdir() if p.suffix != ".sqlite"} == {"vertical-audit.png", "vertical-audit-paper.md"}
    assert "weaker than it sounds" in (out / "vertical-audit-paper.md").read_text()


class FakeOptions(Options):
    """Options of a fake reproduction: one of each kind of field."""

    horizon: int = Field(10, ge=1, description="rounds")
    codes: tuple[Annotated[int, Field(ge=1)], ...] = Field((32,), min_length=1, description="code counts")
    path: FilePath | None = Field(None, description="a data file")


def fake_tasks(options: FakeOptions) -> list[Task]:
    return [Task("builtins:dict", {"codes": list(options.codes), "horizon": options.horizon}, "only")]


def fake_report(options: FakeOptions, points: dict, out: Path) -> PaperReport:
    report = PaperReport("fake", "a fake reproduction")
    report.notes.append(f"received {points['only']}")
    return report


def test_reproduction_options_are_typed_by_their_spec(tmp_path, monkeypatch):
    fake = Reproduction("fake", "a fake reproduction", f"{__name__}:FakeOptions", f"{__name__}:fake_tasks",
                        f"{__name__}:fake_report")  # fmt: skip
    monkeypatch.setitem(REPRODUCTIONS, "fake", fake)
    data = tmp_path / "train.txt"
    data.write_text("x")
    run = ["run", "fake", "--out", str(tmp_path / "out"), "--store", str(tmp_path / "r.sqlite"), "--no-progress"]
    result = runner.invoke(app, [*run, "-o", "horizon=131070", "-o", "codes=32,128", "-o", f"path={data}"])
    assert result.exit_code == 0, result.output
    assert "received {'codes': [32, 128], 'horizon': 131070}" in (tmp_path / "out" / "fake-paper.md").read_text()
    errors = {
        "seeds=3": "fake has no option 'seeds'; valid options: horizon, codes, path",
        "horizn=3": "did you mean 'horizon'?",
        "horizon": "--option must look like KEY=VALUE (got 'horizon')",
        "horizon=0": "option horizon: must be >= 1 (got 0)",
        "horizon=2.5": "option horizon: must be an integer (got '2.5')",
        "codes=32,x": "option codes: must be a comma-separated list of integers (got '32,x')",
        "codes=": "option codes: must have at least 1 item(s) (got 0)",
        "path=/no/such/file": "option path: must be an existing file (got '/no/such/file')",
    }
    for option, message in errors.items():
        result = runner.invoke(app, [*run, "-o", option], terminal_width=300)
        assert result.exit_code == 2 and message in result.output, (option, result.output)
        assert len(result.output.strip().splitlines()) == 1


def test_show_prints_every_option_with_type_default_and_description(monkeypatch):
    fake = Reproduction("fake", "a fake reproduction", f"{__name__}:FakeOptions", f"{__name__}:fake_tasks",
                        f"{__name__}:fake_report")  # fmt: skip
    monkeypatch.setitem(REPRODUCTIONS, "fake", fake)
    result = runner.invoke(app, ["show", "fake"], terminal_width=200)
    assert result.exit_code == 0, result.output
    for row in (("horizon", "integer", "10", "rounds"), ("codes", "list of integers", "32", "code counts")):
        assert all(cell in result.output for cell in row)
    shipped = runner.invoke(app, ["show", "vertical-fig4"], terminal_width=200)
    assert shipped.exit_code == 0 and "rounds per run" in shipped.output and "5000" in shipped.output


HEAVY = (
    "print(sorted({m.split('.')[0] if not m.startswith('privbandits') else m for m in sys.modules "
    "if m.split('.')[0] in ('numba', 'matplotlib') or m.startswith('privbandits.protocols')}))"
)


def test_importing_the_cli_loads_neither_numba_nor_matplotlib_nor_the_protocols():
    code = f"import sys, privbandits.cli; {HEAVY}"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "[]"


def test_help_list_and_show_stay_light():
    code = (
        "import sys\n"
        "from typer.testing import CliRunner\n"
        "from privbandits.cli import app\n"
        "from privbandits.experiments.catalog import REPRODUCTIONS\n"
        "runner = CliRunner()\n"
        "assert runner.invoke(app, ['--help']).exit_code == 0\n"
        "assert runner.invoke(app, ['list']).exit_code == 0\n"
        "for name in REPRODUCTIONS:\n"
        "    assert runner.invoke(app, ['show', name]).exit_code == 0, name\n"
        f"{HEAVY}\n"
    )
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "[]"


def test_help_explains_each_command():
    result = runner.invoke(app, ["--help"], terminal_width=200)
    assert result.exit_code == 0
    assert "privbandits show vertical-fig4" in result.output
    for command in ("run", "report", "list", "show"):
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
            return db.execute("SELECT COUNT(*) FROM units").fetchone()[0]
    except sqlite3.OperationalError:
        return 0


@pytest.mark.slow  # 5 to 6 s on 2 cores; tests/experiments/test_experiment_store.py kills a sweep (kill -9) in the
# default suite and checks that the rerun's rows equal a clean run's bit for bit
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

    resumed = runner.invoke(app, command[3:])  # the same command, resumed in this process
    assert resumed.exit_code == 0, resumed.output
    assert f"computed {8 - at_kill} unit(s); {at_kill} already in" in resumed.output

    config = load_config(config_path)
    with ResultsStore(store) as results:
        records = results.load("killed")
    assert len(records) == 8
    for record in records:
        assert record.actions_digest == run_single(config, record.policy_index, record.seed).actions_digest


def test_the_main_command_carries_the_deployment_commands():
    for command in (["deploy", "--help"], ["party", "run", "--help"]):
        result = CliRunner().invoke(app, command)
        assert result.exit_code == 0, result.output
    assert "certs" in CliRunner().invoke(app, ["deploy", "--help"]).output
