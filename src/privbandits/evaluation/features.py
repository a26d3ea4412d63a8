"""A DP LinUCB learner (one θ over per-arm contexts) as a policy on a log, whose rounds hold one context each.

The DP LinUCB baselines (:class:`~privbandits.protocols.dp.base.PrivateLinUCB`: joint, local and shuffle DP) score
each arm's own context with one shared θ. :class:`PerArmPolicy` gives them the per-arm context

    φ(x, a) = [c_a, vec(c_a[S] ⊗ x)],

the action's features ``c_a`` (the log's ``action_context``; the one-hot ``e_a`` when it has none) followed by their
products with the round's context over the descriptor columns ``S`` (all unless given). With ``c_a = e_a`` this is
the disjoint layout plus an intercept per arm; on the Open Bandit Dataset sample, ``S`` = the last seven columns
(``item_feature_3``'s categories) gives the per-arm contexts the vertical OBD experiments use
(:func:`~privbandits.datasets.obd.vertical_obd_contexts`, d = 41 + 7 · 23 = 202). A shared θ on the action features
alone could never personalise: a block that is the same for every arm cannot change which arm wins.

Trained with :func:`~privbandits.evaluation.policies.train_on_log` and evaluated by
:func:`~privbandits.evaluation.policies.policy_probabilities` (one-hot on the argmax of its UCB scores on the released
statistics, ties by its rule), like the plaintext learners.
"""

from __future__ import annotations

import numpy as np

from privbandits.linear.tiebreak import TieBreak
from privbandits.protocols.dp.base import PrivateLinUCB
from privbandits.validation import InvalidInputError, describe

__all__ = ["PerArmPolicy", "per_arm_dim"]

CHUNK_ROUNDS = 1024
"""Rounds scored at once."""


def _descriptor(value: object, width: int) -> np.ndarray:
    """The descriptor columns as indices: None (all), a ``slice`` or a sequence of column indices."""
    columns = np.arange(width)
    if value is None:
        return columns
    try:
        chosen = columns[value] if isinstance(value, slice) else columns[[int(v) for v in value]]  # type: ignore[attr-defined]
    except (TypeError, ValueError, IndexError):
        raise InvalidInputError(
            f"descriptor must be None, a slice or column indices of action_context (width {width}), got "
            f"{describe(value)}"
        ) from None
    if chosen.size == 0:
        raise InvalidInputError(f"descriptor must select some of action_context's {width} columns, got {value!r}")
    return np.asarray(chosen)


def per_arm_dim(action_context: np.ndarray, context_dim: int, descriptor: object = None) -> int:
    """The width of φ(x, a): ``d_a + |S| · d``."""
    return action_context.shape[1] + _descriptor(descriptor, action_context.shape[1]).size * context_dim


class PerArmPolicy:
    """A :class:`~privbandits.protocols.dp.base.PrivateLinUCB` that plays on a log's contexts through φ(x, a).

    Parameters
    ----------
    learner : PrivateLinUCB
        Built with ``n_arms`` = the log's actions and ``dim`` = :func:`per_arm_dim`.
    action_context : ndarray of shape (n_actions, d_a) or None
        The actions' features (None: the identity, one-hot actions).
    descriptor : slice, sequence of int or None
        The columns of ``action_context`` multiplied with the context (None: all).
    """

    def __init__(self, learner: PrivateLinUCB, action_context: np.ndarray | None, descriptor: object = None):
        if not isinstance(learner, PrivateLinUCB):
            raise InvalidInputError(f"PerArmPolicy: learner must be a PrivateLinUCB, got {type(learner).__name__}")
        features = np.eye(learner.n_arms) if action_context is None else np.asarray(action_context, dtype=np.float64)
        if features.ndim != 2 or features.shape[0] != learner.n_arms:
            raise InvalidInputError(
                f"PerArmPolicy: action_context must have one row per arm ({learner.n_arms}), got shape "
                f"{features.shape}"
            )
        self.learner, self.action_context = learner, features
        self.descriptor = _descriptor(descriptor, features.shape[1])
        interaction = learner.dim - features.shape[1]
        if interaction <= 0 or interaction % self.descriptor.size:
            raise InvalidInputError(
                f"PerArmPolicy: learner.dim must be d_a + |S|·d = {features.shape[1]} + {self.descriptor.size}·d, "
                f"got {learner.dim}"
            )
        self.context_dim = interaction // self.descriptor.size

    @property
    def n_arms(self) -> int:
        return self.learner.n_arms

    @property
    def tie_break(self) -> TieBreak:
        return TieBreak(self.learner.tie_break)

    @property
    def tie_tolerance(self) -> float:
        return float(self.learner.tie_tolerance)

    def contexts(self, x: np.ndarray) -> np.ndarray:
        """φ(x, a) for every arm a: shape ``(n_arms, dim)``."""
        return self.batch(np.asarray(x, dtype=np.float64)[None])[0]

    def batch(self, context: np.ndarray) -> np.ndarray:
        """φ(x_t, a) for every round and arm: shape ``(rounds, n_arms, dim)``."""
        rounds, arms = context.shape[0], self.n_arms
        described = self.action_context[:, self.descriptor]
        interaction = (described[None, :, :, None] * context[:, None, None, :]).reshape(rounds, arms, -1)
        items = np.broadcast_to(self.action_context, (rounds, *self.action_context.shape))
        return np.concatenate([items, interaction], axis=2)

    def select(self, x: np.ndarray) -> int:
        return self.learner.select(self.contexts(x))

    def update(self, x: np.ndarray, arm: int, reward: float) -> None:
        self.learner.update(self.contexts(x), arm, reward)

    def scores(self, context: np.ndarray) -> np.ndarray:
        """The learner's UCB score ``φᵀθ̃ + α‖φ‖_{Ã⁻¹}`` of every arm at every round, shape ``(rounds, n_arms)``.

        Computed through φ's blocks, never φ itself: with ``s_a = c_a[S]``, ``φᵀθ = c_aᵀθ_c + s_aᵀ Θ x`` and
        ``φᵀ Ã⁻¹ φ = c_aᵀ P c_a + 2 c_aᵀ Q (s_a ⊗ x) + (s_a ⊗ x)ᵀ R (s_a ⊗ x)`` for the blocks P, Q, R of Ã⁻¹: per
        round ``|S|² d²`` operations instead of ``K (d_a + |S| d)²``."""
        learner, items = self.learner, self.action_context
        d_a, s, d = items.shape[1], self.descriptor.size, self.context_dim
        described = items[:, self.descriptor]
        theta, inverse = learner.theta, learner.A_inv
        p_block = np.einsum("ka,ab,kb->k", items, inverse[:d_a, :d_a], items)
        q_block = inverse[:d_a, d_a:].reshape(d_a, s, d)
        r_block = inverse[d_a:, d_a:].reshape(s, d, s, d)
        out = np.empty((context.shape[0], self.n_arms))
        for start in range(0, context.shape[0], CHUNK_ROUNDS):
            x = context[start : start + CHUNK_ROUNDS]
            mean = items @ theta[:d_a] + (x @ theta[d_a:].reshape(s, d).T) @ described.T
            cross = 2.0 * np.einsum("ka,nas,ks->nk", items, np.einsum("asp,np->nas", q_block, x), described)
            quadratic = np.einsum("ipjq,np,nq->nij", r_block, x, x, optimize=True)
            square = np.einsum("ki,nij,kj->nk", described, quadratic, described)
            width = np.maximum(p_block + cross + square, 0.0)
            out[start : start + CHUNK_ROUNDS] = mean + learner.alpha * np.sqrt(width)
        return out
