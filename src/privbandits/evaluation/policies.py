"""A privbandits policy as the target of off-policy evaluation: its action probabilities on a log's contexts.

"The policy" here is a **fixed** one: the learner as it stands (given, or trained on a log first with
:func:`train_on_log`), frozen, and asked at every logged round what it would play. It is not a learner that keeps
learning online while it is evaluated (that would be a different estimand: replay, Li et al. 2011). Nothing in the
learner changes, its random generator included.

``policy_probabilities(learner, feedback)`` gives ``pi_e[t, a]``, the probability that the frozen learner plays
``a`` on the context ``x_t``:

* :class:`~privbandits.linear.policies.UniformRandom`: ``1/K``;
* :class:`~privbandits.linear.policies.EpsilonGreedy`: its propensities, ``1 − ε`` on the greedy arm plus ``ε/K``
  on every arm (the greedy arm by its tie-break rule: ``"lowest"`` the lowest tied index, ``"random"`` the
  ``1 − ε`` split evenly among the tied arms: exactly what its random tie-break does);
* :class:`~privbandits.linear.policies.LinUCB`: one-hot on the argmax of its UCB scores under its tie-break rule
  (``"random"``: uniform over the tied arms);
* :class:`~privbandits.linear.policies.LinTS`: a Monte-Carlo estimate, the share of ``n_samples`` posterior draws
  ``μ ~ N(θ̂, v² A⁻¹)`` (from a generator seeded by ``seed``, not the learner's) under which each arm scores
  highest; the draws are shared by all rounds. It is an estimate: its error per entry is at most
  ``1/(2√n_samples)`` in standard deviation.

* :class:`~privbandits.evaluation.features.PerArmPolicy` (a DP LinUCB learner on per-arm contexts φ(x, a)):
  one-hot on the argmax of its UCB scores on the statistics it released, under its tie-break rule.

Of the plaintext learners only the ``disjoint`` layout is evaluated: a log holds one context per round, which the
``shared`` layout (a context row per arm) cannot use; the DP learners, shared by design, go through
:class:`~privbandits.evaluation.features.PerArmPolicy`.
"""

from __future__ import annotations

import numpy as np

from privbandits.evaluation.checks import check_log
from privbandits.evaluation.features import PerArmPolicy
from privbandits.linear.policies import (
    EpsilonGreedy,
    Layout,
    LinearBandit,
    LinTS,
    LinUCB,
    UniformRandom,
    covariance_root,
)
from privbandits.linear.tiebreak import TieBreak
from privbandits.logs.feedback import LoggedFeedback
from privbandits.validation import Integer, InvalidInputError, validate

LEARNERS = (LinUCB, LinTS, EpsilonGreedy, UniformRandom, PerArmPolicy)
Learner = LinUCB | LinTS | EpsilonGreedy | UniformRandom | PerArmPolicy


def _check_learner(learner: object, feedback: LoggedFeedback, name: str) -> None:
    if not isinstance(learner, LEARNERS):
        allowed = ", ".join(kind.__name__ for kind in LEARNERS)
        raise InvalidInputError(f"{name}: learner must be one of {allowed}, got {type(learner).__name__}")
    if learner.n_arms != feedback.n_actions:
        raise InvalidInputError(
            f"{name}: learner.n_arms must equal the log's n_actions ({feedback.n_actions}), got {learner.n_arms}"
        )
    if isinstance(learner, PerArmPolicy) and learner.context_dim != feedback.dim:
        raise InvalidInputError(
            f"{name}: the learner's per-arm contexts need a context of width {learner.context_dim}, the log's is "
            f"{feedback.dim}"
        )
    if isinstance(learner, LinearBandit):
        if learner.layout is not Layout.DISJOINT:
            raise InvalidInputError(
                f"{name}: learner.layout must be 'disjoint' (a log has one context per round), got '{learner.layout}'"
            )
        if learner.dim != feedback.dim:
            raise InvalidInputError(
                f"{name}: learner.dim must equal the log's context width ({feedback.dim}), got {learner.dim}"
            )


