"""fclub-reference-gap: the reference code's recorded runs beside ours on its own users (issue 15), from a fixture
checkout (the project does not ship the reference code; no network)."""

from __future__ import annotations

import numpy as np
from typer.testing import CliRunner

from privbandits.cli import app
from privbandits.papers.fclub import gap
from privbandits.papers.fclub.options import GapOptions
from privbandits.papers.fclub.reference import REFERENCE_CODE_RUNS

runner = CliRunner()


def fake_checkout(root):
    """A folder laid out like the reference checkout: 4 θ's of the reference construction × 10 users each."""
    rng = np.random.default_rng(0)
    head = rng.standard_normal((4, 9))
    thetas = np.concatenate([head / np.linalg.norm(head, axis=1, keepdims=True), np.ones((4, 1))], axis=1) / np.sqrt(2)
    folder = root / "raw_data" / "synthetic_data"
    folder.mkdir(parents=True)
    np.save(folder / "10_theta.npy", np.repeat(thetas, 10, axis=0))
    return root


def test_without_a_reference_checkout_there_is_nothing_to_run_and_the_report_says_so(tmp_path):
    options = GapOptions(horizon=14, seeds=1)
    assert gap.tasks(options) == []
    report = gap.report(options, {}, tmp_path)
    assert report.notes[0].startswith("SKIPPED: needs -o reference_dir=")


def test_tasks_cover_every_algorithm_ablation_and_seed_with_distinct_keys(tmp_path):
    options = GapOptions(horizon=14, seeds=2, reference_dir=fake_checkout(tmp_path))
    tasks = gap.tasks(options)
    expected = sum(len(gap.ABLATIONS[name]) for name in options.algorithms) * 2
    assert len(tasks) == expected and len({t.key for t in tasks}) == expected
    assert all(t.params["setting"]["kind"] == "reference-synthetic" and t.params["config"] for t in tasks)
    only = GapOptions(horizon=14, seeds=2, reference_dir=tmp_path, ablation=False)
    assert len(gap.tasks(only)) == len(options.algorithms) * 2


def test_the_reproduction_runs_and_its_report_rebuilds_from_the_store(tmp_path):
    checkout = fake_checkout(tmp_path / "reference")
    store, out, again = tmp_path / "r.sqlite", tmp_path / "out", tmp_path / "again"
    options = [
        "-o",
        f"reference_dir={checkout}",
        "-o",
        "horizon=30",
        "-o",
        "seeds=2",
        "-o",
        "algorithms=FCLUB-DC,FCLUB",
    ]
    ran = runner.invoke(app, ["run", "fclub-reference-gap", *options, "--store", str(store), "--out", str(out),
                              "--no-progress"])  # fmt: skip
    assert ran.exit_code == 0, ran.output
    text = (out / "fclub-reference-gap-paper.md").read_text()
    assert "Ablation: each reference behaviour on and off" in text and "WHICH OPTION CLOSES THE GAP" in text
    assert f"recorded at T = {REFERENCE_CODE_RUNS['horizon']:,}" in text  # not comparable at T = 30
    rebuilt = runner.invoke(
        app, ["report", "fclub-reference-gap", *options, "--store", str(store), "--out", str(again)]
    )
    assert rebuilt.exit_code == 0, rebuilt.output
    assert (again / "fclub-reference-gap-paper.md").read_text() == text


def test_the_recorded_reference_runs_are_ten_seeds_each():
    for name in ("FCLUB-DC", "CDP-FCLUB-DC", "Homo-DC", "FCLUB"):
        assert len(REFERENCE_CODE_RUNS["regret"][name]) == 10
    assert REFERENCE_CODE_RUNS["horizon"] == 2**14 - 2


def test_options_added_later_leave_the_stored_runs_keys_alone():
    """Issue 29's options enter a run's digest only when on: the issue-15 runs keep the keys they were stored
    under (these digests, measured on the code before the options existed); the new Homo-DC preset is new."""
    from privbandits.papers.fclub.runs import Setting, config_digest

    where, T = Setting(kind="reference-synthetic"), 2**14 - 2
    assert config_digest("FCLUB-DC", where, T) == "c53a7e12eef2b28b"
    assert config_digest("FCLUB", where, T) == "1ec4805a55f416b5"
    issue_15 = {"ridge_in_recommendation_only": False, "carry_synchronized_copies": False}
    assert config_digest("Homo-DC", where, T, issue_15) == "cfc784b50d029a71"
    assert config_digest("Homo-DC", where, T) not in ("cfc784b50d029a71", None)
