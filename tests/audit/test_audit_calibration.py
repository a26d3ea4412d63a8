"""Analytic Gaussian calibration (Balle & Wang 2018), PLD accounting with RDP as cross-check, the paper's
calibration kept by name, and audits of the analytic calibrations (tight: halving their noise is caught)."""

from __future__ import annotations

import math

import pytest

from privbandits.audit.base import Weakening
from privbandits.audit.calibrations import composition_rows, sigma_rows
from privbandits.audit.run import audit_unit, mechanism
from privbandits.privacy.calibration import analytic_gaussian_std, pld_epsilon, rdp_epsilon
from privbandits.privacy.tree_mechanism import REPLACE_SENSITIVITY, NoiseVariance, node_variance
from privbandits.protocols.dp import JointDPLinUCB, LocalDPLinUCB, ShuffleDPLinUCB, joint_noise_std
from privbandits.protocols.dp.local import REPORT_SENSITIVITY
from privbandits.protocols.fclub.config import Calibration, FCLUBConfig
from privbandits.validation import InvalidInputError


@pytest.mark.parametrize(("epsilon", "delta", "compositions"), [(1.0, 1e-5, 1), (1.0, 1e-5, 12), (5.0, 1e-3, 4)])
def test_analytic_std_is_exactly_its_epsilon_under_pld(epsilon, delta, compositions):
    """PLD accounting of the analytic σ gives back ε (tight); RDP, an upper bound, gives more."""
    std = analytic_gaussian_std(epsilon, delta, 2.0, compositions)
    assert pld_epsilon(std, compositions, delta, 2.0) == pytest.approx(epsilon, abs=2e-3)
    assert rdp_epsilon(std, compositions, delta, 2.0) > epsilon


def test_pld_matches_the_issue_example_and_is_below_rdp():
    """Noise multiplier 5, 100 compositions, δ = 1e-5: 10.00 with PLD, 10.73 with RDP (issue 31)."""
    rows = composition_rows()
    first = rows[0]
    assert (first["noise_multiplier"], first["compositions"]) == (5.0, 100)
    assert first["pld_epsilon"] == pytest.approx(10.00, abs=0.01)
    assert first["rdp_epsilon"] == pytest.approx(10.73, abs=0.01)
    assert all(row["pld_epsilon"] < row["rdp_epsilon"] for row in rows)


def test_paper_sigma_is_never_below_the_analytic_sigma_at_the_papers_settings():
    """At every claimed ε of the table, the paper's σ is at least the analytic one, and its real ε (PLD)
    is within the claim: the paper calibrations are valid here, only loose."""
    for row in sigma_rows(horizon=64, fclub_horizon=64):
        assert row["ratio"] > 1.0, row
        assert row["paper_pld_epsilon"] <= row["epsilon"], row


def test_analytic_calibration_is_the_default_and_the_paper_stays_available_by_name():
    kwargs = {"epsilon": 1.0, "delta": 1e-5, "horizon": 100, "rng": 0}
    assert JointDPLinUCB(3, 2, calibration="paper", **kwargs).noise_std == joint_noise_std(1.0, 1e-5, 100, dim=2)
    assert JointDPLinUCB(3, 2, **kwargs).noise_std == JointDPLinUCB(3, 2, calibration="analytic", **kwargs).noise_std
    joint = JointDPLinUCB(3, 2, calibration="analytic", **kwargs)
    analytic = analytic_gaussian_std(1.0, 1e-5, REPLACE_SENSITIVITY, joint.levels)  # at Δ = 2, then the slack
    assert joint.noise_std == pytest.approx(analytic / REPLACE_SENSITIVITY * joint.sensitivity, rel=1e-12)
    local = LocalDPLinUCB(3, 2, calibration="analytic", **kwargs)
    analytic = analytic_gaussian_std(1.0, 1e-5, REPORT_SENSITIVITY)  # at Δ = √6, then the slack
    sensitivity = local._details["effective_sensitivity"]
    assert local.noise_std == pytest.approx(analytic / REPORT_SENSITIVITY * sensitivity, rel=1e-12)
    assert ShuffleDPLinUCB(3, 2, calibration="analytic", batch_size=10, **kwargs).noise_std == local.noise_std
    with pytest.raises(InvalidInputError, match="calibration must be one of 'paper', 'analytic', got 'tight'"):
        LocalDPLinUCB(3, 2, calibration="tight", **kwargs)


def test_fclub_analytic_noise_variance():
    """FCLUB's noise_variance = "analytic": ν nodes of sensitivity 2 at exactly (ε, δ)."""
    config = FCLUBConfig(noise_variance="analytic")
    calibration = Calibration(config, 3, 10, 2)
    std, sensitivity = calibration.noise_std(5), calibration.effective_sensitivity()
    assert calibration.form_std(5) ** 2 == pytest.approx(node_variance(1.0, config.delta, 5, NoiseVariance.ANALYTIC))
    assert std == pytest.approx(calibration.form_std(5) / REPLACE_SENSITIVITY * sensitivity, rel=1e-12)
    assert pld_epsilon(std, 5, config.delta, sensitivity) == pytest.approx(config.epsilon, abs=2e-3)


@pytest.mark.parametrize("name", ["dp_linucb.joint@analytic", "fclub.pvt@analytic"])
def test_analytic_tree_is_tight_on_the_audit_pair(name):
    """The audit's pair differs by exactly the sensitivity on every node: its exact ε is the claim."""
    audit = mechanism(name)
    assert audit.pair_epsilon(Weakening()) == pytest.approx(audit.claimed_epsilon, abs=1e-6)
    assert audit.weakened == Weakening(scale=0.5)


@pytest.mark.parametrize(("name", "samples"), [("dp_linucb.joint@analytic", 100_000), ("fclub.pvt@analytic", 20_000)])
def test_analytic_tree_audits_pass_and_catch_half_the_noise(name, samples):
    """As calibrated the bound stays within the claim; with half the noise it exceeds it."""
    real = audit_unit(name, {}, samples, 21, {"scale": 1.0, "drop": False})
    assert real["epsilon_lower"] <= real["claimed_epsilon"], real
    half = audit_unit(name, {}, samples, 22, {"scale": 0.5, "drop": False})
    assert half["epsilon_lower"] > half["claimed_epsilon"], half
    assert not math.isinf(half["pair_epsilon"])
