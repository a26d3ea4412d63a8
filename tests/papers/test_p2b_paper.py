"""The P2B reproductions (Fig. 3 to Fig. 7) through the experiment model, at tiny sizes."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from typer.testing import CliRunner

from privbandits.cli import app
from privbandits.experiments.catalog import find
from privbandits.experiments.overrides import OptionError
from privbandits.experiments.reproduction import report, run
from privbandits.experiments.store import ResultsStore

P2B_NAMES = ("p2b-fig3", "p2b-fig4", "p2b-fig5", "p2b-fig5-reference", "p2b-fig6", "p2b-fig6-reference", "p2b-fig7")
TINY_FIG4 = {"n_actions": "5", "early_users": "300,3000", "dim": "4", "n_codes": "16"}
TINY_FIG7 = {"rounds": "5,10", "n_codes": "8", "stand_in_users": "200", "stand_in_interactions": "10"}


def run_and_rebuild(name, raw, tmp_path):
    """Run ``name`` with ``raw`` options into a fresh store; check the report rebuilds equal from the store."""
    rep = find(name)
    options = rep.parse(raw)
    with ResultsStore(tmp_path / "r.sqlite") as store:
        summary, paper = run(rep, options, store, tmp_path / "out", progress=False)
        again = report(rep, options, store, tmp_path / "again")
    assert (again.claims, again.tables, again.notes) == (paper.claims, paper.tables, paper.notes)
    assert all(path.is_file() for path in paper.figures)
    return rep, options, summary, paper


def test_every_p2b_reproduction_is_in_the_catalogue_with_described_options():
    for name in P2B_NAMES:
        model = find(name).options_model()
        assert all(field.description for field in model.model_fields.values()), name
    assert find("p2b-fig5-reference").parse({}).reference_mode
    assert not find("p2b-fig5").parse({}).reference_mode
    assert find("p2b-fig6-reference").parse({}).reference_mode


def test_the_options_import_nothing_heavy():
    code = (
        "import sys, privbandits.papers.p2b.options; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('numba', 'matplotlib', 'sklearn') "
        "or m.startswith('privbandits.protocols')))"
    )
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "[]"


def test_fig3_tabulates_epsilon_against_the_spec(tmp_path):
    _, _, _, paper = run_and_rebuild("p2b-fig3", {}, tmp_path)
    rows = paper.tables["ε(p), ε̄ = 0"]
    assert all(row[1] == row[2] == row[3] for row in rows[1:])  # ours = Eq. 2 = the spec's table, to 4 decimals
    assert [c.verdict for c in paper.claims] == ["reproduced"] * 3


def test_fig4_runs_resumes_from_the_store_and_rebuilds(tmp_path):
    rep, options, summary, paper = run_and_rebuild("p2b-fig4", TINY_FIG4, tmp_path)
    rows = paper.tables["|A| = 5"]
    assert [row[0] for row in rows[1:]] == ["300", "3,000"] and rows[1][1] == "429"
    assert {c.where for c in paper.claims} == {"Fig. 4, |A| = 5", "Fig. 4"}
    assert len(summary.computed) == 2
    with ResultsStore(tmp_path / "r.sqlite") as store:
        again, rebuilt = run(rep, options, store, tmp_path / "out", progress=False)
    assert again.computed == [] and again.stored == 2 and rebuilt.tables == paper.tables


def test_a_changed_seed_is_new_work_not_the_stored_numbers(tmp_path):
    """The issue's sequence: the same fig4 run with -o seed=7 into the same --out recomputes (seed in the key)."""
    rep = find("p2b-fig4")
    keys = {seed: {t.key for t in rep.tasks(rep.parse({**TINY_FIG4, "seed": seed}))} for seed in ("0", "7")}
    assert keys["0"].isdisjoint(keys["7"])
    for changed in ({"dim": "5"}, {"n_codes": "17"}, {"mapping": "softmax"}):
        assert keys["0"].isdisjoint(t.key for t in rep.tasks(rep.parse({**TINY_FIG4, **changed})))
    cli = CliRunner()
    tiny = ["-o", "n_actions=(5)", "-o", "early_users=(300)", "-o", "dim=4", "-o", "n_codes=16"]
    base = ["run", "p2b-fig4", "--out", str(tmp_path / "A"), "--store", str(tmp_path / "r.sqlite"), "--no-progress"]
    written = []
    for extra in ([], ["-o", "seed=7"]):
        result = cli.invoke(app, base + tiny + extra, terminal_width=200)
        assert result.exit_code == 0 and "computed 1 unit(s); 0 already in" in result.output, result.output
        written.append((tmp_path / "A" / "p2b-fig4-paper.md").read_text())
    seed7 = rep.parse({"n_actions": "5", "early_users": "300", "dim": "4", "n_codes": "16", "seed": "7"})
    with ResultsStore(tmp_path / "fresh.sqlite") as store:
        _, fresh = run(rep, seed7, store, tmp_path / "fresh", progress=False)
    assert written[0] != written[1] and written[1] == fresh.markdown()


