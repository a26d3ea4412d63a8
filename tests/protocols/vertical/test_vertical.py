"""O3M masks and the VFUCB / VFTS protocols against centralized LinUCB / LinTS (spec vertical-o3m.md)."""

from __future__ import annotations

import re

import numpy as np
import pytest
from scipy import stats
from scipy.linalg import block_diag

from privbandits.comm import ROUND, SETUP, InMemoryNetwork, ProtocolError
from privbandits.envs import LinearGaussianBandit
from privbandits.linear import LinTS, LinUCB
from privbandits.privacy.masks import (
    MaskError,
    check_mask,
    draw_mask,
    haar_orthogonal,
    split_columns,
)
from privbandits.protocols.vertical.core import (
    ActiveParty,
    AggregationShare,
    MaskBlock,
    MaskedContexts,
    MaskedContextsChunk,
    MaskGenerator,
    PassiveParty,
    RoundRequest,
    RoundRequests,
    VerticalFederatedBandit,
    from_fixed_point,
)

PARTITION = [20, 20, 20, 20, 20]


# -- masks ----------------------------------------------------------------------
@pytest.mark.parametrize("dim", [2, 7, 100, 500])
def test_haar_masks_are_orthogonal_to_1e_12(dim):
    q = haar_orthogonal(dim, np.random.default_rng(dim))
    assert np.max(np.abs(q.T @ q - np.eye(dim))) <= 1e-12
    assert np.max(np.abs(q @ q.T - np.eye(dim))) <= 1e-12


def test_os_entropy_masks_are_orthogonal_and_differ():
    first, second = draw_mask([3, 4], source="os"), draw_mask([3, 4], source="os")
    assert np.max(np.abs(first.T @ first - np.eye(7))) <= 1e-12
    assert not np.allclose(first, second)


def test_haar_rotation_angle_is_uniform():
    """In 2-D a Haar draw is a rotation or reflection by a uniform angle (the QR sign fix matters)."""
    rng = np.random.default_rng(0)
    angles = np.array([np.arctan2(q[1, 0], q[0, 0]) for q in (haar_orthogonal(2, rng) for _ in range(4000))])
    assert stats.kstest(angles, stats.uniform(-np.pi, 2 * np.pi).cdf).pvalue > 0.01


@pytest.mark.parametrize(
    ("mask", "partition", "error"),
    [
        (np.eye(4), [2, 2], "the mask has a signed unit column (identity or signed permutation), which exposes"),
        (-np.eye(4)[[2, 0, 3, 1]], [2, 2], "the mask has a signed unit column"),
        (
            block_diag(haar_orthogonal(2, np.random.default_rng(1)), haar_orthogonal(2, np.random.default_rng(2))),
            [2, 2],
            "the mask is block-diagonal for party 0: its block maps only onto its own coordinates",
        ),
        (np.ones((4, 4)), [2, 2], "the mask is not orthogonal: max |Q^T Q - I| = 4 > 1e-12"),
        (np.ones((4, 3)), [2, 2], "a mask must be a square matrix, got shape (4, 3)"),
    ],
)
def test_unsafe_masks_are_rejected(mask, partition, error):
    with pytest.raises(MaskError, match=f"^{re.escape(error)}"):
        check_mask(mask, partition)


def test_partition_must_fit_the_mask():
    with pytest.raises(ValueError, match=r"^partition \[2, 3\] sums to 5, but the context dimension is 4$"):
        check_mask(haar_orthogonal(4, np.random.default_rng(0)), [2, 3])
    with pytest.raises(ValueError, match=r"^partition sizes must be >= 1, got \[2, 0\]$"):
        draw_mask([2, 0], rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="^a seeded mask needs rng"):
        draw_mask([2, 2])


def test_column_blocks_reassemble_the_masked_context():
    rng = np.random.default_rng(3)
    q = draw_mask([2, 5, 3], rng=rng)
    x = rng.standard_normal(10)
    blocks = split_columns(q, [2, 5, 3])
    assert [b.shape for b in blocks] == [(10, 2), (10, 5), (10, 3)]
    parts = np.split(x, [2, 7])
    np.testing.assert_allclose(sum(b @ xj for b, xj in zip(blocks, parts, strict=True)), q @ x, atol=1e-14)


# -- protocol helpers ---------------------------------------------------------------
def _environment(seed: int, dim: int = 100, n_arms: int = 10):
    env_seed, policy_seed = np.random.SeedSequence(seed).spawn(2)
    env = LinearGaussianBandit(dim=dim, n_arms=n_arms)
    env.reset(np.random.default_rng(env_seed))
    return env, np.random.default_rng(policy_seed)


