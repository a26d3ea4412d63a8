"""Each estimator equals its published formula on a case computed by hand (issue 49 item 4).

The log: 4 rounds, 2 actions::

    round  action  reward  pscore  pi_e            q_hat        w = pi_e[a]/pscore
    0      0       1.0     0.5     [1.0, 0.0]      [0.5, 0.5]   1.0 / 0.5  = 2
    1      1       0.0     0.25    [0.5, 0.5]      [0.2, 0.6]   0.5 / 0.25 = 2
    2      0       0.5     0.8     [0.2, 0.8]      [0.4, 0.0]   0.2 / 0.8  = 0.25
    3      1       1.0     0.5     [0.0, 1.0]      [1.0, 0.5]   1.0 / 0.5  = 2

w·r = [2, 0, 0.125, 2] (sum 4.125); Σ w = 6.25; Σ w² = 12.0625.
q̂_t(π_e) = Σ_a pi_e q_hat = [0.5, 0.4, 0.08, 0.5] (sum 1.48); residual r − q̂(a_t) = [0.5, −0.6, 0.1, 0.5];
w · residual = [1.0, −1.2, 0.025, 1.0] (sum 0.825).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from privbandits.evaluation import clipped_ips, dm, dr, evaluate, ips, snips, switch_dr
from privbandits.logs import LoggedFeedback

PI_E = np.array([[1.0, 0.0], [0.5, 0.5], [0.2, 0.8], [0.0, 1.0]])
Q_HAT = np.array([[0.5, 0.5], [0.2, 0.6], [0.4, 0.0], [1.0, 0.5]])


@pytest.fixture
def log():
    return LoggedFeedback(
        n_rounds=4, n_actions=2, context=np.zeros((4, 1)), action=[0, 1, 0, 1],
        reward=[1.0, 0.0, 0.5, 1.0], pscore=[0.5, 0.25, 0.8, 0.5],
    )  # fmt: skip


def test_ips_is_the_mean_of_weighted_rewards(log):
    assert ips(log, PI_E).estimate == pytest.approx(4.125 / 4)  # 1.03125


def test_snips_divides_by_the_sum_of_weights(log):
    assert snips(log, PI_E).estimate == pytest.approx(4.125 / 6.25)  # 0.66


def test_clipped_ips_caps_the_weights(log):
    # min(w, 1.5) = [1.5, 1.5, 0.25, 1.5]; times r = [1.5, 0, 0.125, 1.5]
    assert clipped_ips(log, PI_E, 1.5).estimate == pytest.approx(3.125 / 4)  # 0.78125
    assert clipped_ips(log, PI_E, 2.0).estimate == pytest.approx(4.125 / 4)  # no weight above 2: IPS


def test_dm_averages_the_model_under_the_target(log):
    assert dm(log, PI_E, Q_HAT).estimate == pytest.approx(1.48 / 4)  # 0.37


def test_dr_adds_the_weighted_residual(log):
    assert dr(log, PI_E, Q_HAT).estimate == pytest.approx((1.48 + 0.825) / 4)  # 0.57625


def test_switch_dr_keeps_the_residual_only_where_the_weight_is_small(log):
    assert switch_dr(log, PI_E, 1.0, Q_HAT).estimate == pytest.approx((1.48 + 0.025) / 4)  # 0.37625
    assert switch_dr(log, PI_E, 2.0, Q_HAT).estimate == pytest.approx((1.48 + 0.825) / 4)  # τ ≥ max w: DR
    assert switch_dr(log, PI_E, 0.1, Q_HAT).estimate == pytest.approx(1.48 / 4)  # τ < min w: DM


def test_effective_sample_size_is_kish(log):
    assert ips(log, PI_E).effective_sample_size == pytest.approx(6.25**2 / 12.0625)  # 3.2383
    assert dm(log, PI_E, Q_HAT).effective_sample_size == 4.0
    assert switch_dr(log, PI_E, 1.0, Q_HAT).effective_sample_size == pytest.approx(1.0)  # one weight kept


def test_normal_interval_is_the_clt_on_the_terms(log):
    # terms [2, 0, 0.125, 2]: mean 1.03125, sample variance (ddof 1) 3.76171875 / 3 = 1.25390625
    result = ips(log, PI_E, interval="normal")
    half = 1.959963984540054 * math.sqrt(1.25390625) / 2
    assert (result.low, result.high) == pytest.approx((1.03125 - half, 1.03125 + half))
    assert result.interval == "normal" and result.level == 0.95 and result.n_rounds == 4


def test_bootstrap_is_seeded_and_brackets_the_estimate(log):
    a, b, c = (dr(log, PI_E, Q_HAT, seed=s) for s in (3, 3, 4))
    assert (a.low, a.high) == (b.low, b.high) and (a.low, a.high) != (c.low, c.high)
    assert a.low <= a.estimate <= a.high and a.interval == "bootstrap"


def test_evaluate_runs_them_all_in_order(log):
    results = evaluate(log, PI_E, q_hat=Q_HAT, threshold=1.0)
    assert [r.method for r in results] == ["ips", "snips", "clipped_ips", "dm", "dr", "switch_dr"]
    expected = [1.03125, 0.66, 2.125 / 4, 0.37, 0.57625, 0.37625]  # clipped at 1: [1, 0, 0.125, 1]
    assert [r.estimate for r in results] == pytest.approx(expected)
