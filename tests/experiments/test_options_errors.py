"""Wrong options and config values, across reproductions: exit 2, one line naming the key, nothing written."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from privbandits.cli import app

runner = CliRunner()

# (reproduction, -o option, text the one-line message must contain)
WRONG = [
    ("p2b-fig4", "seed=abc", "option seed: must be an integer (got 'abc')"),
    ("p2b-fig4", "seed=-1", "seed"),
    ("p2b-fig4", "n_actions=10,x", "option n_actions: must be a comma-separated list of integers (got '10,x')"),
    ("p2b-fig4", "n_actions=0", "n_actions"),
    ("p2b-fig4", "n_actions=1", "n_actions"),
    ("p2b-fig4", "early_users=-5", "early_users"),
    ("p2b-fig4", "early_users=", "early_users"),
    ("p2b-fig4", "dim=nan", "option dim: must be an integer (got 'nan')"),
    ("p2b-fig4", "seeed=1", "did you mean 'seed'?"),
    ("p2b-fig4", "mapping=cubic", "mapping"),
    ("p2b-fig6", "paths=x.arff", "paths"),
    ("mpc-table1", "repeat=abc", "option repeat: must be an integer (got 'abc')"),
    ("mpc-table1", "repeat=0", "repeat"),
    ("mpc-table1", "repeat=-3", "repeat"),
    ("mpc-table1", "n_arms=1", "n_arms"),
    ("mpc-fig3", "fractions=0.5,abc", "fractions"),
    ("mpc-fig3", "fractions=nan", "fractions"),
    ("mpc-fig3", "fractions=0", "fractions"),
    ("mpc-fig3", "runs=2.5", "option runs: must be an integer (got '2.5')"),
    ("mpc-fig3", "mnist=/no/such/folder", "mnist"),
    ("vertical-fig5", "n_parties=0", "n_parties"),
    ("vertical-fig5", "time_rounds=true", "option time_rounds: must be an integer (got 'true')"),
    ("vertical-obd", "seeds=x", "seeds"),
    ("vertical-fig4", "horizon=0", "horizon: must be >= 1 (got 0)"),
    ("vertical-fig4", "seeds=0,x", "option seeds: must be a comma-separated list of integers (got '0,x')"),
    ("vertical-fig4", "seeds=-1", "seeds"),
    ("vertical-fig4", "horzon=5", "did you mean 'horizon'?"),
    ("vertical-fig4", "policies.9.alpha=1", "option policies.9"),
    ("vertical-fig4", "environment.dimm=3", "environment.dimm: unknown key"),
    ("vertical-fig4", "policies.0.alpha=-1", "policies[0].alpha: must be >= 0"),
    ("vertical-fig4", "horizon", "--option must look like KEY=VALUE (got 'horizon')"),
    ("fclub-fig2", "horizon=10", "horizon"),
    ("fclub-fig2", "seeds=0", "seeds"),
    ("fclub-fig2", "algorithms=FOO", "algorithms"),
    ("fclub-fig2", "data_dir=/no/such/folder", "data_dir"),
    ("fclub-table3", "repeats=abc", "repeats"),
]


@pytest.mark.parametrize(("name", "option", "expected"), WRONG, ids=[f"{n}:{o}" for n, o, _ in WRONG])
def test_a_wrong_option_is_one_line_exit_2_and_writes_nothing(tmp_path, name, option, expected):
    store = tmp_path / "r.sqlite"
    command = ["run", name, "-o", option, "--store", str(store), "--out", str(tmp_path / "out"), "--no-progress"]
    result = runner.invoke(app, command, terminal_width=400)
    lines = result.output.strip().splitlines()
    assert result.exit_code == 2, result.output
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    assert expected in lines[0], lines[0]
    key = option.partition("=")[0].split(".")[0]
    assert key in lines[0], lines[0]
    assert not store.exists() and not (tmp_path / "out").exists()


def test_the_list_covers_at_least_25_wrong_values_across_several_reproductions():
    assert len(WRONG) >= 25 and len({name for name, _, _ in WRONG}) >= 6
