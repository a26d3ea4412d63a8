"""Bad input never corrupts a plaintext learner and always gets a clear error (issue 14).

Every rejected call is checked for: the exception type, a message naming the
parameter, an unchanged state digest (the bytes of every array the object
holds, its generators' states included), and a learner that still works —
it then plays exactly as a twin that never saw the bad call.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from bad_input import digest, rejects

from privbandits.linear import EpsilonGreedy, LinTS, LinUCB, RidgeStatistics, TieBreak, UniformRandom, break_ties
from privbandits.linear.population import BatchedCodeLinUCB, BatchedLinUCB, CodeModel, DisjointModel, run_population
from privbandits.validation import CallOrderError, InvalidInputError

K, D = 4, 3
NAN, INF = float("nan"), float("inf")


# -- constructors --------------------------------------------------------------------------------
CONSTRUCTORS = [
    (lambda: LinUCB(4.5, D), "n_arms"),
    (lambda: LinUCB(True, D), "n_arms"),
    (lambda: LinUCB("3", D), "n_arms"),
    (lambda: LinUCB(0, D), "n_arms"),
    (lambda: LinUCB(K, 0), "dim"),
    (lambda: LinUCB(K, 10.0), "dim"),
    (lambda: LinUCB(K, D, alpha=NAN), "alpha"),
    (lambda: LinUCB(K, D, alpha=INF), "alpha"),
    (lambda: LinUCB(K, D, alpha=-1.0), "alpha"),
    (lambda: LinUCB(K, D, alpha=True), "alpha"),
    (lambda: LinUCB(K, D, alpha="0.5"), "alpha"),
    (lambda: LinUCB(K, D, reg=0.0), "reg"),
    (lambda: LinUCB(K, D, reg=NAN), "reg"),
    (lambda: LinUCB(K, D, reg=INF), "reg"),
    (lambda: LinUCB(K, D, refresh_every=1.5), "refresh_every"),
    (lambda: LinUCB(K, D, refresh_every=-1), "refresh_every"),
    (lambda: LinUCB(K, D, tie_tolerance=NAN), "tie_tolerance"),
    (lambda: LinUCB(K, D, tie_tolerance=-1e-9), "tie_tolerance"),
    (lambda: LinUCB(K, D, layout="blocks"), "layout"),
    (lambda: LinUCB(K, D, tie_break="first"), "tie_break"),
    (lambda: LinUCB(K, D, rng=1.5), "rng"),
    (lambda: LinUCB(K, D, rng="seed"), "rng"),
    (lambda: LinUCB(K, D, rng=True), "rng"),
    (lambda: LinUCB(K, D, rng=-1), "rng"),
    (lambda: LinTS(K, D, v=NAN), "v"),
    (lambda: LinTS(K, D, v=-1.0), "v"),
    (lambda: LinTS(K, D, sampler="svd"), "sampler"),
    (lambda: EpsilonGreedy(K, D, epsilon=1.5), "epsilon"),
    (lambda: EpsilonGreedy(K, D, epsilon=NAN), "epsilon"),
    (lambda: EpsilonGreedy(K, D, epsilon=True), "epsilon"),
    (lambda: UniformRandom(2.5), "n_arms"),
    (lambda: RidgeStatistics(True, D), "n_models"),
    (lambda: RidgeStatistics(1, 1.5), "dim"),
    (lambda: RidgeStatistics(1, D, reg=-INF), "reg"),
]


@pytest.mark.parametrize(("make", "name"), CONSTRUCTORS)
def test_constructor_refuses_bad_parameters(make, name):
    message = rejects(make, name)
    assert "got" in message  # the value given is named too
    assert isinstance(InvalidInputError(), ValueError) and isinstance(InvalidInputError(), TypeError)


# -- per-call input ------------------------------------------------------------------------------
LEARNERS = {
    "linucb-shared": lambda: LinUCB(K, D, alpha=0.5, rng=1),
    "linucb-disjoint": lambda: LinUCB(K, D, alpha=0.5, layout="disjoint", rng=1),
    "lints": lambda: LinTS(K, D, v=0.1, rng=1, tie_break="random"),
    "epsilon-greedy": lambda: EpsilonGreedy(K, D, epsilon=0.3, rng=1),
}


def _contexts(learner, rng: np.random.Generator) -> np.ndarray:
    x = rng.normal(size=(K, D)) / 3
    return x if learner.layout == "shared" or rng.random() < 0.5 else x[0]


def _warm(learner) -> np.ndarray:
    """A few valid rounds; returns the next round's valid contexts."""
    rng = np.random.default_rng(5)
    for _ in range(6):
        c = rng.normal(size=(K, D)) / 3
        learner.update(c, learner.select(c), float(rng.normal()))
    return rng.normal(size=(K, D)) / 3


