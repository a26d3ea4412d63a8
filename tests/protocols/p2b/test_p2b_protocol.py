"""P2B's privacy accounting, reporting rule, shuffler and server (spec p2b.md §2.3–2.6, §3, §10)."""

from __future__ import annotations

import gc
import math

import numpy as np
import pytest
from scipy import stats

from privbandits.comm import InMemoryNetwork
from privbandits.privacy import crowd_blending
from privbandits.privacy.ledger import LedgerEntry, PrivacyLedger
from privbandits.protocols.p2b.core import (
    DeviceHost,
    EncodedReport,
    NewAgents,
    Server,
    Shuffler,
    choose_reports,
)


# -- accounting -----------------------------------------------------------------------
def test_epsilon_matches_the_paper_and_its_closed_form():
    assert crowd_blending.epsilon(0.5) == pytest.approx(math.log(2), abs=1e-15)
    assert crowd_blending.epsilon(0.25) == pytest.approx(math.log(4 / 3), abs=1e-15)
    assert crowd_blending.epsilon(0.0) == 0.0 and crowd_blending.epsilon(1.0) == math.inf
    for p in (0.01, 0.3, 0.9, 0.99):  # Eq. (2) with ε̄ = 0 equals −ln(1 − p)
        eq2 = math.log(p * (2 - p) / (1 - p) + (1 - p))
        assert crowd_blending.epsilon(p) == pytest.approx(eq2, rel=1e-12)
    spec_table = {0.05: 0.0513, 0.2: 0.2231, 0.7: 1.2040, 0.95: 2.9957}
    for p, value in spec_table.items():
        assert round(crowd_blending.epsilon(p), 4) == value
    assert crowd_blending.epsilon(0.5, epsilon_bar=0.1) > crowd_blending.epsilon(0.5)


def test_delta_needs_an_explicit_omega_and_falls_exponentially_in_l():
    assert crowd_blending.delta(0.5, 10, omega=1.0) == pytest.approx(math.exp(-2.5))
    assert crowd_blending.delta(0.5, 20, omega=1.0) == pytest.approx(crowd_blending.delta(0.5, 10, 1.0) ** 2)
    with pytest.raises(ValueError, match="^omega must be > 0, got 0$"):
        crowd_blending.delta(0.5, 10, omega=0)
    with pytest.raises(ValueError, match=r"^participation p must be in \[0, 1\], got 1.5$"):
        crowd_blending.epsilon(1.5)
    assert crowd_blending.optimal_crowd(500, 1024) == 500 / 1024


def test_ledger_composes_and_keeps_unknown_delta_unknown():
    ledger = PrivacyLedger()
    ledger.record(LedgerEntry("a", 0.5, 1e-6, "unit"))
    ledger.record(LedgerEntry("a", 0.25, 1e-6, "unit"))
    ledger.record(LedgerEntry("b", 1.0, None, "unit"))
    assert ledger.basic_composition("a") == (0.75, 2e-6)
    assert ledger.basic_composition() == (1.75, None)
    with pytest.raises(ValueError, match=r"^delta must be in \[0, 1\] or None, got 2$"):
        LedgerEntry("a", 0.1, 2, "unit")


# -- reporting rule -----------------------------------------------------------------------
def test_participation_fraction_is_p_within_a_binomial_bound():
    rng = np.random.default_rng(0)
    rewards = (rng.random((20_000, 10)) < 0.5).astype(int)
    users, _ = choose_reports(rewards, 0.5, 0.05, rng)
    bound = 4 * math.sqrt(0.25 * 20_000)
    assert abs(len(users) - 10_000) < bound
    assert len(np.unique(users)) == len(users)  # at most one tuple per user


def test_reports_prefer_positive_tuples_and_follow_the_fallbacks():
    rng = np.random.default_rng(1)
    rewards = np.zeros((30_000, 6), dtype=int)
    rewards[:10_000, 2] = 1  # one positive tuple
    rewards[20_000:] = 1  # no zero-reward tuple
    users, index = choose_reports(rewards, 1.0, 0.05, rng)
    group = users // 10_000
    sent = rewards[users, index]
    positive_share = sent[group == 0].mean()
    assert abs(positive_share - 0.95) < 4 * math.sqrt(0.95 * 0.05 / 10_000)
    assert np.all(index[(group == 0) & (sent == 1)] == 2)
    assert np.all(sent[group == 1] == 0)  # no positive tuple: a random zero-reward one is sent
    assert stats.chisquare(np.bincount(index[group == 1], minlength=6)).pvalue > 0.001
    assert abs((group == 2).sum() - 9_500) < 4 * math.sqrt(10_000 * 0.05 * 0.95)  # negative branch sends nothing
    nobody, _ = choose_reports(rewards, 0.0, 0.05, rng)
    assert nobody.size == 0


