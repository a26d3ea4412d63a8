"""FCLUB's synthetic settings (spec fclub.md §6.2, §8 A18)."""

from __future__ import annotations

import numpy as np
import pytest

from privbandits.envs.clustered import ClusteredLinearBandit, assign_groups


def test_paper_construction_has_orthonormal_thetas_with_gap_sqrt2():
    env = ClusteredLinearBandit()
    env.reset(np.random.default_rng(0))
    np.testing.assert_allclose(env.thetas @ env.thetas.T, np.eye(4), atol=1e-12)
    gaps = np.linalg.norm(env.thetas[:, None] - env.thetas[None], axis=-1)[np.triu_indices(4, 1)]
    np.testing.assert_allclose(gaps, np.sqrt(2))
    contexts, expected = env.next_round()
    np.testing.assert_allclose(np.linalg.norm(contexts, axis=1), 1.0)
    np.testing.assert_allclose(expected, contexts @ env.thetas[env.cluster_of[env.user]])


def test_reference_construction_has_means_in_unit_interval_and_bernoulli_rewards():
    env = ClusteredLinearBandit(construction="reference")
    env.reset(np.random.default_rng(1))
    np.testing.assert_allclose(env.thetas[:, -1], 1 / np.sqrt(2))
    np.testing.assert_allclose(np.linalg.norm(env.thetas, axis=1), 1.0)
    rewards, means = [], []
    for _ in range(300):
        contexts, expected = env.next_round()
        assert expected.min() >= 0 and expected.max() <= 1
        rewards.append(env.reward(0))
        means.append(expected[0])
    assert set(rewards) <= {0.0, 1.0}
    assert np.mean(rewards) == pytest.approx(np.mean(means), abs=0.08)


def test_arrivals_are_uniform_and_reproducible():
    users = []
    for _ in range(2):
        env = ClusteredLinearBandit()
        env.reset(np.random.default_rng(7))
        users.append([env.next_round() and env.user for _ in range(4000)])
    assert users[0] == users[1]
    assert np.bincount(users[0], minlength=40).min() > 50


def test_block_assignments_follow_the_reference_code():
    np.testing.assert_array_equal(np.bincount(assign_groups(40, 4)), [10] * 4)
    servers = assign_groups(42, 5, remainder_last=True)
    np.testing.assert_array_equal(np.bincount(servers), [8, 8, 8, 8, 10])
    assert (np.diff(servers) >= 0).all()
    shuffled = assign_groups(40, 4, "random", np.random.default_rng(0))
    assert np.bincount(shuffled).tolist() == [10] * 4 and (np.diff(shuffled) < 0).any()
    with pytest.raises(ValueError, match="groups"):
        assign_groups(3, 4)
    with pytest.raises(ValueError, match="n_clusters must be <= dim"):
        ClusteredLinearBandit(n_clusters=11, dim=10)
