"""FCLUB's protocol (spec fclub.md §3, §9 checks 1, 2, 3, 5 and 7)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from privbandits.comm import InMemoryNetwork
from privbandits.envs.clustered import ClusteredLinearBandit
from privbandits.privacy import factorization
from privbandits.privacy.accountant import Release, pld_epsilon
from privbandits.privacy.noise import grid_step
from privbandits.privacy.tree_mechanism import dyadic_cover
from privbandits.protocols.fclub import ASYNC, DETECT, FederatedClusteredBandit, run_fclub
from privbandits.protocols.fclub.config import Calibration, FCLUBConfig, Lifecycle


def small_env(**kwargs) -> ClusteredLinearBandit:
    return ClusteredLinearBandit(**{"n_users": 12, "n_clusters": 3, "dim": 5, "n_arms": 6, **kwargs})


def play(bandit: FederatedClusteredBandit, env: ClusteredLinearBandit, rounds: int, seed: int = 0) -> None:
    env.reset(np.random.default_rng(seed))
    for _ in range(rounds):
        contexts, _ = env.next_round()
        arm = bandit.select(env.user, contexts)
        bandit.update(env.reward(arm))


@pytest.mark.parametrize(("horizon", "starts"), [(62, [1, 3, 7, 15, 31]), (70, [1, 3, 7, 15, 31, 63])])
def test_detection_runs_at_phase_starts(horizon, starts):
    """Detection at t = 2^s − 1; phase s has 2^s rounds; a last partial phase is allowed (§3.2, A1)."""
    out = run_fclub(FCLUBConfig.for_variant("fclub-dc", horizon=horizon), small_env(), 3, seed=0)
    assert out.bandit.phase_starts == starts
    assert np.diff(starts).tolist() == [2**s for s in range(1, len(starts))]
    assert out.bandit.communication.phase_uploads >= 3 * len(starts)


def _invariant_hook(events: list[str]):
    def check(bandit: FederatedClusteredBandit) -> None:
        servers = {s.name: s for s in bandit.servers}
        for (name, uid), member in bandit.global_server.members.items():
            local, glob = servers[name].clusters[uid], member.cluster
            scale = np.abs(glob.S).max()
            np.testing.assert_allclose(local.S + member.dS, glob.S, rtol=0, atol=1e-11 * scale)
            np.testing.assert_allclose(local.u + member.du, glob.u, rtol=0, atol=1e-11 * max(scale, 1.0))
            assert local.T + member.dT == glob.T
        events.append("checked")

    return check


@pytest.mark.parametrize("variant", ["cdp-fclub-dc", "fclub-dc", "fclub"])
def test_global_statistics_equal_local_copy_plus_download_buffer_after_every_event(variant):
    """§2.5: S^g_k = S^ℓ_j + ΔS^{−ℓ}_j (and u, T) for every member, after every event, with and without noise."""
    events: list[str] = []
    out = run_fclub(FCLUBConfig.for_variant(variant, horizon=510), small_env(), 3, seed=1,
                    event_hook=_invariant_hook(events))  # fmt: skip
    counts = out.bandit.communication
    assert counts.uploads > 0 and counts.downloads > 0
    assert len(events) == counts.uploads + counts.downloads + len(out.bandit.phase_starts)


@pytest.mark.parametrize("lifecycle", [Lifecycle.PERSISTENT, Lifecycle.RESET_EVERY_PHASE])
def test_noise_telescopes_after_c_uploads(lifecycle):
    """§3.5/§9.3: contribution − data = (2 + 3c)ρI + H^{(c+1)}, the binary-mechanism prefix noise, where the data
    are the sum of the snapped data (each datum snapped to the noise grid before it is summed) and the shifts are
    on that grid too.

    One server and one cluster, so the global sum is that cluster's contribution.
    With a fresh tree per phase the k-th draw since renewal is the prefix [1..k]
    (k = 1 is H̃); with a persistent tree the phase-start draw comes from the
    phase tree and the k-th asynchronous draw is prefix [1..k] of the other tree.
    """
    config = FCLUBConfig.for_variant("cdp-fclub-dc", horizon=300, detect_clusters=False, lifecycle=lifecycle)
    uploads_seen = []

    def check(bandit: FederatedClusteredBandit) -> None:
        server = bandit.servers[0]
        (cluster,) = server.clusters.values()
        glob = bandit.global_server.members[(server.name, cluster.uid)].cluster
        c, d = cluster.uploads_since_renewal, bandit.dim
        phase_shift, upload_shift = bandit.calibration.shifts(cluster.depth)
        assert abs(phase_shift - 2 * bandit.calibration.rho(cluster.depth)) < grid_step(cluster.async_tree.std)
        uploaded_S = server.V_grid.sum(axis=0) - cluster.grid_S
        uploaded_u = server.b_grid.sum(axis=0) - cluster.grid_u
        noise_S = glob.S - uploaded_S - (phase_shift + c * upload_shift) * np.eye(d)
        np.testing.assert_allclose(noise_S, cluster.H_bar, rtol=0, atol=1e-12 * np.abs(glob.S).max())
        np.testing.assert_allclose(glob.u - uploaded_u, cluster.h_bar, rtol=0, atol=1e-12 * np.abs(glob.u).max())
        tree = cluster.async_tree
        offset = 1 if lifecycle is Lifecycle.RESET_EVERY_PHASE else 0
        assert tree.releases == c + 1 + offset
        prefix = {k: sum(tree.nodes[key] for key in dyadic_cover(k)) for k in (c + offset, c + 1 + offset) if k}
        np.testing.assert_allclose(cluster.H, prefix[c + 1 + offset][:d, :d], rtol=0, atol=1e-12)
        np.testing.assert_allclose(cluster.h, prefix[c + 1 + offset][:d, d], rtol=0, atol=1e-12)
        if c + offset:
            np.testing.assert_allclose(cluster.H_bar, prefix[c + offset][:d, :d], rtol=0, atol=1e-12)
        uploads_seen.append(c)

    bandit = FederatedClusteredBandit(config, np.zeros(12, dtype=int), 5, 6, rng=np.random.default_rng(3),
                                      event_hook=check)  # fmt: skip
    play(bandit, small_env(), 300)
    assert max(uploads_seen) >= 5


def test_without_noise_and_thresholds_near_one_fclub_dc_is_synchronized_clustered_linucb():
    """§9.5: with every upload and download firing, each round's arm is the one of LinUCB on
    ``L'λI + Σ_{users of the global cluster} x xᵀ`` for the current partition."""
    config = FCLUBConfig.for_variant("fclub-dc", horizon=510, upload_threshold=1 + 1e-12, download_threshold=1 + 1e-12)
    env = small_env()
    servers = np.repeat(np.arange(3), 4)
    bandit = FederatedClusteredBandit(config, servers, env.dim, env.n_arms, rng=np.random.default_rng(0))
    env.reset(np.random.default_rng(5))
    V, b, counts = np.zeros((12, env.dim, env.dim)), np.zeros((12, env.dim)), np.zeros(12, dtype=int)
    sizes = set()
    for _ in range(config.horizon):
        contexts, _ = env.next_round()
        user = env.user
        arm = bandit.select(user, contexts)
        (group,) = [g for g in bandit.global_server.partition if any(user in _users(bandit, k) for k in g)]
        users = sorted(u for k in group for u in _users(bandit, k))
        sharing = len(group)
        sizes.add(len(users))
        A = sharing * config.ridge * np.eye(env.dim) + V[users].sum(axis=0)
        theta = np.linalg.solve(A, b[users].sum(axis=0))
        lam, samples = sharing * config.ridge, counts[users].sum()  # OFUL radius with α = 1/(8T) (spec A16)
        beta = config.sigma0 * np.sqrt(2 * np.log(8 * config.horizon) + env.dim * np.log1p(samples / (lam * env.dim)))
        beta += np.sqrt(lam)
        widths = np.sqrt(np.einsum("ki,ij,kj->k", contexts, np.linalg.inv(A), contexts))
        scores = contexts @ theta + beta * widths
        assert scores[arm] >= scores.max() - 1e-9 * max(1.0, abs(scores.max()))
        reward = env.reward(arm)
        bandit.update(reward)
        x = contexts[arm]
        V[user] += np.outer(x, x)
        b[user] += reward * x
        counts[user] += 1
    assert len(sizes) > 1  # the partition changed during the run: the check covered several clusterings


