"""FCLUB reproductions (experiments/fclub_paper.py): runs, resumption and reports at toy sizes."""

from __future__ import annotations

import numpy as np
import pytest

from privbandits.experiments import fclub_paper
from privbandits.experiments.fclub_paper import Setting, kept_rounds, run_algorithm
from privbandits.experiments.reproductions import COMPUTED

pytestmark = pytest.mark.filterwarnings("ignore:FCLUB. privatizer noise exceeded")


def test_kept_rounds_hold_every_phase_end_and_the_horizon():
    rounds = kept_rounds(1000, points=10)
    assert {2, 6, 14, 30, 62, 126, 254, 510, 1000} <= set(rounds.tolist())
    assert rounds[0] == 1 and (np.diff(rounds) > 0).all()


def test_every_algorithm_runs_on_the_same_environment():
    setting = Setting(n_users=10, n_clusters=2, n_servers=2, dim=4, n_arms=4)
    regrets = {}
    for name in fclub_paper.ALGORITHMS:
        outcome, env = run_algorithm(name, setting, 62, seed=3)
        regrets[name] = outcome.regret[-1]
        assert env.n_users == 10 and len(outcome.regret) == 62
    assert len(set(regrets.values())) > 1
    with pytest.raises(ValueError, match="unknown algorithm 'UCB'"):
        run_algorithm("UCB", setting, 10, 0)
    with pytest.raises(ValueError, match="kind must be"):
        Setting(kind="yelp")


def test_study_settings_keep_five_users_per_cluster():
    assert fclub_paper._study_setting("L", 8) == Setting(n_servers=8, n_clusters=8, n_users=40)
    assert fclub_paper._study_setting("m", 2) == Setting(n_clusters=2, n_users=10)
    assert fclub_paper._study_setting("epsilon", 4).epsilon == 4.0


def test_fig2_and_fig4_share_resumable_runs(tmp_path, monkeypatch):
    algorithms = ("CDP-FCLUB-DC", fclub_paper.FAITHFUL, "FCLUB-DC", "FCLUB", "Homo", "SCLUB", "CLUB", "LinUCB")
    report = fclub_paper.fig2_reproduction(tmp_path, horizon=126, seeds=2, algorithms=algorithms,
                                           include_movielens=False, jobs=1)  # fmt: skip
    assert (tmp_path / "fclub-fig2.png").is_file() and (tmp_path / "fclub-runs.json").is_file()
    assert [c.statement.split(" < ")[0] for c in report.claims[:2]] == [
        "FCLUB ≤ FCLUB-DC ≤ CDP-FCLUB-DC", f"FCLUB ≤ FCLUB-DC ≤ {fclub_paper.FAITHFUL}"]  # fmt: skip
    assert any("suffer linear regret" in c.statement for c in report.claims)
    assert len(report.tables["Fig. 2, synthetic (reference construction), T = 126"]) == len(algorithms) + 1

    def no_new_runs(task):
        raise AssertionError(f"re-ran {task}")

    monkeypatch.setattr(fclub_paper, "_simulate", no_new_runs)  # everything Fig. 4 needs is cached
    fig4 = fclub_paper.fig4_reproduction(tmp_path, horizon=126, seeds=2, include_movielens=False, jobs=1)
    assert "FCLUB (full communication)" in fig4.claims[0].statement
    rows = fig4.tables["Fig. 4, synthetic (reference construction), T = 126"]
    assert [r[0] for r in rows[1:]] == list(fclub_paper.COMMUNICATING)
    assert all(r[-1].endswith("(2/2)") and float(r[-1].split()[0]) > 0 for r in rows[1:])  # payload MB, every seed


def test_reproductions_are_registered():
    for name in ("fclub-fig2", "fclub-fig3", "fclub-fig4", "fclub-table3"):
        assert name in COMPUTED


def test_table3_puts_the_paper_rows_beside_ours(tmp_path):
    report = fclub_paper.table3_reproduction(tmp_path, horizon=126, repeats=1, include_movielens=False)
    rows = report.tables["ms per round"]
    assert rows[0][1:] == ["synthetic: ours (×LinUCB)", "paper row 1 (×LinUCB)", "paper row 2 (×LinUCB)"]
    assert [r[0] for r in rows[1:]] == list(fclub_paper.ALGORITHMS)
    assert rows[-1][1].endswith("(1.00x)") and rows[1][2] == "1.707 (2.64x)"


@pytest.mark.parametrize(
    ("fclub_shift", "baseline_shift", "verdict"),
    [
        (-50.0, 500.0, "reproduced"),
        (30.0, 500.0, "partly (the ≤ chain is within 2 SE)"),  # FCLUB above FCLUB-DC, but within noise
        (400.0, 500.0, "partly"),  # FCLUB significantly above FCLUB-DC
        (-50.0, 5.0, "partly"),  # the baselines are not significantly worse
    ],
)
def test_the_ordering_verdict_reads_paired_differences_over_seeds(fclub_shift, baseline_shift, verdict):
    noise = np.array([-60.0, 40.0, -20.0, 50.0, -10.0])
    dc = 1000.0 + noise
    finals = {"FCLUB": dc + fclub_shift + noise[::-1], "FCLUB-DC": dc, "CDP-FCLUB-DC": dc + 10.0}
    finals |= {name: dc + baseline_shift for name in ("CLUB", "SCLUB", "LinUCB")}
    claim = fclub_paper._ordering_claim("Fig. 2", finals, "CDP-FCLUB-DC")
    assert claim.verdict == verdict
    assert "paired differences" in claim.ours
