"""The estimators on synthetic logs with known ground truth (fixed seeds, fast)."""

from __future__ import annotations

import numpy as np
import pytest

from privbandits.evaluation import dm, dr, ips, ridge_reward_model, snips
from privbandits.logs import synthetic_feedback


def greedy_target(log, epsilon=0.3):
    """ε-greedy on the true expected reward: a target policy that differs from the logging softmax."""
    pi = np.full((log.n_rounds, log.n_actions), epsilon / log.n_actions)
    pi[np.arange(log.n_rounds), log.expected_reward.argmax(axis=1)] += 1.0 - epsilon
    return pi


def test_ips_of_the_logging_policy_is_the_mean_reward():
    log = synthetic_feedback(500, seed=3)
    assert ips(log, log.pi_b).estimate == pytest.approx(log.reward.mean())  # every weight is 1
    assert snips(log, log.pi_b).estimate == pytest.approx(log.reward.mean())


def test_ips_is_within_its_clt_band_of_the_true_value():
    log = synthetic_feedback(20_000, seed=11)
    pi = greedy_target(log)
    weights = pi[np.arange(log.n_rounds), log.action] / log.pscore
    standard_error = (weights * log.reward).std(ddof=1) / np.sqrt(log.n_rounds)
    assert abs(ips(log, pi, n_bootstrap=10).estimate - log.policy_value(pi)) < 4 * standard_error
    assert abs(ips(log, log.pi_b, n_bootstrap=10).estimate - log.policy_value(log.pi_b)) < 4 * standard_error


def test_dr_with_the_true_model_varies_less_than_ips():
    ips_values, dr_values = [], []
    for seed in range(40):
        log = synthetic_feedback(300, seed=seed, noise=0.5)
        pi = greedy_target(log)
        ips_values.append(ips(log, pi, n_bootstrap=10).estimate)
        dr_values.append(dr(log, pi, log.expected_reward, n_bootstrap=10).estimate)
    assert np.var(dr_values) < 0.5 * np.var(ips_values)


def test_the_ridge_model_recovers_a_linear_reward():
    log = synthetic_feedback(5000, seed=2, noise=0.1)
    q_hat = ridge_reward_model(log)
    assert np.abs(q_hat - log.expected_reward).max() < 0.1
    pi = greedy_target(log)
    assert dm(log, pi, q_hat, n_bootstrap=10).estimate == pytest.approx(log.policy_value(pi), abs=0.01)