def _users(bandit: FederatedClusteredBandit, key: tuple[str, int]) -> list[int]:
    server = next(s for s in bandit.servers if s.name == key[0])
    return server.users[server.clusters[key[1]].users].tolist()


@pytest.mark.parametrize("seed", [0, 1])
def test_without_privacy_the_detected_partition_becomes_the_true_clusters(seed):
    """§9.7 on the paper's synthetic setting (n = 40, m = 4, L = 5, d = K = 10).

    The partition is correct after a few phases and stays correct.
    """
    env = ClusteredLinearBandit()
    history = []

    def record(bandit: FederatedClusteredBandit) -> None:
        if bandit.t == bandit.phase_starts[-1] and (not history or history[-1][0] != bandit.t):
            truth = frozenset(frozenset(np.flatnonzero(env.cluster_of == c).tolist()) for c in range(4))
            history.append((bandit.t, bandit.partition() == truth))

    run_fclub(FCLUBConfig.for_variant("fclub-dc", horizon=2**14 - 2), env, 5, seed, event_hook=record)
    correct = [ok for _, ok in history]
    assert correct[-2:] == [True, True]  # phases 12 and 13 (t = 4095, 8191)
    first = correct.index(True)
    assert all(correct[first:]) and first >= 3  # never correct by luck at the start, never lost once found


