"""The vertical paper's reproductions: Fig. 5, the privacy audit and OBD replay through the experiment
model (options, tasks, store, report), and the Fig. 4/6 reports of the config sweeps."""

from __future__ import annotations

import re
import shutil

import numpy as np
import pytest

from privbandits.datasets.obd import default_obd_path
from privbandits.experiments import parse_config, run_single
from privbandits.experiments.catalog import CONFIG_REPORTS, REPRODUCTIONS, find
from privbandits.experiments.overrides import OptionError
from privbandits.experiments.reproduction import report, run
from privbandits.experiments.store import ResultsStore
from privbandits.experiments.tasks import resolve
from privbandits.papers.vertical import fig5
from privbandits.papers.vertical.configs import fig4_report, fig6_report
from privbandits.papers.vertical.fig5 import measure_step_bytes, op_counts

NEEDS_OBD = pytest.mark.skipif(
    default_obd_path() is None, reason="../shared/data/obd (the OBD sample) is not beside the repo"
)


def _run(name, raw, tmp_path):
    """Run a reproduction into a fresh store; check its report rebuilds from the store alone."""
    rep = find(name)
    options = rep.parse(raw)
    with ResultsStore(tmp_path / "r.sqlite") as store:
        summary, paper = run(rep, options, store, tmp_path / "out", progress=False)
        again = report(rep, options, store, tmp_path / "again")
    assert (again.claims, again.tables, again.notes) == (paper.claims, paper.tables, paper.notes)
    return summary, paper


def _keys(name, raw):
    rep = find(name)
    return {task.label: task.key for task in rep.tasks(rep.parse(raw))}


def test_op_counts_follow_the_paper_cost_model():
    """Spec §8.3: VF adds K·d² + K·M·d per step; VFUCB ≤ ~2x, VFTS large at small d and → 1 at large d."""
    counts = op_counts(100, 10, 5)
    assert counts["VFUCB"] - counts["LinUCB"] == 10 * 100 * 100 + 10 * 5 * 100
    assert counts["VFTS"] - counts["LinTS"] == counts["VFUCB"] - counts["LinUCB"]
    assert counts["LinUCB"] == 10 * 100 + 100**3 + 10 * 100**2 + 10 * 100 + 10 + 2 * 100**2 + 100
    ratios = [op_counts(d, k, 5)["VFUCB"] / op_counts(d, k, 5)["LinUCB"] for d in (10, 100, 5000) for k in (100, 1000)]
    assert max(ratios) < 2.3 and min(ratios) > 1.0  # "about 2x" (2.23 at d=10, K=1000)
    assert op_counts(10, 1000, 5)["VFTS"] / op_counts(10, 1000, 5)["LinTS"] > 5
    assert op_counts(5000, 100, 5)["VFTS"] / op_counts(5000, 100, 5)["LinTS"] < 1.05


def test_bytes_per_step_are_measured_from_messages():
    step, setup = measure_step_bytes(300, 40, 5)
    assert step == 8 * 4 * 40 * 300 and setup == 8 * 300 * 300


def test_fig5_runs_through_the_store_and_states_each_claim(tmp_path):
    raw = {"time_dims": "20", "time_arms": "10", "time_rounds": "5", "byte_points": "1000x1000"}
    summary, paper = _run("vertical-fig5", raw, tmp_path)
    assert len(summary.computed) == 3  # UCB and TS timings at (20, 10), one byte count
    assert [claim.where for claim in paper.claims] == ["5(a)", "5(b)", "5(c)"]
    assert paper.claims[2].ours.startswith("0.032 GB received by the AP")
    assert paper.figures[0].name == "vertical-fig5.png" and paper.figures[0].is_file()
    costs = paper.tables["Relative cost: op-count model and measured wall time"]
    assert [row[:4] for row in costs[1:]] == [["VFUCB/LinUCB", "10", "20", "1.38"], ["VFTS/LinTS", "10", "20", "1.29"]]


def test_fig5_report_flags_the_papers_6_25_gb(tmp_path):
    """The report alone, on stored-like points: 8(M-1)Kd bytes give 0.16 GB at d=5000, K=1000, not 6.25 GB."""
    options = find("vertical-fig5").parse({"time_dims": "20", "time_arms": "10", "byte_points": "1000x1000,5000x1000"})
    points = {task.label: {"central_s": 1.0, "vertical_s": 2.0} for task in fig5.tasks(options) if "time" in task.label}
    for d in (1000, 5000):
        points[f"bytes d={d} K=1000"] = {"step_bytes": 8.0 * 4 * 1000 * d, "setup_bytes": 8.0 * d * d}
    paper = fig5.report(options, points, tmp_path)
    assert "0.16 GB" in paper.claims[3].ours and paper.claims[3].verdict == "paper figure inconsistent"
    assert "measured 2.00-2.00x" in paper.claims[0].ours
    assert "| 5(c) | d=5000, K=1000: 6.25 GB per step |" in paper.write(tmp_path).read_text()


