"""FCLUB's local baselines: per-user LinUCB and CLUB per local server (spec fclub.md §6.1, §8 A17)."""

from __future__ import annotations

import numpy as np
import pytest

from privbandits.envs.clustered import ClusteredLinearBandit, assign_groups
from privbandits.protocols.fclub_baselines import BaselineConfig, LocalBaselineBandit, run_baseline


@pytest.mark.parametrize(("kind", "pooled"), [("linucb", False), ("club", True)])
def test_arms_are_the_ridge_ucb_of_the_served_cluster(kind, pooled):
    """Per-user LinUCB scores each user's own data; CLUB that never deletes pools its whole server."""
    config = BaselineConfig(kind=kind, horizon=300, alpha_club=1e6)
    env = ClusteredLinearBandit(n_users=12, n_clusters=3, dim=5, n_arms=6)
    env.reset(np.random.default_rng(0))
    servers = assign_groups(12, 3, remainder_last=True)
    bandit = LocalBaselineBandit(config, servers, env.dim, np.random.default_rng(1))
    V, b, counts = np.zeros((12, 5, 5)), np.zeros((12, 5)), np.zeros(12, dtype=int)
    a = 0.25 if kind == "club" else 15.0
    for _ in range(config.horizon):
        contexts, _ = env.next_round()
        user = env.user
        arm = bandit.select(user, contexts)
        users = np.flatnonzero(servers == servers[user]) if pooled else [user]
        A = 2.0 * np.eye(5) + V[users].sum(axis=0)
        theta = np.linalg.solve(A, b[users].sum(axis=0))
        beta = 0.5 * np.sqrt(max(0.0, 2 * np.log(2 / a) + 5 * np.log(3 + counts[users].sum() / 5)))
        scores = contexts @ theta + beta * np.sqrt(np.einsum("ki,ij,kj->k", contexts, np.linalg.inv(A), contexts))
        assert scores[arm] >= scores.max() - 1e-9 * max(1.0, abs(scores.max()))
        reward = env.reward(arm)
        bandit.update(reward)
        V[user] += np.outer(contexts[arm], contexts[arm])
        b[user] += reward * contexts[arm]
        counts[user] += 1


def test_club_finds_the_true_local_clusters():
    """With α_CLUB = 1.5 (FCLUB's α1) on the paper setting, each server's components are its true clusters."""
    env = ClusteredLinearBandit()
    out = run_baseline(BaselineConfig(kind="club", horizon=4094, alpha_club=1.5), env, 5, seed=0)
    servers = assign_groups(40, 5, remainder_last=True)
    truth = {
        frozenset(np.flatnonzero((env.cluster_of == c) & (servers == ell)).tolist())
        for c in range(4)
        for ell in range(5)
    } - {frozenset()}
    assert out.bandit.partition() == truth
    assert out.communication[-1] == 0


def test_config_errors_name_the_field():
    with pytest.raises(ValueError, match="kind must be one of"):
        BaselineConfig(kind="sclub")
    with pytest.raises(ValueError, match="alpha_club must be > 0"):
        BaselineConfig(alpha_club=0)