def test_communication_counts_are_the_messages_on_the_network():
    network = InMemoryNetwork()
    config = FCLUBConfig.for_variant("cdp-fclub-dc", horizon=254)
    bandit = FederatedClusteredBandit(config, np.repeat(np.arange(3), 4), 5, 6, rng=np.random.default_rng(0),
                                      network=network)  # fmt: skip
    play(bandit, small_env(), 254)
    counts, traffic = bandit.communication, network.traffic
    assert traffic.total(DETECT).messages == counts.phase_uploads + counts.renewals
    assert traffic.total(ASYNC).messages == counts.uploads + counts.downloads
    assert traffic.total(ASYNC, receiver="global").bytes == counts.uploads * 8 * (5 * 5 + 5 + 2)
    assert len(bandit.ledger.entries) == counts.phase_uploads + counts.uploads


def test_synchronous_variant_uploads_every_round():
    out = run_fclub(FCLUBConfig.for_variant("fclub", horizon=126), small_env(), 3, seed=0)
    counts = out.bandit.communication
    assert counts.uploads == 126 and counts.reference == 126
    assert not out.bandit.ledger.entries


def test_privacy_report_puts_the_paper_claim_beside_the_accounted_guarantee():
    """At the paper's noise form the accounted (ε, δ) are far inside the claim (the analytic default's are in
    tests/privacy/test_accountant.py)."""
    config = FCLUBConfig.for_variant("cdp-fclub-dc", horizon=254, noise_variance="squared_log")
    out = run_fclub(config, small_env(), 3, seed=0)
    report = out.bandit.privacy_report()
    assert (report.claimed_epsilon, report.claimed_delta) == (1.0, 0.1)
    assert report.releases > 0 and report.max_nodes_per_datum >= report.max_levels_per_privatizer > 0
    assert 0 <= report.accounted_epsilon_per_privatizer <= report.accounted_epsilon_per_datum < np.inf
    assert 0 < report.accounted_delta_per_privatizer <= report.accounted_delta_per_datum < report.claimed_delta


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"upload_threshold": 1.0}, "upload_threshold must be > 1"),
        ({"delta": 1.5}, "delta must be in"),
        ({"rho_formula": "bogus"}, "rho_formula must be one of"),
        ({"private": False, "noise_in_trigger_only": True}, "noise_in_trigger_only needs private"),
        ({"alpha": 0.0}, "alpha must be"),
        ({"detect_every_round": True}, r"detect_every_round needs synchronous=True \(the reference code's FCLUB"),
        ({"continual_release": "sqrt_factorization", "noise_variance": "squared_log"},
         r"^continual_release = 'sqrt_factorization' needs noise_variance = 'analytic' \(the paper's forms are the "
         r"tree's\), got noise_variance = 'squared_log'$"),
        ({"continual_release": "sqrt_factorization", "noise_in_trigger_only": True},
         "needs noise_in_trigger_only = False and reference_h_column = False"),
    ],
)  # fmt: skip
def test_config_rejects_bad_values_with_the_field_name(overrides, message):
    with pytest.raises(ValueError, match=message):
        FCLUBConfig(**overrides)