def _fig4_config(config_data):
    config_data.update(name="vertical-fig4", horizon=400, seeds=[0, 1, 2])
    config_data["environment"].update(dim=10, n_arms=5)
    config_data["policies"] = [
        {"kind": "linucb", "label": "central", "alpha": 0.5},
        {"kind": "linucb", "label": "partial", "alpha": 0.5, "visible_features": 2},
        {"kind": "vfucb", "label": "vf", "alpha": 0.5, "partition": [2, 4, 4]},
        {"kind": "lints", "label": "ts", "v": 0.05},
        {"kind": "lints", "label": "ts partial", "v": 0.05, "visible_features": 2},
        {"kind": "vfts", "label": "vfts", "v": 0.05, "partition": [2, 4, 4]},
    ]
    return parse_config(config_data)


def test_fig4_report_compares_vertical_with_central_on_stored_runs(tmp_path, config_data):
    config = _fig4_config(config_data)
    records = [run_single(config, index, seed) for index in range(6) for seed in config.seeds]
    report = fig4_report(records, tmp_path)
    claims = {(c.where, c.statement): c for c in report.claims}
    same = claims[("4(a)", "VFUCB achieves exactly the regret of central LinUCB")]
    assert same.ours.startswith("identical actions in 3/3 seeds; max |Δ regret| = 0.0e+00")
    assert same.verdict == "reproduced"
    norm = claims[("4(b)", "VFUCB norm difference recovers to almost 0")]
    assert float(norm.ours.split()[5].rstrip(";")) < 1e-12
    assert len(report.claims) == 8 and report.figures[0].is_file()
    assert resolve(CONFIG_REPORTS["vertical-fig4"]) is fig4_report
    assert resolve(CONFIG_REPORTS["vertical-fig6"]) is fig6_report


def test_fig6_report_orders_feature_ratios(tmp_path, config_data):
    config_data.update(name="vertical-fig6", horizon=600, seeds=[0, 1])
    config_data["environment"].update(dim=10, n_arms=5)
    config_data["policies"] = [
        {"kind": "linucb", "label": "0.2", "alpha": 0.5, "visible_features": 2},
        {"kind": "linucb", "label": "0.8", "alpha": 0.5, "visible_features": 8},
        {"kind": "linucb", "label": "full", "alpha": 0.5},
    ]
    config = parse_config(config_data)
    records = [run_single(config, index, seed) for index in range(3) for seed in config.seeds]
    report = fig6_report(records, tmp_path)
    assert [c.statement for c in report.claims] == [
        "full-data LinUCB regret is about 10x smaller than partial",
        "ratio 0.8 beats ratio 0.2",
    ]
    assert report.claims[1].verdict == "reproduced"


def test_computed_reproductions_are_registered():
    assert {"vertical-fig5", "vertical-audit", "vertical-obd"} <= set(REPRODUCTIONS)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_audit_attacks_real_transcripts(tmp_path):
    """Known-plaintext recovery from d_j pairs of Alg. 1 messages, ICA, and what secure aggregation hides."""
    raw = {"rounds": "60", "dim": "40", "n_arms": "5", "n_parties": "4"}
    _, paper = _run("vertical-audit", raw, tmp_path)
    theorem, ica, geometry, secure, residual = (c.ours for c in paper.claims)
    assert float(re.search(r"recovers Q\^j to (\S+) ", theorem)[1]) < 1e-8
    assert float(re.search(r"with 9 pairs the error is (\S+)$", theorem)[1]) > 0.01
    assert float(re.search(r"\|corr\| (\S+) ", ica)[1]) > 0.9
    assert float(re.search(r"max \|Gram error\| (\S+)\)", geometry)[1]) < 1e-12
    assert float(re.search(r"pairs of party 2 give mask error (\S+)$", secure)[1]) > 1.0
    assert float(re.search(r"to (\S+)$", residual)[1]) < 1e-8
    assert paper.figures[0].name == "vertical-audit.png"


@pytest.mark.slow
@NEEDS_OBD
def test_obd_replay_runs_vfucb_against_the_active_party_alone(tmp_path):
    _, paper = _run("vertical-obd", {"seeds": "0,1"}, tmp_path)
    rows = next(iter(paper.tables.values()))
    assert [row[0] for row in rows[1:]] == ["active party alone (LinUCB)", "VFUCB (active + passive)", "uniform random"]
    matched = np.array([float(row[2]) for row in rows[1:]])
    assert np.all((matched > 60) & (matched < 250))  # about 10,000 / 80 events each


