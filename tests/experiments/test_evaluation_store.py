"""Off-policy evaluations as results-store units (experiments/evaluations.py): keyed by their complete spec, the
budget split over the policies, refused when the log changed; the book's section and the site's page from the
store alone."""

from __future__ import annotations

import math

import pytest
from typer.testing import CliRunner

from privbandits.experiments.evaluations import EvaluationPlan, book_section, run_tasks, stored
from privbandits.experiments.site import build_site
from privbandits.experiments.store import ResultsStore
from privbandits.logs import save_log, synthetic_feedback

PRIVACY = {"epsilon": 2.0, "delta": 1e-6, "weight_clip": 10.0, "reward_range": [0.0, 1.0], "interval_share": 0.2,
           "reproducible": True}  # fmt: skip


@pytest.fixture
def log_file(tmp_path):
    return save_log(synthetic_feedback(200, 3, 2, reward_type="logistic", seed=4), tmp_path / "log.npz")


def test_a_unit_is_keyed_by_its_complete_spec_and_the_log_content(log_file):
    plan = EvaluationPlan(log_file, ("linucb",), ("ips",))
    (task,) = plan.tasks()
    assert task.params["log"]["sha256"] and task.params["samplers"]
    changed = [EvaluationPlan(log_file, ("linucb",), ("ips",), seed=1), EvaluationPlan(log_file, ("linucb",), ("dr",)),
               EvaluationPlan(log_file, ("linucb",), ("ips",), privacy=PRIVACY)]  # fmt: skip
    assert len({task.key, *(other.tasks()[0].key for other in changed)}) == 4
    save_log(synthetic_feedback(200, 3, 2, reward_type="logistic", seed=5), log_file)
    assert plan.tasks()[0].key != task.key  # the same path, other records
    with pytest.raises(ValueError, match="changed since the unit was planned"):
        task.run()


def test_the_commands_budget_is_split_over_its_policies_and_estimators(log_file, tmp_path):
    plan = EvaluationPlan(log_file, ("linucb", "uniform"), ("ips", "snips"), privacy=PRIVACY)
    assert [task.params["privacy"]["epsilon"] for task in plan.tasks()] == [1.0, 1.0]
    with ResultsStore(tmp_path / "s.sqlite") as store:
        units = run_tasks(plan.tasks(), store)
    total = math.fsum(entry["epsilon"] for unit in units for entry in unit["ledger"])
    assert total == pytest.approx(2.0) and all(unit["spent"]["delta"] == pytest.approx(5e-7) for unit in units)


def test_the_book_section_and_the_site_page_come_from_the_store(log_file, tmp_path):
    plan = EvaluationPlan(log_file, ("uniform",), ("ips", "dr"), over_epsilon=(1.0, 4.0), repeats=10)
    with ResultsStore(tmp_path / "s.sqlite") as store:
        assert book_section(store) is None
        run_tasks(plan.tasks() + plan.sweep_tasks(), store)
        units, sweeps = stored(store)
        section = book_section(store)
        build_site(store, tmp_path / "site", [])
    assert len(units) == 1 and len(sweeps) == 1
    assert section is not None and "## `privbandits evaluate`" in section and "DP estimators' error over ε" in section
    estimate = units[0]["rows"][0]["estimate"]
    assert f"| log.npz | uniform | 100 / 100 | ips | {estimate:.4g} |" in section
    page = (tmp_path / "site" / "evaluation" / "index.html").read_text()
    assert "Off-policy evaluation" in page and "dp-error.png" in page
    assert (tmp_path / "site" / "evaluation" / "dp-error.png").is_file()
    assert 'href="evaluation/index.html"' in (tmp_path / "site" / "index.html").read_text()


@pytest.mark.slow  # a reproduction's run and report (the book needs one): several seconds
def test_report_book_ends_with_the_evaluate_section(log_file, tmp_path):
    from privbandits.cli import app

    store, out, book = tmp_path / "r.sqlite", tmp_path / "out", tmp_path / "results.md"
    runner = CliRunner()
    ran = runner.invoke(app, ["run", "vertical-synthetic-demo", "-o", "horizon=20", "--store", str(store),
                              "--out", str(out)])  # fmt: skip
    assert ran.exit_code == 0, ran.output
    evaluated = runner.invoke(app, ["evaluate", str(log_file), "uniform", "--store", str(store), "--out", str(out)])
    assert evaluated.exit_code == 0, evaluated.output
    made = runner.invoke(app, ["report", "--store", str(store), "--out", str(out), "--book", str(book)])
    assert made.exit_code == 0, made.output
    text = book.read_text()
    assert text.index("## `privbandits run vertical-synthetic-demo") < text.index("## `privbandits evaluate`")
