"""FCLUB's special cases and variants (spec fclub.md §9 checks 6 and 7, §6.1 Homo / Homo-DC)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components

from privbandits.envs.clustered import ClusteredLinearBandit
from privbandits.protocols.fclub import FederatedClusteredBandit, run_fclub
from privbandits.protocols.fclub.config import F, FCLUBConfig


def _scores(contexts: np.ndarray, gram: np.ndarray, moment: np.ndarray, beta: float) -> np.ndarray:
    inverse = np.linalg.inv(gram)
    return contexts @ inverse @ moment + beta * np.sqrt(np.einsum("ki,ij,kj->k", contexts, inverse, contexts))


def _is_argmax(scores: np.ndarray, arm: int) -> bool:
    return scores[arm] >= scores.max() - 1e-9 * max(1.0, abs(scores.max()))


@pytest.mark.filterwarnings("ignore:FCLUB. privatizer noise exceeded")
def test_one_server_one_cluster_is_private_linucb_with_determinant_triggered_updates():
    """§9.6: with L = 1 and m = 1, CDP-FCLUB-DC is a private LinUCB whose statistics change only when
    det(S + ΔS)/det(S) ≥ U (Eq. 5), the noisy buffer included; nothing is ever downloaded."""
    env = ClusteredLinearBandit(n_users=6, n_clusters=1, dim=4, n_arms=5)
    config = FCLUBConfig.for_variant("cdp-fclub-dc", horizon=1022)
    bandit = FederatedClusteredBandit(config, np.zeros(6, dtype=int), 4, 5, rng=np.random.default_rng(0))
    env.reset(np.random.default_rng(1))
    log_u = math.log(config.upload_threshold)
    changed, fired = [], []
    for t in range(1, config.horizon + 1):
        contexts, _ = env.next_round()
        arm = bandit.select(env.user, contexts)
        (cluster,) = bandit.servers[0].clusters.values()
        S_before = cluster.S.copy()
        beta = bandit.calibration.beta(cluster.T, 1, cluster.depth)
        assert _is_argmax(_scores(contexts, cluster.S, cluster.u, beta), arm)
        x = contexts[arm]
        M = cluster.S + cluster.raw_S + np.outer(x, x) + cluster.P  # numerator of Eq. 5 after this round
        should_fire = np.linalg.slogdet(M)[1] - np.linalg.slogdet(cluster.S)[1] >= log_u
        uploads = bandit.communication.uploads
        bandit.update(env.reward(arm))
        if bandit.communication.uploads > uploads:
            fired.append(t)
        if not np.array_equal(S_before, cluster.S):
            changed.append(t)
        assert (bandit.communication.uploads > uploads) == should_fire, t
    assert len(bandit.partition()) == 1 and bandit.communication.downloads == 0
    assert bandit.communication.renewals == 1  # the first phase only: the partition never changes
    assert changed == fired  # the statistics move at uploads only
    # Each upload adds 3ρI, so det(S + ΔS)/det(S) ≈ ((c + 5/3)/(c + 2/3))^d ≥ U by itself while c ≲ d/ln U:
    # the first ≈ 100·d rounds all upload, later ones only when the data moves the determinant.
    assert fired[: 4 * 90] == list(range(1, 4 * 90 + 1)) and len(fired) < config.horizon / 2


def test_one_server_without_privacy_is_phase_based_club():
    """§9.6: with L = 1 and privacy off, FCLUB is CLUB whose edge deletions (Eq. 3) happen only at phase
    starts: the partition is the connected components of that graph, and each round's arm is the OFUL
    arm of its component's pooled statistics ``λI + Σ V_i``."""
    env = ClusteredLinearBandit(n_users=12, n_clusters=3, dim=5, n_arms=6)
    config = FCLUBConfig.for_variant("fclub", horizon=2046)
    bandit = FederatedClusteredBandit(config, np.zeros(12, dtype=int), 5, 6, rng=np.random.default_rng(0))
    env.reset(np.random.default_rng(2))
    V, b, counts = np.zeros((12, 5, 5)), np.zeros((12, 5)), np.zeros(12, dtype=int)
    graph = ~np.eye(12, dtype=bool)
    labels = np.zeros(12, dtype=int)
    partitions = set()
    for t in range(1, config.horizon + 1):
        if t == 2 ** (len(bandit.phase_starts) + 1) - 1:  # a phase starts: t = 2^s − 1
            theta = np.linalg.solve(V + config.ridge * np.eye(5), b[..., None])[..., 0]
            distance = np.linalg.norm(theta[:, None] - theta[None], axis=-1)
            width = config.alpha1 * F(counts)
            graph &= ~(distance > width[:, None] + width[None])
            labels = connected_components(csr_matrix(graph), directed=False)[1]
        contexts, _ = env.next_round()
        user = env.user
        arm = bandit.select(user, contexts)
        expected = frozenset(frozenset(np.flatnonzero(labels == g).tolist()) for g in set(labels))
        assert bandit.partition() == expected, t
        partitions.add(expected)
        members = labels == labels[user]
        gram = config.ridge * np.eye(5) + V[members].sum(axis=0)
        beta = bandit.calibration.beta(int(counts[members].sum()), 1, 1)
        assert _is_argmax(_scores(contexts, gram, b[members].sum(axis=0), beta), arm)
        reward = env.reward(arm)
        bandit.update(reward)
        x = contexts[arm]
        V[user] += np.outer(x, x)
        b[user] += reward * x
        counts[user] += 1
    assert len(partitions) >= 2 and bandit.communication.downloads == 0