def test_fig5_and_its_reference_mode_are_different_units(tmp_path):
    raw = {"dims": "3,4", "early": "300", "n_codes": "8"}
    default, reference = find("p2b-fig5"), find("p2b-fig5-reference")
    default_tasks, reference_tasks = default.tasks(default.parse(raw)), reference.tasks(reference.parse(raw))
    assert [t.params["mode"] for t in reference_tasks] == ["reference"] * 2
    assert {t.key for t in default_tasks}.isdisjoint(t.key for t in reference_tasks)
    assert [t.key for t in default_tasks] == [
        t.key for t in reference.tasks(reference.parse({**raw, "reference_mode": "false"}))
    ]
    _, _, _, paper = run_and_rebuild("p2b-fig5-reference", raw, tmp_path)
    assert paper.name == "p2b-fig5-reference" and [row[0] for row in paper.tables["reward by d"][1:]] == ["3", "4"]
    assert [c.where for c in paper.claims] == ["Fig. 5", "Fig. 5"]


@pytest.mark.slow
def test_fig6_runs_on_marked_stand_ins_without_the_real_files(tmp_path):
    _, _, _, paper = run_and_rebuild("p2b-fig6", {"rounds": "2,5,500", "n_codes": "8"}, tmp_path)
    captions = list(paper.tables)
    assert len(captions) == 2 and all("NOT the real" in caption for caption in captions)
    assert all([row[0] for row in rows[1:]] == ["2", "5"] for rows in paper.tables.values())  # no t = 500 here
    assert all("stand-in data" in c.ours for c in paper.claims if c.statement.startswith("private trails"))


@pytest.mark.slow
def test_fig6_reads_given_arff_files_and_a_changed_file_is_new_work(tmp_path):
    from multilabel_fixture import tmc_arff

    rng = np.random.default_rng(2)
    train, test = tmp_path / "train.arff", tmp_path / "test.arff"
    train.write_text(tmc_arff(rng, 400, 30))
    test.write_text(tmc_arff(rng, 300, 30))
    raw = {"paths": f"tmc2007_500:{train},tmc2007_500:{test}", "rounds": "2,5", "n_codes": "8"}
    _, _, _, paper = run_and_rebuild("p2b-fig6-reference", raw, tmp_path / "first")
    tmc = next(caption for caption in paper.tables if caption.startswith("TextMining"))
    assert "real" in tmc and str(test) in tmc and [row[0] for row in paper.tables[tmc][1:]] == ["2"]
    assert any("real data" in c.ours for c in paper.claims if c.where == "Fig. 6, tmc2007_500")
    test.write_text(tmc_arff(rng, 300, 30))  # same path, new content: the TMC units are recomputed from it
    rep = find("p2b-fig6-reference")
    with ResultsStore(tmp_path / "first" / "r.sqlite") as store:
        summary, again = run(rep, rep.parse(raw), store, tmp_path / "again", progress=False)
    assert len(summary.computed) == 2 and summary.stored == 2  # both TMC values of t; MediaMill's were stored
    assert again.tables[tmc] != paper.tables[tmc]


def test_data_files_enter_the_task_keys_by_content(tmp_path):
    arff, criteo = tmp_path / "m.arff", tmp_path / "train.txt"
    arff.write_text("@relation a\n")
    criteo.write_text("1\t2\n")
    fig6, fig7 = find("p2b-fig6"), find("p2b-fig7")
    fig6_options = fig6.parse({"paths": f"mediamill:{arff}", "rounds": "2"})
    fig7_options = fig7.parse({"path": str(criteo), "rounds": "5", "n_codes": "8", "obd_folder": str(tmp_path)})
    before = [t.key for t in fig6.tasks(fig6_options) + fig7.tasks(fig7_options)]
    mediamill = fig6.tasks(fig6_options)[0].params["files"]
    assert mediamill[0]["path"] == str(arff.resolve()) and len(mediamill[0]["sha256"]) == 64
    assert fig6.tasks(fig6_options)[1].params["files"] is None  # TMC2007: the stand-in
    arff.write_text("@relation b\n")
    criteo.write_text("1\t3\n")
    after = [t.key for t in fig6.tasks(fig6_options) + fig7.tasks(fig7_options)]
    changed = [b != a for b, a in zip(before, after, strict=True)]
    assert changed == [True, False] + [True] * (len(before) - 2)  # all but the TMC stand-in unit