@pytest.mark.filterwarnings("ignore:FCLUB. privatizer noise exceeded")
def test_variants_and_the_reference_preset():
    with pytest.raises(ValueError, match="variant must be one of"):
        FCLUBConfig.for_variant("club")
    reference = FCLUBConfig.reference_compatible()
    assert reference.noise_in_trigger_only and reference.beta_scale == 0.005 and reference.ridge == 2.0
    out = run_fclub(FCLUBConfig.reference_compatible(horizon=126), small_env(construction="reference"), 3, seed=0)
    assert np.isfinite(out.regret[-1]) and out.bandit.privacy_report().accounted_epsilon_per_datum == np.inf


@pytest.mark.filterwarnings("ignore:FCLUB. privatizer noise exceeded")  # the reference noise scale breaks Eq. 7
@pytest.mark.parametrize(
    "overrides",
    [
        {"noise_variance": "algorithm5"},
        {"noise_variance": "reference_std"},
        {"rho_formula": "appendix_b1"},
        {"rho_formula": "consistent", "rho_constant": 1.0},
        {"tree_depth": "theory"},
        {"tree_depth": "reference"},
        {"lifecycle": "reset_every_phase"},
        {"recommendation": "with_own_buffer"},
        {"beta_form": "reference", "beta_scale": 0.005},
        {"thresholds": "theoretical"},
        {"reference_h_column": True, "skip_unseen_users": True, "merge_same_server": True},
        {"noise_in_trigger_only": True},
        {"pd_repair": "shift", "refresh_every": 0, "tie_break": "random"},
        {"synchronous": True},
        {"private": False, "detect_clusters": False},
        {"private": False, "synchronous": True, "detect_every_round": True},
    ],
)
def test_every_option_plays_and_keeps_the_invariant(overrides):
    events: list[str] = []
    config = FCLUBConfig.for_variant("cdp-fclub-dc", horizon=126, **overrides)
    outs = [run_fclub(config, small_env(), 3, seed=seed, event_hook=_invariant_hook(events)) for seed in (2, 3)]
    assert all(np.isfinite(out.regret[-1]) for out in outs) and events
    assert sum(out.bandit.communication.uploads for out in outs) > 0  # the trigger's noise decides when (seed 2: none)


def test_the_reference_fclub_re_clusters_every_round():
    """§7.6: the reference code's FCLUB detects and merges at every round, not only at phase starts."""
    events: list[str] = []
    config = FCLUBConfig.for_variant("fclub", horizon=100, detect_every_round=True)
    out = run_fclub(config, small_env(), 3, seed=3, event_hook=_invariant_hook(events))
    counts = out.bandit.communication
    assert out.bandit.phase_starts == [1, 3, 7, 15, 31, 63]
    assert len(events) == 100 + counts.uploads + counts.downloads
    assert counts.phase_uploads >= 3 * 100


