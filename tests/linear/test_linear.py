"""Unit tests of ``privbandits.linear``: ridge statistics, policies, tie-breaking.

Regret on the synthetic environment is tested with the experiments.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from scipy import stats as sps

from privbandits.linear import (
    EpsilonGreedy,
    Layout,
    LinTS,
    LinUCB,
    RidgeStatistics,
    Sampler,
    TieBreak,
    UniformRandom,
    break_ties,
    covariance_root,
    tied_arms,
)


def unit_rows(rng: np.random.Generator, *shape: int) -> np.ndarray:
    x = rng.standard_normal(shape)
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def random_spd(rng: np.random.Generator, d: int) -> np.ndarray:
    m = rng.standard_normal((d, d))
    return m @ m.T + d * np.eye(d)


def haar(rng: np.random.Generator, d: int) -> np.ndarray:
    q, r = np.linalg.qr(rng.standard_normal((d, d)))
    return q * np.sign(np.diag(r))


def feed(policy, rng: np.random.Generator, rounds: int, contexts_shape: tuple[int, ...]) -> None:
    """Random observations on random arms (no selection involved)."""
    for _ in range(rounds):
        policy.update(unit_rows(rng, *contexts_shape), int(rng.integers(policy.n_arms)), float(rng.normal()))


# -- RidgeStatistics ---------------------------------------------------------
@pytest.mark.parametrize("n_models", [1, 4])
@pytest.mark.parametrize("dim", [1, 3, 17, 64])
def test_sherman_morrison_matches_exact_solve(n_models: int, dim: int) -> None:
    rng = np.random.default_rng(dim * 10 + n_models)
    reg = 0.7
    st = RidgeStatistics(n_models, dim, reg=reg, refresh_every=0)
    A = np.tile(reg * np.eye(dim), (n_models, 1, 1))
    b = np.zeros((n_models, dim))
    for _ in range(300):
        m, x, r = int(rng.integers(n_models)), rng.standard_normal(dim), float(rng.normal())
        st.update(m, x, r)
        A[m] += np.outer(x, x)
        b[m] += r * x
    np.testing.assert_allclose(st.A, A, rtol=1e-14, atol=1e-12)
    np.testing.assert_array_equal(st.b, b)
    np.testing.assert_allclose(st.A_inv, np.linalg.inv(A), rtol=0, atol=1e-12)
    np.testing.assert_allclose(st.theta, np.linalg.solve(A, b[..., None])[..., 0], rtol=0, atol=1e-11)
    assert st.n_updates.sum() == 300


def test_gram_matrix_and_b_are_exact_sums() -> None:
    """With integer features every product is exact, so A and b equal the sums bit for bit."""
    rng = np.random.default_rng(20)
    st = RidgeStatistics(3, 6, reg=2.0)
    A, b = np.tile(2.0 * np.eye(6), (3, 1, 1)), np.zeros((3, 6))
    for _ in range(500):
        m, x, r = int(rng.integers(3)), rng.integers(-9, 10, size=6).astype(float), 0.25 * rng.integers(-8, 9)
        st.update(m, x, r)
        A[m] += np.outer(x, x)
        b[m] += r * x
    np.testing.assert_array_equal(st.A, A)
    np.testing.assert_array_equal(st.b, b)


def test_update_rejects_wrong_x_shape() -> None:
    st = RidgeStatistics(2, 3)
    for x in (np.ones(4), np.ones((3, 1)), np.float64(1.0)):
        with pytest.raises(ValueError, match=re.escape(f"x has shape {x.shape}; expected (3,)")):
            st.update(0, x, 1.0)
    np.testing.assert_array_equal(st.A_inv, np.tile(np.eye(3), (2, 1, 1)))


def test_refresh_resets_to_exact_inverse_on_schedule() -> None:
    rng = np.random.default_rng(0)
    st = RidgeStatistics(2, 5, refresh_every=3)
    for x in rng.standard_normal((3, 5)):
        st.update(1, x, 1.0)
    # the third update of model 1 refreshed it: A_inv is the symmetrised Cholesky inverse
    np.testing.assert_allclose(st.A_inv[1], np.linalg.inv(st.A[1]), atol=1e-15)
    np.testing.assert_array_equal(st.A_inv[0], np.eye(5))
    np.testing.assert_array_equal(st.n_updates, [0, 3])


@pytest.mark.parametrize("refresh_every", [1000, 0])
def test_inverse_drift_stays_tiny_over_1e5_updates(refresh_every: int) -> None:
    """d = 100, 10^5 unit-norm updates, checked every 10^4: |A_inv - inv(A)| < 1e-10.

    The refresh is not needed for this bound: observed drift is ~1e-18 with
    refreshes every 1000 updates and ~1e-16 without, as A_inv shrinks like 1/t.
    """
    rng = np.random.default_rng(1)
    st = RidgeStatistics(1, 100, refresh_every=refresh_every)
    xs, rs = unit_rows(rng, 100_000, 100), rng.normal(size=100_000)
    for i in range(100_000):
        st.update(0, xs[i], rs[i])
        if (i + 1) % 10_000 == 0:
            assert st.inverse_drift() < 1e-10
            theta = np.linalg.solve(st.A[0], st.b[0])
            np.testing.assert_allclose(st.theta[0], theta, rtol=0, atol=1e-12)
            np.testing.assert_array_equal(st.A_inv[0], st.A_inv[0].T)
    assert st.n_updates[0] == 100_000


@pytest.mark.parametrize("refresh_every", [0, 7])
def test_inverse_is_exactly_symmetric(refresh_every: int) -> None:
    rng = np.random.default_rng(3)
    st = RidgeStatistics(3, 23, refresh_every=refresh_every)
    for _ in range(200):
        st.update(int(rng.integers(3)), rng.standard_normal(23) * 10.0 ** rng.uniform(-3, 3), 1.0)
        np.testing.assert_array_equal(st.A_inv, np.swapaxes(st.A_inv, 1, 2))
    st.refresh(0)
    np.testing.assert_array_equal(st.A_inv[0], st.A_inv[0].T)


# -- vectorised scores versus per-arm loops ----------------------------------
def loop_ucb(policy: LinUCB, contexts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Estimates and widths arm by arm from exact solves (Li et al. 2010, Eq. 4)."""
    st, means, widths = policy.stats, [], []
    for a in range(policy.n_arms):
        m = 0 if policy.layout is Layout.SHARED else a
        x = contexts if contexts.ndim == 1 else contexts[a]
        means.append(x @ np.linalg.solve(st.A[m], st.b[m]))
        widths.append(np.sqrt(x @ np.linalg.solve(st.A[m], x)))
    return np.array(means), np.array(widths)


