"""The one accountant: PLD ε with RDP beside it, recorded by every DP ledger; equal to the claim where calibration is
analytic; per-user composition (a joint-DP user's several rounds, FCLUB's worst user)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from privbandits.envs.clustered import ClusteredLinearBandit
from privbandits.privacy.accountant import Release, account, ledger_epsilons, merged, pld_epsilon, rdp_epsilon
from privbandits.privacy.tree_mechanism import accounted_epsilon
from privbandits.protocols.dp.joint import JointDPLinUCB
from privbandits.protocols.dp.local import LocalDPLinUCB
from privbandits.protocols.fclub.config import FCLUBConfig
from privbandits.protocols.fclub.driver import run_fclub

DELTA = 1e-5


def _rounds(learner, n: int) -> None:
    rng = np.random.default_rng(0)
    for _ in range(n):
        contexts = rng.normal(size=(learner.n_arms, learner.dim)) / 3
        learner.update(contexts, learner.select(contexts), float(rng.uniform(-1, 1)))


def test_pld_is_below_rdp_and_composes_gaussians_and_laplaces():
    gaussian, laplace = Release.gaussian(3.0, 1.0, 5), Release.laplace(2.0, 1.0, 3)
    both = account([gaussian, laplace], DELTA)
    assert 0 < both.pld_epsilon < both.rdp_epsilon < math.inf
    assert both.pld_epsilon > max(pld_epsilon([gaussian], DELTA), pld_epsilon([laplace], DELTA))
    assert pld_epsilon([], DELTA) == 0.0 and pld_epsilon([Release.gaussian(1.0, 1.0, 0)], DELTA) == 0.0
    assert pld_epsilon([Release.gaussian(0.0, 1.0)], DELTA) == math.inf
    # a Gaussian of std σ at sensitivity Δ, k times, is one of std σ at Δ√k: the same ε (PLD) and the RDP one the
    # tree accountant has always recorded
    assert pld_epsilon([Release.gaussian(3.0, 2.0, 4)], DELTA) == pytest.approx(
        pld_epsilon([Release.gaussian(3.0, 4.0)], DELTA), rel=1e-3)  # fmt: skip
    assert rdp_epsilon([Release.gaussian(3.0, 2.0, 4)], DELTA) == pytest.approx(accounted_epsilon(3.0, 4, DELTA))


def test_merged_is_the_same_composition_in_few_events():
    releases = [Release.gaussian(3.0, 1.0, 5), Release.gaussian(6.0, 2.0, 5), Release.laplace(1.0, 1.0, 3),
                Release.laplace(2.0, 2.0, 1), Release.gaussian(1.0, 1.0, 0)]  # fmt: skip
    short = merged(releases)
    assert len(short) == 2 and short[1] == Release.laplace(1.0, 1.0, 4)
    assert short[0].multiplier == pytest.approx(1 / math.sqrt(10 / 9))
    assert pld_epsilon(short, DELTA) == pytest.approx(pld_epsilon(releases, DELTA), rel=1e-6)
    assert merged([Release.gaussian(0.0, 1.0), Release.laplace(1.0, 1.0)]) == (Release.gaussian(0.0, 1.0),)


@pytest.mark.parametrize("bad", [{"scale": -1.0}, {"scale": math.nan}, {"sensitivity": 0.0}, {"count": -1}])
def test_a_release_refuses_what_is_not_a_mechanism(bad):
    given = {"scale": 1.0, "sensitivity": 1.0, "count": 1} | bad
    with pytest.raises(ValueError, match=next(iter(bad))):
        Release("gaussian", **given)


def test_extreme_epsilons_stay_finite_and_resolved_ones_are_infinite():
    huge = account([Release.gaussian(0.05, 1.0, 15)], DELTA)  # ε in the thousands: exact for Gaussians alone
    assert 1000 < huge.pld_epsilon < huge.rdp_epsilon
    mixed = account([Release.gaussian(0.05, 1.0, 15), Release.laplace(0.01, 1.0)], DELTA)  # a discretised PLD
    assert mixed.pld_epsilon == mixed.rdp_epsilon > 1000  # would need terabytes: RDP stands for it
    assert ledger_epsilons([Release.gaussian(1e-7, 1.0)], DELTA) == {"accounted_epsilon": math.inf,
                                                                      "rdp_epsilon": math.inf}  # fmt: skip


@pytest.mark.parametrize("multiplier", [1.5, 3.0, 20.0])
def test_gaussians_alone_get_the_exact_epsilon_which_the_discretised_pld_approaches_from_above(multiplier):
    import dp_accounting

    releases = [Release.gaussian(multiplier, 1.0, 2), Release.gaussian(2 * multiplier, 2.0, 3)]
    exact = pld_epsilon(releases, DELTA)
    discretised = dp_accounting.pld.PLDAccountant(value_discretization_interval=1e-4)
    discretised.compose(dp_accounting.ComposedDpEvent([release.event() for release in releases]))
    assert exact <= discretised.get_epsilon(DELTA) <= exact + 1e-3


@pytest.mark.parametrize("epsilon", [0.5, 1.0, 4.0])
def test_joint_dp_ledger_pld_equals_the_analytic_claim(epsilon):
    learner = JointDPLinUCB(3, 4, epsilon=epsilon, delta=DELTA, horizon=1000, rng=0, calibration="analytic")
    _rounds(learner, 3)
    (entry,) = learner.ledger.entries
    details = entry.details
    assert details["accounted_epsilon"] == pytest.approx(epsilon, rel=0.01)  # PLD: the claim, to 1%
    assert details["accounted_epsilon"] <= epsilon * 1.0001 < details["rdp_epsilon"]  # RDP: the looser bound


@pytest.mark.parametrize("epsilon", [0.5, 2.0])
def test_local_dp_ledger_pld_equals_the_analytic_claim(epsilon):
    learner = LocalDPLinUCB(3, 4, epsilon=epsilon, delta=DELTA, horizon=100, rng=0, calibration="analytic")
    _rounds(learner, 2)
    for entry in learner.ledger.entries:
        assert entry.details["accounted_epsilon"] == pytest.approx(epsilon, rel=0.01)
        assert entry.details["accounted_epsilon"] < entry.details["rdp_epsilon"]


def _default_fclub(source: str) -> FCLUBConfig:
    """CDP-FCLUB-DC at ε = 1, δ = DELTA, T = 254 as a user gets it without naming its noise: in Python, as an
    experiment config's fclub policy, as a deployment file's [protocol] section."""
    if source == "python":
        return FCLUBConfig.for_variant("cdp-fclub-dc", horizon=254, epsilon=1.0, delta=DELTA)
    if source == "config":
        from privbandits.experiments.registry import POLICY_KINDS

        return POLICY_KINDS.validate({"kind": "fclub", "epsilon": 1.0, "delta": DELTA}).protocol_config(254)
    from privbandits.deploy.fclub.section import FCLUBProtocol

    section = {"name": "fclub", "horizon": 254, "n_users": 12, "n_clusters": 3, "dim": 5, "n_arms": 6,
               "epsilon": 1.0, "options": {"delta": DELTA}}  # fmt: skip
    return FCLUBProtocol.model_validate(section).fclub_config()


@pytest.mark.parametrize("source", ["python", "config", "deployment"])
def test_fclub_privatizers_pld_equals_the_claim_at_the_default_noise_and_a_user_pays_more(source):
    """Issue 47, tight by default: FCLUB's privatizers are at the analytic Gaussian unless told otherwise."""
    env = ClusteredLinearBandit(n_users=12, n_clusters=3, dim=5, n_arms=6)
    config = _default_fclub(source)
    assert config.noise_variance == "analytic"
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="FCLUB: privatizer noise exceeded")
        bandit = run_fclub(config, env, 3, seed=0).bandit
    entries = bandit.ledger.entries
    assert entries
    for entry in entries:  # each privatizer calibrated (analytic) for its depth: PLD there is the claim, to 1%
        details = entry.details
        full = Release.gaussian(details["noise_std"], details["effective_sensitivity"], details["depth"])
        assert pld_epsilon([full], DELTA) == pytest.approx(1.0, rel=0.01)
        assert details["accounted_epsilon"] <= pld_epsilon([full], DELTA) + 1e-12  # so far: the levels used
        assert details["accounted_epsilon"] < details["rdp_epsilon"]
    report = bandit.privacy_report()
    assert report.per_user_rdp_epsilon == pytest.approx(report.accounted_epsilon_per_datum)
    assert 1.0 < report.per_user_epsilon < report.per_user_rdp_epsilon  # a user's data enters several privatizers
    assert bandit.privacy_metrics()["per_user_epsilon"] == report.per_user_epsilon
    worst = max(server.per_user_epsilons()["per_user_epsilon"] for server in bandit.servers)
    assert worst == pytest.approx(report.per_user_epsilon)


