"""Joint-DP LinUCB's ``continual_release = "sqrt_factorization"`` option (issue 47 item 5): its ledger entry, its
calibration and refusals, its per-user releases, and its place in the experiment config (out of the store key at
the default, the tree)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from privbandits.experiments.config.policies import JointDPLinUCBConfig
from privbandits.privacy.accountant import pld_epsilon
from privbandits.privacy.factorization import column_norm
from privbandits.privacy.tree_mechanism import REPLACE_SENSITIVITY
from privbandits.protocols.dp import JointDPLinUCB
from privbandits.validation import InvalidInputError

KWARGS = {"epsilon": 1.0, "delta": 1e-5, "horizon": 200}
FACTORIZED = {**KWARGS, "continual_release": "sqrt_factorization"}


def _play(learner: JointDPLinUCB, rounds: int, seed: int = 0) -> list[int]:
    rng = np.random.default_rng(seed)
    arms = []
    for _ in range(rounds):
        contexts = rng.normal(size=(learner.n_arms, learner.dim)) / 3
        arm = learner.select(contexts)
        learner.update(contexts, arm, float(contexts[arm, 0] + 0.1 * rng.normal()))
        arms.append(arm)
    return arms


def test_the_default_is_the_tree_and_its_ledger_is_unchanged():
    learner = JointDPLinUCB(3, 2, **KWARGS, rng=0)
    _play(learner, 3)
    (entry,) = learner.ledger.entries
    assert learner.continual_release == "tree" and entry.mechanism == "dp_linucb.joint.tree"
    assert "continual_release" not in entry.details


def test_the_factorization_records_one_gaussian_release_accounted_by_pld_at_the_claim():
    learner = JointDPLinUCB(3, 4, **FACTORIZED, rng=0)
    _play(learner, 5)
    (entry,) = learner.ledger.entries
    assert entry.mechanism == "dp_linucb.joint.sqrt_factorization" and entry.epsilon == 1.0
    details = entry.details
    assert details["continual_release"] == "sqrt_factorization" and details["calibration"] == "analytic"
    assert details["accounted_epsilon"] == pytest.approx(1.0, rel=0.01)
    assert details["rdp_epsilon"] >= details["accounted_epsilon"]
    band = details["band"]  # chosen: the least noise among the bands that fit (test_factorization_band.py)
    assert band == learner.factorization_noise.bandwidth <= 200 and details["column_norm"] == column_norm(band)
    assert details["decoder_norm"] == learner.factorization_noise.decoder_norm
    assert details["effective_sensitivity"] == pytest.approx(REPLACE_SENSITIVITY * column_norm(band), rel=0.05)
    assert learner.user_epsilon([1]) == pytest.approx(details["accounted_epsilon"], rel=1e-9)


def test_the_factorization_adds_less_noise_and_a_smaller_shift_than_the_tree_at_equal_epsilon():
    """σ per coordinate of ``C x + z`` against the tree's per node, and the regulariser shifts (2Υ) they imply."""
    tree, ours = JointDPLinUCB(3, 10, **KWARGS, rng=0), JointDPLinUCB(3, 10, **FACTORIZED, rng=0)
    assert ours.noise_std < tree.noise_std and ours.shift < tree.shift / 2


def test_a_users_several_rounds_compose_over_the_columns_they_enter():
    learner = JointDPLinUCB(2, 2, **FACTORIZED, rng=0)
    one, two, apart = (learner.user_epsilon(rounds) for rounds in ([5], [5, 6], [5, 150]))
    assert one < apart < two < 2.5 * one  # adjacent rounds share the most of C's columns
    assert learner.user_releases([]) == [] and pld_epsilon(learner.user_releases([5]), 1e-5) == one
    with pytest.raises(ValueError, match="distinct rounds"):
        learner.user_releases([5, 5])


def test_the_paper_calibration_and_unknown_values_are_refused_naming_the_option():
    with pytest.raises(InvalidInputError, match="continual_release = 'sqrt_factorization' needs calibration"):
        JointDPLinUCB(2, 2, **FACTORIZED, calibration="paper")
    with pytest.raises(InvalidInputError, match="continual_release must be one of"):
        JointDPLinUCB(2, 2, **KWARGS, continual_release="binary")


def test_without_privacy_it_is_linucb_as_the_tree_is():
    plain = {**KWARGS, "epsilon": math.inf}
    assert _play(JointDPLinUCB(3, 2, **plain, rng=0), 30) == _play(
        JointDPLinUCB(3, 2, **plain, continual_release="sqrt_factorization", rng=0), 30
    )


def test_the_horizon_is_enforced():
    learner = JointDPLinUCB(2, 2, **{**FACTORIZED, "horizon": 3}, rng=0)
    _play(learner, 3)
    with pytest.raises(Exception, match="horizon = 3"):
        _play(learner, 1)


def test_a_declared_band_is_used_and_a_band_without_the_factorization_is_refused():
    learner = JointDPLinUCB(3, 2, **FACTORIZED, factorization_band=8, rng=0)
    _play(learner, 20)
    assert learner.factorization_noise.bandwidth == 8 and learner.ledger.entries[0].details["band"] == 8
    full = JointDPLinUCB(3, 2, **FACTORIZED, factorization_band=10_000, rng=0)
    assert full.factorization_noise.bandwidth == 200 and not full.factorization_noise.banded
    with pytest.raises(InvalidInputError, match="factorization_band needs continual_release = 'sqrt_factorization'"):
        JointDPLinUCB(3, 2, **KWARGS, factorization_band=8)
    with pytest.raises(InvalidInputError, match="factorization_band must be an integer >= 1 or None"):
        JointDPLinUCB(3, 2, **FACTORIZED, factorization_band=0)


def test_the_band_enters_a_run_spec_when_declared_and_the_mechanism_names_its_key():
    chosen = JointDPLinUCBConfig(kind="joint_dp_linucb", continual_release="sqrt_factorization")
    banded = JointDPLinUCBConfig(kind="joint_dp_linucb", continual_release="sqrt_factorization", factorization_band=64)
    assert "factorization_band" not in chosen.model_dump() and banded.model_dump()["factorization_band"] == 64
    assert chosen.noise_key()["factorization"] == "sqrt/banded-auto-2"
    assert "factorization" not in JointDPLinUCBConfig(kind="joint_dp_linucb").noise_key()


def test_the_option_enters_a_run_spec_only_away_from_the_tree():
    default = JointDPLinUCBConfig(kind="joint_dp_linucb")
    factorized = JointDPLinUCBConfig(kind="joint_dp_linucb", continual_release="sqrt_factorization")
    assert "continual_release" not in default.model_dump()
    assert factorized.model_dump()["continual_release"] == "sqrt_factorization"
    options = factorized.model_dump(exclude={"kind", "label"})  # what the config's learner() passes on
    assert JointDPLinUCB(3, 2, horizon=10, **options).continual_release == "sqrt_factorization"
    with pytest.raises(ValueError, match="continual_release"):
        JointDPLinUCBConfig(kind="joint_dp_linucb", continual_release="binary")
