"""The synthetic generator (issue 49): seeded, its logging policy a distribution, pscore its probability of the
logged action, and its ground truth the value estimators will be checked against."""

from __future__ import annotations

import numpy as np
import pytest

from privbandits.logs import synthetic_feedback
from privbandits.validation import InvalidInputError


@pytest.mark.parametrize("policy", ["softmax", "epsilon_greedy"])
@pytest.mark.parametrize("reward_type", ["linear", "logistic"])
def test_pi_b_sums_to_one_and_pscore_is_pi_b_of_the_logged_action(policy, reward_type):
    log = synthetic_feedback(2000, 7, 4, policy=policy, reward_type=reward_type, seed=5)
    assert np.allclose(log.pi_b.sum(axis=1), 1.0, rtol=0, atol=1e-12) and (log.pi_b >= 0).all()
    assert np.array_equal(log.pscore, log.pi_b[np.arange(log.n_rounds), log.action])
    if reward_type == "logistic":
        assert set(log.reward.tolist()) <= {0.0, 1.0} and ((0 < log.expected_reward) & (log.expected_reward < 1)).all()


def test_epsilon_greedy_explores_at_its_rate():
    log = synthetic_feedback(100, 4, 3, policy="epsilon_greedy", epsilon=0.2, seed=0)
    assert np.allclose(np.sort(log.pi_b, axis=1)[:, :3], 0.05) and np.allclose(log.pi_b.max(axis=1), 0.85)


def test_seeded_and_one_problem_across_seeds():
    a, b, c = (synthetic_feedback(50, seed=s) for s in (1, 1, 2))
    assert a.equals(b)
    assert not np.array_equal(a.context, c.context) and np.array_equal(a.action_context, c.action_context)
    other_problem = synthetic_feedback(50, seed=1, problem_seed=3)
    assert not np.array_equal(a.action_context, other_problem.action_context)


def test_actions_follow_pi_b_and_rewards_their_expectation():
    log = synthetic_feedback(40_000, 3, 2, seed=7, noise=0.5)
    assert np.allclose(np.bincount(log.action, minlength=3) / log.n_rounds, log.pi_b.mean(axis=0), atol=0.01)
    taken = log.expected_reward[np.arange(log.n_rounds), log.action]
    assert abs((log.reward - taken).mean()) < 0.02 and abs((log.reward - taken).std() - 0.5) < 0.02


def test_policy_value_is_the_true_value_of_a_policy():
    log = synthetic_feedback(30_000, 4, 3, seed=3)
    behaviour = log.policy_value(log.pi_b)
    assert abs(log.reward.mean() - behaviour) < 4 * log.reward.std() / np.sqrt(log.n_rounds)
    best = np.eye(4)[log.expected_reward.argmax(axis=1)]
    assert log.policy_value(best) == pytest.approx(log.expected_reward.max(axis=1).mean())
    assert log.policy_value(best) > behaviour


def test_bad_arguments_are_refused_in_one_line():
    with pytest.raises(InvalidInputError, match=r"^synthetic_feedback: policy must be one of 'softmax', 'epsilon_"):
        synthetic_feedback(10, policy="greedy")
    with pytest.raises(InvalidInputError, match=r"^synthetic_feedback: epsilon must be .*in \[0, 1\], got 2"):
        synthetic_feedback(10, policy="epsilon_greedy", epsilon=2)
