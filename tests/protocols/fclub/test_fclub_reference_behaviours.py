"""The reference code's behaviours behind the FCLUB gap (issue 15): the shared-statistics double count (a),
the reference merge rule (b), the rebuilt local copies (spec §7.3), renewal at every phase (Homo-DC), and
the communication counted the reference code's way."""

from __future__ import annotations

import re

import numpy as np
import pytest

from privbandits.envs.clustered import ClusteredLinearBandit
from privbandits.protocols.fclub import FederatedClusteredBandit, run_fclub
from privbandits.protocols.fclub.config import FCLUBConfig, MergeRule
from privbandits.protocols.fclub.reference import portable_det, reference_trigger_fires
from privbandits.validation import InvalidInputError

OPTIONS = ("shared_statistics_defect", "merge_rule", "rebuild_local_copies", "renew_every_phase")


def small_env() -> ClusteredLinearBandit:
    return ClusteredLinearBandit(n_users=12, n_clusters=3, dim=5, n_arms=6, construction="reference")


def test_the_faithful_defaults_leave_every_reference_behaviour_off():
    for config in (FCLUBConfig(), *(FCLUBConfig.for_variant(v) for v in ("cdp-fclub-dc", "fclub-dc", "homo-dc"))):
        assert not config.shared_statistics_defect and not config.rebuild_local_copies
        assert config.merge_rule is MergeRule.COMPONENTS and not config.renew_every_phase


@pytest.mark.parametrize(
    ("variant", "defect", "renew"),
    [("cdp-fclub-dc", True, False), ("fclub-dc", True, False), ("homo-dc", True, True), ("fclub", False, False)],
)
def test_the_reference_preset_turns_them_on(variant, defect, renew):
    config = FCLUBConfig.reference_compatible(variant)
    assert config.shared_statistics_defect is defect and config.renew_every_phase is renew
    assert config.merge_rule is MergeRule.REFERENCE and not config.rebuild_local_copies
    assert config.detect_every_round is (variant == "fclub")  # the reference FCLUB's per-round detection (§7.6)
    off = FCLUBConfig.reference_compatible(variant, shared_statistics_defect=False, merge_rule="components")
    assert not off.shared_statistics_defect and off.merge_rule is MergeRule.COMPONENTS


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"shared_statistics_defect": 1}, "shared_statistics_defect must be a bool"),
        ({"rebuild_local_copies": "yes"}, "rebuild_local_copies must be a bool"),
        ({"renew_every_phase": None}, "renew_every_phase must be a bool"),
        ({"merge_rule": "greedy"}, "merge_rule must be one of 'components', 'reference', got 'greedy'"),
        ({"synchronous": True, "shared_statistics_defect": True}, "shared_statistics_defect needs synchronous=False"),
    ],
)
def test_bad_values_are_refused_naming_the_parameter_the_allowed_values_and_the_value(overrides, message):
    with pytest.raises(InvalidInputError, match=message):
        FCLUBConfig(**overrides)


def _shared_hook(seen: list[int]):
    """After every event: members of a shared global cluster hold its (S, u) exactly (one array in the reference)."""

    def check(bandit: FederatedClusteredBandit) -> None:
        servers = {s.name: s for s in bandit.servers}
        for (name, uid), member in bandit.global_server.members.items():
            if member.cluster.shared and not member.pending:
                local = servers[name].clusters[uid]
                np.testing.assert_allclose(local.S, member.cluster.S, rtol=1e-12, atol=1e-9)
                np.testing.assert_allclose(local.u, member.cluster.u, rtol=1e-12, atol=1e-9)
                seen.append(1)

    return check


def test_the_defect_adds_each_upload_twice_to_one_shared_copy():
    seen: list[int] = []
    config = FCLUBConfig.reference_compatible("fclub-dc", horizon=254, merge_rule="components")
    out = run_fclub(config, small_env(), 3, seed=0, event_hook=_shared_hook(seen))
    bandit = out.bandit
    assert seen and bandit.communication.shared_updates > 0
    # every sample is in the users' raw sums once; the shared copies hold the uploaded ones twice
    users = sum(s.V.sum(axis=0) for s in bandit.servers)
    shared = {id(m.cluster): m.cluster for m in bandit.global_server.members.values()}.values()
    assert sum(np.trace(c.S) for c in shared) > np.trace(users) + 1.0


def test_without_the_defect_the_same_preset_keeps_the_invariant_and_sends_no_shared_updates():
    config = FCLUBConfig.reference_compatible("fclub-dc", horizon=254, shared_statistics_defect=False)
    counts = run_fclub(config, small_env(), 3, seed=0).bandit.communication
    assert counts.shared_updates == 0 and counts.uploads > 0


