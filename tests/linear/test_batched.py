"""Batched disjoint LinUCB (``privbandits.linear.population``) against per-user loops of ``LinUCB``.

The reference for every user is ``LinUCB(n_arms, dim, alpha=1, layout="disjoint",
tie_break="lowest")``, started from the model as ``RidgeStatistics.refresh``
would set it (spec ``p2b.md`` §4.2, §4.4); codes are its one-hot contexts.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from scipy import stats as sps

from privbandits.linear import LinUCB
from privbandits.linear.population import (
    BatchedCodeLinUCB,
    BatchedLinUCB,
    CodeModel,
    DisjointModel,
    PopulationLog,
    batched_agents,
    run_population,
)
from privbandits.linear.tiebreak import _NAN_MESSAGE

K = 4


def simplex_contexts(rng: np.random.Generator, *shape: int) -> np.ndarray:
    """Reference synthetic contexts: uniform entries divided by their sum (spec §5.2)."""
    x = rng.random(shape)
    return x / x.sum(axis=-1, keepdims=True)


def contexts_for(rng: np.random.Generator, dim: int, n_users: int, n_rounds: int) -> np.ndarray:
    if dim == 1:  # the reference "scalar code" mode: code values as a 1-d feature, 0 included (all scores tie)
        return rng.integers(0, 6, (n_users, n_rounds, 1)).astype(np.float64)
    return simplex_contexts(rng, n_users, n_rounds, dim)


def reward_table(rng: np.random.Generator, n_users: int, n_rounds: int, n_arms: int = K) -> np.ndarray:
    rates = np.linspace(0.1, 0.6, n_arms)
    return (rng.random((n_users, n_rounds, n_arms)) < rates).astype(np.int8)


def one_hot(codes: np.ndarray, n_codes: int) -> np.ndarray:
    return np.eye(n_codes)[codes]


def linucb_from(A: np.ndarray, b: np.ndarray, **kwargs) -> LinUCB:
    """``LinUCB(layout="disjoint")`` whose statistics are set to (A, b) and refreshed (exact inverse)."""
    policy = LinUCB(A.shape[0], A.shape[1], alpha=1.0, layout="disjoint", tie_break="lowest", **kwargs)
    policy.stats.A[:] = A
    policy.stats.b[:] = b
    for arm in range(A.shape[0]):
        policy.stats.refresh(arm)
    return policy


def code_linucb(model: CodeModel, **kwargs) -> LinUCB:
    """The one-hot LinUCB of a CodeModel: ``A_a = I + diag(counts_a)``, ``b_a = reward_sums_a``."""
    A = np.eye(model.n_codes) + model.counts[:, :, None] * np.eye(model.n_codes)
    return linucb_from(A, model.reward_sums, **kwargs)


def play(policy: LinUCB, contexts: np.ndarray, rewards: np.ndarray) -> np.ndarray:
    """One user's rounds with a per-user policy; returns its arms."""
    arms = np.empty(len(contexts), dtype=np.int64)
    for t, x in enumerate(contexts):
        arms[t] = policy.select(x)
        if not np.isnan(rewards[t, arms[t]]):  # an unknown reward (replay) teaches nothing
            policy.update(x, int(arms[t]), float(rewards[t, arms[t]]))
    return arms


def dense_model(rng: np.random.Generator, dim: int, warm: bool) -> DisjointModel:
    if not warm:
        return DisjointModel.cold(K, dim)
    n = 60
    contexts = contexts_for(rng, dim, 1, n)[0]
    return DisjointModel.fit(contexts, rng.integers(0, K, n), rng.integers(0, 2, n), K)


def code_model(rng: np.random.Generator, n_codes: int, warm: bool) -> CodeModel:
    if not warm:
        return CodeModel.cold(K, n_codes)
    n = 80
    return CodeModel.fit(rng.integers(0, n_codes, n), rng.integers(0, K, n), rng.integers(0, 2, n), K, n_codes)


