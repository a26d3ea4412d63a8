"""The mutation suite as ``privbandits audit`` runs it: each mutant a unit of the store, reported in its own table,
and the command failing (exit 1) when a mutant is not caught; the mutants' own tests are in test_end_to_end.py."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from privbandits.audit import mutants
from privbandits.audit.cli import MUTANT_NAMES
from privbandits.cli import app
from privbandits.experiments.store import ResultsStore

P2B = "mutant.p2b.threshold_dropped"
"""The cheapest mutant to audit (a sample is one thresholded batch)."""


def _audit(tmp_path, *args: str):
    return CliRunner().invoke(app, ["audit", *args, "--store", str(tmp_path / "s.sqlite"), "--out",
                                    str(tmp_path / "out")])  # fmt: skip


def test_cli_names_match_the_registry():
    assert MUTANT_NAMES == tuple(mutants.MUTANTS)


def test_a_mutant_is_a_stored_unit_keyed_by_its_spec_and_reported_in_the_mutation_suites_table(tmp_path):
    done = _audit(tmp_path, P2B, "--samples", "200")
    assert done.exit_code == 0, done.output
    assert f"[1/2] done: audit {P2B} (mutant, by e2e.p2b.pipeline)" in done.output
    assert "mutation suite" in done.output and "caught" in done.output and "NOT caught" not in done.output
    with ResultsStore(tmp_path / "s.sqlite") as results:
        (unit,) = results.units_of(mutants.FUNCTION)
        assert results.count() == 2  # the mutant and the calibration tables
    assert {key: unit.params[key] for key in ("mutant", "audit", "options", "samples", "seed")} == {
        "mutant": P2B, "audit": "e2e.p2b.pipeline", "options": {}, "samples": 200, "seed": 0}  # fmt: skip
    assert unit.result["caught"] and unit.result["epsilon_lower"] > unit.result["claimed_epsilon"]
    again = _audit(tmp_path, P2B, "--samples", "200")  # reused, not rerun
    assert again.exit_code == 0, again.output
    with ResultsStore(tmp_path / "s.sqlite") as results:
        assert results.count() == 2
    text = (tmp_path / "out" / "audit.md").read_text()
    lower = f"{unit.result['epsilon_lower']:.3g}"
    assert "## Mutation suite" in text and f"| {P2B} | p2b: shuffler releases crowds of 1 | e2e.p2b.pipeline |" in text
    assert f"| {lower} | 200 |" in text and text.rstrip().count("| caught |") == 1
    report = json.loads((tmp_path / "out" / "audit.json").read_text())
    assert [entry["mutant"] for entry in report["mutants"]] == [P2B] and report["audits"] == []


def test_a_mutants_options_samples_and_seed_key_its_unit():
    from privbandits.experiments.audits import AuditPlan

    def key(**changes):
        plan = AuditPlan(**{"names": ("mutant.joint.tree_noise_tenth",), "samples": 10, **changes})
        (task,) = plan.tasks()
        return task.key

    keys = {key(), key(samples=11), key(seed=1), key(options=(("mutant.joint.tree_noise_tenth", (("dim", 2),)),))}
    assert len(keys) == 4
    quick = AuditPlan(("mutant.fclub.server_hundredth",), sizes=(("mutant.fclub.server_hundredth", 400),)).tasks()
    full = AuditPlan(("mutant.fclub.server_hundredth",)).tasks()
    assert [task.params["samples"] for task in quick + full] == [400, 10_000]


def test_cli_exits_1_when_a_mutant_is_not_caught(tmp_path, monkeypatch):
    """The P2B mutant given back its unmodified shuffler: nothing to catch, so the command fails."""
    from privbandits.protocols.p2b.core import Shuffler

    unmodified = mutants.MUTANTS[P2B]._replace(options={"shuffler": Shuffler})
    monkeypatch.setitem(mutants.MUTANTS, P2B, unmodified)
    done = _audit(tmp_path, P2B, "--samples", "200")
    assert done.exit_code == 1, done.output
    assert f"MUTANT NOT CAUGHT: {P2B} (a lower bound at or below its claimed ε)" in done.output
    assert "| NOT caught |" in (tmp_path / "out" / "audit.md").read_text()


@pytest.mark.parametrize(("args", "message"), [
    (["mutant.nope"], "mechanism must be one of mpc_bandit.action"),
    (["-m", P2B, "-m", P2B], f"mechanism {P2B!r} is given 2 times"),
    ([P2B, "-o", "threshold=0"], f"-o for {P2B}: "),
    ([P2B, "-o", "horizon=4"], "no mechanism named takes 'horizon'; they take n_codes, participation, threshold"),
    ([P2B, "--samples", "1000000"], "--samples must be in [2, 100000]"),
])  # fmt: skip
def test_cli_refuses_a_bad_mutant_request_in_one_line_with_exit_2_before_running(args, message, tmp_path):
    done = _audit(tmp_path, *args)
    assert done.exit_code == 2, done.output
    assert message in done.output and done.output.strip().startswith("error: ")
    assert len(done.output.strip().splitlines()) == 1
    assert not (tmp_path / "s.sqlite").exists()


def test_the_book_and_the_site_show_the_stored_mutants(tmp_path):
    from privbandits.experiments.audits import AuditPlan, book_section, run_plan, stored_mutants
    from privbandits.experiments.site import build_site

    with ResultsStore(tmp_path / "s.sqlite") as store:
        run_plan(AuditPlan(("p2b.crowd_blending", P2B), 200), store)
        run_plan(AuditPlan((P2B,), 300), store)  # the larger unit is shown
        (shown,) = stored_mutants(store)
        section = book_section(store)
        build_site(store, tmp_path / "site", [])
    assert shown["samples_per_side"] == 300
    assert "#### Mutation suite" in section and f"| {P2B} |" in section and "| 300 |" in section
    page = (tmp_path / "site" / "audit" / "index.html").read_text()
    assert "<h2>Mutation suite</h2>" in page and P2B in page
    assert "1 of 1 mutants caught" in (tmp_path / "site" / "index.html").read_text()