def test_the_reference_merge_rule_keeps_local_clusters_alone_until_a_pair_fails():
    """(b): at t = 1 every pair passes Eq. 4, so nothing merges; the partition stays so while the layout holds."""
    partitions = []
    config = FCLUBConfig.reference_compatible("fclub-dc", horizon=30)
    hook = lambda b: partitions.append(b.global_server.partition)  # noqa: E731
    run_fclub(config, small_env(), 3, seed=0, event_hook=hook)
    assert all(len(group) == 1 for group in partitions[0])
    faithful = []
    config = FCLUBConfig.reference_compatible("fclub-dc", horizon=30, merge_rule="components")
    run_fclub(config, small_env(), 3, seed=0, event_hook=lambda b: faithful.append(b.global_server.partition))
    assert len(faithful[0]) == 1  # the spec's rule merges everything at t = 1


def test_the_reference_homo_dc_never_merges_and_renews_every_phase():
    config = FCLUBConfig.reference_compatible("homo-dc", horizon=126)
    out = run_fclub(config, small_env(), 3, seed=0)
    assert len(out.bandit.global_server.partition) == 3  # one global cluster per server
    assert out.bandit.communication.renewals == 3 * len(out.bandit.phase_starts)
    assert len(run_fclub(FCLUBConfig.for_variant("homo-dc", horizon=126), small_env(), 3, seed=0)
               .bandit.global_server.partition) == 1  # fmt: skip


def test_the_reference_fclub_merge_never_touches_the_last_local_cluster():
    config = FCLUBConfig.reference_compatible("fclub", horizon=200)
    bandit = run_fclub(config, small_env(), 3, seed=0).bandit
    last = max(bandit.global_server.uploads)  # the last server's last local cluster
    assert frozenset([last]) in bandit.global_server.partition


def test_rebuilt_local_copies_count_idle_downloads_the_reference_way():
    config = FCLUBConfig.reference_compatible("fclub-dc", horizon=510, rebuild_local_copies=True,
                                              merge_rule="components", shared_statistics_defect=False)  # fmt: skip
    counts = run_fclub(config, small_env(), 3, seed=1).bandit.communication
    assert counts.idle_downloads > 0
    expected = counts.uploads + counts.downloads - counts.shared_updates + counts.idle_downloads
    assert counts.reference == expected + counts.changed_phases


@pytest.mark.filterwarnings("ignore:FCLUB. privatizer noise exceeded")
@pytest.mark.parametrize("variant", ["cdp-fclub-dc", "fclub-dc", "homo-dc", "fclub"])
@pytest.mark.parametrize("rebuild", [False, True])
def test_every_combination_plays(variant, rebuild):
    config = FCLUBConfig.reference_compatible(variant, horizon=126, rebuild_local_copies=rebuild)
    out = run_fclub(config, small_env(), 3, seed=2)
    assert np.isfinite(out.regret[-1]) and out.bandit.communication.reference > 0


# -- issue 29: the reference Homo-DC's ridge-free Eq. 5 and carried synchronized copies -------------------------
HOMO_OPTIONS = ("ridge_in_recommendation_only", "carry_synchronized_copies")


def test_only_the_reference_homo_dc_preset_turns_on_its_ridge_free_copies_and_carried_copies():
    for variant in ("cdp-fclub-dc", "fclub-dc", "fclub", "homo-dc", "homo"):
        reference = FCLUBConfig.reference_compatible(variant)
        faithful = FCLUBConfig.for_variant(variant)
        for name in HOMO_OPTIONS:
            assert getattr(reference, name) is (variant == "homo-dc") and not getattr(faithful, name)


@pytest.mark.parametrize("name", HOMO_OPTIONS)
@pytest.mark.parametrize(
    ("overrides", "shown"),
    [
        ({"private": True}, "thresholds='practical', private=True, noise_in_trigger_only=False"),
        ({"private": False, "synchronous": True}, "synchronous=True, thresholds='practical', private=False"),
        ({"private": False, "thresholds": "theoretical"}, "thresholds='theoretical'"),
    ],
)
def test_the_homo_dc_options_refuse_ρ_shifts_synchronous_runs_and_theoretical_thresholds(name, overrides, shown):
    message = (f"{name} needs synchronous=False, thresholds='practical' and the ridge as the only shift "
               r"\(private=False or noise_in_trigger_only=True\), got ")  # fmt: skip
    with pytest.raises(InvalidInputError, match=message + ".*" + re.escape(shown)):
        FCLUBConfig(**{name: True, **overrides})
    assert getattr(FCLUBConfig(**{name: True, "private": True, "noise_in_trigger_only": True}), name)