# -- equality with per-user LinUCB ---------------------------------------------
@pytest.mark.parametrize("warm", [False, True])
@pytest.mark.parametrize("dim", [1, 3, 8])
def test_dense_population_equals_per_user_linucb(dim: int, warm: bool) -> None:
    rng = np.random.default_rng(10 * dim + warm)
    n_users, n_rounds = 24, 25
    model = dense_model(rng, dim, warm)
    contexts, table = contexts_for(rng, dim, n_users, n_rounds), reward_table(rng, n_users, n_rounds)

    log = run_population(model, contexts, table)
    agents = BatchedLinUCB(model, n_users)
    assert np.array_equal(agents.run(contexts, table), log.arms)
    assert np.array_equal(run_population(model, contexts, table, chunk_size=5).arms, log.arms)
    for u in range(n_users):
        policy = linucb_from(model.A, model.b)
        assert np.array_equal(play(policy, contexts[u], table[u]), log.arms[u])
        np.testing.assert_allclose(agents.A_inv[u], policy.stats.A_inv, rtol=0, atol=1e-12)
        np.testing.assert_allclose(agents.theta[u], policy.stats.theta, rtol=0, atol=1e-12)
        np.testing.assert_allclose(agents.user_model(u).A, policy.stats.A, rtol=0, atol=1e-12)
        np.testing.assert_allclose(agents.user_model(u).b, policy.stats.b, rtol=0, atol=1e-12)
        x = contexts_for(rng, dim, 1, 1)[0, 0]
        np.testing.assert_allclose(agents.scores(np.tile(x, (n_users, 1)))[u], policy.scores(x), rtol=0, atol=1e-12)
    np.testing.assert_array_equal(log.rewards, np.take_along_axis(table, log.arms[:, :, None], axis=2)[:, :, 0])
    np.testing.assert_array_equal(log.mean_reward, log.rewards.mean(axis=1))


@pytest.mark.parametrize("codes", [False, True])
def test_replay_skips_unknown_rewards_as_per_user_linucb_does(codes: bool) -> None:
    """NaN rewards (one logged arm per round, as in OBD) teach nothing and leave the users' means."""
    rng = np.random.default_rng(31 + codes)
    n_users, n_rounds, n_codes = 30, 40, 6
    logged = rng.integers(0, K, (n_users, n_rounds))
    table = np.full((n_users, n_rounds, K), np.nan)
    np.put_along_axis(table, logged[:, :, None], rng.integers(0, 2, (n_users, n_rounds, 1)), axis=2)
    if codes:
        model, contexts = code_model(rng, n_codes, warm=True), rng.integers(0, n_codes, (n_users, n_rounds))
        reference, seen = (lambda: code_linucb(model)), one_hot(contexts, n_codes)
    else:
        model, contexts = dense_model(rng, 3, warm=True), contexts_for(rng, 3, n_users, n_rounds)
        reference, seen = (lambda: linucb_from(model.A, model.b)), contexts

    log = run_population(model, contexts, table)
    for u in range(n_users):
        assert np.array_equal(play(reference(), seen[u], table[u]), log.arms[u])
    matched = log.arms == logged
    assert np.array_equal(log.known, matched.sum(axis=1)) and 0 < matched.mean() < 0.5
    expected = np.array([log.rewards[u, matched[u]].mean() if matched[u].any() else np.nan for u in range(n_users)])
    np.testing.assert_array_equal(log.mean_reward, expected)
    shared = run_population(model, contexts, table, shared_agent=True)
    sequence = (seen if codes else contexts).reshape(n_users * n_rounds, -1)
    assert np.array_equal(play(reference(), sequence, table.reshape(-1, K)), shared.arms.ravel())