@pytest.mark.parametrize(
    ("layout", "shape"),
    [("shared", (6, 8)), ("disjoint", (6, 8)), ("disjoint", (8,))],
)
def test_linucb_scores_match_loop(layout: str, shape: tuple[int, ...]) -> None:
    rng = np.random.default_rng(4)
    policy = LinUCB(6, 8, alpha=0.7, layout=layout, refresh_every=0)
    feed(policy, rng, 120, shape)
    for _ in range(20):
        contexts = rng.standard_normal(shape)
        means, widths = loop_ucb(policy, contexts)
        np.testing.assert_allclose(policy.estimates(contexts), means, atol=1e-12)
        np.testing.assert_allclose(policy.confidence_widths(contexts), widths, atol=1e-12)
        np.testing.assert_allclose(policy.scores(contexts), means + 0.7 * widths, atol=1e-12)
        assert policy.select(contexts) == int(np.argmax(means + 0.7 * widths))


@pytest.mark.parametrize(
    ("layout", "shape"),
    [("shared", (5, 4)), ("disjoint", (5, 4)), ("disjoint", (4,))],
)
def test_lints_reproduces_reference_draws(layout: str, shape: tuple[int, ...]) -> None:
    """μ = θ + v S z with z from the same generator stream, S the Cholesky root of A^{-1}."""
    rng = np.random.default_rng(5)
    v, n_models = 0.8, 1 if layout == "shared" else 5
    policy = LinTS(5, 4, v=v, layout=layout, rng=11)
    ref_rng = np.random.default_rng(11)
    A = np.tile(np.eye(4), (n_models, 1, 1))
    b = np.zeros((n_models, 4))
    for _ in range(60):
        contexts = unit_rows(rng, *shape)
        z = ref_rng.standard_normal((n_models, 4))
        scores = []
        for a in range(5):
            m = 0 if layout == "shared" else a
            x = contexts if contexts.ndim == 1 else contexts[a]
            mu = np.linalg.solve(A[m], b[m]) + v * np.linalg.cholesky(np.linalg.inv(A[m])) @ z[m]
            scores.append(x @ mu)
        np.testing.assert_allclose(policy.scores(contexts), scores, atol=1e-12)
        arm, reward = int(np.argmax(scores)), float(rng.normal())
        x = contexts if contexts.ndim == 1 else contexts[arm]
        m = 0 if layout == "shared" else arm
        A[m] += np.outer(x, x)
        b[m] += reward * x
        policy.update(contexts, arm, reward)