def test_the_reference_trigger_is_an_ieee_ratio_of_lu_determinants():
    d = 4
    x = np.array([[0.5, 0.5, 0.5, 0.5]])
    full = np.eye(d) * 0.3
    assert reference_trigger_fires(np.zeros((d, d)), full, 1.01)  # det 0 below: +inf
    assert not reference_trigger_fires(np.zeros((d, d)), np.zeros((d, d)), 1.01)  # 0 / 0: NaN
    negative = np.diag([1.0, 1.0, 1.0, -1e-18])  # a singular S whose determinant came out negative
    assert not reference_trigger_fires(negative, full, 1.01)  # det(S + ΔS) > 0: a negative ratio, never fires
    S = np.eye(d) * 2.0
    for scale in (0.01, 0.02, 0.05):
        buffer = scale * x.T @ x
        expected = np.linalg.det(S + buffer) / np.linalg.det(S) >= 1.01
        assert reference_trigger_fires(S, buffer, 1.01) is bool(expected)
    assert not reference_trigger_fires(S, 0.01 * x.T @ x, 1.01) and reference_trigger_fires(S, 0.05 * x.T @ x, 1.01)


def _homo_dc_clusters(seed: int, **overrides):
    config = FCLUBConfig.reference_compatible("homo-dc", horizon=1022, **overrides)
    out = run_fclub(config, ClusteredLinearBandit(), 5, seed=seed)  # the reference construction: ‖x‖ = 1
    return out, [c for s in out.bandit.servers for c in s.clusters.values()]


@pytest.mark.parametrize("seed", [0, 1])
def test_carried_copies_compound_the_double_count_and_lose_the_buffers_pending_at_phase_starts(seed):
    out, clusters = _homo_dc_clusters(seed)
    for cluster in clusters:  # ridge-free, every synchronized sample counted twice since t = 1: trace(S) = 2T
        np.testing.assert_allclose(np.trace(cluster.S), 2 * cluster.T, rtol=1e-12)
    users = sum(sum(s.counts) for s in out.bandit.servers)
    assert users == 1022 and sum(c.T + c.raw_T for c in clusters) < users  # the pending buffers were dropped
    _, rebuilt = _homo_dc_clusters(seed, carry_synchronized_copies=False)
    assert all(np.trace(c.S) < 1.7 * c.T for c in rebuilt)  # rebuilt from the users' sums (counted once) each phase


def test_a_server_whose_singular_copy_has_a_non_positive_determinant_never_uploads_again():
    """The reference Homo-DC: about two servers in five stop at 8-9 synchronized samples (d = 10); never with
    either option alone."""
    stuck = 0
    for seed in range(3):
        _, clusters = _homo_dc_clusters(seed)
        for cluster in clusters:
            if cluster.T < 10:
                stuck += 1
                assert np.linalg.matrix_rank(cluster.S) == cluster.T and portable_det(cluster.S) <= 0
            else:
                assert cluster.T > 150 and portable_det(cluster.S) > 0
        for option in HOMO_OPTIONS:
            assert all(c.T > 150 for c in _homo_dc_clusters(seed, **{option: False})[1])
    assert 3 <= stuck <= 12


def test_the_portable_determinant_is_lapacks_up_to_rounding_and_exact_where_lapack_is_ambiguous():
    """``portable_det`` (the reference trigger's determinant) agrees with LAPACK's to rounding on random matrices,
    is exactly 0 on a zero column, and keeps a singular Gram matrix's rounding-noise determinant tiny: its bits are
    the same on every machine (``test_fclub_pinned_results_are_portable`` runs the reference Homo-DC cases under
    other kernels)."""
    rng = np.random.default_rng(3)
    for n in (1, 2, 5, 10):
        for _ in range(20):
            matrix = rng.normal(size=(n, n))
            assert portable_det(matrix) == pytest.approx(np.linalg.det(matrix), rel=1e-10, abs=1e-12)
    assert portable_det(np.zeros((4, 4))) == 0.0
    rows = rng.normal(size=(9, 10))
    singular = rows.T @ rows  # rank 9 of 10: the determinant is rounding noise
    assert abs(portable_det(singular)) < 1e-8 * np.prod(np.linalg.eigvalsh(singular)[1:])
