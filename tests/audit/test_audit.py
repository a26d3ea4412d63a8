"""The empirical privacy auditor: its statistics, and audits that pass on the mechanisms as calibrated
and fail on deliberately weakened copies (fixed seeds, CI sizes)."""

from __future__ import annotations

import math

import dp_accounting
import numpy as np
import pytest
from typer.testing import CliRunner

from privbandits.audit import stats
from privbandits.audit.base import Weakening
from privbandits.audit.cli import MECHANISM_NAMES
from privbandits.audit.run import MECHANISMS, audit_unit, mechanism
from privbandits.cli import app
from privbandits.experiments.store import ResultsStore

REAL = {"scale": 1.0, "drop": False}


def test_clopper_pearson_matches_closed_forms():
    """No success in n: 1 − (1 − c)^(1/n); all successes: 1; one success bounds above the plain rate."""
    assert stats.clopper_pearson_upper(0, 1000, 0.975) == pytest.approx(1 - 0.025 ** (1 / 1000), rel=1e-9)
    assert stats.clopper_pearson_upper(50, 50, 0.975) == 1.0
    upper = stats.clopper_pearson_upper(np.array([1, 10, 100]), 1000, 0.95)
    assert np.all(upper > np.array([1, 10, 100]) / 1000) and np.all(np.diff(upper) > 0)


def test_epsilon_lower_bound_formula():
    """ln((1 − δ − β)/α), floored at 0 (no evidence is ε ≥ 0)."""
    assert stats.epsilon_lower_bound(0.01, 0.1, 0.0) == pytest.approx(math.log(90.0))
    assert stats.epsilon_lower_bound(0.01, 0.1, 0.05) == pytest.approx(math.log(85.0))
    assert stats.epsilon_lower_bound(0.6, 0.5, 0.0) == 0.0


@pytest.mark.parametrize(("epsilon", "delta"), [(0.5, 1e-5), (1.0, 1e-5), (4.0, 1e-3)])
def test_gaussian_pair_epsilon_inverts_the_analytic_gaussian(epsilon, delta):
    """The exact ε of a pair 1/σ apart, σ from dp-accounting's analytic Gaussian (Balle & Wang 2018)."""
    sigma = dp_accounting.get_sigma_gaussian(epsilon, delta)
    assert stats.gaussian_pair_epsilon(1.0 / sigma, delta) == pytest.approx(epsilon, abs=2e-3)


def test_randomized_response_bound_is_below_and_near_its_epsilon():
    """Randomized response at ε = 2: the bound is at most 2 and, with 50,000 a side, above 1.8."""
    rng = np.random.default_rng(3)
    keep = math.exp(2.0) / (1 + math.exp(2.0))
    out0 = (rng.random((50_000, 1)) > keep).astype(np.int64)
    out1 = (rng.random((50_000, 1)) < keep).astype(np.int64)
    bound = stats.audit_samples(out0, out1, 0.0, discrete=True)
    assert 1.8 < bound.epsilon_lower <= 2.0, bound


def test_mirror_test_is_used_when_it_is_the_strong_one():
    """D′ concentrated on a value D rarely takes: the bound comes from the mirror orientation too."""
    rng = np.random.default_rng(4)
    out0 = (rng.random((20_000, 1)) < 0.5).astype(np.int64)  # D: 0 or 1
    out1 = np.where(rng.random((20_000, 1)) < 0.99, 2, 0)  # D′: 2 (never under D) or 0
    bound = stats.audit_samples(out1, out0, 0.0, discrete=True)
    swapped = stats.audit_samples(out0, out1, 0.0, discrete=True)
    assert bound.epsilon_lower > 5 and swapped.epsilon_lower > 5
    assert bound.mirror != swapped.mirror