class RotatedNormals:
    """Test double for the AP's generator: standard normals z̃ = Q z from a twin of the central stream."""

    def __init__(self, seed: int, mask: np.ndarray) -> None:
        self.base, self.mask = np.random.default_rng(seed), mask

    def standard_normal(self, size):
        return self.mask @ self.base.standard_normal(size)


# -- VFUCB ---------------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(5))
def test_vfucb_makes_the_central_decisions_at_every_round(seed):
    """Acceptance: T=5000, d=100, K=10, M=5: same actions; |r̃-r̂|, |B̃-B̂| ≤ 1e-9; Λ̃, ũ, θ̃ = rotated central."""
    env, rng = _environment(seed)
    central = LinUCB(10, 100, alpha=0.5)
    federated = VerticalFederatedBandit(PARTITION, LinUCB(10, 100, alpha=0.5), rng=rng)
    ap = federated.active.learner
    worst_estimate = worst_width = 0.0
    for t in range(5000):
        contexts, _ = env.next_round()
        arm = central.select(contexts)
        assert federated.select(contexts) == arm, f"round {t + 1}"
        masked = federated.active.masked_contexts
        if t % 10 == 0:
            estimate_gap = ap.estimates(masked) - central.estimates(contexts)
            width_gap = ap.confidence_widths(masked) - central.confidence_widths(contexts)
            worst_estimate = max(worst_estimate, np.max(np.abs(estimate_gap)))
            worst_width = max(worst_width, np.max(np.abs(width_gap)))
        reward = env.reward(arm)
        central.update(contexts, arm, reward)
        federated.update(contexts, arm, reward)
    assert worst_estimate <= 1e-9 and worst_width <= 1e-9
    q = federated.mask
    np.testing.assert_allclose(ap.stats.A[0], q @ central.stats.A[0] @ q.T, rtol=0, atol=1e-10 * 5000)
    np.testing.assert_allclose(ap.stats.A_inv[0], q @ central.stats.A_inv[0] @ q.T, rtol=0, atol=1e-10)
    np.testing.assert_allclose(ap.stats.b[0], q @ central.stats.b[0], rtol=0, atol=1e-10)
    np.testing.assert_allclose(federated.theta, q @ central.theta, rtol=0, atol=1e-10)
    assert abs(np.linalg.norm(federated.theta) - np.linalg.norm(central.theta)) <= 1e-12


def test_every_message_crosses_the_network_and_bytes_match_the_formula():
    """8·(M−1)·K·d payload bytes per round to the AP, d² floats of mask once, 2 communication rounds."""
    dim, n_arms, rounds = 30, 6, 40
    partition = [6, 9, 5, 10]
    env, rng = _environment(0, dim, n_arms)
    federated = VerticalFederatedBandit(partition, LinUCB(n_arms, dim), rng=rng, network=InMemoryNetwork(record=True))
    for _ in range(rounds):
        contexts, _ = env.next_round()
        federated.update(contexts, federated.select(contexts), 0.5)
    traffic, m = federated.traffic, len(partition)
    assert traffic.total("round", receiver="active").bytes == rounds * 8 * (m - 1) * n_arms * dim
    assert traffic.per_segment("round", receiver="active") == 8 * (m - 1) * n_arms * dim
    assert traffic.total("setup").bytes == 8 * dim * dim
    control = traffic.total("round", sender="active")
    assert (control.messages, control.bytes) == (rounds * (m - 1), rounds * (m - 1) * 8 * (2 + n_arms))
    assert traffic.rounds["round"] == 2 * rounds and traffic.segments["round"] == rounds
    assert traffic.rounds["setup"] == 1
    kinds_received = {}
    for envelope in federated.network.transcript:
        kinds_received.setdefault(envelope.receiver, set()).add(envelope.message.kind)
    assert kinds_received["active"] == {MaskBlock.kind, MaskedContexts.kind}
    for j in range(2, m + 1):  # passive parties learn neither arms nor rewards
        assert kinds_received[f"passive{j}"] == {MaskBlock.kind, RoundRequest.kind}
    assert "mask_generator" not in kinds_received


