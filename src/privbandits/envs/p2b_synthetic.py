"""P2B's synthetic preference benchmark (spec ``p2b.md`` §5.2, §9.5–§9.7).

A fixed random linear map W ∈ ℝ^{K×d} (glorot-uniform, b = 0, spec §9.6) turns
a context X on the simplex into per-action reward probabilities, and the reward
of every (interaction, action) is drawn in advance as a Bernoulli of that
probability. Two mappings:

``"softmax"`` (the paper, the default per spec §9.5)
    ``r̄ = β · softmax(W X) + z``, ``z ~ N(0, σ²)`` with σ² = 0.01 (σ = 0.1),
    clipped to [0, 1]. With β = 0.1 the noise dominates: most of the mean reward
    comes from the positive part of z.
``"linear"`` (the reference code)
    ``prob = clip(β · (W X + 0.01 · N(0, 1)), 0, 1)``; the noise (std 0.01) is
    drawn per (interaction, action) and added before the scaling by β. Reward
    rates are tiny, about 0.001–0.03 (spec §5.2 [R]).

Contexts are ``"uniform_normalised"`` (i.i.d. U[0, 1) entries divided by their
sum, the reference and the default, spec §9.7) or ``"dirichlet"`` (Dirichlet(1),
uniform on the simplex), optionally rounded to q decimals with the sum-keeping
rounding of :func:`privbandits.datasets.interactions.normalise_rows`; the
rewards are then computed from the rounded context the agent sees. The
reference does not round synthetic contexts.

Reproducibility. W comes from ``SeedSequence(seed, spawn_key=(0,))``. Users are
generated in blocks of a fixed :data:`BLOCK_USERS` users, block i from its own
stream ``SeedSequence(seed, spawn_key=(1, i))``, so a population of U users is
always the first U users of any larger one with the same seed and t, and the
chunked generator yields the same users whatever its chunk size.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from enum import StrEnum
from functools import cached_property

import numpy as np
from threadpoolctl import threadpool_limits

from privbandits.datasets.interactions import SYNTHETIC, UserInteractions, normalise_rows

BLOCK_USERS = 1024
_WEIGHTS_KEY, _USERS_KEY = 0, 1


class RewardMapping(StrEnum):
    """How a context becomes per-action reward probabilities (module docstring)."""

    SOFTMAX = "softmax"
    LINEAR = "linear"


class ContextDistribution(StrEnum):
    """How synthetic contexts are drawn (spec §9.7)."""

    UNIFORM_NORMALISED = "uniform_normalised"
    DIRICHLET = "dirichlet"


DEFAULT_NOISE_STD = {RewardMapping.SOFTMAX: 0.1, RewardMapping.LINEAR: 0.01}


def _member(enum: type[StrEnum], value, field: str):
    try:
        return enum(value)
    except ValueError:
        allowed = ", ".join(repr(member.value) for member in enum)
        raise ValueError(f"{field} must be one of {allowed}, got {value!r}") from None


def glorot_uniform(n_actions: int, dim: int, rng: np.random.Generator) -> np.ndarray:
    """Keras' default Dense kernel, transposed: W (K, d) with entries U(±√(6/(d + K))) (spec §9.6)."""
    limit = np.sqrt(6.0 / (dim + n_actions))
    return rng.uniform(-limit, limit, size=(n_actions, dim))


def softmax(logits: np.ndarray) -> np.ndarray:
    """Softmax along the last axis."""
    shifted = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return shifted / shifted.sum(axis=-1, keepdims=True)


