"""Classification → bandit: arms are labels, reward 1 when the pulled arm is a true label.

The standard conversion (e.g. Dudík et al. 2011) used by the P2B paper's
multi-label experiments and the MPC paper's MNIST experiment. Each round shows
one example's features as a shared context; the expected reward of an arm is 1
if the arm is one of the example's labels and 0 otherwise, so the reward is
deterministic given the example.
"""

from __future__ import annotations

from enum import StrEnum

import numpy as np

from privbandits.envs.base import BanditRound, ContextKind, Environment, real_matrix


class ExampleOrder(StrEnum):
    """How rounds walk through the data set.

    SHUFFLE
        passes over a fresh random permutation, one example per round.
    SAMPLE
        an example drawn uniformly with replacement each round.
    """

    SHUFFLE = "shuffle"
    SAMPLE = "sample"


class ClassificationBandit(Environment):
    """Contextual bandit built from a labelled data set.

    Parameters
    ----------
    features : ndarray of shape (n_examples, dim)
    labels : ndarray of shape (n_examples,) or (n_examples, n_arms)
        Class indices (single-label) or a 0/1 indicator matrix (multi-label).
    order : {"shuffle", "sample"}
    """

    context_kind = ContextKind.SHARED

    def __init__(
        self,
        features: np.ndarray,
        labels: np.ndarray,
        order: ExampleOrder | str = ExampleOrder.SHUFFLE,
    ) -> None:
        features = real_matrix(features, "features", "ClassificationBandit")
        labels = np.asarray(labels)
        if labels.shape[0] != features.shape[0]:
            raise ValueError(f"features have {features.shape[0]} rows but labels have {labels.shape[0]}")
        if labels.ndim == 1:
            if labels.min() < 0 or not np.issubdtype(labels.dtype, np.integer):
                raise ValueError("single-label labels must be non-negative integers")
            indicator = np.zeros((labels.size, int(labels.max()) + 1))
            indicator[np.arange(labels.size), labels] = 1.0
        elif labels.ndim == 2 and np.isin(labels, (0, 1)).all():
            indicator = labels.astype(np.float64)
        else:
            raise ValueError("labels must be class indices (1-D) or a 0/1 indicator matrix (2-D)")
        self.features, self.indicator = features, indicator
        self.n_examples, self.dim = features.shape
        self.n_arms = indicator.shape[1]
        self.order = ExampleOrder(order)
        self._rng: np.random.Generator | None = None

    def reset(self, rng: np.random.Generator) -> None:
        self._rng = self._checked_rng(rng)
        self._queue = np.empty(0, dtype=np.int64)
        self._current = -1

    def _next_index(self, rng: np.random.Generator) -> int:
        if self.order is ExampleOrder.SAMPLE:
            return int(rng.integers(self.n_examples))
        if self._queue.size == 0:
            self._queue = rng.permutation(self.n_examples)
        index, self._queue = int(self._queue[0]), self._queue[1:]
        return index

    def next_round(self) -> BanditRound:
        if self._rng is None:
            raise RuntimeError("call reset(rng) before next_round()")
        self._current = self._next_index(self._rng)
        self._in_round = True
        return BanditRound(self.features[self._current], self.indicator[self._current])

    def reward(self, arm: int) -> float:
        arm = self._checked_arm(arm)
        return float(self.indicator[self._current, arm])