def test_dense_population_in_many_blocks_and_with_refreshes() -> None:
    """Blocks of users in parallel, and the full-statistics path when a refresh falls within the rounds."""
    rng = np.random.default_rng(2)
    n_users, n_rounds, dim = 300, 40, 6
    model = dense_model(rng, dim, warm=True)
    contexts, table = contexts_for(rng, dim, n_users, n_rounds), reward_table(rng, n_users, n_rounds)
    log = run_population(model, contexts, table)  # 256 // 40 = 6 users per block
    assert np.array_equal(BatchedLinUCB(model, n_users).run(contexts, table), log.arms)
    refreshed = run_population(model, contexts, table, refresh_every=9, chunk_size=70)
    for u in range(0, n_users, 15):
        assert np.array_equal(
            play(linucb_from(model.A, model.b, refresh_every=9), contexts[u], table[u]), refreshed.arms[u]
        )


@pytest.mark.parametrize("warm", [False, True])
def test_dense_select_update_loop_equals_run(warm: bool) -> None:
    rng = np.random.default_rng(3 + warm)
    n_users, n_rounds, dim = 9, 20, 5
    model = dense_model(rng, dim, warm)
    contexts, table = contexts_for(rng, dim, n_users, n_rounds), reward_table(rng, n_users, n_rounds)
    stepped = BatchedLinUCB(model, n_users, refresh_every=6)
    for t in range(n_rounds):
        arms = stepped.select(contexts[:, t])
        stepped.update(contexts[:, t], arms, table[np.arange(n_users), t, arms])
    ran = BatchedLinUCB(model, n_users, refresh_every=6)
    ran.run(contexts, table)
    for name in ("A", "A_inv", "b", "theta", "n_updates"):
        np.testing.assert_array_equal(getattr(stepped, name), getattr(ran, name), err_msg=name)


@pytest.mark.parametrize("warm", [False, True])
@pytest.mark.parametrize("n_codes", [3, 7])
def test_codes_equal_linucb_on_one_hot_vectors(n_codes: int, warm: bool) -> None:
    rng = np.random.default_rng(100 + n_codes + warm)
    n_users, n_rounds = 20, 30
    model = code_model(rng, n_codes, warm)
    codes, table = rng.integers(0, n_codes, (n_users, n_rounds)), reward_table(rng, n_users, n_rounds)

    log = run_population(model, codes, table)
    agents = BatchedCodeLinUCB(model, n_users)
    assert np.array_equal(agents.run(codes, table), log.arms)
    for u in range(n_users):
        policy = code_linucb(model)
        assert np.array_equal(play(policy, one_hot(codes[u], n_codes), table[u]), log.arms[u])
        mine = agents.user_model(u)
        np.testing.assert_allclose(mine.reward_sums / (1 + mine.counts), policy.stats.theta, rtol=0, atol=1e-12)
        np.testing.assert_allclose(1 / (1 + mine.counts), np.diagonal(policy.stats.A_inv, axis1=1, axis2=2), atol=1e-12)
        y = int(rng.integers(n_codes))
        np.testing.assert_allclose(
            agents.scores(np.full(n_users, y))[u], policy.scores(one_hot(y, n_codes)), rtol=0, atol=1e-12
        )


def test_code_select_update_loop_equals_run() -> None:
    rng = np.random.default_rng(5)
    n_users, n_rounds, n_codes = 11, 25, 6
    model = code_model(rng, n_codes, warm=True)
    codes, table = rng.integers(0, n_codes, (n_users, n_rounds)), reward_table(rng, n_users, n_rounds)
    stepped = BatchedCodeLinUCB(model, n_users)
    arms = np.empty((n_users, n_rounds), dtype=np.int64)
    for t in range(n_rounds):
        arms[:, t] = stepped.select(codes[:, t])
        stepped.update(codes[:, t], arms[:, t], table[np.arange(n_users), t, arms[:, t]])
    assert np.array_equal(arms, run_population(model, codes, table).arms)
    ran = BatchedCodeLinUCB(model, n_users)
    ran.run(codes, table)
    for u in range(n_users):
        np.testing.assert_array_equal(stepped.user_model(u).counts, ran.user_model(u).counts)
        np.testing.assert_array_equal(stepped.user_model(u).reward_sums, ran.user_model(u).reward_sums)