@pytest.mark.parametrize("shape", [(5, 6), (6,)])
def test_epsilon_greedy_estimates_match_loop(shape: tuple[int, ...]) -> None:
    rng = np.random.default_rng(6)
    policy = EpsilonGreedy(5, 6, epsilon=0.0)
    feed(policy, rng, 80, shape)
    contexts = rng.standard_normal(shape)
    expected = [
        (contexts if contexts.ndim == 1 else contexts[a]) @ np.linalg.solve(policy.stats.A[a], policy.stats.b[a])
        for a in range(5)
    ]
    np.testing.assert_allclose(policy.scores(contexts), expected, atol=1e-12)
    assert policy.select(contexts) == int(np.argmax(expected))


# -- tie-breaking --------------------------------------------------------------
def test_lowest_index_among_ties_within_tolerance() -> None:
    near = np.nextafter(0.5, 1.0)  # 1.1e-16 above 0.5
    assert break_ties(np.array([0.1, 0.5, near, near])) == 1
    assert break_ties(np.array([0.2, 0.5, 0.5 + 1e-16])) == 1
    assert break_ties(np.array([0.5, 0.5 + 1e-6, 0.2])) == 1  # a genuine gap is no tie
    # the tolerance is relative for large scores and absolute below 1
    assert break_ties(np.array([1e6, 1e6 + 1e-4])) == 0
    assert break_ties(np.array([1e6, 1e6 + 1e-2])) == 1
    assert break_ties(np.array([1e-3, 1e-3 + 5e-10])) == 0
    assert break_ties(np.array([-3.0, -2.0, -2.0 + 1e-12])) == 1
    np.testing.assert_array_equal(tied_arms(np.array([1.0, 1.0, 1.0 - 2e-9])), [True, True, False])
    np.testing.assert_array_equal(tied_arms(np.array([near, 0.5]), tolerance=0.0), [True, False])


def test_random_tie_breaking_is_uniform_over_ties_only() -> None:
    rng = np.random.default_rng(7)
    scores = np.array([0.3, 0.9, 0.2, 0.9 - 1e-12, 0.9, 0.9 - 1e-3])
    picks = np.array([break_ties(scores, TieBreak.RANDOM, rng) for _ in range(30_000)])
    counts = np.bincount(picks, minlength=6)
    assert counts[[0, 2, 5]].sum() == 0
    assert sps.chisquare(counts[[1, 3, 4]]).pvalue > 0.01
    # a unique maximum needs no generator
    assert break_ties(np.array([0.0, 1.0]), TieBreak.RANDOM, None) == 1


def test_tie_break_errors() -> None:
    with pytest.raises(ValueError, match=re.escape("tie_break='random' needs a random generator")):
        break_ties(np.array([1.0, 1.0]), TieBreak.RANDOM, None)
    message = "arm scores contain NaN; the learner's statistics are corrupt"
    for scores in ([0.0, np.nan, 1.0], [np.nan, 0.0], [1.0, np.nan]):
        with pytest.raises(ValueError, match=re.escape(message)):
            break_ties(np.array(scores))
    policy = LinUCB(3, 2)
    policy.stats.theta[0, 0] = np.nan
    with pytest.raises(ValueError, match=re.escape(message)):
        policy.select(np.ones((3, 2)))


def test_policy_uses_named_tie_rule() -> None:
    contexts = unit_rows(np.random.default_rng(8), 4, 3)  # unit norm: all UCBs equal α at t = 1
    assert LinUCB(4, 3).select(contexts) == 0
    picks = {LinUCB(4, 3, tie_break="random", rng=s).select(contexts) for s in range(40)}
    assert picks == {0, 1, 2, 3}