# mechanism -> (options, samples for the calibrated audit, samples for the weakened copy)
SIZES = {
    "mpc_bandit.action": ({"backend": "mpc"}, 3_000, None),
    "fclub.pvt": ({}, 2_000, 2_000),
    "dp_linucb.joint": ({}, 2_000, 2_000),
    "dp_linucb.local": ({}, 4_000, 4_000),
    "dp_linucb.shuffle": ({"batch_size": 20}, 400, 400),
    "p2b.crowd_blending": ({}, 100_000, 2_000),
}


@pytest.mark.parametrize("name", sorted(SIZES))
def test_calibrated_mechanism_bound_is_within_its_claim(name):
    """As calibrated, the 95% lower bound is at most the claimed ε (and at most the pair's exact ε + 0.1);
    P2B is not DP: at δ = 0 its attack beats the claimed ε(p)."""
    options, samples, _ = SIZES[name]
    result = audit_unit(name, options, samples, 11, REAL)
    if not result["dp"]:
        assert result["epsilon_lower"] > result["claimed_epsilon"], result
        return
    assert result["epsilon_lower"] <= result["claimed_epsilon"], result
    assert result["epsilon_lower"] <= result["pair_epsilon"] + 0.1, result


@pytest.mark.parametrize("name", sorted(SIZES))
def test_weakened_copy_is_caught(name):
    """Each mechanism's declared weakened copy (exploration × 0.5 for the ε-greedy action; a noise term or
    P2B's pre-sampling dropped for the others) gets a lower bound above the claimed ε."""
    options, _, samples = SIZES[name]
    if name == "mpc_bandit.action":  # × 0.5 needs more samples than the MPC path affords in CI: the twin
        options, samples = {"backend": "plaintext"}, 30_000
    weakened = mechanism(name, options).weakened
    result = audit_unit(name, options, samples, 12, weakened.as_dict())
    assert result["epsilon_lower"] > result["claimed_epsilon"], result


@pytest.mark.parametrize(("name", "scale"), [("dp_linucb.local", 0.05), ("dp_linucb.joint", 0.005)])
def test_noise_scaled_far_down_is_caught(name, scale):
    """A calibration bug that shrinks the noise is caught, not only a dropped term: at these scales the
    pair's exact ε exceeds 3 × the claim and the bound exceeds the claim."""
    result = audit_unit(name, {}, 4_000, 13, {"scale": scale, "drop": False})
    assert result["pair_epsilon"] > 3 * result["claimed_epsilon"]
    assert result["epsilon_lower"] > result["claimed_epsilon"], result


def test_halving_the_loose_gaussian_calibrations_keeps_their_claims():
    """Noise × 0.5 still meets the claim for the Gaussian mechanisms (their calibrations are that loose):
    the pair's exact ε at half the noise stays below the claimed ε = 1."""
    for name in ("fclub.pvt", "dp_linucb.joint", "dp_linucb.local"):
        audit = mechanism(name)
        assert audit.pair_epsilon(Weakening(scale=0.5)) < audit.claimed_epsilon


def test_p2b_distinguishing_event_has_probability_p_to_the_l():
    """Under D the code is released (all l take part) with probability p^l, under D′ never."""
    audit = mechanism("p2b.crowd_blending")
    present, absent = audit.sample(200_000, np.random.default_rng(5), Weakening())
    p_l = 0.5**10
    assert not absent.any()
    assert abs(np.mean(present > 0) - p_l) < 4.5 * math.sqrt(p_l / 200_000)
    assert set(np.unique(present)) == {0, 10}


def test_weakening_is_checked():
    with pytest.raises(ValueError, match=r"weakening scale must be in \(0, 1\], got 2"):
        Weakening(scale=2)
    with pytest.raises(ValueError, match="mechanism must be one of 'mpc_bandit.action'.*got 'nope'"):
        mechanism("nope")


def test_cli_names_match_the_registry():
    assert MECHANISM_NAMES == tuple(MECHANISMS)


