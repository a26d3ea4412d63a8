"""A fixed privbandits learner as the target policy: its action probabilities on a log's contexts."""

from __future__ import annotations

import numpy as np
import pytest

from privbandits.evaluation import ips, policy_probabilities, train_on_log
from privbandits.linear.policies import EpsilonGreedy, LinTS, LinUCB, UniformRandom
from privbandits.logs import synthetic_feedback

LOG = synthetic_feedback(2000, 5, 4, seed=1)
TRAIN, TEST = LOG.take(slice(0, 1000)), LOG.take(slice(1000, 2000))


def trained(learner):
    train_on_log(learner, TRAIN, replay=False)
    return learner


def test_linucb_is_one_hot_on_what_it_would_select():
    learner = trained(LinUCB(5, 4, layout="disjoint"))
    pi = policy_probabilities(learner, TEST)
    assert set(np.unique(pi)) == {0.0, 1.0}
    assert all(pi[t, learner.select(TEST.context[t])] == 1.0 for t in range(TEST.n_rounds))


def test_epsilon_greedy_gives_its_propensities():
    learner = trained(EpsilonGreedy(5, 4, epsilon=0.2))
    pi = policy_probabilities(learner, TEST)
    greedy = (TEST.context @ learner.stats.theta.T).argmax(axis=1)
    assert np.allclose(pi[np.arange(TEST.n_rounds), greedy], 0.8 + 0.04) and np.allclose(pi.sum(axis=1), 1.0)


def test_random_tie_break_splits_the_probability():
    untrained = LinUCB(5, 4, layout="disjoint", tie_break="random", alpha=0.0)  # every score 0: all tie
    assert np.allclose(policy_probabilities(untrained, TEST), 0.2)
    lowest = LinUCB(5, 4, layout="disjoint", alpha=0.0)
    assert (policy_probabilities(lowest, TEST)[:, 0] == 1.0).all()


def test_lints_monte_carlo_is_seeded_and_matches_its_draws():
    learner = trained(LinTS(5, 4, layout="disjoint", v=0.5))
    state = learner.rng.bit_generator.state
    a, b = (policy_probabilities(learner, TEST, n_samples=400, seed=7) for _ in range(2))
    assert np.array_equal(a, b) and np.allclose(a.sum(axis=1), 1.0)
    assert learner.rng.bit_generator.state == state  # the learner's own generator is untouched
    picks = np.array([[learner.select(TEST.context[t]) for _ in range(400)] for t in range(5)])
    frequencies = np.stack([np.bincount(row, minlength=5) / 400 for row in picks])
    assert np.abs(frequencies - a[:5]).max() < 0.12  # two Monte-Carlo estimates of one distribution


def test_uniform_and_a_learned_policy_evaluate_near_their_true_value():
    for learner in (UniformRandom(5), trained(EpsilonGreedy(5, 4, epsilon=0.2))):
        pi = policy_probabilities(learner, TEST)
        result = ips(TEST, pi, seed=1)
        assert result.low - 0.05 <= TEST.policy_value(pi) <= result.high + 0.05


def test_replay_trains_only_on_matching_rounds():
    def absorbed(learner):  # Σ ||x_t||² over the rounds the learner was updated on: trace(A) − λ d K
        return sum(np.trace(np.linalg.inv(learner.stats.A_inv[a])) for a in range(5)) - 4 * 5

    replayed, fitted = LinUCB(5, 4, layout="disjoint"), LinUCB(5, 4, layout="disjoint")
    train_on_log(replayed, TRAIN)
    train_on_log(fitted, TRAIN, replay=False)
    assert absorbed(fitted) == pytest.approx((TRAIN.context**2).sum())
    assert 0 < absorbed(replayed) < 0.6 * absorbed(fitted)  # only the rounds where it chose the logged action


@pytest.mark.parametrize("n_samples", [1, 10])
def test_lints_probabilities_are_shares_of_draws(n_samples):
    learner = trained(LinTS(5, 4, layout="disjoint", v=0.5))
    pi = policy_probabilities(learner, TEST, n_samples=n_samples)
    assert np.allclose(pi * n_samples, np.round(pi * n_samples))
