"""Every name `privbandits list` shows runs through its spec, and `report` rebuilds it from the store alone."""

from __future__ import annotations

import pytest
from mnist5k_fixture import install as install_mnist5k
from obd_fixture import sample_head
from project_paths import OBD_SAMPLE
from typer.testing import CliRunner

from privbandits.cli import app
from privbandits.experiments.catalog import REPRODUCTIONS, shipped_configs

runner = CliRunner()

TINY: dict[str, dict[str, str]] = {
    "p2b-fig3": {},
    "p2b-fig4": {"n_actions": "3", "early_users": "100,200", "dim": "3", "n_codes": "8"},
    "p2b-fig5": {"dims": "3,4", "early": "300", "n_codes": "8"},
    "p2b-fig5-reference": {"dims": "3,4", "early": "300", "n_codes": "8"},
    "p2b-fig6": {"rounds": "2", "n_codes": "8"},
    "p2b-fig6-reference": {"rounds": "2", "n_codes": "8"},
    "p2b-fig7": {"stand_in_users": "200", "stand_in_interactions": "10", "rounds": "5", "n_codes": "8"},
    "fclub-fig2": {"horizon": "14", "seeds": "1", "include_movielens": "false"},
    "fclub-fig3": {"horizon": "14", "seeds": "1"},
    "fclub-fig4": {"horizon": "14", "seeds": "1", "include_movielens": "false"},
    "fclub-table3": {"horizon": "14", "repeats": "1", "include_movielens": "false"},
    "fclub-reference-gap": {"horizon": "14", "seeds": "1"},
    "mpc-fig2": {"epsilons": "0.1", "runs": "1"},
    "mpc-fig3": {"fractions": "0.5,1", "runs": "1", "private_etas": "6"},
    "mpc-fig4": {"arm_counts": "2,3", "rounds": "1"},
    "mpc-fig5": {"party_counts": "2,3", "arm_counts": "3", "rounds": "1"},
    "mpc-fig6": {"arm_counts": "3,5", "runs": "1"},
    "mpc-fig7": {"epsilons": "0.1", "runs": "1", "checkpoints": "2"},
    "mpc-fig8": {"precisions": "20", "runs": "1", "sweeps": "1"},
    "mpc-fig9": {"iterations": "3", "runs": "1"},
    "mpc-table1": {"n_arms": "4", "repeat": "1"},
    "vertical-fig5": {"time_dims": "4", "time_arms": "3", "time_rounds": "2", "byte_points": "10x3", "n_parties": "2"},
    "vertical-audit": {"rounds": "30", "dim": "12", "n_arms": "3", "n_parties": "3"},
    "vertical-obd": {"seeds": "0"},
    "privacy-map": {
        "horizon": "20",
        "seeds": "0,1",
        "obd_events": "60",
        "p2b_users": "100",
        "p2b_codes": "8",
        "epsilons": "1,10",
        "explorations": "0.1",
        "participations": "0.5",
    },
    "vertical-fig4": {"horizon": "60", "seeds": "0,1"},
    "vertical-fig6": {"horizon": "60", "seeds": "0,1"},
    "vertical-synthetic-demo": {"horizon": "60", "seeds": "0,1"},
    "example-fclub-vs-club": {"horizon": "30", "seeds": "0"},
    "example-mpc-vs-twin-digits": {"horizon": "5", "seeds": "0"},
    "example-p2b-synthetic": {"horizon": "4", "seeds": "0", "environment.n_users": "300", "environment.dim": "4",
                              "policies.0.n_codes": "16", "policies.1.n_codes": "16", "policies.0.threshold": "2"},
    "example-vfucb-obd-replay": {"horizon": "50", "seeds": "0"},
}