def test_cli_audit_stores_units_and_writes_the_report(tmp_path):
    """Two units a mechanism in the store; a rerun reuses them; the report names each mechanism."""
    runner = CliRunner()
    store, out = tmp_path / "s.sqlite", tmp_path / "audit"
    args = ["audit", "dp_linucb.local", "p2b.crowd_blending", "--samples", "500", "--store", str(store),
            "--out", str(out)]  # fmt: skip
    first = runner.invoke(app, args)
    assert first.exit_code == 0, first.output
    with ResultsStore(store) as results:
        assert results.count() == 5  # 2 a mechanism and the calibration tables
    again = runner.invoke(app, args)
    assert again.exit_code == 0, again.output
    with ResultsStore(store) as results:
        assert results.count() == 5
    text = (out / "audit.md").read_text()
    assert "| dp_linucb.local |" in text and "| p2b.crowd_blending |" in text and "vertical.o3m" in text
    assert "## Calibration: the paper's σ against the analytic Gaussian" in text
    assert (out / "audit.json").is_file()


def test_cli_audit_refuses_bad_input(tmp_path):
    runner = CliRunner()
    bad = runner.invoke(app, ["audit", "nope", "--store", str(tmp_path / "s"), "--out", str(tmp_path / "o")])
    assert bad.exit_code == 2
    assert "mechanism must be one of mpc_bandit.action" in bad.output and "got 'nope'" in bad.output
    few = runner.invoke(app, ["audit", "--samples", "1", "--store", str(tmp_path / "s")])
    assert few.exit_code == 2 and "--samples must be in [2, 100000] (runs on each neighbouring input" in few.output
    assert not (tmp_path / "s").exists()


def test_site_has_an_audit_page_from_the_stored_units(tmp_path):
    """`privbandits site` writes audit/index.html from the stored units (the larger run of a mechanism
    wins) and links it from the index with the count of DP mechanisms that pass both directions."""
    from privbandits.experiments.audits import AuditPlan, run_plan, stored_audits
    from privbandits.experiments.site import build_site

    with ResultsStore(tmp_path / "s.sqlite") as store:
        run_plan(AuditPlan(("dp_linucb.local", "p2b.crowd_blending"), 300), store)
        _, tables = run_plan(AuditPlan(("dp_linucb.local",), 600), store)
        shown = stored_audits(store)
        assert [(r["mechanism"], r["samples_per_side"]) for r in shown] == [
            ("dp_linucb.local", 600), ("dp_linucb.local", 600), ("p2b.crowd_blending", 300),
            ("p2b.crowd_blending", 300)]  # fmt: skip
        build_site(store, tmp_path / "site", [])
    page = (tmp_path / "site" / "audit" / "index.html").read_text()
    assert "dp_linucb.local" in page and "verdict-yes" in page and "not DP" in page
    assert "Accounting: PLD against RDP" in page and f"{tables['composition'][0]['pld_epsilon']:.4g}" in page
    index = (tmp_path / "site" / "index.html").read_text()
    assert '<a href="audit/index.html">1 of 1 DP mechanisms</a>' in index


def test_an_audit_keys_its_noise_sampler_so_one_of_an_earlier_sampler_is_neither_reused_nor_shown(tmp_path):
    """The snapping fix changed every calibration without changing any audit option: the sampler's name keys each
    audit unit, a stored audit of an earlier sampler is not shown, and this code refuses to run one."""
    from privbandits.audit.run import FUNCTION, audit_unit
    from privbandits.experiments.audits import AuditPlan, stored_audits
    from privbandits.experiments.tasks import Task
    from privbandits.privacy.noise import NOISE_SAMPLER

    plan = AuditPlan(("dp_linucb.local",), 300)
    assert {task.params["noise_sampler"] for task in plan.tasks()} == {NOISE_SAMPLER}
    with ResultsStore(tmp_path / "s.sqlite") as store:
        for task in plan.tasks():
            old = {key: value for key, value in task.params.items() if key != "noise_sampler"}
            store.put(Task(FUNCTION, old, label="before the sampler was keyed"), {"mechanism": "stale"}, 0.0)
            store.put(Task(FUNCTION, {**old, "noise_sampler": "discrete_gaussian/grid12"}, label="grid12"),
                      {"mechanism": "stale"}, 0.0)  # fmt: skip
        assert stored_audits(store) == []
        assert store.stored_keys([task.key for task in plan.tasks()]) == set()
    with pytest.raises(ValueError, match="noise_sampler must be 'discrete_gaussian/grid16/snapped-increments'"):
        audit_unit("dp_linucb.local", {}, 10, 0, REAL, noise_sampler="discrete_gaussian/grid12")


