"""FCLUB reproductions (papers/fclub): units, sharing, options and reports at toy sizes."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from privbandits.datasets.movielens import default_fclub_data_path
from privbandits.experiments.catalog import REPRODUCTIONS, find
from privbandits.experiments.overrides import OptionError
from privbandits.experiments.reproduction import report, run
from privbandits.experiments.store import ResultsStore
from privbandits.papers.fclub import fig2, fig3
from privbandits.papers.fclub.options import ALGORITHMS, COMMUNICATING, FAITHFUL
from privbandits.papers.fclub.runs import Setting, kept_rounds, run_algorithm

pytestmark = pytest.mark.filterwarnings("ignore:FCLUB. privatizer noise exceeded")
NAMES = ("fclub-fig2", "fclub-fig3", "fclub-fig4", "fclub-table3")
SYNTHETIC = "synthetic (reference construction)"


def test_kept_rounds_hold_every_phase_end_and_the_horizon():
    rounds = kept_rounds(1000, points=10)
    assert {2, 6, 14, 30, 62, 126, 254, 510, 1000} <= set(rounds.tolist())
    assert rounds[0] == 1 and (np.diff(rounds) > 0).all()


def test_every_algorithm_runs_on_the_same_environment():
    setting = Setting(n_users=10, n_clusters=2, n_servers=2, dim=4, n_arms=4)
    regrets = {}
    for name in ALGORITHMS:
        outcome, env = run_algorithm(name, setting, 62, seed=3)
        regrets[name] = outcome.regret[-1]
        assert env.n_users == 10 and len(outcome.regret) == 62
    assert len(set(regrets.values())) > 1
    with pytest.raises(ValueError, match="unknown algorithm 'UCB'"):
        run_algorithm("UCB", setting, 10, 0)
    with pytest.raises(ValueError, match="kind must be"):
        Setting(kind="yelp")


def test_study_settings_keep_five_users_per_cluster():
    assert fig3.study_setting("L", 8) == Setting(n_servers=8, n_clusters=8, n_users=40)
    assert fig3.study_setting("m", 2) == Setting(n_clusters=2, n_users=10)
    assert fig3.study_setting("epsilon", 4).epsilon == 4.0


def test_reproductions_are_registered_with_every_option_described():
    for name in NAMES:
        model = REPRODUCTIONS[name].options_model()
        assert all(field.description for field in model.model_fields.values()), name
    assert find("fclub-fig2").parse({}).algorithms == ALGORITHMS
    assert find("fclub-fig3").parse({}).algorithms == ("CDP-FCLUB-DC", FAITHFUL)
    defaults = find("fclub-table3").parse({})
    assert (defaults.horizon, defaults.repeats, defaults.include_movielens) == (2**17 - 2, 3, True)


def _markdown(paper):
    return paper.markdown()


def test_fig2_and_fig4_share_their_units(tmp_path):
    algorithms = ",".join(["CDP-FCLUB-DC", FAITHFUL, "FCLUB-DC", "FCLUB", "Homo", "SCLUB", "CLUB", "LinUCB"])
    sizes = {"horizon": "126", "seeds": "2", "include_movielens": "false"}
    fig2_rep, fig4_rep = find("fclub-fig2"), find("fclub-fig4")
    fig2_options = fig2_rep.parse(sizes | {"algorithms": algorithms})
    with ResultsStore(tmp_path / "r.sqlite") as store:
        summary, paper = run(fig2_rep, fig2_options, store, tmp_path / "out", progress=False)
        assert len(summary.computed) == 16 and (tmp_path / "out" / "fclub-fig2.png").is_file()
        assert [c.statement.split(" < ")[0] for c in paper.claims[:2]] == [
            "FCLUB ≤ FCLUB-DC ≤ CDP-FCLUB-DC", f"FCLUB ≤ FCLUB-DC ≤ {FAITHFUL}"]  # fmt: skip
        assert any("suffer linear regret" in c.statement for c in paper.claims)
        assert len(paper.tables[f"Fig. 2, {SYNTHETIC}, T = 126"]) == 8 + 1
        assert _markdown(report(fig2_rep, fig2_options, store, tmp_path / "again")) == _markdown(paper)

        fig4_options = fig4_rep.parse(sizes)
        summary, fig4 = run(fig4_rep, fig4_options, store, tmp_path / "out", progress=False)
        assert summary.computed == [] and summary.stored == 8  # every unit Fig. 4 needs was Fig. 2's
        assert store.count() == 16
        assert "FCLUB (full communication)" in fig4.claims[0].statement
        rows = fig4.tables[f"Fig. 4, {SYNTHETIC}, T = 126"]
        assert [r[0] for r in rows[1:]] == list(COMMUNICATING)
        assert all(r[-1].endswith("(2/2)") and float(r[-1].split()[0]) > 0 for r in rows[1:])  # payload MB
        assert _markdown(report(fig4_rep, fig4_options, store, tmp_path / "again")) == _markdown(fig4)


def test_fig3_points_of_one_setting_are_one_unit(tmp_path):
    rep = find("fclub-fig3")
    options = rep.parse({"horizon": "14", "seeds": "1", "algorithms": "CDP-FCLUB-DC"})
    tasks = rep.tasks(options)
    assert len(tasks) == 22 and len({t.key for t in tasks}) == 19  # d=10, ε=1, n=40 alike; m=4 is n=20
    with ResultsStore(tmp_path / "r.sqlite") as store:
        summary, paper = run(rep, options, store, tmp_path / "out", progress=False)
        assert len(summary.computed) == 19
        assert [c.where for c in paper.claims] == [f"Fig. 3, {p}, CDP-FCLUB-DC" for p in fig3.STUDIES]
        assert [row[:2] for row in paper.tables["Fig. 3, CDP-FCLUB-DC"][1:5]] == [["d", "5"], ["d", "10"],
                                                                                  ["d", "15"], ["d", "20"]]  # fmt: skip
        assert _markdown(report(rep, options, store, tmp_path / "again")) == _markdown(paper)
    default_unit = fig2.tasks(find("fclub-fig2").parse({"horizon": "14", "seeds": "1", "include_movielens": "false"}))
    assert {t.key for t in default_unit if t.params["algorithm"] == "CDP-FCLUB-DC"} <= {t.key for t in tasks}


def test_table3_puts_the_paper_rows_beside_ours(tmp_path):
    rep = find("fclub-table3")
    options = rep.parse({"horizon": "30", "repeats": "1", "include_movielens": "false"})
    with ResultsStore(tmp_path / "r.sqlite") as store:
        _, paper = run(rep, options, store, tmp_path / "out", progress=False)
        rows = paper.tables["ms per round"]
        assert rows[0][1:] == ["synthetic: ours (×LinUCB)", "paper row 1 (×LinUCB)", "paper row 2 (×LinUCB)"]
        assert [r[0] for r in rows[1:]] == list(ALGORITHMS)
        assert rows[-1][1].endswith("(1.00x)") and rows[1][2] == "1.707 (2.64x)"
        assert _markdown(report(rep, options, store, tmp_path / "again")) == _markdown(paper)


def test_changed_options_are_other_units(tmp_path):
    rep = find("fclub-fig2")
    base = {"horizon": "126", "seeds": "2"}
    keys = {t.key for t in rep.tasks(rep.parse(base))}
    assert keys.isdisjoint(t.key for t in rep.tasks(rep.parse(base | {"horizon": "254"})))
    assert keys < {t.key for t in rep.tasks(rep.parse(base | {"seeds": "3"}))}  # seeds 0 and 1 are the same runs
    study = find("fclub-fig3")
    assert {t.key for t in study.tasks(study.parse(base))}.isdisjoint(
        t.key for t in study.tasks(study.parse(base | {"horizon": "254"}))
    )


@pytest.mark.skipif(default_fclub_data_path() is None, reason="../shared/data/fclub is absent")
def test_a_changed_data_file_is_another_unit(tmp_path):
    rep = find("fclub-fig4")
    shutil.copy(default_fclub_data_path() / "ml_1000user_d10.npy", tmp_path / "ml_1000user_d10.npy")
    options = rep.parse({"horizon": "14", "seeds": "1", "data_dir": str(tmp_path)})

    def keys():
        return {t.key for t in rep.tasks(options) if t.params["setting"]["kind"] == "movielens-reference"}

    first = keys()
    assert len(first) == 4 and all(t.params["data"]["path"] for t in rep.tasks(options) if t.params["data"])
    vectors = np.load(tmp_path / "ml_1000user_d10.npy")
    np.save(tmp_path / "ml_1000user_d10.npy", vectors[::-1])
    assert keys().isdisjoint(first)
    with ResultsStore(tmp_path / "r.sqlite") as store:
        _, paper = run(rep, options, store, tmp_path / "out", progress=False)
    skipped = "MovieLens, spec A19 on the shipped 500×500 matrix panel SKIPPED: its data file is absent."
    assert skipped in paper.notes  # no MovieLens-100K in the (test) cache, and the folder lacks the fallback
    assert [c.where for c in paper.claims[::2]] == ["Fig. 4, synthetic", "Fig. 4, movielens-reference"]


@pytest.mark.parametrize(
    ("name", "raw", "named"),
    [
        ("fclub-fig2", {"horizon": "abc"}, "horizon"),
        ("fclub-fig2", {"horizon": "0"}, "horizon"),
        ("fclub-fig2", {"horizon": "-126"}, "horizon"),
        ("fclub-fig2", {"horizon": "13"}, "horizon"),
        ("fclub-fig2", {"seeds": "0"}, "seeds"),
        ("fclub-fig2", {"seeds": "2.5"}, "seeds"),
        ("fclub-fig2", {"algorithms": "FCLUB,UCB"}, "algorithms"),
        ("fclub-fig2", {"algorithms": "FCLUB,FCLUB"}, "algorithms"),
        ("fclub-fig2", {"algorithms": ""}, "algorithms"),
        ("fclub-fig2", {"algorithms": "FCLUB,,LinUCB"}, "algorithms"),
        ("fclub-fig2", {"include_movielens": "maybe"}, "include_movielens"),
        ("fclub-fig2", {"movielens_horizon": "nan"}, "movielens_horizon"),
        ("fclub-fig2", {"data_dir": "/no/such/folder"}, "data_dir"),
        ("fclub-fig2", {"seed": "7"}, "seed"),
        ("fclub-fig3", {"seeds": "-1"}, "seeds"),
        ("fclub-fig3", {"include_movielens": "false"}, "include_movielens"),
        ("fclub-fig4", {"algorithms": "FCLUB"}, "algorithms"),
        ("fclub-fig4", {"movielens_horizon": "0"}, "movielens_horizon"),
        ("fclub-table3", {"repeats": "0"}, "repeats"),
        ("fclub-table3", {"repeats": "nan"}, "repeats"),
        ("fclub-table3", {"horizon": "1e5"}, "horizon"),
        ("fclub-table3", {"data_dir": "/no/such/folder"}, "data_dir"),
    ],
)
def test_bad_options_name_the_key(name, raw, named):
    with pytest.raises(OptionError, match=named) as caught:
        find(name).parse(raw)
    assert "\n" not in str(caught.value)


def test_a_data_dir_must_be_a_folder(tmp_path):
    (tmp_path / "file.npy").write_bytes(b"")
    with pytest.raises(OptionError, match="option data_dir: must be an existing folder"):
        find("fclub-fig4").parse({"data_dir": str(tmp_path / "file.npy")})


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
    claim = fig2.ordering_claim("Fig. 2", finals, "CDP-FCLUB-DC")
    assert claim.verdict == verdict
    assert "paired differences" in claim.ours