def _with(c: np.ndarray, index: tuple, value: float) -> np.ndarray:
    c = c.copy()
    c[index] = value
    return c


BAD_UPDATES = [
    (lambda c: (c, -1, 1.0), "arm"),
    (lambda c: (c, K, 1.0), "arm"),
    (lambda c: (c, 1.0, 1.0), "arm"),
    (lambda c: (c, True, 1.0), "arm"),
    (lambda c: (c, "0", 1.0), "arm"),
    (lambda c: (c, None, 1.0), "arm"),
    (lambda c: (c, 1, NAN), "reward"),
    (lambda c: (c, 1, INF), "reward"),
    (lambda c: (c, 1, "1"), "reward"),
    (lambda c: (c, 1, None), "reward"),
    (lambda c: (_with(c, (1, 0), NAN), 1, 1.0), "contexts"),
    (lambda c: (_with(c, (1, 2), -INF), 1, 1.0), "contexts"),
    (lambda c: (np.full((K, D), 1e200), 1, 1.0), "contexts"),
    (lambda c: (np.zeros((K, D + 1)), 1, 1.0), "contexts"),
    (lambda c: (np.zeros((K + 1, D)), 1, 1.0), "contexts"),
    (lambda c: (np.zeros(D + 1), 1, 1.0), "contexts"),
    (lambda c: (_with(c, (2, 0), NAN), 1, 1.0), "contexts"),  # NaN in the row of an arm not chosen (issue 30)
    (lambda c: (_with(c, (0, 1), INF), 1, 1.0), "contexts"),
    (lambda c: (c + 0j, 1, 1.0), "complex128"),  # complex contexts: refused, not cast with a warning
    (lambda c: (c[0] + 1j, 1, 1.0), "complex128"),
]
BAD_SELECTS = [
    (lambda c: _with(c, (2, 1), NAN), "contexts"),
    (lambda c: _with(c, (0, 0), INF), "contexts"),
    (lambda c: np.zeros((K, D + 1)), "contexts"),
    (lambda c: np.zeros((K + 1, D)), "contexts"),
    (lambda c: [[0.0] * (D + 1)] * K, "contexts"),
    (lambda c: c + 1j, "complex128"),
    (lambda c: c.astype(object), "object"),
]


@pytest.mark.parametrize("kind", LEARNERS)
@pytest.mark.parametrize(("bad", "name"), BAD_UPDATES)
def test_update_refuses_bad_input_and_leaves_the_learner_unchanged(kind, bad, name):
    learner, twin = LEARNERS[kind](), LEARNERS[kind]()
    c = _warm(learner)
    _warm(twin)
    before = digest(learner)
    rejects(lambda: learner.update(*bad(c)), name)
    assert digest(learner) == before
    # still works, exactly as the twin that never saw the bad call
    for policy in (learner, twin):
        policy.update(c, policy.select(c), 0.5)
    np.testing.assert_array_equal(learner.theta, twin.theta)
    assert digest(learner) == digest(twin)


@pytest.mark.parametrize("kind", LEARNERS)
@pytest.mark.parametrize(("bad", "name"), BAD_SELECTS)
def test_select_refuses_bad_contexts_without_drawing(kind, bad, name):
    learner, twin = LEARNERS[kind](), LEARNERS[kind]()
    c = _warm(learner)
    _warm(twin)
    before = digest(learner)
    message = rejects(lambda: learner.select(bad(c)), name)
    assert "statistics are corrupt" not in message  # the caller's input is blamed, not the learner
    assert digest(learner) == before
    assert learner.select(c) == twin.select(c)
    assert digest(learner) == digest(twin)


def test_huge_contexts_are_named_when_scores_overflow():
    learner = LinUCB(K, D)
    before = digest(learner)
    rejects(lambda: learner.select(np.full((K, D), 1e200)), "contexts")
    assert digest(learner) == before