def test_own_buffer_recommendation_tracks_the_local_copy_plus_raw_buffer():
    """§8 A11: with the own-buffer option the UCB uses (S + ΔS_raw)⁻¹ and its ridge estimate."""
    config = FCLUBConfig.for_variant("fclub-dc", horizon=200, recommendation="with_own_buffer", upload_threshold=2.0)
    checked = []

    def check(bandit: FederatedClusteredBandit) -> None:
        for server in bandit.servers:
            for cluster in server.clusters.values():
                R = cluster.S + cluster.raw_S
                np.testing.assert_allclose(cluster.R_inv @ R, np.eye(bandit.dim), atol=1e-8)
                np.testing.assert_allclose(cluster.theta_R, np.linalg.solve(R, cluster.u + cluster.raw_u), atol=1e-8)
                checked.append(cluster.raw_T)

    check(run_fclub(config, small_env(), 3, seed=0, event_hook=check).bandit)
    assert max(checked) > 0  # some clusters held unsent data when checked


@pytest.mark.parametrize(("depth", "rho", "sigma"), [(5, 4.5e3, 54), (8, 5.6e3, 68), (18, 8.5e3, 102)])
def test_calibration_matches_the_spec_table(depth, rho, sigma):
    """§4.4 table (d = 10, m = 4, L = 5, ε = 1, δ = 0.1, α = 1/(8T); σ of the paper's form); ρ by Eq. 7, shifts
    (2ρ, 3ρ)."""
    config = FCLUBConfig(horizon=2**17 - 2, m_bound=4, noise_variance="squared_log")
    calibration = Calibration(config, dim=10, n_users=40, n_servers=5)
    assert calibration.depth(1) == 18
    assert calibration.rho(depth) == pytest.approx(rho, rel=0.02)
    # the table's σ is for sensitivity 2; the data snapped to the grid add g√n (n = d(d+3)/2 = 65)
    slack = calibration.data_grid * math.sqrt(65)
    assert calibration.effective_sensitivity() == 2 + slack and 0 < slack < 2 * 102 / 4096 * math.sqrt(65)
    assert calibration.noise_std(depth) == pytest.approx(sigma * (2 + slack) / 2, rel=0.02)
    two, three = 2 * calibration.rho(depth), 3 * calibration.rho(depth)  # snapped toward zero to the data grid
    assert calibration.shifts(depth) == pytest.approx((two, three), rel=0, abs=calibration.data_grid)
    b1 = Calibration(FCLUBConfig(m_bound=4, rho_formula="appendix_b1"), 10, 40, 5)
    assert b1.rho(depth) == pytest.approx(calibration.rho(depth) * np.sqrt(depth))  # √2·ν instead of √(2ν)


# -- the square-root factorization as FCLUB's privatizers (issue 47 item 5) --------------------------------------------
FACTORIZED = {"continual_release": "sqrt_factorization"}


@pytest.mark.parametrize(
    "options",
    [{}, {"lifecycle": "reset_every_phase"}, {"rebuild_local_copies": True}, {"synchronous": True}],
)
def test_factorized_privatizers_keep_the_invariant_and_play(options):
    """§2.5 after every event with the factorization's releases (not with ``rebuild_local_copies``, whose local copies
    restart from their own phase uploads, with the tree too); every release sent is in the ledger."""
    events: list[str] = []
    config = FCLUBConfig.for_variant("cdp-fclub-dc", horizon=254, **FACTORIZED, **options)
    hook = None if config.rebuild_local_copies else _invariant_hook(events)
    out = run_fclub(config, small_env(), 3, seed=1, event_hook=hook)
    counts = out.bandit.communication
    assert counts.uploads > 0 and np.isfinite(out.regret[-1]) and (events or hook is None)
    entries = out.bandit.ledger.entries
    assert len(entries) == counts.uploads + counts.phase_uploads  # one entry a release sent
    assert all(e.details["continual_release"] == "sqrt_factorization" for e in entries)