def _argmax_probabilities(scores: np.ndarray, rule: TieBreak, tolerance: float) -> np.ndarray:
    """One-hot on the best arm of each row (ties within ``tolerance`` as in
    :func:`~privbandits.linear.tiebreak.tied_arms`): the lowest tied arm, or uniform over the tied arms."""
    best = scores.max(axis=1, keepdims=True)
    tied = scores >= best - tolerance * np.maximum(1.0, np.abs(best))
    if rule is TieBreak.LOWEST:
        probabilities = np.zeros_like(scores)
        probabilities[np.arange(scores.shape[0]), tied.argmax(axis=1)] = 1.0
        return probabilities
    return tied / tied.sum(axis=1, keepdims=True)


def _ucb_scores(learner: LinUCB, context: np.ndarray) -> np.ndarray:
    """``x_tᵀ θ̂_a + α √(x_tᵀ A_a⁻¹ x_t)`` for every round and arm."""
    stats = learner.stats
    widths = np.stack([np.einsum("nd,de,ne->n", context, stats.A_inv[a], context) for a in range(learner.n_arms)])
    return context @ stats.theta.T + learner.alpha * np.sqrt(np.maximum(widths.T, 0.0))


def _thompson_probabilities(learner: LinTS, context: np.ndarray, n_samples: int, seed: int) -> np.ndarray:
    stats = learner.stats
    root = covariance_root(stats.A_inv, learner.sampler)
    rng = np.random.default_rng(seed)
    counts = np.zeros((context.shape[0], learner.n_arms))
    rows = np.arange(context.shape[0])
    for _ in range(n_samples):
        mu = stats.theta + learner.v * (root @ rng.standard_normal((stats.n_models, stats.dim, 1)))[..., 0]
        counts[rows, (context @ mu.T).argmax(axis=1)] += 1.0
    return counts / n_samples


def policy_probabilities(
    learner: Learner,
    feedback: LoggedFeedback,
    *,
    n_samples: int = 1000,
    seed: int = 0,
) -> np.ndarray:
    """``pi_e`` of shape ``(n_rounds, n_actions)``: the frozen ``learner``'s probability of each action at each
    logged context (see the module docstring; ``n_samples`` and ``seed`` are LinTS's Monte Carlo)."""
    feedback = check_log(feedback, "policy_probabilities")
    validate("policy_probabilities", {"n_samples": Integer(low=1), "seed": Integer(low=0)}, locals())
    _check_learner(learner, feedback, "policy_probabilities")
    n, k = feedback.n_rounds, feedback.n_actions
    if isinstance(learner, UniformRandom):
        return np.full((n, k), 1.0 / k)
    context = feedback.context
    if isinstance(learner, LinTS):
        return _thompson_probabilities(learner, context, n_samples, seed)
    if isinstance(learner, PerArmPolicy):
        return _argmax_probabilities(learner.scores(context), learner.tie_break, learner.tie_tolerance)
    if isinstance(learner, LinUCB):
        return _argmax_probabilities(_ucb_scores(learner, context), learner.tie_break, learner.tie_tolerance)
    greedy = _argmax_probabilities(context @ learner.stats.theta.T, learner.tie_break, learner.tie_tolerance)
    return (1.0 - learner.epsilon) * greedy + learner.epsilon / k


def train_on_log(learner: Learner, feedback: LoggedFeedback, *, replay: bool = True) -> None:
    """Train ``learner`` in place on a log, round by round: with ``replay`` (Li et al. 2011) only on the rounds
    where its own choice equals the logged action (unbiased for a uniformly random logging policy), else on every
    logged ``(x_t, a_t, r_t)``. Evaluate it afterwards on other rounds (``feedback.take``): the same rounds would
    bias the estimate."""
    feedback = check_log(feedback, "train_on_log")
    _check_learner(learner, feedback, "train_on_log")
    for t in range(feedback.n_rounds):
        x, a = feedback.context[t], int(feedback.action[t])
        if not replay or learner.select(x) == a:
            learner.update(x, a, float(feedback.reward[t]))