@dataclass(frozen=True)
class P2BSynthetic:
    """One synthetic preference benchmark: its fixed map W and how it draws users.

    Parameters
    ----------
    dim : int
        d, the context dimension (the paper varies it from 6 to 20).
    n_actions : int
        K = |A| (10, 20 or 50 in the paper).
    mapping : {"softmax", "linear"}
    contexts : {"uniform_normalised", "dirichlet"}
    decimals : int or None
        Round contexts to this precision q (sum kept at 1); None: no rounding.
    beta : float
        β, the scale of the reward probabilities (0.1).
    noise_std : float or None
        Std of the Gaussian noise; None: 0.1 for softmax (σ² = 0.01), 0.01 for linear.
    seed : int
        Fixes W and every user's data.
    """

    dim: int = 10
    n_actions: int = 10
    mapping: RewardMapping | str = RewardMapping.SOFTMAX
    contexts: ContextDistribution | str = ContextDistribution.UNIFORM_NORMALISED
    decimals: int | None = None
    beta: float = 0.1
    noise_std: float | None = None
    seed: int = 0

    def __post_init__(self) -> None:
        if self.dim < 1 or self.n_actions < 1:
            raise ValueError(f"dim and n_actions must be >= 1, got dim={self.dim}, n_actions={self.n_actions}")
        mapping = _member(RewardMapping, self.mapping, "mapping")
        object.__setattr__(self, "mapping", mapping)
        object.__setattr__(self, "contexts", _member(ContextDistribution, self.contexts, "contexts"))
        if self.decimals is not None and self.decimals < 0:
            raise ValueError(f"decimals must be >= 0 or None, got {self.decimals}")
        if not self.beta > 0:
            raise ValueError(f"beta must be > 0, got {self.beta}")
        if self.noise_std is None:
            object.__setattr__(self, "noise_std", DEFAULT_NOISE_STD[mapping])
        elif not self.noise_std >= 0:
            raise ValueError(f"noise_std must be >= 0, got {self.noise_std}")

    @cached_property
    def weights(self) -> np.ndarray:
        """W, shape (K, d), fixed by the seed (read-only)."""
        rng = np.random.default_rng(np.random.SeedSequence(self.seed, spawn_key=(_WEIGHTS_KEY,)))
        weights = glorot_uniform(self.n_actions, self.dim, rng)
        weights.flags.writeable = False
        return weights

    @property
    def source(self) -> str:
        """Provenance string of the generated :class:`UserInteractions`."""
        rounding = "unrounded" if self.decimals is None else f"rounded to q={self.decimals}"
        return (
            f"{SYNTHETIC}: P2B preference generator (spec p2b.md §5.2), mapping={self.mapping}, "
            f"contexts={self.contexts} {rounding}, beta={self.beta}, noise_std={self.noise_std}, seed={self.seed}"
        )

    def sample_contexts(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` contexts, shape (n, d), each summing to 1."""
        if self.contexts is ContextDistribution.DIRICHLET:
            draws = rng.dirichlet(np.ones(self.dim), size=n)
        else:
            draws = rng.random((n, self.dim))
            draws /= draws.sum(axis=1, keepdims=True)
        return draws if self.decimals is None else normalise_rows(draws, self.decimals)

    def reward_probabilities(self, contexts: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Noisy, clipped probability of reward 1 for every action, shape (n, K)."""
        scores = contexts @ self.weights.T
        noise = rng.standard_normal(scores.shape)
        noise *= self.noise_std
        if self.mapping is RewardMapping.SOFTMAX:
            probabilities = softmax(scores)
            probabilities *= self.beta
            probabilities += noise
        else:
            probabilities = scores
            probabilities += noise
            probabilities *= self.beta
        return np.clip(probabilities, 0.0, 1.0, out=probabilities)

    def _block(self, index: int, t: int) -> tuple[np.ndarray, np.ndarray]:
        """Contexts (B, t, d) and rewards (B, t, K) of the B = BLOCK_USERS users of block ``index``."""
        rng = np.random.default_rng(np.random.SeedSequence(self.seed, spawn_key=(_USERS_KEY, index)))
        contexts = self.sample_contexts(BLOCK_USERS * t, rng)
        probabilities = self.reward_probabilities(contexts, rng)
        rewards = (rng.random(probabilities.shape) < probabilities).astype(np.int8)
        return contexts.reshape(BLOCK_USERS, t, self.dim), rewards.reshape(BLOCK_USERS, t, self.n_actions)

    def _users(self, start: int, stop: int, t: int, cache: dict) -> UserInteractions:
        """Users ``start … stop-1``, copied out of their blocks; ``cache`` keeps the last block built."""
        contexts = np.empty((stop - start, t, self.dim))
        rewards = np.empty((stop - start, t, self.n_actions), dtype=np.int8)
        with threadpool_limits(limits=1, user_api="blas"):  # a block's products are too small for threads
            for index in range(start // BLOCK_USERS, (stop - 1) // BLOCK_USERS + 1):
                if cache.get("index") != index:
                    cache.update(index=index, block=self._block(index, t))
                block_contexts, block_rewards = cache["block"]
                first = index * BLOCK_USERS
                low, high = max(start, first), min(stop, first + BLOCK_USERS)
                contexts[low - start : high - start] = block_contexts[low - first : high - first]
                rewards[low - start : high - start] = block_rewards[low - first : high - first]
        return UserInteractions(contexts, rewards, "p2b_synthetic", self.source)

    def chunks(self, n_users: int, t: int, chunk_users: int) -> Iterator[UserInteractions]:
        """The users of :meth:`generate` in successive chunks of ``chunk_users`` (the last may be smaller).

        Only one chunk and one block of :data:`BLOCK_USERS` users are held at a
        time. Arguments are checked when this is called, not at the first chunk.
        """
        if n_users < 1 or t < 1:
            raise ValueError(f"n_users and t must be >= 1, got n_users={n_users}, t={t}")
        if chunk_users < 1:
            raise ValueError(f"chunk_users must be >= 1, got {chunk_users}")
        cache: dict = {}
        return (
            self._users(start, min(start + chunk_users, n_users), t, cache) for start in range(0, n_users, chunk_users)
        )

    def generate(self, n_users: int, t: int) -> UserInteractions:
        """U = ``n_users`` users with t fresh interactions each (spec §5.2 [R], "Users")."""
        return next(self.chunks(n_users, t, n_users))


def p2b_synthetic_interactions(
    n_users: int,
    t: int,
    dim: int = 10,
    n_actions: int = 10,
    *,
    mapping: RewardMapping | str = RewardMapping.SOFTMAX,
    seed: int = 0,
    **options,
) -> UserInteractions:
    """The synthetic benchmark's users; ``options`` are the other fields of :class:`P2BSynthetic`."""
    return P2BSynthetic(dim, n_actions, mapping, seed=seed, **options).generate(n_users, t)


def p2b_synthetic_chunks(
    n_users: int,
    t: int,
    chunk_users: int,
    dim: int = 10,
    n_actions: int = 10,
    *,
    mapping: RewardMapping | str = RewardMapping.SOFTMAX,
    seed: int = 0,
    **options,
) -> Iterator[UserInteractions]:
    """:func:`p2b_synthetic_interactions` in chunks of ``chunk_users`` users, same users for any chunk size."""
    return P2BSynthetic(dim, n_actions, mapping, seed=seed, **options).chunks(n_users, t, chunk_users)