# -- LinTS samplers ------------------------------------------------------------
@pytest.mark.parametrize("sampler", list(Sampler))
def test_covariance_root_squares_to_covariance(sampler: Sampler) -> None:
    rng = np.random.default_rng(9)
    cov = np.stack([np.linalg.inv(random_spd(rng, 7)) for _ in range(3)])
    root = covariance_root(cov, sampler)
    np.testing.assert_allclose(root @ np.swapaxes(root, 1, 2), cov, atol=1e-14)
    if sampler is Sampler.EIGH:
        np.testing.assert_allclose(root, np.swapaxes(root, 1, 2), rtol=0, atol=1e-15)
    else:
        np.testing.assert_array_equal(root, np.tril(root))


def test_eigh_root_rotates_with_the_basis() -> None:
    """root(Q C Q^T) = Q root(C) Q^T: what makes masked LinTS draws pathwise equal (spec §4.2)."""
    rng = np.random.default_rng(10)
    for d in (2, 10, 40):
        cov, q = np.linalg.inv(random_spd(rng, d)), haar(rng, d)
        rotated = covariance_root(q @ cov @ q.T, Sampler.EIGH)
        np.testing.assert_allclose(rotated, q @ covariance_root(cov, Sampler.EIGH) @ q.T, atol=1e-10)
        chol = covariance_root(q @ cov @ q.T, Sampler.CHOLESKY)
        assert np.abs(chol - q @ covariance_root(cov, Sampler.CHOLESKY) @ q.T).max() > 1e-3


@pytest.mark.parametrize("sampler", list(Sampler))
@pytest.mark.parametrize("layout", ["shared", "disjoint"])
def test_lints_draws_have_posterior_mean_and_covariance(sampler: Sampler, layout: str) -> None:
    rng = np.random.default_rng(12)
    v, d, n = 0.5, 4, 20_000
    policy = LinTS(2, d, v=v, sampler=sampler, layout=layout, rng=13)
    feed(policy, rng, 30, (2, d))
    draws = np.stack([policy.sample_parameters() for _ in range(n)])  # (n, models, d)
    for m in range(policy.stats.n_models):
        cov = v**2 * np.linalg.inv(policy.stats.A[m])
        se = np.sqrt(np.diag(cov) / n)
        assert np.all(np.abs(draws[:, m].mean(0) - policy.stats.theta[m]) < 4.5 * se)
        np.testing.assert_allclose(np.cov(draws[:, m].T), cov, atol=0.05 * np.abs(cov).max())


# -- ε-greedy ------------------------------------------------------------------
@pytest.mark.parametrize("epsilon", [0.0, 0.3, 1.0])
def test_epsilon_greedy_frequencies(epsilon: float) -> None:
    K, n = 5, 20_000
    policy = EpsilonGreedy(K, 2, epsilon=epsilon, rng=14)
    x = np.array([1.0, 0.0])
    for _ in range(5):
        policy.update(x, 2, 1.0)  # arm 2 is the greedy arm for x
    counts = np.bincount([policy.select(x) for _ in range(n)], minlength=K)
    p = np.full(K, epsilon / K)
    p[2] += 1 - epsilon
    bound = 5 * np.sqrt(n * p * (1 - p)) + 1e-9
    assert np.all(np.abs(counts - n * p) <= bound), (counts, n * p)


# -- reproducibility -----------------------------------------------------------
def run_actions(policy, seed: int = 15, rounds: int = 200) -> list[int]:
    rng = np.random.default_rng(seed)
    theta = unit_rows(rng, 6)
    actions = []
    for _ in range(rounds):
        contexts = unit_rows(rng, 5, 6)
        arm = policy.select(contexts)
        policy.update(contexts, arm, float(contexts[arm] @ theta + 0.1 * rng.normal()))
        actions.append(arm)
    return actions


@pytest.mark.parametrize("sampler", list(Sampler))
def test_lints_same_seed_same_actions_different_seed_differs(sampler: Sampler) -> None:
    make = lambda seed: LinTS(5, 6, v=0.5, sampler=sampler, rng=seed)  # noqa: E731
    first = run_actions(make(1))
    assert run_actions(make(1)) == first
    assert run_actions(make(2)) != first


