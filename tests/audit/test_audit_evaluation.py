"""The DP off-policy estimators under the empirical audit: as calibrated their measured ε stays within the claim, a
copy with half the noise is caught, and so is a calibration bug planted in the release code (the audit can fail);
the audited release is the estimator's own."""

from __future__ import annotations

import numpy as np
import pytest

from privbandits.audit import evaluation
from privbandits.audit.run import audit_unit, mechanism
from privbandits.evaluation.private import dp_dr, dp_ips, dp_snips, private_statistics
from privbandits.evaluation.private_terms import Clipping
from privbandits.privacy import bounded_sums
from privbandits.privacy.bounded_sums import BoundedSums
from privbandits.privacy.laplace import LaplaceGrid

REAL = {"scale": 1.0, "drop": False}
HALVED = {"scale": 0.5, "drop": False}
LAPLACE = ["evaluation.dp_ips", "evaluation.dp_snips", "evaluation.dp_dr"]
GAUSSIAN = [f"{name}@gaussian" for name in LAPLACE]


@pytest.mark.parametrize("name", LAPLACE + GAUSSIAN)
def test_as_calibrated_the_bound_is_within_the_claim_and_the_pairs_exact_epsilon(name):
    result = audit_unit(name, {}, 20_000, 11, REAL)
    assert result["epsilon_lower"] <= result["claimed_epsilon"], result
    assert result["epsilon_lower"] <= result["pair_epsilon"] + 0.1, result


@pytest.mark.parametrize(("name", "samples"), [(n, 20_000) for n in LAPLACE] + [(n, 100_000) for n in GAUSSIAN])
def test_half_the_noise_is_caught(name, samples):
    """Noise × 0.5 doubles the pair's ε (both calibrations are tight): the bound exceeds the claimed ε = 1."""
    result = audit_unit(name, {}, samples, 12, HALVED)
    assert result["pair_epsilon"] > 1.8 * result["claimed_epsilon"] * (0.9 if "dr" in name else 1.0)
    assert result["epsilon_lower"] > result["claimed_epsilon"], result


def test_a_calibration_bug_in_the_release_code_is_caught(monkeypatch):
    """A bug planted in the release (the Laplace scale half what the budget needs), not injected by the audit:
    the estimator's audit as calibrated now refutes its claim."""
    honest = audit_unit("evaluation.dp_ips", {}, 20_000, 13, REAL)
    real = bounded_sums.laplace_grid

    def halved(scale: float) -> LaplaceGrid:
        grid = real(scale / 2)
        return LaplaceGrid(grid.scale, grid.grid, grid.numerator)

    monkeypatch.setattr(bounded_sums, "laplace_grid", halved)
    buggy = audit_unit("evaluation.dp_ips", {}, 20_000, 13, REAL)
    assert honest["epsilon_lower"] <= 1.0 < buggy["epsilon_lower"], (honest, buggy)


def test_each_pair_moves_the_sums_as_the_docstring_says():
    """IPS and SNIPS: every sum by its whole range (the worst case of the joint release); DR: its sum by all but
    0.002 of its range."""
    clip = Clipping(evaluation.WEIGHT_CLIP, *evaluation.REWARD_RANGE)
    for estimator in ("ips", "snips", "dr"):
        sides = [evaluation._side(estimator, present) for present in (True, False)]
        stats = [private_statistics(estimator, s.log, s.pi, clip, 0.2, s.q_hat) for s in sides]
        moved = stats[0].values.sum(axis=0) - stats[1].values.sum(axis=0)
        widths = np.array([bound.width for bound in stats[0].bounds])
        if estimator == "dr":
            assert moved[0] == pytest.approx(widths[0] - 0.002) and 0 < moved[1] < widths[1]
        else:
            assert np.allclose(moved, widths), (estimator, moved, widths)
        assert np.array_equal(stats[0].values[1:], stats[1].values[1:])  # the other records are the same


@pytest.mark.parametrize("delta", [0.0, 1e-5])
def test_the_audited_release_is_the_estimators_own(delta):
    """``dp_*``'s released sums are the audited code's: the snapped exact sums plus BoundedSums' noise draws from
    the same generator."""
    side = evaluation._side("dr", True)
    clip = Clipping(evaluation.WEIGHT_CLIP, *evaluation.REWARD_RANGE)
    calls = {"ips": dp_ips, "snips": dp_snips}
    for estimator in ("ips", "snips", "dr"):
        options = {"epsilon": 1.0, "delta": delta, "weight_clip": clip.weight, "rng": np.random.default_rng(5)}
        if estimator == "dr":
            result = dp_dr(side.log, side.pi, side.q_hat, **options)
        else:
            result = calls[estimator](side.log, side.pi, **options)
        stats = private_statistics(estimator, side.log, side.pi, clip, 0.2, side.q_hat)
        sums = BoundedSums(stats.bounds, 1.0, delta, side.log.n_rounds)
        expected = sums.exact(stats.values) + sums.noise_draws(np.random.default_rng(5), 1)[0]
        assert list(result.released.values()) == expected.tolist()


def test_the_registry_names_the_six_releases_with_their_claims():
    for name in LAPLACE + GAUSSIAN:
        audit = mechanism(name)
        assert audit.claimed_epsilon == 1.0 and audit.claimed_delta == (1e-5 if "@gaussian" in name else 0.0)
        assert audit.weakened.scale == 0.5 and "one logged record replaced" in audit.relation