@pytest.mark.parametrize("count", [9, 10, 11])
def test_p2b_audit_threshold_rule_is_the_shufflers(count):
    """The audit's released count (count if count >= l else 0) is what the project's Shuffler releases."""
    from privbandits.comm import InMemoryNetwork
    from privbandits.privacy.ledger import PrivacyLedger
    from privbandits.protocols.p2b.core import DeviceHost, EncodedReport, Server, Shuffler

    net = InMemoryNetwork(record=True)
    shuffler = Shuffler("shuffler", net, threshold=10, participation=0.5, n_codes=4, rng=np.random.default_rng(0),
                        ledger=PrivacyLedger())  # fmt: skip
    Server("server", net, n_arms=2)
    devices = DeviceHost("devices", net)
    with net.phase("report"):
        for user in range(count):
            devices.send_report(user, "shuffler", EncodedReport(0, 0, 1))
        devices.close_batch("shuffler")
        shuffler.release_encoded("server")
    batch = next(e.message for e in net.transcript if e.receiver == "server")
    assert len(batch.codes) == (count if count >= 10 else 0)


def test_the_book_has_an_audit_section_from_the_stored_audits_that_a_results_block_can_quote(tmp_path):
    """`report --book` ends with `privbandits audit`'s section when the store holds audits (the table and the
    calibration tables, as audit.md); a docs block `<!-- results audit -->` is checked against it."""
    from privbandits.cli import app
    from privbandits.experiments.audits import AuditPlan, book_section, run_plan
    from privbandits.experiments.book import book_sections, unbacked_numbers

    store, out, book = tmp_path / "r.sqlite", tmp_path / "out", tmp_path / "results.md"
    ran = CliRunner().invoke(app, ["run", "vertical-synthetic-demo", "-o", "horizon=20", "--store", str(store),
                                   "--out", str(out)])  # fmt: skip
    assert ran.exit_code == 0, ran.output
    with ResultsStore(store) as results:
        assert book_section(results) is None  # no audit yet: no section
        audits, _ = run_plan(AuditPlan(("dp_linucb.local",), 300), results)
    command = ["report", "--store", str(store), "--out", str(out), "--book", str(book)]
    made = CliRunner().invoke(app, command)
    assert made.exit_code == 0, made.output
    sections = book_sections(book.read_text())
    assert list(sections) == ["vertical-synthetic-demo -o horizon=20", "audit"]
    audit = sections["audit"]
    assert audit.startswith("## `privbandits audit`\n\n### Empirical privacy audit\n")
    assert "#### Calibration: the paper's σ against the analytic Gaussian" in audit
    lower = f"{audits[0]['epsilon_lower']:.3g}"
    assert "| dp_linucb.local | (ε, δ)-local DP per report | 1 | 1e-05 | " in audit and f"| {lower} |" in audit
    block = "<!-- results audit -->\n{}\n<!-- /results -->"
    assert unbacked_numbers(block.format(f"ε ≥ {lower}"), book.read_text()) == []
    assert unbacked_numbers(block.format("ε ≥ 0.987654"), book.read_text()) == ["audit: 0.987654"]