def test_fig7_runs_both_modes_on_the_marked_stand_in_and_obd(tmp_path):
    from privbandits.datasets.obd import default_obd_path

    _, _, _, paper = run_and_rebuild("p2b-fig7", TINY_FIG7, tmp_path)
    titles = ("one-hot codes, a warm copy per user", "reference-compatible: scalar codes, one shared warm agent")
    assert list(paper.tables)[:2] == [f"k = 8, {title}" for title in titles]
    assert [row[0] for row in paper.tables[f"k = 8, {titles[0]}"][1:]] == ["5", "10"]
    assert len(paper.claims) == 6 and "NOT the Criteo log" in paper.notes[0]
    obd = [caption for caption in paper.tables if caption.startswith("Open Bandit")]
    assert len(obd) == (default_obd_path() is not None)


BAD_OPTIONS = [
    ("p2b-fig3", {"seed": "1"}, "p2b-fig3 has no option 'seed'"),
    ("p2b-fig4", {"seed": "abc"}, "option seed: must be an integer (got 'abc')"),
    ("p2b-fig4", {"seed": "-1"}, "option seed: must be >= 0 (got -1)"),
    ("p2b-fig4", {"dim": "0"}, "option dim: must be >= 2 (got 0)"),
    ("p2b-fig4", {"n_actions": "1"}, "option n_actions.0: must be >= 2 (got 1)"),
    ("p2b-fig4", {"early_users": "0,100"}, "option early_users.0: must be >= 1 (got 0)"),
    ("p2b-fig4", {"early_users": "100,x"}, "option early_users: must be a comma-separated list of integers"),
    ("p2b-fig4", {"early_users": ""}, "option early_users: must have at least 1 item(s) (got 0)"),
    ("p2b-fig4", {"n_actions": "10,10"}, "option n_actions: items must be distinct (got 10, 10)"),
    ("p2b-fig4", {"mapping": "cubic"}, "option mapping: must be one of 'linear' or 'softmax' (got 'cubic')"),
    ("p2b-fig4", {"dim": "3", "n_codes": "100"}, "option n_codes: must be at most 66"),
    ("p2b-fig4", {"sed": "7"}, "did you mean 'seed'?"),
    ("p2b-fig5", {"early": "nan"}, "option early: must be an integer (got 'nan')"),
    ("p2b-fig5", {"dims": "6,1"}, "option dims.1: must be >= 2 (got 1)"),
    ("p2b-fig5-reference", {"n_codes": "1"}, "option n_codes: must be >= 2 (got 1)"),
    ("p2b-fig5", {"reference_mode": "maybe"}, "option reference_mode: must be true or false (got 'maybe')"),
    ("p2b-fig6", {"paths": "x.arff"}, "option paths: file not found: 'x.arff'"),
    ("p2b-fig6", {"paths": "mediamill:/no/such.arff"}, "option paths.mediamill.0: must be an existing file"),
    ("p2b-fig6", {"rounds": "2,-5"}, "option rounds.1: must be >= 1 (got -5)"),
    ("p2b-fig6-reference", {"n_codes": "2.5"}, "option n_codes: must be an integer (got '2.5')"),
    ("p2b-fig7", {"path": "/no/such/train.txt"}, "option path: must be an existing file (got '/no/such/train.txt')"),
    ("p2b-fig7", {"obd_folder": "/no/such/folder"}, "option obd_folder: must be an existing folder"),
    ("p2b-fig7", {"rounds": "20,400"}, "option rounds: must be at most stand_in_interactions = 300 without a path"),
    ("p2b-fig7", {"n_codes": "32,,"}, "option n_codes: must be a comma-separated list of integers"),
    ("p2b-fig7", {"stand_in_users": "0"}, "option stand_in_users: must be >= 1 (got 0)"),
]


@pytest.mark.parametrize(("name", "raw", "message"), BAD_OPTIONS)
def test_bad_options_are_refused_in_one_line_naming_the_key(name, raw, message):
    with pytest.raises(OptionError) as caught:
        find(name).parse(raw)
    assert message in str(caught.value) and "\n" not in str(caught.value)