def test_serialised_transport_gives_the_same_run():
    env, rng = _environment(4, 12, 5)
    runs = []
    for serialize in (False, True):
        env, rng = _environment(4, 12, 5)
        net = InMemoryNetwork(serialize=serialize)
        federated = VerticalFederatedBandit([4, 4, 4], LinUCB(5, 12), rng=rng, network=net)
        actions = []
        for _ in range(300):
            contexts, _ = env.next_round()
            actions.append(federated.select(contexts))
            federated.update(contexts, actions[-1], env.reward(actions[-1]))
        runs.append((actions, federated.theta.copy()))
    assert runs[0][0] == runs[1][0]
    np.testing.assert_array_equal(runs[0][1], runs[1][1])


def test_missing_users_send_zeros_and_match_central_on_imputed_contexts():
    env, rng = _environment(2, 30, 6)
    partition = [10, 10, 10]
    central = LinUCB(6, 30, alpha=0.5)
    federated = VerticalFederatedBandit(partition, LinUCB(6, 30, alpha=0.5), rng=rng)
    presence = np.random.default_rng(9).random((2000, 3)) < 0.7
    presence[:, 0] = True
    for t in range(2000):
        contexts, _ = env.next_round()
        imputed = contexts.copy()
        for j in (1, 2):
            if not presence[t, j]:
                imputed[:, 10 * j : 10 * (j + 1)] = 0.0
        arm = central.select(imputed)
        assert federated.select(contexts, present=presence[t]) == arm
        reward = env.reward(arm)
        central.update(imputed, arm, reward)
        federated.update(contexts, arm, reward)
    np.testing.assert_allclose(federated.theta, federated.mask @ central.theta, atol=1e-10)


# -- secure aggregation -----------------------------------------------------------------------
def test_secure_aggregation_shows_the_active_party_only_the_sum():
    env, rng = _environment(1, 40, 8)
    partition = [10, 10, 10, 10]
    central = LinUCB(8, 40, alpha=0.5)
    net = InMemoryNetwork(record=True)
    learner = LinUCB(8, 40, alpha=0.5)
    federated = VerticalFederatedBandit(partition, learner, rng=rng, secure_aggregation=True, network=net)
    blocks_t = [b.T for b in split_columns(federated.mask, partition)]
    for _ in range(1500):
        contexts, _ = env.next_round()
        arm = central.select(contexts)
        assert federated.select(contexts) == arm
        reward = env.reward(arm)
        central.update(contexts, arm, reward)
        federated.update(contexts, arm, reward)
    np.testing.assert_allclose(federated.theta, federated.mask @ central.theta, atol=1e-9)
    to_active = [e for e in net.transcript if e.receiver == "active" and e.phase == "round"]
    assert {e.message.kind for e in to_active} == {AggregationShare.kind}
    # The last round: each share alone decodes to noise; their sum is the passive parties' masked sum.
    last = to_active[-3:]
    masked = [contexts[:, 10 * j : 10 * (j + 1)] @ blocks_t[j] for j in (1, 2, 3)]
    for envelope, truth in zip(last, masked, strict=True):
        assert np.max(np.abs(from_fixed_point(envelope.message.share) - truth)) > 1e3
    total = sum((e.message.share for e in last), np.zeros_like(last[0].message.share))
    np.testing.assert_allclose(from_fixed_point(total), sum(masked), atol=1e-11)


def _rows_of(features: np.ndarray, block: slice):
    """A feature source: round t's rows of ``features`` in ``block``'s columns."""
    return lambda request: features[request.round - 1][:, block]


def _hand_wired(secure: bool, features: np.ndarray, partition: list[int]):
    """The parties of one session wired by hand on an in-memory network (as a deployment runs them)."""
    network = InMemoryNetwork()
    names = ["active"] + [f"passive{j}" for j in range(2, len(partition) + 1)]
    starts = np.cumsum([0, *partition])
    blocks = [slice(starts[j], starts[j + 1]) for j in range(len(partition))]
    generator = MaskGenerator("pmg", network, partition, draw_mask(partition, rng=np.random.default_rng(5)))
    active = ActiveParty(
        "active",
        network,
        LinUCB(features.shape[1], features.shape[2], alpha=0.5),
        _rows_of(features, blocks[0]),
        passive=names[1:],
        generator="pmg",
        secure_aggregation=secure,
    )
    passive = [
        PassiveParty(
            name, network, lambda request, b=block: features[request.round - 1][:, b], active="active", generator="pmg"
        )
        for name, block in zip(names[1:], blocks[1:], strict=True)
    ]
    with network.phase(SETUP):
        generator.distribute(names)
        active.receive_mask()
        for party in passive:
            party.receive_mask()
        if secure:
            for j, party in enumerate(passive):
                party.offer_pair_seeds(names[j + 2 :])
            for j, party in enumerate(passive):
                party.accept_pair_seeds(names[1 : j + 1])
    return network, active, passive


