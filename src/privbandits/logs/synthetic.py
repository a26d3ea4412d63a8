"""Synthetic logged feedback with known ground truth, for checking off-policy estimators.

A fixed problem (drawn once from ``problem_seed``): action features ``e_a`` (``n_actions × action_dim``)
and a reward matrix ``W`` (``dim × action_dim``), so the expected reward of action ``a`` in context ``x``
is ``q(x, a) = xᵀ W e_a`` (``reward_type="linear"``, observed with Gaussian noise of scale ``noise``) or
``σ(xᵀ W e_a)`` (``"logistic"``, a Bernoulli reward). The logging policy scores the actions with its own
fixed ``W_b = W + N(0, policy_noise²)`` (informed but imperfect) and plays the ``"softmax"`` of
``beta · xᵀ W_b e_a`` or is ``"epsilon_greedy"`` on it. A draw (from ``seed``) samples contexts
``x ~ N(0, I)``, actions from ``pi_b`` and rewards; it stores ``expected_reward`` and ``pi_b``, so
:meth:`~privbandits.logs.LoggedFeedback.policy_value` gives any policy's true value on the draw.
Draws with the same ``problem_seed`` and different ``seed`` are repeats of one problem.
"""

from __future__ import annotations

import numpy as np

from privbandits.logs.feedback import LoggedFeedback
from privbandits.validation import Choice, Integer, Real, validate

REWARD_TYPES = ("linear", "logistic")
POLICIES = ("softmax", "epsilon_greedy")


def _softmax(scores: np.ndarray) -> np.ndarray:
    shifted = np.exp(scores - scores.max(axis=1, keepdims=True))
    return shifted / shifted.sum(axis=1, keepdims=True)


def _epsilon_greedy(scores: np.ndarray, epsilon: float) -> np.ndarray:
    n, k = scores.shape
    pi = np.full((n, k), epsilon / k)
    pi[np.arange(n), scores.argmax(axis=1)] += 1.0 - epsilon
    return pi


def _sample(pi: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One action per row of ``pi`` by inverting its cumulative distribution."""
    cdf = np.cumsum(pi, axis=1)
    chosen = (rng.random((pi.shape[0], 1)) >= cdf).sum(axis=1)
    return np.minimum(chosen, pi.shape[1] - 1)  # a row summing to 1 - 1e-16 never yields n_actions


def synthetic_feedback(
    n_rounds: int,
    n_actions: int = 5,
    dim: int = 4,
    *,
    action_dim: int = 3,
    reward_type: str = "linear",
    noise: float = 0.1,
    policy: str = "softmax",
    beta: float = 1.0,
    epsilon: float = 0.1,
    policy_noise: float = 0.5,
    seed: int = 0,
    problem_seed: int = 0,
) -> LoggedFeedback:
    """A seeded log of ``n_rounds`` rounds with its ground truth (``expected_reward``, ``pi_b``).

    ``beta`` is the softmax's inverse temperature, ``epsilon`` the ε-greedy exploration rate;
    ``event_id`` is ``"<seed>-<round>"``.
    """
    args = validate(
        "synthetic_feedback",
        {
            "n_rounds": Integer(low=1), "n_actions": Integer(low=1), "dim": Integer(low=1),
            "action_dim": Integer(low=1), "reward_type": Choice(REWARD_TYPES), "noise": Real(low=0),
            "policy": Choice(POLICIES), "beta": Real(low=0), "epsilon": Real(low=0, high=1),
            "policy_noise": Real(low=0), "seed": Integer(low=0), "problem_seed": Integer(low=0),
        },
        locals(),
    )  # fmt: skip
    problem = np.random.default_rng(args["problem_seed"])
    action_context = problem.normal(size=(n_actions, action_dim))
    weights = problem.normal(size=(dim, action_dim)) / np.sqrt(dim * action_dim)
    logging_weights = weights + problem.normal(scale=policy_noise, size=weights.shape) / np.sqrt(dim * action_dim)

    rng = np.random.default_rng(args["seed"])
    context = rng.normal(size=(n_rounds, dim))
    scores = context @ weights @ action_context.T
    expected = scores if reward_type == "linear" else 1.0 / (1.0 + np.exp(-scores))
    logging_scores = context @ logging_weights @ action_context.T
    if policy == "softmax":
        pi_b = _softmax(beta * logging_scores)
    else:
        pi_b = _epsilon_greedy(logging_scores, epsilon)
    action = _sample(pi_b, rng)
    taken = expected[np.arange(n_rounds), action]
    if reward_type == "linear":
        reward = taken + noise * rng.normal(size=n_rounds)
    else:
        reward = (rng.random(n_rounds) < taken).astype(np.float64)
    return LoggedFeedback(
        n_rounds=n_rounds,
        n_actions=n_actions,
        context=context,
        action=action,
        reward=reward,
        pscore=pi_b[np.arange(n_rounds), action],
        action_context=action_context,
        expected_reward=expected,
        pi_b=pi_b,
        event_id=tuple(f"{seed}-{t}" for t in range(n_rounds)),
    )