@pytest.mark.parametrize("lifecycle", [Lifecycle.PERSISTENT, Lifecycle.RESET_EVERY_PHASE])
def test_factorized_uploads_hold_the_last_release_and_the_shifts_only(lifecycle):
    """One server, one cluster: the global sum is the cluster's last release plus (2 + 3c)ρI, c uploads since the
    renewal; the release is the cluster's data so far (snapped) plus noise of the factorization's σ: what the local
    server sends is computed from its releases, never a raw datum."""
    config = FCLUBConfig.for_variant("cdp-fclub-dc", horizon=300, detect_clusters=False, lifecycle=lifecycle,
                                     **FACTORIZED)  # fmt: skip
    noises = []

    def check(bandit: FederatedClusteredBandit) -> None:
        server = bandit.servers[0]
        (cluster,) = server.clusters.values()
        glob = bandit.global_server.members[(server.name, cluster.uid)].cluster
        phase_shift, upload_shift = bandit.calibration.shifts(cluster.depth)
        shifts = (phase_shift + cluster.uploads_since_renewal * upload_shift) * np.eye(bandit.dim)
        np.testing.assert_allclose(glob.S - shifts, cluster.H_bar, rtol=0, atol=1e-12 * np.abs(glob.S).max())
        np.testing.assert_allclose(glob.u, cluster.h_bar, rtol=0, atol=1e-12 * np.abs(glob.u).max())
        if cluster.uploads_since_renewal:  # the last release is the async privatizer's, of the data it was fed
            fed = cluster.async_tree.fed
            noises.append((cluster.H_bar - fed[:-1, :-1])[np.triu_indices(bandit.dim, 1)])

    bandit = FederatedClusteredBandit(config, np.zeros(12, dtype=int), 5, 6, rng=np.random.default_rng(3),
                                      event_hook=check)  # fmt: skip
    play(bandit, small_env(), 300)
    noise = np.concatenate(noises)
    sigma, horizon = bandit.calibration.factorization.std, bandit.calibration.max_releases
    assert len(noises) >= 5 and 0.5 * sigma < noise.std() < 2 * sigma * factorization.column_norm(horizon)


@pytest.mark.parametrize(("dim", "users", "servers", "horizon"), [(10, 40, 5, 2**17 - 2), (5, 12, 3, 254)])
def test_factorization_noise_at_the_last_release_is_below_the_trees_at_equal_epsilon(dim, users, servers, horizon):
    """The paper's setting (d = 10, n = 40, L = 5, T = 2^17 − 2, ε = 1, δ = 0.1) and the tests' small one: both
    privatizers meet (ε, δ) exactly (PLD, to 1%) for T + 1 releases, and at the last one the tree's noise variance
    (its popcount(T + 1) nodes) is above the factorization's (σ² Σ c_k²)."""
    configs = [FCLUBConfig(horizon=horizon, m_bound=4, **extra) for extra in ({}, FACTORIZED)]
    tree, mf = (Calibration(config, dim, users, servers) for config in configs)
    depth = tree.depth(1)
    nodes = Release.gaussian(tree.noise_std(depth), tree.effective_sensitivity(), depth)
    assert pld_epsilon([nodes], 0.1) == pytest.approx(1.0, rel=0.01)
    assert pld_epsilon(factorization.releases(mf.factorization), 0.1) == pytest.approx(1.0, rel=0.01)
    last = mf.max_releases
    assert (2 ** (depth - 1) - 1).bit_length() == depth - 1 and last < 2**depth  # the tree's ν covers T + 1 releases
    ratio = factorization.tree_variance_ratio(last, tree.noise_std(depth), mf.factorization)
    assert ratio == pytest.approx(last.bit_count() * tree.noise_std(depth) ** 2 / mf.factorization.variance(last))
    assert ratio > 1.5