def test_an_active_party_without_the_users_features_says_so_and_starts_no_round():
    """A feature source that lacks the user (None, as a passive party's may) is refused at begin_round, before any
    state changes: not an AttributeError from deep inside."""
    features = np.random.default_rng(0).normal(size=(2, 3, 5))
    network, active, _ = _hand_wired(False, features, [2, 3])
    active.features = lambda request: None
    with pytest.raises(ValueError, match=r"^active: its feature source has no row for user 7 of round 1; the active "
                       r"party serves only users it holds$"):  # fmt: skip
        active.begin_round(RoundRequest(1, 7, np.arange(3)))
    assert active._request is None


@pytest.mark.parametrize("secure", [False, True])
def test_chunked_requests_give_every_round_the_same_masked_contexts_and_bytes_per_link(secure):
    """A chunk of requests answered in one message per passive party: the active party sees, round by round,
    exactly the masked contexts of one request per round (the sum under secure aggregation), decides the same,
    and every link carries the same payload bytes in fewer messages."""
    rounds, chunk, partition = 23, 5, [4, 3, 5, 2]
    features = np.random.default_rng(8).normal(size=(rounds, 6, sum(partition)))
    runs = []
    for chunked in (False, True):
        network, active, passive = _hand_wired(secure, features, partition)
        seen, arms, items = [], [], np.arange(6)
        for t in range(rounds):
            with network.phase(ROUND):
                if not chunked:
                    active.request_round(t + 1, 100 + t, items)
                    for party in passive:
                        assert party.serve_round() == 1
                else:
                    if t % chunk == 0:
                        requests = [RoundRequest(u + 1, 100 + u, items) for u in range(t, min(rounds, t + chunk))]
                        active.send_requests(requests)
                        for party in passive:
                            assert party.serve_chunk() == len(requests)
                    active.begin_round(RoundRequest(t + 1, 100 + t, items))
                for party in passive:
                    active.absorb(party.name)
                arms.append(active.choose())
                seen.append(active.masked_contexts.copy())
            active.learn(arms[-1], float(features[t, arms[-1]].sum()))
        runs.append((seen, arms, network.traffic))
    (plain, plain_arms, plain_traffic), (chunked, chunked_arms, chunked_traffic) = runs
    assert chunked_arms == plain_arms
    for one, other in zip(plain, chunked, strict=True):
        np.testing.assert_array_equal(one, other)
    plain_links, chunked_links = _round_links(plain_traffic), _round_links(chunked_traffic)
    assert plain_links.keys() == chunked_links.keys() and len(plain_links) == 6
    for link, (messages, size) in plain_links.items():
        assert (messages, chunked_links[link]) == (rounds, (5, size))  # ceil(23 / 5) = 5 chunks, the same bytes


def _round_links(traffic) -> dict:
    return {(phase, a, b): (m, size) for phase, a, b, m, size, _ in traffic.rows() if phase == "round"}


def test_a_chunk_answered_with_the_wrong_number_of_rounds_is_named():
    features = np.random.default_rng(8).normal(size=(4, 3, 6))
    network, active, passive = _hand_wired(False, features, [3, 3])
    with network.phase(ROUND):
        active.send_requests([RoundRequest(t + 1, t, np.arange(3)) for t in range(4)])
        passive[0].receive(RoundRequests.kind, "active")  # the chunk, answered short below
        passive[0].send("active", MaskedContextsChunk(np.zeros((3, 3, 6))))
        active.begin_round(RoundRequest(1, 0, np.arange(3)))
        with pytest.raises(ProtocolError, match=r"^'passive2' answered 3 rounds of a chunk of 4 requests$"):
            active.absorb("passive2")
        with pytest.raises(ValueError, match="^a chunk of round requests needs at least one request$"):
            active.send_requests([])