ON_TINY_MNIST5K = {name for name in TINY if name.startswith("mpc-fig") and name not in ("mpc-fig4", "mpc-fig5")}
ON_TINY_MNIST5K.add("privacy-map")
"""Reproductions whose data option (auto) then sweeps a 200-image MNIST-5k in a temporary cache instead of the
1,797 digits: their paths past loading are the same (``test_mpc_bandit_paper`` runs the digits stand-in)."""


def test_every_listed_name_has_tiny_options_here():
    assert set(TINY) == set(REPRODUCTIONS) | set(shipped_configs())


NEEDS_OBD_SAMPLE = {"vertical-obd", "example-vfucb-obd-replay"}
"""Reproductions whose default data is the OBD sample in ../shared (the others fall back or skip a panel)."""
OBD_HEAD = {"vertical-obd": 2000}
"""Reproductions run here on the sample's first events (a folder of their own): replaying the whole sample (10,000
events) took 4 s more; the slow test_vertical_paper replays it whole."""


RUN_AND_REBUILT_BY_THEIR_PAPERS_TESTS = {
    "test_p2b_paper.py": ("p2b-fig3", "p2b-fig4", "p2b-fig5-reference", "p2b-fig7"),
    "test_fclub_paper.py": ("fclub-fig2", "fclub-fig3", "fclub-fig4", "fclub-table3"),
    "test_fclub_gap.py": ("fclub-reference-gap",),
    "test_mpc_bandit_paper.py": tuple(f"mpc-fig{n}" for n in range(2, 10)) + ("mpc-table1",),
    "test_vertical_paper.py": ("vertical-fig5", "vertical-audit"),
    "test_privacy_map.py": ("privacy-map",),
}
"""Reproductions whose own paper's tests (in tests/papers) run them at tiny options in the default suite and check
that the report rebuilt from the store alone is the one the run wrote: here (through the command line) they run
with ``-m slow``; the default suite runs the others here (about 25 s of CPU saved on 2 cores)."""
COVERED = {name for names in RUN_AND_REBUILT_BY_THEIR_PAPERS_TESTS.values() for name in names}


def test_every_listed_name_covered_elsewhere_is_a_listed_name():
    assert COVERED <= set(TINY) and len(COVERED) == sum(map(len, RUN_AND_REBUILT_BY_THEIR_PAPERS_TESTS.values()))


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize(
    "name", [pytest.param(name, marks=[pytest.mark.slow] if name in COVERED else []) for name in sorted(TINY)]
)
def test_runs_through_its_spec_and_report_rebuilds_from_the_store(tmp_path, monkeypatch, name):
    if name in NEEDS_OBD_SAMPLE and not OBD_SAMPLE.is_dir():
        pytest.skip("the OBD sample is not in ../shared/data")
    if name in ON_TINY_MNIST5K:
        install_mnist5k(tmp_path / "cache", monkeypatch, per_class=20)
    store, first, second = tmp_path / "r.sqlite", tmp_path / "run", tmp_path / "report"
    raw = dict(TINY[name])
    if name in OBD_HEAD:
        raw["folder"] = str(sample_head(OBD_SAMPLE, tmp_path / "obd", OBD_HEAD[name]))
    options = [part for key, value in raw.items() for part in ("-o", f"{key}={value}")]
    ran = runner.invoke(app, ["run", name, *options, "--store", str(store), "--out", str(first), "--no-progress"])
    assert ran.exit_code == 0, ran.output
    assert "computed" in ran.output and "unit(s)" in ran.output
    again = runner.invoke(app, ["run", name, *options, "--store", str(store), "--no-report", "--no-progress"])
    assert "computed 0 unit(s)" in again.output, again.output
    rebuilt = runner.invoke(app, ["report", name, "--store", str(store), "--out", str(second)])
    assert rebuilt.exit_code == 0, rebuilt.output
    written = sorted(path.name for path in first.iterdir())
    assert written and sorted(path.name for path in second.iterdir()) == written
    for path in first.glob("*.md"):
        assert (second / path.name).read_text() == path.read_text()