def test_code_agents_keep_no_per_code_state() -> None:
    """A user's own state grows with its rounds, not with k (spec §9 item 1: k up to 1024)."""
    rng = np.random.default_rng(6)
    n_users, n_rounds, n_codes = 50, 10, 1024
    agents = BatchedCodeLinUCB(CodeModel.cold(K, n_codes), n_users)
    agents.run(rng.integers(0, n_codes, (n_users, n_rounds)), reward_table(rng, n_users, n_rounds))
    assert agents.local_counts.shape == (n_users, n_rounds, K)


# -- server models ------------------------------------------------------------------
def test_disjoint_fit_equals_sequential_updates_and_ignores_order() -> None:
    rng = np.random.default_rng(7)
    n, dim = 200, 6
    contexts, arms, rewards = simplex_contexts(rng, n, dim), rng.integers(0, K, n), rng.integers(0, 2, n)
    model = DisjointModel.fit(contexts, arms, rewards, K)
    policy = LinUCB(K, dim, alpha=1.0, layout="disjoint")
    for x, a, r in zip(contexts, arms, rewards, strict=True):
        policy.update(x, int(a), float(r))
    np.testing.assert_allclose(model.A, policy.stats.A, rtol=0, atol=1e-12)
    np.testing.assert_allclose(model.b, policy.stats.b, rtol=0, atol=1e-12)
    order = rng.permutation(n)
    shuffled = DisjointModel.fit(contexts[order], arms[order], rewards[order], K)
    np.testing.assert_allclose(shuffled.A, model.A, rtol=0, atol=1e-12)
    np.testing.assert_allclose(shuffled.b, model.b, rtol=0, atol=1e-12)
    assert not model.A.flags.writeable


def test_code_fit_counts_and_ignores_order() -> None:
    rng = np.random.default_rng(8)
    n, n_codes = 300, 9
    codes, arms, rewards = rng.integers(0, n_codes, n), rng.integers(0, K, n), rng.integers(0, 2, n)
    model = CodeModel.fit(codes, arms, rewards, K, n_codes)
    counts, sums = np.zeros((K, n_codes), dtype=np.int64), np.zeros((K, n_codes))
    for y, a, r in zip(codes, arms, rewards, strict=True):
        counts[a, y] += 1
        sums[a, y] += r
    np.testing.assert_array_equal(model.counts, counts)
    np.testing.assert_array_equal(model.reward_sums, sums)
    order = rng.permutation(n)
    shuffled = CodeModel.fit(codes[order], arms[order], rewards[order], K, n_codes)
    np.testing.assert_array_equal(shuffled.counts, counts)
    np.testing.assert_array_equal(shuffled.reward_sums, sums)


def test_one_update_adds_x_xT_to_the_chosen_arm_only() -> None:
    rng = np.random.default_rng(9)
    dim, arm, reward = 5, 2, 1.0
    x = simplex_contexts(rng, dim)
    expected_A = np.eye(dim) + np.outer(x, x)
    fitted = DisjointModel.fit(x[None], [arm], [reward], K)
    agents = BatchedLinUCB(DisjointModel.cold(K, dim), 3)
    agents.update(np.tile(x, (3, 1)), np.array([arm, 0, arm]), np.array([reward, 0.0, reward]))
    for model in (fitted, agents.user_model(0)):
        np.testing.assert_allclose(model.A[arm], expected_A, rtol=0, atol=1e-15)
        np.testing.assert_allclose(model.b[arm], reward * x, rtol=0, atol=1e-15)
        others = np.arange(K) != arm
        np.testing.assert_array_equal(model.A[others], np.tile(np.eye(dim), (K - 1, 1, 1)))
        np.testing.assert_array_equal(model.b[others], 0.0)
    np.testing.assert_allclose(agents.A_inv[0, arm], np.linalg.inv(expected_A), rtol=0, atol=1e-12)
    np.testing.assert_allclose(agents.theta[0, arm], reward * x / (1 + x @ x), rtol=0, atol=1e-12)
    np.testing.assert_array_equal(agents.A_inv[0, np.arange(K) != arm], np.tile(np.eye(dim), (K - 1, 1, 1)))
    np.testing.assert_array_equal(agents.user_model(1).b[0], 0.0)  # user 1 learnt arm 0 with reward 0

    codes = BatchedCodeLinUCB(CodeModel.cold(K, 6), 2)
    codes.update(np.array([4, 1]), np.array([arm, 3]), np.array([reward, 0.0]))
    mine = codes.user_model(0)
    assert mine.counts[arm, 4] == 1 and mine.counts.sum() == 1
    assert mine.reward_sums[arm, 4] == reward and mine.reward_sums.sum() == reward