def test_reports_never_carry_an_unknown_replayed_reward():
    rng = np.random.default_rng(4)
    rewards = np.full((3000, 5), np.nan)
    rewards[:1000, 1] = 1.0  # one known positive tuple
    rewards[1000:2000, 3] = 0.0  # one known negative tuple
    users, index = choose_reports(rewards, 1.0, 0.05, rng)
    sent = rewards[users, index]
    assert not np.isnan(sent).any() and users.max() < 2000  # users with no known reward send nothing
    assert np.all(index[users < 1000] == 1) and np.all(index[users >= 1000] == 3)
    assert (users >= 1000).sum() == 1000  # no positive tuple: the known negative one is sent
    assert abs((users < 1000).sum() - 950) < 4 * math.sqrt(1000 * 0.05 * 0.95)  # asked for a negative: none known


# -- shuffler and server -------------------------------------------------------------------
def _run_shuffler(codes, actions, rewards, threshold, seed=0):
    net = InMemoryNetwork(record=True)
    ledger = PrivacyLedger()
    shuffler = Shuffler(
        "shuffler",
        net,
        threshold=threshold,
        participation=0.5,
        n_codes=8,
        rng=np.random.default_rng(seed),
        ledger=ledger,
    )
    server = Server("server", net, n_arms=5)
    NewAgents("new_agents", net)
    devices = DeviceHost("devices", net)
    with net.phase("report"):
        for user, (c, a, r) in enumerate(zip(codes, actions, rewards, strict=True)):
            devices.send_report(user, "shuffler", EncodedReport(int(c), int(a), int(r)))
        devices.close_batch("shuffler")
        shuffler.release_encoded("server")
        server.publish_code_model(8, "new_agents")
    batch = next(e.message for e in net.transcript if e.receiver == "server")
    return net, ledger, (batch.codes, batch.actions, batch.rewards), shuffler


def test_released_codes_all_have_a_crowd_of_at_least_l_and_carry_no_user_id():
    rng = np.random.default_rng(2)
    codes = rng.choice(8, size=300, p=[0.4, 0.3, 0.2, 0.05, 0.03, 0.01, 0.005, 0.005])
    actions, rewards = rng.integers(0, 5, 300), rng.integers(0, 2, 300)
    net, ledger, (got_codes, got_actions, got_rewards), shuffler = _run_shuffler(codes, actions, rewards, 10)
    values, counts = np.unique(got_codes, return_counts=True)
    assert counts.min() >= 10
    expected_kept = np.isin(
        codes, np.unique(codes, return_counts=True)[0][np.unique(codes, return_counts=True)[1] >= 10]
    )
    assert len(got_codes) == expected_kept.sum() and shuffler.last_release["dropped"] == 300 - expected_kept.sum()
    server_inbox = [e for e in net.transcript if e.receiver == "server"]
    assert len(server_inbox) == 1 and server_inbox[0].sender == "shuffler"
    assert set(server_inbox[0].message.field_names) == {"codes", "actions", "rewards"}
    (entry,) = ledger.entries
    assert entry.epsilon == pytest.approx(math.log(2)) and entry.delta is None
    assert entry.details["min_released_crowd"] == counts.min()


def test_the_shuffle_changes_order_not_content():
    codes = np.repeat(np.arange(3), 20)
    actions, rewards = np.arange(60) % 4, np.arange(60) % 2
    *_, (c1, a1, r1), _ = _run_shuffler(codes, actions, rewards, 10, seed=0)
    *_, (c2, a2, r2), _ = _run_shuffler(codes, actions, rewards, 10, seed=1)
    assert not np.array_equal(c1, codes) and not np.array_equal(a1, a2)
    as_rows = lambda c, a, r: sorted(zip(c.tolist(), a.tolist(), r.tolist(), strict=True))  # noqa: E731
    assert as_rows(c1, a1, r1) == as_rows(c2, a2, r2) == as_rows(codes, actions, rewards)


def test_server_models_do_not_depend_on_tuple_order():
    from privbandits.linear.population import CodeModel, DisjointModel

    rng = np.random.default_rng(8)
    codes, actions, rewards = rng.integers(0, 8, 500), rng.integers(0, 5, 500), rng.integers(0, 2, 500)
    contexts = rng.dirichlet(np.ones(4), size=500)
    order = rng.permutation(500)
    one, other = (CodeModel.fit(codes[o], actions[o], rewards[o], 5, 8) for o in (np.arange(500), order))
    np.testing.assert_array_equal(one.counts, other.counts)  # counts: exactly equal
    np.testing.assert_array_equal(one.reward_sums, other.reward_sums)
    dense = [DisjointModel.fit(contexts[o], actions[o], rewards[o], 5) for o in (np.arange(500), order)]
    np.testing.assert_allclose(dense[0].A, dense[1].A, rtol=1e-13)  # sums in another order: equal to rounding
    np.testing.assert_allclose(dense[0].b, dense[1].b, rtol=1e-13)


def test_threshold_must_be_positive():
    with pytest.raises(ValueError, match=r"^threshold must be >= 1 \(or None for no thresholding\), got 0$"):
        Shuffler(
            "s",
            InMemoryNetwork(),
            threshold=0,
            participation=0.5,
            n_codes=4,
            rng=np.random.default_rng(0),
            ledger=PrivacyLedger(),
        )