def test_a_changed_option_is_a_different_unit():
    audit = _keys("vertical-audit", {"seed": "0"})
    assert audit != _keys("vertical-audit", {"seed": "1"}) and audit == _keys("vertical-audit", {})
    small = {"time_dims": "20", "time_arms": "10", "byte_points": "100x10"}
    base = _keys("vertical-fig5", small)
    longer = _keys("vertical-fig5", {**small, "time_rounds": "7"})
    assert base["bytes d=100 K=10"] == longer["bytes d=100 K=10"]  # bytes do not depend on the timed rounds
    assert base["time UCB d=20 K=10"] != longer["time UCB d=20 K=10"]
    fewer = _keys("vertical-fig5", {**small, "n_parties": "4"})
    assert not set(base.values()) & set(fewer.values())


def _fake_obd(folder, clicks="0"):
    folder.mkdir()
    (folder / "all.csv").write_text(f"item_id,click\n1,{clicks}\n")
    (folder / "item_context.csv").write_text("item_id\n1\n")
    return folder


def test_obd_units_follow_the_data_the_seed_and_alpha(tmp_path):
    """The log enters the key by content: an edited file is a new unit; alpha does not touch uniform random."""
    folder = _fake_obd(tmp_path / "obd")
    base = _keys("vertical-obd", {"seeds": "0", "folder": str(folder)})
    assert set(base) == {"alone seed 0", "vfucb seed 0", "random seed 0"}
    alpha = _keys("vertical-obd", {"seeds": "0", "folder": str(folder), "alpha": "1"})
    assert alpha["random seed 0"] == base["random seed 0"] and alpha["vfucb seed 0"] != base["vfucb seed 0"]
    assert not set(_keys("vertical-obd", {"seeds": "1", "folder": str(folder)}).values()) & set(base.values())
    (folder / "all.csv").write_text("item_id,click\n1,1\n")
    edited = _keys("vertical-obd", {"seeds": "0", "folder": str(folder)})
    assert not set(edited.values()) & set(base.values())
    copy = _keys("vertical-obd", {"seeds": "0", "folder": str(shutil.copytree(folder, tmp_path / "copy"))})
    assert not set(copy.values()) & set(edited.values())  # the path is part of the identity too


BAD_OPTIONS = [
    ("vertical-fig5", {"n_parties": "0"}, "n_parties"),
    ("vertical-fig5", {"n_parties": "1"}, "n_parties"),
    ("vertical-fig5", {"n_parties": "30"}, "n_parties"),
    ("vertical-fig5", {"n_parties": "two"}, "n_parties"),
    ("vertical-fig5", {"time_rounds": "0"}, "time_rounds"),
    ("vertical-fig5", {"time_rounds": "-3"}, "time_rounds"),
    ("vertical-fig5", {"time_rounds": "nan"}, "time_rounds"),
    ("vertical-fig5", {"time_dims": ""}, "time_dims"),
    ("vertical-fig5", {"time_dims": "20,,40"}, "time_dims"),
    ("vertical-fig5", {"time_dims": "20,20"}, "time_dims"),
    ("vertical-fig5", {"time_arms": "0"}, "time_arms"),
    ("vertical-fig5", {"byte_points": "1000"}, "byte_points"),
    ("vertical-fig5", {"byte_points": "1000x-5"}, "byte_points"),
    ("vertical-fig5", {"byte_points": "(1000,100)"}, "byte_points"),
    ("vertical-fig5", {"n_partys": "5"}, "n_partys"),
    ("vertical-audit", {"rounds": "0"}, "rounds"),
    ("vertical-audit", {"dim": "2.5"}, "dim"),
    ("vertical-audit", {"n_parties": "2"}, "n_parties"),
    ("vertical-audit", {"dim": "5"}, "n_parties"),
    ("vertical-audit", {"rounds": "2", "n_arms": "2"}, "n_parties"),
    ("vertical-audit", {"seed": "-1"}, "seed"),
    ("vertical-audit", {"seed": "nan"}, "seed"),
    ("vertical-obd", {"seeds": "x"}, "seeds"),
    ("vertical-obd", {"seeds": "0,-1"}, "seeds"),
    ("vertical-obd", {"seeds": "[0,1"}, "seeds"),
    ("vertical-obd", {"alpha": "nan"}, "alpha"),
    ("vertical-obd", {"alpha": "-0.5"}, "alpha"),
    ("vertical-obd", {"alpha": "inf"}, "alpha"),
    ("vertical-obd", {"folder": "/no/such/folder"}, "folder"),
    ("vertical-obd", {"seed": "1"}, "seed"),
]


@pytest.mark.parametrize(("name", "raw", "key"), BAD_OPTIONS)
def test_bad_options_are_refused_naming_the_key(name, raw, key):
    with pytest.raises(OptionError) as error:
        find(name).parse(raw)
    message = str(error.value)
    assert "\n" not in message and (f"option {key}" in message or f"option {key!r}" in message), message


def test_obd_folder_must_hold_the_sample(tmp_path):
    with pytest.raises(OptionError, match=r"option folder: must hold all.csv and item_context.csv"):
        find("vertical-obd").parse({"folder": str(tmp_path)})
