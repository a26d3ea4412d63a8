"""No README, docs page or book claim calls a run private unless its preset has the guarantee (issue 31 item 6)."""

from __future__ import annotations

import math

import numpy as np
from project_paths import ROOT

from privbandits.experiments.privacy_claims import unguaranteed_private_claims


def test_the_readme_the_docs_and_the_book_name_no_run_without_a_guarantee_as_private():
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    assert ROOT / "docs" / "protocols" / "fclub.md" in pages  # where the reference-compatible runs are quoted
    for path in pages:
        assert unguaranteed_private_claims(path.read_text()) == [], path.name


def test_the_check_flags_a_claim_without_the_disclaimer_and_passes_one_with_it():
    claim = "* Fig. 2 with the reference-compatible options: CDP-FCLUB-DC beats every baseline.\n"
    assert len(unguaranteed_private_claims(claim)) == 1
    assert unguaranteed_private_claims(claim.replace("baseline.", "baseline (no DP guarantee: raw uploads).")) == []
    block = "<!-- results fclub-fig2 -->\n* reference-compatible options\n\n CDP-FCLUB-DC wins\n<!-- /results -->"
    assert len(unguaranteed_private_claims(block)) == 1  # a results block is one passage
    assert unguaranteed_private_claims("CDP-FCLUB-DC (faithful) with the reference-compatible ones") == []


def _fclub(preset: str, private: bool = True, noise_std: float = 0.1):
    from privbandits.envs.clustered import ClusteredLinearBandit
    from privbandits.protocols.fclub import run_fclub
    from privbandits.protocols.fclub.config import FCLUBConfig

    make = FCLUBConfig.reference_compatible if preset == "reference" else FCLUBConfig.for_variant
    config = make("cdp-fclub-dc" if private else "fclub-dc", horizon=300)
    env = ClusteredLinearBandit(n_users=8, n_clusters=2, dim=4, n_arms=5, noise_std=noise_std)
    return run_fclub(config, env, n_servers=2, seed=3).bandit


def test_fclub_without_a_guarantee_claims_epsilon_infinity_and_the_guaranteed_preset_its_epsilon():
    assert math.isinf(_fclub("reference").privacy_report().claimed_epsilon)
    assert _fclub("paper").privacy_report().claimed_epsilon == 1.0


def test_private_fclub_clips_rewards_beyond_one_and_counts_them():
    noisy = _fclub("paper", noise_std=2.0)
    assert noisy.bounds.clipped_rewards > 50  # N(·, 2²) rewards: most beyond |y| = 1
    assert noisy.bounds.clipped_contexts == 0  # unit vectors (up to float rounding, scaled but not counted)
    plain = _fclub("paper", private=False, noise_std=2.0)
    assert plain.bounds.metrics() == {"clipped_contexts": 0.0, "clipped_rewards": 0.0}


def test_bounds_clip_to_the_unit_ball_and_interval_without_touching_the_input():
    from privbandits.privacy.bounds import DataBounds

    bounds, x = DataBounds(True), np.array([3.0, 4.0])
    clipped, y = bounds.apply(x, -1.5)
    assert np.allclose(clipped, [0.6, 0.8]) and y == -1.0 and np.array_equal(x, [3.0, 4.0])
    assert bounds.apply(np.array([0.6, 0.0]), 1.0)[1] == 1.0
    assert bounds.metrics() == {"clipped_contexts": 1.0, "clipped_rewards": 1.0}
    rounded = np.array([1.0 + 2e-16, 0.0])
    assert bounds.apply(rounded, 0.0)[0][0] <= 1.0 and bounds.clipped_contexts == 1  # scaled, not counted
    assert DataBounds(False).apply(x, 7.0)[1] == 7.0
