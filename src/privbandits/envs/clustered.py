"""Clustered-user linear bandits: FCLUB's synthetic settings (spec ``fclub.md`` §6.2, §8 A18).

``n`` users share ``m`` preference vectors (the true clusters); each round a user
arrives uniformly at random and ``K`` fresh items are offered. Two constructions:

``paper``
    The paper-literal setting: θ_1..θ_m are the first m rows of a random orthonormal
    d×d matrix (‖θ‖ = 1, pairwise gap √2); items uniform on the unit sphere; reward
    ``y = θᵀx + N(0, noise_std²)``.
``reference``
    The reference code's construction: θ and items are ``[ĝ/√2, 1/√2]`` with ĝ a
    uniform unit vector in R^{d−1}, so ``θᵀx ∈ [0, 1]``; ``y ~ Bernoulli(θᵀx)``.

Users are assigned to clusters (and, for the federated protocols, to servers) in
contiguous blocks of user index as the reference code does, or at random.
"""

from __future__ import annotations

from enum import StrEnum

import numpy as np

from privbandits.envs.base import BanditRound, ContextKind, Environment, real_matrix
from privbandits.envs.synthetic import normalised_gaussian
from privbandits.validation import Integer, Real, validate

_CHUNK_ROUNDS = 256


class Construction(StrEnum):
    """How θ's, items and rewards are generated (see module docstring)."""

    PAPER = "paper"
    REFERENCE = "reference"


class Assignment(StrEnum):
    """How users are split into groups: contiguous index blocks, or a random permutation of them."""

    BLOCKS = "blocks"
    RANDOM = "random"