def test_fclub_factorized_privatizers_pld_equals_the_claim_and_a_user_pays_each_privatizer_once():
    """continual_release = "sqrt_factorization": every privatizer is one Gaussian release of C x + z (its ledger's
    PLD is the claim, to 1%, from its first release on); a user's datum enters one increment of every privatizer
    of its lineage, so per_user_epsilon composes that release once a privatizer."""
    from privbandits.privacy.factorization import releases

    env = ClusteredLinearBandit(n_users=12, n_clusters=3, dim=5, n_arms=6)
    config = FCLUBConfig.for_variant("cdp-fclub-dc", horizon=254, epsilon=1.0, delta=DELTA,
                                     continual_release="sqrt_factorization")  # fmt: skip
    bandit = run_fclub(config, env, 3, seed=0).bandit
    noise = bandit.calibration.factorization
    for entry in bandit.ledger.entries:
        assert entry.details["accounted_epsilon"] == pytest.approx(1.0, rel=0.01)
        assert entry.details["effective_sensitivity"] == noise.sensitivity and entry.details["noise_std"] == noise.std
    report = bandit.privacy_report()
    assert report.max_levels_per_privatizer == 1 and report.max_nodes_per_datum >= 2  # its phase and async ones
    composed = pld_epsilon(releases(noise) * report.max_nodes_per_datum, DELTA)
    assert report.per_user_epsilon == pytest.approx(composed, rel=1e-9) and 1.0 < composed


def test_joint_dp_user_with_several_rounds_pays_their_shared_nodes():
    learner = JointDPLinUCB(3, 4, epsilon=1.0, delta=DELTA, horizon=1000, rng=0, calibration="analytic")
    one = learner.user_epsilon([5])
    assert one == pytest.approx(1.0, rel=0.01)  # one round: the ledger's unit
    two_apart, two_together = learner.user_epsilon([1, 1000]), learner.user_epsilon([1, 2])
    assert one < two_apart < two_together  # adjacent rounds share their upper nodes: c = 2 there
    (release,) = learner.user_releases([1, 2])  # levels m = 11: level 0 apart (1 + 1), every level above shared (4)
    assert release.sensitivity == pytest.approx(learner.sensitivity * math.sqrt(2 + 4 * (learner.levels - 1)))
    k = 8
    assert learner.user_epsilon(list(range(1, k + 1))) <= pld_epsilon(
        [Release.gaussian(learner.noise_std, k * learner.sensitivity, learner.levels)], DELTA) + 1e-9  # fmt: skip
    with pytest.raises(ValueError, match="rounds"):
        learner.user_releases([0])