# -- the simulation pipeline --------------------------------------------------------------------
@pytest.fixture(scope="module")
def small_world():
    from privbandits.envs.p2b_synthetic import p2b_synthetic_interactions
    from privbandits.privacy.encoding import fit_encoder

    encoder = fit_encoder(4, 1, 16, seed=0)
    data = p2b_synthetic_interactions(3000, 8, 4, 5, mapping="linear", seed=3)
    return encoder, data


def test_without_participation_warm_equals_cold(small_world):
    from privbandits.protocols.p2b.core import P2BConfig, simulate

    encoder, data = small_world
    out = simulate(data, encoder, P2BConfig(participation=0.0, tie_break="lowest"), seed=0)
    assert out.raw_tuples_shared == out.encoded_tuples_shared == 0
    assert out.warm_non_private == out.cold  # same cold model, same lowest-index ties: identical users
    assert out.ledger.entries[-1].epsilon == 0.0


def test_the_server_sees_only_anonymous_thresholded_batches(small_world):
    from privbandits.protocols.p2b.core import P2BConfig, simulate

    encoder, data = small_world
    out = simulate(data, encoder, P2BConfig(threshold=10), seed=1)
    traffic = out.traffic
    to_server = {sender for (phase, sender, receiver) in traffic.links if receiver == "server"}
    assert to_server == {"shuffler", "raw_shuffler"}  # no device talks to the server
    assert traffic.total(sender="shuffler", receiver="server").messages == 1
    devices = traffic.total("share_encoded", receiver="shuffler")  # the reports, and the host's end of the batch
    assert devices.messages == out.encoded_tuples_shared + 1 and devices.bytes == 24 * out.encoded_tuples_shared
    assert traffic.total("share_encoded", sender="devices", receiver="shuffler").messages == 1
    assert out.release["min_released_crowd"] >= 10 or out.release["released"] == 0
    assert out.release["released"] + out.release["dropped"] == out.encoded_tuples_shared
    early_users = int(0.7 * data.n_users)
    assert abs(out.encoded_tuples_shared - 0.5 * early_users) < 4 * math.sqrt(0.25 * early_users)


def test_simulation_is_reproducible_and_warm_helps(small_world):
    from privbandits.protocols.p2b.core import P2BConfig, simulate

    encoder, data = small_world
    first, again = (simulate(data, encoder, P2BConfig(), seed=5) for _ in range(2))
    assert first.warm_private == again.warm_private and first.cold == again.cold
    assert gc.isenabled()  # the collector paused while devices sent is back on
    assert first.warm_non_private.mean > first.cold.mean


def test_reference_compatible_mode_runs_scalar_codes_and_a_shared_warm_agent(small_world):
    from privbandits.protocols.p2b.core import P2BConfig, simulate

    encoder, data = small_world
    out = simulate(data, encoder, P2BConfig(representation="scalar_code", shared_warm_agent=True), seed=2)
    release = [e for e in out.traffic.links if e[1] == "server"]
    assert ("share_encoded", "server", "new_agents") in release
    assert 0.0 <= out.warm_private.mean <= 1.0 and out.warm_private.n_users == data.n_users - int(0.7 * data.n_users)
    with pytest.raises(ValueError, match="^representation must be one of 'one_hot', 'scalar_code', got 'vector'$"):
        P2BConfig(representation="vector")


def test_replay_on_a_partially_observed_table_counts_only_known_rounds(small_world):
    """OBD-style data (one observed action per row): means are over matched rounds (replay), not zeros."""
    from privbandits.datasets.interactions import UserInteractions
    from privbandits.protocols.p2b.core import P2BConfig, simulate

    encoder, data = small_world
    rng = np.random.default_rng(6)
    logged = rng.integers(0, data.n_actions, data.rewards.shape[:2])
    observed = np.zeros(data.rewards.shape, dtype=bool)
    np.put_along_axis(observed, logged[:, :, None], True, axis=2)
    logged_data = UserInteractions(data.contexts, np.where(observed, data.rewards, 0), "logged", data.source, observed)
    assert np.isnan(logged_data.reward_table[~observed]).all() and logged_data.reward_table.dtype == np.float64
    out = simulate(logged_data, encoder, P2BConfig(), seed=0)
    late_rounds = (data.n_users - int(0.7 * data.n_users)) * data.n_interactions
    for result in (out.cold, out.warm_non_private, out.warm_private):
        assert 0 < result.rounds < 0.5 * late_rounds  # about 1/K of the rounds are matched
        assert result.n_users <= data.n_users - int(0.7 * data.n_users)
    # The zeros of the unobserved entries are not counted: the replayed means match the full table's scale.
    full = simulate(data, encoder, P2BConfig(), seed=0)
    assert abs(out.cold.mean - full.cold.mean) < 0.1 and full.cold.rounds == late_rounds