def test_linucb_and_uniform_are_reproducible() -> None:
    assert run_actions(LinUCB(5, 6, tie_break="random", rng=3)) == run_actions(LinUCB(5, 6, tie_break="random", rng=3))
    assert run_actions(UniformRandom(5, rng=4)) == run_actions(UniformRandom(5, rng=4))
    assert run_actions(UniformRandom(5, rng=4)) != run_actions(UniformRandom(5, rng=5))


# -- input validation ----------------------------------------------------------
@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: LinUCB(3, 2, alpha=-0.5), "alpha must be >= 0, got -0.5"),
        (lambda: LinTS(3, 2, v=-1.0), "v must be >= 0, got -1.0"),
        (lambda: EpsilonGreedy(3, 2, epsilon=1.5), "epsilon must be in [0, 1], got 1.5"),
        (lambda: EpsilonGreedy(3, 2, epsilon=-0.1), "epsilon must be in [0, 1], got -0.1"),
        (lambda: LinUCB(0, 2), "n_arms must be >= 1, got 0"),
        (lambda: LinUCB(3, 0), "dim must be >= 1, got 0"),
        (lambda: LinUCB(3, 2, reg=0.0), "reg must be > 0, got 0.0"),
        (lambda: LinUCB(3, 2, reg=-1.0), "reg must be > 0, got -1.0"),
        (lambda: LinUCB(3, 2, refresh_every=-1), "refresh_every must be >= 0 (0 = never), got -1"),
        (lambda: LinUCB(3, 2, tie_tolerance=-1e-9), "tie_tolerance must be >= 0, got -1e-09"),
        (lambda: UniformRandom(0), "n_arms must be >= 1, got 0"),
        (lambda: RidgeStatistics(0, 2), "n_models must be >= 1, got 0"),
        (lambda: LinUCB(3, 2, layout="blocks"), "layout must be one of 'shared', 'disjoint', got 'blocks'"),
        (lambda: LinUCB(3, 2, tie_break="first"), "tie_break must be one of 'lowest', 'random', got 'first'"),
        (lambda: LinTS(3, 2, sampler="svd"), "sampler must be one of 'cholesky', 'eigh', got 'svd'"),
    ],
)
def test_constructor_errors(make, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        make()


@pytest.mark.parametrize(
    ("policy", "contexts", "message"),
    [
        (LinUCB(3, 2), np.ones(2), "contexts have shape (2,); a shared layout needs (3, 2)"),
        (LinUCB(3, 2), np.ones((2, 3)), "contexts have shape (2, 3); a shared layout needs (3, 2)"),
        (
            LinUCB(3, 2, layout="disjoint"),
            np.ones(3),
            "contexts have shape (3,); a disjoint layout needs (3, 2) or (2,)",
        ),
        (LinTS(3, 2), np.ones((3, 2, 1)), "contexts have shape (3, 2, 1); a shared layout needs (3, 2)"),
        (
            EpsilonGreedy(3, 2, epsilon=1.0),
            np.ones((4, 2)),
            "contexts have shape (4, 2); a disjoint layout needs (3, 2) or (2,)",
        ),
        (
            EpsilonGreedy(3, 2, epsilon=0.0),
            np.ones(4),
            "contexts have shape (4,); a disjoint layout needs (3, 2) or (2,)",
        ),
    ],
)
def test_select_rejects_wrong_context_shape(policy, contexts: np.ndarray, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        policy.select(contexts)


def test_ridge_statistics_load_a_warm_start():
    from privbandits.linear import RidgeStatistics

    rng = np.random.default_rng(0)
    source = RidgeStatistics(3, 4)
    for _ in range(50):
        source.update(int(rng.integers(3)), rng.standard_normal(4), float(rng.standard_normal()))
    warm = RidgeStatistics(3, 4)
    warm.load(source.A.copy(), source.b.copy())
    np.testing.assert_allclose(warm.A_inv, np.linalg.inv(source.A), atol=1e-12)
    np.testing.assert_allclose(warm.theta, source.theta, atol=1e-12)
    expected = r"^A and b must have shapes \(3, 4, 4\) and \(3, 4\), got \(3, 4\) and \(3, 4\)$"
    with pytest.raises(ValueError, match=expected):
        warm.load(np.zeros((3, 4)), np.zeros((3, 4)))