def assign_groups(n: int, groups: int, how: Assignment | str = Assignment.BLOCKS, rng=None, *, remainder_last=False):
    """Group index of each of ``n`` users, shape ``(n,)``.

    Blocks: ``[g·n/groups, (g+1)·n/groups)`` per group (clusters, §6.2), or, with
    ``remainder_last``, ``⌊n/groups⌋`` users per group and the remainder in the
    last one (servers, §6.2). Random: the same sizes over a random permutation.
    """
    if not 1 <= groups <= n:
        raise ValueError(f"need 1 <= groups <= n users, got groups={groups}, n={n}")
    users = np.arange(n)
    labels = np.minimum(users // (n // groups), groups - 1) if remainder_last else users * groups // n
    if Assignment(how) is Assignment.RANDOM:
        if rng is None:
            raise ValueError("random assignment needs a random generator")
        labels = labels[rng.permutation(n)]
    return labels.astype(np.int64)


class ClusteredLinearBandit(Environment):
    """Users in ``n_clusters`` true clusters; a uniformly random user arrives each round.

    Parameters
    ----------
    n_users, n_clusters, dim, n_arms : int
        n, m, d and K (paper defaults 40, 4, 10, 10).
    construction : {"paper", "reference"}
        See the module docstring.
    noise_std : float
        Reward noise of the paper construction (ignored by "reference", which is Bernoulli).
    assignment : {"blocks", "random"}
        User→cluster assignment.

    Attributes
    ----------
    thetas : ndarray (n_clusters, dim)
    cluster_of : ndarray (n_users,)
    user : int
        The user of the current round (set by :meth:`next_round`).
    """

    context_kind = ContextKind.PER_ARM

    def __init__(
        self,
        n_users: int = 40,
        n_clusters: int = 4,
        dim: int = 10,
        n_arms: int = 10,
        *,
        construction: Construction | str = Construction.PAPER,
        noise_std: float = 0.1,
        assignment: Assignment | str = Assignment.BLOCKS,
    ) -> None:
        validate(
            "ClusteredLinearBandit",
            {"n_users": Integer(low=1), "n_clusters": Integer(low=1), "dim": Integer(low=2), "n_arms": Integer(low=1),
             "noise_std": Real(low=0)},
            {"n_users": n_users, "n_clusters": n_clusters, "dim": dim, "n_arms": n_arms, "noise_std": noise_std},
        )  # fmt: skip
        self.construction = Construction(construction)
        if dim < 2 or n_arms < 1:
            raise ValueError(f"need dim >= 2 and n_arms >= 1, got dim={dim}, n_arms={n_arms}")
        if not 1 <= n_clusters <= n_users:
            raise ValueError(f"need 1 <= n_clusters <= n_users, got {n_clusters} and {n_users}")
        if self.construction is Construction.PAPER and n_clusters > dim:
            raise ValueError(f"paper construction: n_clusters must be <= dim (orthonormal θ), got {n_clusters} > {dim}")
        if not noise_std >= 0:
            raise ValueError(f"noise_std must be >= 0, got {noise_std}")
        self.n_users, self.n_clusters, self.dim, self.n_arms = n_users, n_clusters, dim, n_arms
        self.noise_std = float(noise_std)
        self.assignment = Assignment(assignment)
        self.thetas: np.ndarray | None = None
        self.user = -1

    def _vectors(self, shape: tuple[int, ...]) -> np.ndarray:
        if self.construction is Construction.PAPER:
            return normalised_gaussian(self._rng, (*shape, self.dim), 1.0)
        head = normalised_gaussian(self._rng, (*shape, self.dim - 1), 1.0)
        return np.concatenate([head, np.ones((*shape, 1))], axis=-1) / np.sqrt(2.0)

    def reset(self, rng: np.random.Generator) -> None:
        self._rng = self._checked_rng(rng)
        if self.construction is Construction.PAPER:
            basis, _ = np.linalg.qr(rng.standard_normal((self.dim, self.dim)))
            self.thetas = np.ascontiguousarray(basis.T[: self.n_clusters])
        else:
            self.thetas = self._vectors((self.n_clusters,))
        self.cluster_of = assign_groups(self.n_users, self.n_clusters, self.assignment, rng)
        self.user_thetas = self.thetas[self.cluster_of]
        self._pos = _CHUNK_ROUNDS

    def _refill(self) -> None:
        rng = self._rng
        self._users = rng.integers(self.n_users, size=_CHUNK_ROUNDS)
        self._contexts = self._vectors((_CHUNK_ROUNDS, self.n_arms))
        self._expected = np.einsum("tkd,td->tk", self._contexts, self.user_thetas[self._users])
        self._uniform = rng.random(_CHUNK_ROUNDS)
        self._noise = rng.normal(0.0, self.noise_std, size=_CHUNK_ROUNDS)
        self._pos = 0

    def next_round(self) -> BanditRound:
        if self.thetas is None:
            raise RuntimeError("call reset(rng) before next_round()")
        if self._pos == _CHUNK_ROUNDS:
            self._refill()
        i = self._pos
        self._pos += 1
        self.user = int(self._users[i])
        self._in_round = True
        return BanditRound(self._contexts[i], self._expected[i])

    def reward(self, arm: int) -> float:
        arm = self._checked_arm(arm)
        i = self._pos - 1
        mean = self._expected[i, arm]
        if self.construction is Construction.PAPER:
            return float(mean + self._noise[i])
        return float(self._uniform[i] < mean) if 0.0 <= mean <= 1.0 else 0.0

    def rewards(self) -> np.ndarray:
        """Every arm's reward this round: ``rewards()[arm] == reward(arm)`` (one draw per round, shared by the arms),
        for a player that learns the arm later, after drawing further rounds (a deployment's pipelined users)."""
        i = self._pos - 1
        if self.construction is Construction.PAPER:
            return self._expected[i] + self._noise[i]
        mean = self._expected[i]
        return np.where((mean >= 0.0) & (mean <= 1.0), (self._uniform[i] < mean).astype(float), 0.0)

    def describe(self) -> str:
        return (
            f"ClusteredLinearBandit({self.construction}, n={self.n_users}, m={self.n_clusters}, "
            f"d={self.dim}, K={self.n_arms})"
        )


class PooledUsersBandit(ClusteredLinearBandit):
    """Users drawn from a pool of preference vectors (the MovieLens-style setting, spec §6.2, §8 A19).

    At every :meth:`reset` ``n_users`` rows of ``pool`` are sampled uniformly
    without replacement (or, with ``draw=False``, its first ``n_users`` rows are the
    users, as in the reference code); users with equal vectors form the true clusters
    (``n_clusters`` is set then). Items and rewards are the reference
    construction's (``[ĝ/√2, 1/√2]`` items, Bernoulli rewards), as the paper's
    "item vectors generated randomly".

    Parameters
    ----------
    pool : ndarray (N, dim)
        Per-user preference vectors, e.g. :func:`~privbandits.datasets.movielens.preference_vectors`.
    n_users, n_arms : int
    draw : bool
        Sample the users per reset (default) or take the pool's first rows.
    """

    def __init__(self, pool: np.ndarray, n_users: int = 40, n_arms: int = 10, *, draw: bool = True) -> None:
        pool = real_matrix(pool, "pool", "PooledUsersBandit")
        if not 1 <= n_users <= len(pool):
            raise ValueError(f"pool must be (N, dim) with N >= n_users = {n_users}, got shape {pool.shape}")
        super().__init__(n_users, 1, pool.shape[1], n_arms, construction=Construction.REFERENCE)
        self.pool, self.draw = pool, draw

    def reset(self, rng: np.random.Generator) -> None:
        self._rng = self._checked_rng(rng)
        rows = rng.choice(len(self.pool), self.n_users, replace=False) if self.draw else np.arange(self.n_users)
        self.user_thetas = self.pool[rows]
        self.thetas, cluster_of = np.unique(self.user_thetas, axis=0, return_inverse=True)
        self.cluster_of = cluster_of.reshape(-1).astype(np.int64)
        self.n_clusters = len(self.thetas)
        self._pos = _CHUNK_ROUNDS

    def describe(self) -> str:
        first = "" if self.draw else ", first rows"
        return f"PooledUsersBandit(pool={len(self.pool)}{first}, n={self.n_users}, d={self.dim}, K={self.n_arms})"