# -- tie-breaking ----------------------------------------------------------------------
def test_random_tie_break_is_uniform_among_tied_arms() -> None:
    n_users = 20_000
    cold = batched_agents(DisjointModel.cold(K, 3), n_users, tie_break="random", rng=11)
    arms = cold.select(np.full((n_users, 3), 1 / 3))  # every arm ties on a cold start
    counts = np.bincount(arms, minlength=K)
    assert sps.chisquare(counts).pvalue > 1e-3

    # arms 1 and 3 tie for the best score, arms 0 and 2 are clearly worse
    counts, sums = np.zeros((K, 5), dtype=np.int64), np.zeros((K, 5))
    counts[:, 2], sums[[1, 3], 2] = 4, 4.0
    tables = batched_agents(CodeModel(counts, sums), n_users, tie_break="random", rng=12)
    arms = tables.select(np.full(n_users, 2))
    assert set(np.unique(arms)) == {1, 3}
    assert sps.binomtest(int((arms == 1).sum()), n_users).pvalue > 1e-3
    lowest = batched_agents(CodeModel(counts, sums), n_users)
    assert set(lowest.select(np.full(n_users, 2))) == {1}


def test_random_tie_break_draws_do_not_depend_on_chunks() -> None:
    rng = np.random.default_rng(13)
    n_users, n_rounds, n_codes = 30, 8, 4
    codes, table = rng.integers(0, n_codes, (n_users, n_rounds)), reward_table(rng, n_users, n_rounds)
    model = CodeModel.cold(K, n_codes)
    whole = run_population(model, codes, table, tie_break="random", rng=1)
    chunked = run_population(model, codes, table, tie_break="random", rng=1, chunk_size=7)
    agents = BatchedCodeLinUCB(model, n_users, tie_break="random", rng=1)
    np.testing.assert_array_equal(whole.arms, chunked.arms)
    np.testing.assert_array_equal(whole.arms, agents.run(codes, table))
    assert len({tuple(a) for a in whole.arms[:, 0:1]}) > 1  # first rounds really were random


# -- the reference's shared warm agent ----------------------------------------------------
def test_shared_agent_equals_one_linucb_carried_across_users() -> None:
    rng = np.random.default_rng(14)
    n_users, n_rounds, dim = 30, 10, 4
    model = dense_model(rng, dim, warm=True)
    contexts, table = contexts_for(rng, dim, n_users, n_rounds), reward_table(rng, n_users, n_rounds)
    log = run_population(model, contexts, table, shared_agent=True, refresh_every=7, chunk_size=4)
    policy = linucb_from(model.A, model.b, refresh_every=7)
    for u in range(n_users):
        assert np.array_equal(play(policy, contexts[u], table[u]), log.arms[u]), u
    fresh = run_population(model, contexts, table, refresh_every=7)
    assert not np.array_equal(fresh.arms, log.arms)

    n_codes = 5
    model = code_model(rng, n_codes, warm=True)
    codes = rng.integers(0, n_codes, (n_users, n_rounds))
    log = run_population(model, codes, table, shared_agent=True, chunk_size=3)
    policy = code_linucb(model)
    for u in range(n_users):
        assert np.array_equal(play(policy, one_hot(codes[u], n_codes), table[u]), log.arms[u]), u


# -- errors ------------------------------------------------------------------------
def raises(message: str):
    return pytest.raises(ValueError, match=f"^{re.escape(message)}$")


