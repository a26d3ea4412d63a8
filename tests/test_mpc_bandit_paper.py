"""The MPC paper reproductions at tiny sizes: registered, reports with the paper's numbers beside
ours, PNG written, the stand-in data marked, resumable points."""

from __future__ import annotations

from privbandits.experiments import mpc_paper
from privbandits.experiments.reproductions import COMPUTED


def test_every_figure_and_table_is_registered():
    names = {f"mpc-{key}" for key in ("fig2", "fig3", "fig4", "fig5", "fig6", "fig7", "fig8", "fig9", "table1")}
    assert names <= set(COMPUTED)
    assert COMPUTED["mpc-fig8"].run is mpc_paper.fig8_reproduction


def test_fig7_marks_the_stand_in_and_resumes_from_its_points(tmp_path, monkeypatch):
    report = mpc_paper.fig7_reproduction(tmp_path, epsilons=(0.1,), runs=1, checkpoints=2)
    assert (tmp_path / "mpc-fig7.png").is_file() and (tmp_path / "mpc-fig7-digits-points.json").is_file()
    assert any("STAND-IN" in note for note in report.notes)
    assert report.claims[0].paper == mpc_paper.PAPER_FIG7

    def refuse(*args, **kwargs):
        raise AssertionError("a stored point was recomputed")

    monkeypatch.setattr(mpc_paper, "PlaintextEpsilonGreedy", refuse)
    again = mpc_paper.fig7_reproduction(tmp_path, epsilons=(0.1,), runs=1, checkpoints=2)
    assert again.tables == report.tables


def test_cost_reproductions_report_rounds_beside_the_papers(tmp_path):
    table = mpc_paper.table1_reproduction(tmp_path, n_arms=4, repeat=1)
    operations = {row[0]: row for row in table.tables["Operations"][1:]}
    assert operations["add"][1] == "0" and operations["mul"][1] == "1" and operations["mul"][2] == "2"
    assert operations["reciprocal"][1] == "22"  # 8 exp squarings + 7 × 2 Newton–Raphson products
    fig5 = mpc_paper.fig5_reproduction(tmp_path, party_counts=(2, 3), arm_counts=(2,), rounds=1)
    assert (tmp_path / "mpc-fig5.png").is_file() and fig5.claims[0].paper == "O(|P|²)"


def test_fig6_finds_a_reward_optimal_eta_per_arm_count(tmp_path):
    report = mpc_paper.fig6_reproduction(tmp_path, arm_counts=(3,), runs=1)
    rows = report.tables["Average reward over one sweep (mean over runs)"]
    assert rows[1][0] == "3" and float(rows[1][2]) >= float(rows[1][4])  # best η beats uniform play