@pytest.mark.parametrize("variant", ["homo", "homo-dc"])
def test_homo_variants_keep_one_cluster_and_suffer_linear_regret(variant):
    """Homo and Homo-DC never split: one global cluster of all users (L' = L), so on four orthogonal
    clusters their regret keeps growing linearly while FCLUB-DC's flattens (Fig. 2a)."""
    horizon = 8190
    homo = run_fclub(FCLUBConfig.for_variant(variant, horizon=horizon), ClusteredLinearBandit(), 5, seed=0)
    clustered = run_fclub(FCLUBConfig.for_variant("fclub-dc", horizon=horizon), ClusteredLinearBandit(), 5, seed=0)
    assert homo.bandit.partition() == frozenset([frozenset(range(40))])
    assert {c.sharing for s in homo.bandit.servers for c in s.clusters.values()} == {5}

    def last_quarter_slope(out) -> float:
        return (out.regret[-1] - out.regret[3 * horizon // 4]) / (horizon // 4)

    first_quarter = homo.regret[horizon // 4] / (horizon // 4)
    assert last_quarter_slope(homo) > 0.5 * first_quarter  # linear: the slope does not decay
    assert last_quarter_slope(homo) > 10 * last_quarter_slope(clustered)
    counts = homo.bandit.communication
    synchronous = 5 * horizon  # an upload and L' − 1 = 4 downloads every round
    if variant == "homo":
        assert counts.uploads + counts.downloads == synchronous
    else:
        assert 0 < counts.uploads + counts.downloads < synchronous / 2


def test_communication_grows_logarithmically_once_clusters_are_found():
    """§9.7: without privacy, after the partition is correct, each phase (a doubling of t) costs about the
    same number of asynchronous events, at most ``d ln 2 / ln U`` uploads per local cluster and phase
    (det of a cluster's Gram matrix grows by about 2^d per doubling of its data) and as many downloads."""
    env = ClusteredLinearBandit()
    events_at = {}

    def record(bandit: FederatedClusteredBandit) -> None:
        counts = bandit.communication
        events_at.setdefault(bandit.t, counts.uploads + counts.downloads)

    config = FCLUBConfig.for_variant("fclub-dc", horizon=2**15 - 2)
    out = run_fclub(config, env, 5, seed=0, event_hook=record)
    starts = out.bandit.phase_starts
    at_start = [events_at[t] for t in starts]
    per_phase = np.diff(at_start + [out.bandit.communication.uploads + out.bandit.communication.downloads])
    late = per_phase[-3:]  # phases 12, 13, 14: 4096, 8192, 16384 rounds
    assert late.max() / late.min() < 1.5  # rounds doubled twice, events did not
    local_clusters = sum(len(s.clusters) for s in out.bandit.servers)
    bound = local_clusters * env.dim * math.log(2) / math.log(config.upload_threshold)
    assert late.max() <= 2 * bound
    assert out.bandit.communication.total < config.horizon  # FCLUB uploads every round, and downloads too
