"""FCLUB's local baselines: per-user LinUCB, CLUB and SCLUB per local server (spec fclub.md §6.1, §8 A17)."""

from __future__ import annotations

import numpy as np
import pytest

from privbandits.envs.clustered import ClusteredLinearBandit, assign_groups
from privbandits.protocols.fclub.baselines import BaselineConfig, LocalBaselineBandit, run_baseline


@pytest.mark.parametrize(("kind", "pooled"), [("linucb", False), ("club", True), ("sclub", True)])
def test_arms_are_the_ridge_ucb_of_the_served_cluster(kind, pooled):
    """Per-user LinUCB scores each user's own data; CLUB or SCLUB that never split pool their whole server."""
    config = BaselineConfig(kind=kind, horizon=300, alpha_club=1e6, alpha_sclub=1e6, alpha_frequency=1e6)
    env = ClusteredLinearBandit(n_users=12, n_clusters=3, dim=5, n_arms=6)
    env.reset(np.random.default_rng(0))
    servers = assign_groups(12, 3, remainder_last=True)
    bandit = LocalBaselineBandit(config, servers, env.dim, np.random.default_rng(1))
    V, b, counts = np.zeros((12, 5, 5)), np.zeros((12, 5)), np.zeros(12, dtype=int)
    a = {"club": 0.25, "sclub": 1.5, "linucb": 15.0}[kind]
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
        BaselineConfig(kind="dynucb")
    with pytest.raises(ValueError, match="alpha_frequency must be > 0"):
        BaselineConfig(kind="sclub", alpha_frequency=0)
    with pytest.raises(ValueError, match="alpha_club must be > 0"):
        BaselineConfig(alpha_club=0)


def _true_local_clusters(env: ClusteredLinearBandit, servers: np.ndarray) -> set[frozenset[int]]:
    clusters = range(env.n_clusters)
    cells = {
        frozenset(np.flatnonzero((env.cluster_of == c) & (servers == s)).tolist()) for c in clusters for s in range(5)
    }
    return cells - {frozenset()}


def test_sclub_splits_and_merges_into_the_true_local_clusters():
    """SCLUB (α = 1.5, α_p = 1) on the paper setting: each server's clusters are its true clusters, found by
    splitting single users off and merging them back; stages start at t = 2^s − 1."""
    env = ClusteredLinearBandit()
    out = run_baseline(BaselineConfig(kind="sclub", horizon=2**14 - 2), env, 5, seed=0)
    assert out.bandit.partition() == _true_local_clusters(env, assign_groups(40, 5, remainder_last=True))
    for _, server in out.bandit.servers:
        assert server.stage_starts == [2**s - 1 for s in range(1, 14)]
        assert len(server.stage_counts) == len(server.stage_theta) == server.labels.max() + 1
    assert out.communication[-1] == 0


def test_sclub_checks_a_user_once_per_stage_and_merges_only_checked_clusters():
    """A user far from its cluster's stage estimate is split at its first arrival of a stage only; the merge
    waits until every user of both clusters is checked."""
    config = BaselineConfig(kind="sclub", horizon=10)
    bandit = LocalBaselineBandit(config, np.zeros(3, dtype=int), 2, np.random.default_rng(0))
    (_, server), x = bandit.servers[0], np.array([1.0, 0.0])
    for t in (1, 2):  # stage 1 (t = 1, 2): all users serve θ ≈ (1, 0)
        for user in range(3):
            server.observe(user, x, 1.0, t)
    assert server.stage_starts == [1] and server.checked.all()
    server.user_theta[0] = [-5.0, 0.0]  # user 0 now looks far from its cluster, but it was checked already
    server.observe(0, x, 1.0, 2)
    assert server.labels.max() == 0
    server.observe(1, x, 1.0, 3)  # stage 2 starts: everyone unchecked; user 1 is close and stays
    server.user_theta[0] = [-5.0, 0.0]
    server.observe(0, x, 1.0, 4)  # user 0's first arrival in stage 2: split off
    assert server.stage_starts == [1, 3] and server.labels.tolist() in ([1, 0, 0], [0, 1, 1])
    assert not server.checked[2]  # user 2 unchecked: its cluster cannot merge yet, though θ̂'s agree
    server.observe(2, x, 1.0, 5)
    assert server.checked.all() and server.labels.max() == 0  # all checked, estimates close: merged back
