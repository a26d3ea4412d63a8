"""The DP estimators (evaluation/private.py): without noise each is its non-private clipped estimator exactly (the
hand-computed log of test_evaluation_hand_computed.py); with noise, what they spend is in the result and the ledger,
the noise has the calibrated spread, and bad input is refused in one line."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from privbandits.evaluation import clipped_ips, dr, ips, snips
from privbandits.evaluation.private import dp_dr, dp_ips, dp_snips, private_evaluate
from privbandits.logs import LoggedFeedback, synthetic_feedback
from privbandits.privacy.ledger import PrivacyLedger
from privbandits.validation import InvalidInputError

# w = π_e(a)/pscore = [2, 2, 0.25, 2]; w·r = [2, 0, 0.125, 2]; q̂_t(π_e) = [0.5, 0.4, 0.08, 0.5];
# residual r − q̂(a) = [0.5, −0.6, 0.1, 0.5]
PI_E = np.array([[1.0, 0.0], [0.5, 0.5], [0.2, 0.8], [0.0, 1.0]])
Q_HAT = np.array([[0.5, 0.5], [0.2, 0.6], [0.4, 0.0], [1.0, 0.5]])
LOG = LoggedFeedback(
    n_rounds=4, n_actions=2, context=np.zeros((4, 1)), action=[0, 1, 0, 1], reward=[1.0, 0.0, 0.5, 1.0],
    pscore=[0.5, 0.25, 0.8, 0.5],
)  # fmt: skip
EXACT = {"epsilon": math.inf}


def test_dp_ips_without_noise_is_clipped_ips_exactly():
    for clip in (1.5, 2.0, 100.0):  # min(w, 1.5) r = [1.5, 0, 0.125, 1.5]: 3.125/4
        assert dp_ips(LOG, PI_E, weight_clip=clip, **EXACT).estimate == clipped_ips(LOG, PI_E, clip).estimate
    assert dp_ips(LOG, PI_E, weight_clip=1.5, **EXACT).estimate == 3.125 / 4
    assert dp_ips(LOG, PI_E, **EXACT).estimate == ips(LOG, PI_E).estimate  # λ above every weight


def test_dp_snips_without_noise_is_clipped_snips_exactly():
    # λ = 1.5: w̄ = [1.5, 1.5, 0.25, 1.5], w̄ r = [1.5, 0, 0.125, 1.5]: 3.125 / 4.75
    assert dp_snips(LOG, PI_E, weight_clip=1.5, **EXACT).estimate == 3.125 / 4.75
    assert dp_snips(LOG, PI_E, **EXACT).estimate == snips(LOG, PI_E).estimate == 4.125 / 6.25


def test_dp_dr_without_noise_is_clipped_dr_exactly():
    # λ = 1.5: w̄ · residual = [0.75, −0.9, 0.025, 0.75] (sum 0.625); (1.48 + 0.625) / 4
    assert dp_dr(LOG, PI_E, Q_HAT, weight_clip=1.5, **EXACT).estimate == pytest.approx(2.105 / 4, rel=1e-15)
    assert dp_dr(LOG, PI_E, Q_HAT, **EXACT).estimate == pytest.approx(dr(LOG, PI_E, Q_HAT).estimate, rel=1e-15)


def test_rewards_and_the_reward_model_are_clipped_into_the_reward_range():
    loud = LoggedFeedback(n_rounds=4, n_actions=2, context=np.zeros((4, 1)), action=[0, 1, 0, 1],
                          reward=[5.0, -3.0, 0.5, 1.0], pscore=[0.5, 0.25, 0.8, 0.5])  # fmt: skip
    assert dp_ips(loud, PI_E, **EXACT).estimate == ips(LOG, PI_E).estimate  # 5 → 1 and −3 → 0
    assert dp_dr(LOG, PI_E, Q_HAT * 3 - 1, **EXACT).estimate == dp_dr(
        LOG, PI_E, np.clip(Q_HAT * 3 - 1, 0, 1), **EXACT
    ).estimate


def test_what_a_release_spends_is_in_the_result_and_the_ledger():
    ledger = PrivacyLedger()
    laplace = dp_ips(LOG, PI_E, epsilon=0.5, rng=1, ledger=ledger)
    gaussian = dp_snips(LOG, PI_E, epsilon=1.0, delta=1e-6, rng=1, ledger=ledger)
    assert (laplace.epsilon, laplace.delta, laplace.noise) == (0.5, 0.0, "laplace")
    assert (gaussian.epsilon, gaussian.delta, gaussian.noise) == (1.0, 1e-6, "gaussian")
    assert laplace.accounted_epsilon <= 0.5 and gaussian.accounted_epsilon == pytest.approx(1.0, abs=1e-3)
    assert [e.mechanism for e in ledger.entries] == ["evaluation.dp_ips", "evaluation.dp_snips"]
    assert ledger.basic_composition() == (1.5, 1e-6)
    assert ledger.entries[1].details["statistics"]["numerator"]["share"] == 0.4  # (1 − 0.2) / 2
    assert set(gaussian.released) == {"numerator", "denominator", "numerator_squares", "cross", "denominator_squares"}
    assert laplace.seeded and not dp_ips(LOG, PI_E, epsilon=1.0).seeded


def test_private_evaluate_splits_one_budget_over_the_estimators():
    ledger = PrivacyLedger()
    results = private_evaluate(LOG, PI_E, epsilon=3.0, delta=3e-6, q_hat=Q_HAT, rng=2, ledger=ledger)
    assert [r.method for r in results] == ["dp_ips", "dp_snips", "dp_dr"]
    assert all((r.epsilon, r.delta) == (1.0, 1e-6) for r in results)
    assert ledger.basic_composition() == pytest.approx((3.0, 3e-6))


def test_seeded_noise_repeats_and_os_entropy_does_not():
    first, again = (dp_ips(LOG, PI_E, epsilon=1.0, rng=7) for _ in range(2))
    assert math.isnan(first.effective_sample_size)  # IPS releases no weight sum; NaN != NaN, so compare the rest
    assert dataclasses.replace(first, effective_sample_size=0) == dataclasses.replace(again, effective_sample_size=0)
    assert dp_ips(LOG, PI_E, epsilon=1.0).estimate != dp_ips(LOG, PI_E, epsilon=1.0).estimate


@pytest.mark.parametrize("delta", [0.0, 1e-5])
def test_the_noise_has_the_calibrated_spread_and_the_interval_holds_it(delta):
    """On one log, 300 releases spread as noise_std says (the sampling error is fixed), centred on clipped IPS."""
    log = synthetic_feedback(400, 3, 2, reward_type="logistic", seed=1)
    pi = np.full((400, 3), 1 / 3)
    rng = np.random.default_rng(0)
    runs = [dp_ips(log, pi, epsilon=1.0, delta=delta, weight_clip=5.0, rng=rng) for _ in range(300)]
    values = np.array([r.estimate for r in runs])
    exact = clipped_ips(log, pi, 5.0).estimate
    assert abs(values.std() / runs[0].noise_std - 1) < 0.15
    assert abs(values.mean() - exact) < 4 * runs[0].noise_std / math.sqrt(300)
    assert np.mean([r.low <= exact <= r.high for r in runs]) >= 0.9


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: dp_ips(LOG, PI_E, epsilon=0), "dp_ips: epsilon must be > 0 (inf = no noise), got 0"),
        (lambda: dp_ips(LOG, PI_E, epsilon=1, delta=1),
         "dp_ips: delta must be in [0, 1) (0 = pure ε-DP, Laplace noise), got 1"),
        (lambda: dp_snips(LOG, PI_E, epsilon=1, weight_clip=0), "dp_snips: weight_clip must be > 0, got 0"),
        (lambda: dp_ips(LOG, PI_E, epsilon=1, reward_range=(1, 0)),
         "dp_ips: reward_range must be two finite reals (low, high) with low < high, got (1, 0)"),
        (lambda: dp_ips(LOG, PI_E, epsilon=1, interval_share=1), "dp_ips: interval_share must be in (0, 1), got 1"),
        (lambda: dp_dr(LOG, PI_E, None, epsilon=1), "dp_dr: q_hat must be given: a reward model fitted without"),
        (lambda: dp_ips(LOG, PI_E, epsilon=1, rng=-1), "dp_ips: rng must be None (OS entropy), a seed >= 0"),
        (lambda: dp_ips(LOG, PI_E, epsilon=1, ledger=[]), "dp_ips: ledger must be a PrivacyLedger or None"),
        (lambda: dp_snips(LOG, [[0, 1], [1, 0], [0, 1], [1, 0]], epsilon=1),
         "dp_snips: pi_e must give some logged action a probability > 0"),
        (lambda: private_evaluate(LOG, PI_E, ["ips", "ips"], epsilon=1),
         "private_evaluate: methods must be distinct names among ips, snips, dr, got ['ips', 'ips']"),
    ],
)  # fmt: skip
def test_bad_input_is_refused_in_one_line(call, message):
    with pytest.raises(InvalidInputError) as caught:
        call()
    assert str(caught.value).startswith(message) and "\n" not in str(caught.value)
