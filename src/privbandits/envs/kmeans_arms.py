"""The MPC paper's variable-arm setting: arms are k-means clusters (spec ``mpc-bandit.md`` §6.2).

K-means (Lloyd, initialised at K random data points, at most 100 iterations)
clusters the preprocessed contexts; arm a pays 1 with probability
ν_a(x) = exp(−‖x − c_a‖² / (2σ)), unnormalised as in the reference code, with
σ = 1/2 in the paper. Rounds sweep over the examples in random order.
"""

from __future__ import annotations

import numpy as np
from sklearn.cluster import KMeans

from privbandits.envs.base import BanditRound, ContextKind, Environment, real_matrix

PAPER_BANDWIDTH = 0.5
"""σ of the paper's experiments (the reference code's default is 1.0, spec A12)."""


def kmeans_centres(features: np.ndarray, n_clusters: int, seed: int = 0) -> np.ndarray:
    """Lloyd's k-means centres ``(n_clusters, d)`` from random data points, ≤ 100 iterations."""
    if not 2 <= n_clusters <= len(features):
        raise ValueError(f"n_clusters must be in [2, {len(features)}], got {n_clusters}")
    model = KMeans(n_clusters, init="random", n_init=1, max_iter=100, algorithm="lloyd", random_state=seed)
    return model.fit(features).cluster_centers_


class KMeansArmsBandit(Environment):
    """Bernoulli rewards ν_a(x) = exp(−‖x − c_a‖²/(2σ)) around cluster centres ``centres`` (K, d)."""

    context_kind = ContextKind.SHARED

    def __init__(self, features: np.ndarray, centres: np.ndarray, bandwidth: float = PAPER_BANDWIDTH) -> None:
        owner = "KMeansArmsBandit"
        features, centres = real_matrix(features, "features", owner), real_matrix(centres, "centres", owner)
        if features.shape[1] != centres.shape[1]:
            raise ValueError(f"features {features.shape} and centres {centres.shape} must be (n, d) and (K, d)")
        if not bandwidth > 0:
            raise ValueError(f"bandwidth must be > 0, got {bandwidth}")
        self.features, self.centres, self.bandwidth = features, centres, float(bandwidth)
        self.n_arms, self.dim = centres.shape
        self._rng: np.random.Generator | None = None

    def reset(self, rng: np.random.Generator) -> None:
        self._rng = self._checked_rng(rng)
        self._queue = np.empty(0, dtype=np.int64)

    def next_round(self) -> BanditRound:
        if self._rng is None:
            raise RuntimeError("call reset(rng) before next_round()")
        if self._queue.size == 0:
            self._queue = self._rng.permutation(len(self.features))
        index, self._queue = int(self._queue[0]), self._queue[1:]
        x = self.features[index]
        self._means = np.exp(-((x - self.centres) ** 2).sum(axis=1) / (2 * self.bandwidth))
        self._threshold = self._rng.random()  # one uniform per round: r_a = 1{ν_a > U} (reference code)
        self._in_round = True
        return BanditRound(x, self._means)

    def reward(self, arm: int) -> float:
        arm = self._checked_arm(arm)
        return float(self._means[arm] > self._threshold)
