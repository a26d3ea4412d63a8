"""Bad configs and command lines get one clear line and exit 2, and write nothing (issue 14).

Each case is a mistake a new user makes in a TOML file or on the command line: the output is exactly one
``error: ...`` line naming the key, the allowed values and the value given (no traceback), and neither the
results store nor the report folder is created.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from privbandits.cli import app

runner = CliRunner()

CONFIG = """\
name = "bad-input"
description = "a tiny config"
horizon = 20
seeds = [0]
[environment]
kind = "linear_gaussian"
dim = 4
n_arms = 3
[[policies]]
kind = "linucb"
label = "ucb"
alpha = 0.5
[[policies]]
kind = "lints"
label = "ts"
"""

TOML_MISTAKES = [
    ("alpha = 0.5", "alpha = true", "policies[0].alpha: must be a number (got True)"),
    ("dim = 4", "dim = 10.0", "environment.dim: must be an integer (got 10.0)"),
    ("alpha = 0.5", "alpha = inf", "policies[0].alpha: must be a finite number (got inf)"),
    ("alpha = 0.5", "alpha = nan", "policies[0].alpha: must be a finite number (got nan)"),
    ("alpha = 0.5", 'alpha = "0.5"', "policies[0].alpha: must be a number (got '0.5')"),
    ('name = "bad-input"', 'name = "Bad Input"', "name: must match ^[a-z0-9][a-z0-9_-]*$ (got 'Bad Input')"),
    ('name = "bad-input"', 'name = "*"', "name: must match ^[a-z0-9][a-z0-9_-]*$ (got '*')"),
    ("horizon = 20", "horizon = 20.5", "horizon: must be an integer (got 20.5)"),
    ("horizon = 20", "horizon = true", "horizon: must be an integer (got True)"),
    ("horizon = 20", "horizon = 0", "horizon: must be >= 1 (got 0)"),
    ("seeds = [0]", "seeds = [-1]", "seeds[0]: must be >= 0 (got -1)"),
    ("n_arms = 3", "n_arms = false", "environment.n_arms: must be an integer (got False)"),
    ('kind = "lints"', 'kind = "lints"\nv = -1.0', "policies[1].v: must be >= 0.0 (got -1.0)"),
    ('kind = "linucb"', 'kind = "linucb"\nbeta = 1.0', "policies[0].beta: unknown key"),
]


def _config(tmp_path: Path, old: str = "", new: str = "") -> Path:
    assert CONFIG.count(old) == 1 or not old
    path = tmp_path / "cfg.toml"
    path.write_text(CONFIG.replace(old, new, 1) if old else CONFIG)
    return path


def _one_line_error(result, expected: str, invalid_file: Path | None = None) -> None:
    """Exit 2, no traceback, and one ``error:`` line naming ``expected``; an invalid config file is named on
    the line before its one problem."""
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    lines = [line.strip() for line in result.output.strip().splitlines()]
    if invalid_file is not None:
        assert lines[0] == f"error: {invalid_file} is invalid:", result.output
        lines = ["error: " + line for line in lines[1:]]
    assert len(lines) == 1 and lines[0].startswith("error: ") and expected in lines[0], result.output


@pytest.mark.parametrize(("old", "new", "expected"), TOML_MISTAKES)
def test_config_mistakes_exit_2_with_one_line_and_write_nothing(tmp_path, old, new, expected):
    store, out = tmp_path / "r.sqlite", tmp_path / "out"
    config = _config(tmp_path, old, new)
    result = runner.invoke(app, ["run", str(config), "--store", str(store), "--out", str(out)])
    _one_line_error(result, expected, config)
    assert not store.exists() and not out.exists()


OVERRIDE_MISTAKES = [
    ("horizon=2.5", "option horizon: must be an integer (got '2.5')"),
    ("seeds=a,b", "option seeds: must be a comma-separated list of integers"),
    ("policies.0.alpha=true", "policies[0].alpha: must be a number (got True)"),
    ("policies.0.alpha=inf", "policies[0].alpha: must be a finite number (got inf)"),
    ("environment.dim=10.0", "environment.dim: must be an integer (got 10.0)"),
    ("name=A B", "name: must match ^[a-z0-9][a-z0-9_-]*$ (got 'A B')"),
    ("no_such_key=1", "bad-input has no option 'no_such_key'; valid options: name, description, horizon, seeds"),
    ("horizon", "--option must look like KEY=VALUE (got 'horizon')"),
]


@pytest.mark.parametrize(("override", "expected"), OVERRIDE_MISTAKES)
def test_override_mistakes_exit_2_with_one_line_and_write_nothing(tmp_path, override, expected):
    store, out = tmp_path / "r.sqlite", tmp_path / "out"
    args = ["run", str(_config(tmp_path)), "-o", override, "--store", str(store), "--out", str(out)]
    _one_line_error(runner.invoke(app, args), expected)
    assert not store.exists() and not out.exists()


@pytest.fixture(scope="module")
def stored(tmp_path_factory) -> tuple[Path, Path]:
    """A store holding one tiny run of the config, and the config file."""
    folder = tmp_path_factory.mktemp("stored")
    config, store = _config(folder), folder / "r.sqlite"
    result = runner.invoke(app, ["run", str(config), "--store", str(store), "--no-report", "--no-progress"])
    assert result.exit_code == 0, result.output
    return config, store


@pytest.mark.parametrize("command", ["report", "run"])
def test_out_on_an_existing_file_is_one_line_exit_2_and_the_file_is_untouched(tmp_path, stored, command):
    config, store = stored
    existing = tmp_path / "notes.txt"
    existing.write_text("mine")
    before = store.read_bytes()
    result = runner.invoke(app, [command, str(config), "--store", str(store), "--out", str(existing), "--no-progress"]
                           if command == "run" else [command, str(config), "--store", str(store), "--out",
                                                      str(existing)])  # fmt: skip
    _one_line_error(result, f"--out must be a folder (got '{existing}', an existing file)")
    assert existing.read_text() == "mine" and store.read_bytes() == before


def test_report_of_a_missing_store_names_it_and_creates_nothing(tmp_path):
    store = tmp_path / "none.sqlite"
    result = runner.invoke(app, ["report", str(_config(tmp_path)), "--store", str(store)])
    _one_line_error(result, f"results store {store} does not exist; run `privbandits run NAME` first")
    assert not store.exists()