def test_error_messages_name_the_field() -> None:
    dense, codes = DisjointModel.cold(K, 3), CodeModel.cold(K, 5)
    table = np.zeros((2, 4, K))
    with raises("contexts has shape (2, 4, 2); expected (n_users, n_rounds, dim) = (n_users, n_rounds, 3)"):
        run_population(dense, np.zeros((2, 4, 2)), table)
    with raises("reward_table has shape (2, 4, 3); expected (n_users, n_rounds, n_arms) = (2, 4, 4)"):
        run_population(dense, np.zeros((2, 4, 3)), np.zeros((2, 4, 3)))
    with raises("contexts has shape (2, 4, 1); expected codes of shape (n_users, n_rounds) = (n_users, n_rounds)"):
        run_population(codes, np.zeros((2, 4, 1), dtype=int), table)
    with raises("codes must be integers in [0, n_codes) = [0, 5), got values in [0, 5]"):
        run_population(codes, np.array([[0, 1, 2, 5], [0, 0, 0, 0]]), table)
    with raises("codes must be integers in [0, n_codes) = [0, 5), got dtype float64"):
        run_population(codes, np.zeros((2, 4)), table)
    with raises("model must be a DisjointModel or a CodeModel, got dict"):
        run_population({}, np.zeros((2, 4)), table)
    with raises("chunk_size must be >= 1 (or None for automatic), got 0"):
        run_population(codes, np.zeros((2, 4), dtype=int), table, chunk_size=0)
    with raises("tie_break must be one of 'lowest', 'random', got 'first'"):
        run_population(codes, np.zeros((2, 4), dtype=int), table, tie_break="first")

    agents = BatchedLinUCB(dense, 2)
    with raises("x has shape (3, 3); expected (n_users, dim) = (2, 3)"):
        agents.select(np.zeros((3, 3)))
    with raises("arms has shape (3,); expected (n_users,) = (2,)"):
        agents.update(np.zeros((2, 3)), np.zeros(3, dtype=int), np.zeros(2))
    with raises("arms must be integers in [0, n_arms) = [0, 4), got values in [0, 4]"):
        agents.update(np.zeros((2, 3)), np.array([0, 4]), np.zeros(2))
    with raises("contexts has shape (3, 4, 3); expected (n_users, n_rounds, dim) = (2, n_rounds, 3)"):
        agents.run(np.zeros((3, 4, 3)), table)
    with raises("x has shape (2, 1); expected (n_users,) = (2,)"):
        BatchedCodeLinUCB(codes, 2).select(np.zeros((2, 1), dtype=int))

    with raises("A has shape (4, 3, 2); expected (n_arms, dim, dim) with n_arms, dim >= 1"):
        DisjointModel(np.zeros((4, 3, 2)), np.zeros((4, 3)))
    with raises("b has shape (4, 2); expected (n_arms, dim) = (4, 3)"):
        DisjointModel(dense.A, np.zeros((4, 2)))
    with raises("model.A[0] is not positive definite"):
        BatchedLinUCB(DisjointModel(np.zeros((1, 2, 2)), np.zeros((1, 2))), 1)
    with raises("reward_sums has shape (4, 4); expected (n_arms, n_codes) = (4, 5)"):
        CodeModel(codes.counts, np.zeros((4, 4)))
    with raises("arms must be integers in [0, n_arms) = [0, 4), got values in [-1, 0]"):
        DisjointModel.fit(np.zeros((2, 3)), [0, -1], [1, 0], K)
    with raises("contexts has shape (2,); expected (n_tuples, dim) with dim >= 1"):
        DisjointModel.fit(np.zeros(2), [0, 1], [1, 0], K)


def test_nan_contexts_are_reported() -> None:
    contexts = np.full((1, 2, 3), np.nan)
    with raises(_NAN_MESSAGE):
        run_population(DisjointModel.cold(K, 3), contexts, np.zeros((1, 2, K)))
    assert isinstance(run_population(DisjointModel.cold(K, 3), contexts[:, :0], np.zeros((1, 0, K))), PopulationLog)