def test_nan_in_statistics_still_says_the_statistics_are_corrupt():
    learner = LinUCB(K, D)
    learner.stats.theta[0, 0] = NAN
    with pytest.raises(ValueError, match="statistics are corrupt"):
        learner.select(np.ones((K, D)))


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda s: s.update(-1, np.ones(D), 1.0), "model"),
        (lambda s: s.update(2, np.ones(D), 1.0), "model"),
        (lambda s: s.update(0.0, np.ones(D), 1.0), "model"),
        (lambda s: s.update(0, np.array([1.0, NAN, 0.0]), 1.0), "x"),
        (lambda s: s.update(0, np.ones(D + 1), 1.0), "x"),
        (lambda s: s.update(0, np.ones(D), NAN), "reward"),
        (lambda s: s.load(np.full((2, D, D), NAN), np.zeros((2, D))), "A"),
        (lambda s: s.load(np.tile(np.eye(D), (2, 1, 1)), np.full((2, D), INF)), "b"),
        (lambda s: s.load(np.tile(np.triu(np.ones((D, D))) + np.eye(D), (2, 1, 1)), np.zeros((2, D))), "A[0]"),
        (lambda s: s.load(np.tile(-np.eye(D), (2, 1, 1)), np.zeros((2, D))), "A[0]"),
        (lambda s: s.load(np.zeros((2, D)), np.zeros((2, D))), "A"),
    ],
)
def test_ridge_statistics_refuse_bad_input_unchanged(call, name):
    stats = RidgeStatistics(2, D)
    stats.update(1, np.ones(D) / 2, 1.0)
    before = digest(stats)
    rejects(lambda: call(stats), name)
    assert digest(stats) == before
    stats.update(0, np.ones(D) / 2, 1.0)
    assert stats.n_updates.tolist() == [1, 1]


def test_uniform_random_checks_its_update():
    policy = UniformRandom(K, rng=0)
    before = digest(policy)
    rejects(lambda: policy.update(None, K, 1.0), "arm")
    rejects(lambda: policy.update(None, 0, NAN), "reward")
    assert digest(policy) == before


@pytest.mark.parametrize("rule", list(TieBreak))
@pytest.mark.parametrize("scores", [[0.0, INF, 1.0], [NAN, 0.0]])
def test_break_ties_never_picks_from_non_finite_scores(rule, scores):
    with pytest.raises(ValueError, match="NaN|inf"):
        break_ties(np.array(scores), rule, np.random.default_rng(0))


# -- batched agents (P2B's population) -------------------------------------------------------------
def _agents():
    return BatchedLinUCB(DisjointModel.cold(K, D), 2, rng=0, tie_break="random")


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda a: a.update(np.ones((2, D)), np.array([0, 1]), np.array([NAN, 1.0])), "rewards"),
        (lambda a: a.update(np.full((2, D), NAN), np.array([0, 1]), np.ones(2)), "x"),
        (lambda a: a.update(np.ones((2, D)), np.array([0, K]), np.ones(2)), "arms"),
        (lambda a: a.update(np.ones((2, D)), np.array([0.0, 1.0]), np.ones(2)), "arms"),
        (lambda a: a.select(np.full((2, D), INF)), "x"),
        (lambda a: a.run(np.full((2, 3, D), NAN), np.zeros((2, 3, K))), "contexts"),
        (lambda a: a.run(np.zeros((2, 3, D + 1)), np.zeros((2, 3, K))), "contexts"),
    ],
)
def test_batched_agents_refuse_bad_input_unchanged(call, name):
    agents = _agents()
    agents.update(np.ones((2, D)) / 2, np.array([0, 1]), np.ones(2))
    before = digest(agents)
    with pytest.raises(ValueError, match=re.escape(name)):
        call(agents)
    assert digest(agents) == before
    agents.update(np.ones((2, D)) / 2, agents.select(np.ones((2, D)) / 2), np.ones(2))


@pytest.mark.parametrize(
    ("make", "name"),
    [
        (lambda: BatchedLinUCB(DisjointModel.cold(K, D), 2.5), "n_users"),
        (lambda: BatchedLinUCB(DisjointModel.cold(K, D), 2, alpha=NAN), "alpha"),
        (lambda: BatchedLinUCB(DisjointModel.cold(K, D), 2, refresh_every=0.5), "refresh_every"),
        (lambda: BatchedCodeLinUCB(CodeModel.cold(K, 5), 2, tie_tolerance=INF), "tie_tolerance"),
        (
            lambda: (
                DisjointModel(np.tile(-np.eye(D), (K, 1, 1)), np.zeros((K, D)))
                and BatchedLinUCB(DisjointModel(np.tile(-np.eye(D), (K, 1, 1)), np.zeros((K, D))), 1)
            ),
            "model.A[0]",
        ),
        (
            lambda: run_population(DisjointModel.cold(K, D), np.zeros((2, 3, D)), np.zeros((2, 3, K)), alpha=-1.0),
            "alpha",
        ),
    ],
)
def test_batched_constructors_refuse_bad_parameters(make, name):
    rejects(make, name, ValueError)


def test_call_order_error_is_a_runtime_error():
    assert issubclass(CallOrderError, RuntimeError)