def test_protocol_errors_are_clear():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match=r"^partition \[5, 5\] sums to 10, but the context dimension is 12$"):
        VerticalFederatedBandit([5, 5], LinUCB(3, 12), rng=rng)
    with pytest.raises(ValueError, match=r"^secure aggregation needs at least 2 passive parties"):
        VerticalFederatedBandit([6, 6], LinUCB(3, 12), rng=rng, secure_aggregation=True)
    with pytest.raises(ValueError, match="^the active party's learner must use the shared layout"):
        VerticalFederatedBandit([6, 6], LinUCB(3, 12, layout="disjoint"), rng=rng)
    federated = VerticalFederatedBandit([6, 6], LinUCB(3, 12), rng=rng)
    with pytest.raises(ValueError, match=r"^contexts have shape \(3, 11\); expected \(3, 12\)$"):
        federated.select(np.zeros((3, 11)))
    with pytest.raises(ValueError, match=r"^the active party always knows the user it serves"):
        federated.select(np.zeros((3, 12)), present=[False, True])


# -- VFTS ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("seed", "rounds"), [(0, 400), *(pytest.param(seed, 1500, marks=pytest.mark.slow) for seed in (1, 2))]
)  # 1,500 rounds took 9 s on 2 busy cores
def test_vfts_draws_equal_rotated_lints_draws_pathwise(seed, rounds):
    """Spec §4.2: with the symmetric root and z̃ = Qz, μ̃ = Qμ̂ exactly, so the same arms are drawn."""
    env, rng = _environment(seed)
    mask = draw_mask(PARTITION, rng=rng)
    central = LinTS(10, 100, v=0.01, sampler="eigh", rng=np.random.default_rng(100 + seed))
    learner = LinTS(10, 100, v=0.01, sampler="eigh")
    learner.rng = RotatedNormals(100 + seed, mask)
    federated = VerticalFederatedBandit(PARTITION, learner, mask=mask)
    worst = 0.0
    for t in range(rounds):
        contexts, _ = env.next_round()
        if t % 100 == 0:
            state = (central.rng.bit_generator.state, learner.rng.base.bit_generator.state)
            mu_central = central.sample_parameters()[0]
            mu_federated = learner.sample_parameters()[0]
            worst = max(worst, np.max(np.abs(mu_federated - mask @ mu_central)))
            central.rng.bit_generator.state, learner.rng.base.bit_generator.state = state
        arm = central.select(contexts)
        assert federated.select(contexts) == arm, f"round {t + 1}"
        reward = env.reward(arm)
        central.update(contexts, arm, reward)
        federated.update(contexts, arm, reward)
    assert worst <= 1e-10


def test_vfts_scores_have_the_lints_distribution_at_a_frozen_state():
    env, rng = _environment(7, 20, 5)
    central = LinTS(5, 20, v=0.3, rng=np.random.default_rng(1))
    federated = VerticalFederatedBandit([8, 12], LinTS(5, 20, v=0.3, rng=np.random.default_rng(2)), rng=rng)
    for _ in range(60):  # a shared history (same arms), so both posteriors are the same up to Q
        contexts, _ = env.next_round()
        arm = central.select(contexts)
        federated.select(contexts)
        reward = env.reward(arm)
        central.update(contexts, arm, reward)
        federated.update(contexts, arm, reward)
    contexts, _ = env.next_round()
    federated.select(contexts)
    masked = federated.active.masked_contexts
    draws = 4000
    plain = np.array([central.scores(contexts) for _ in range(draws)])
    rotated = np.array([federated.active.learner.scores(masked) for _ in range(draws)])
    for arm in range(5):
        assert stats.ks_2samp(plain[:, arm], rotated[:, arm]).pvalue > 0.001
    winners = np.array([np.bincount(s.argmax(axis=1), minlength=5) for s in (plain, rotated)])
    winners = winners[:, winners.sum(axis=0) > 0]
    assert stats.chi2_contingency(winners).pvalue > 0.001
    np.testing.assert_allclose(np.cov(plain.T), np.cov(rotated.T), atol=0.15 * np.max(np.cov(plain.T)))


def test_vfts_regret_is_indistinguishable_from_lints_over_seeds():
    finals = {"central": [], "federated": []}
    for seed in range(6):
        for name in finals:
            env, rng = _environment(seed, 40, 10)
            learner = LinTS(10, 40, v=0.01, rng=rng)
            policy = learner if name == "central" else VerticalFederatedBandit([8] * 5, learner, rng=rng)
            regret = 0.0
            for _ in range(1500):
                contexts, expected = env.next_round()
                arm = policy.select(contexts)
                policy.update(contexts, arm, env.reward(arm))
                regret += expected.max() - expected[arm]
            finals[name].append(regret)
    central, federated = np.array(finals["central"]), np.array(finals["federated"])
    assert stats.ttest_rel(central, federated).pvalue > 0.05
    assert abs(central.mean() - federated.mean()) < 0.15 * central.mean()
