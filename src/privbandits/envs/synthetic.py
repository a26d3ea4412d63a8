"""The vertical O3M paper's synthetic linear problem (spec ``vertical-o3m.md`` §5.1)."""

from __future__ import annotations

import numpy as np

from privbandits.envs.base import BanditRound, ContextKind, Environment
from privbandits.validation import Integer, Real, validate

_CHUNK_ROUNDS = 256


def normalised_gaussian(rng: np.random.Generator, shape: tuple[int, ...], variance: float) -> np.ndarray:
    """Draws ``N(0, variance I)`` along the last axis, each vector scaled to unit L2 norm."""
    draws = rng.normal(0.0, np.sqrt(variance), size=shape)
    return draws / np.linalg.norm(draws, axis=-1, keepdims=True)


class LinearGaussianBandit(Environment):
    """Fresh i.i.d. unit-norm contexts per arm, unit-norm θ*, Gaussian reward noise.

    Each round every arm gets ``x ~ N(0, context_variance I_d)`` normalised to
    ``||x|| = 1``; θ* is drawn the same way once per :meth:`reset`; the reward of
    arm a is ``x_a^T θ* + ε`` with ``ε ~ N(0, noise_variance)``. The paper uses
    d = 100, K = 10 and 0.05 for all three variances (the spec reads the noise
    0.05 as a variance, §8.4.7).

    Contexts are generated in chunks of rounds for speed; the stream depends only
    on the generator, never on the arms chosen.
    """

    context_kind = ContextKind.PER_ARM

    def __init__(
        self,
        dim: int = 100,
        n_arms: int = 10,
        context_variance: float = 0.05,
        theta_variance: float = 0.05,
        noise_variance: float = 0.05,
    ) -> None:
        values = validate(
            "LinearGaussianBandit",
            {"dim": Integer(low=1), "n_arms": Integer(low=1), "context_variance": Real(low=0, low_open=True),
             "theta_variance": Real(low=0, low_open=True), "noise_variance": Real(low=0)},
            {"dim": dim, "n_arms": n_arms, "context_variance": context_variance, "theta_variance": theta_variance,
             "noise_variance": noise_variance},
        )  # fmt: skip
        dim, n_arms, noise_variance = values["dim"], values["n_arms"], values["noise_variance"]
        self.dim, self.n_arms = dim, n_arms
        self.context_variance = context_variance
        self.theta_variance = theta_variance
        self.noise_std = float(np.sqrt(noise_variance))
        self.theta: np.ndarray | None = None

    def reset(self, rng: np.random.Generator) -> None:
        self._rng = self._checked_rng(rng)
        self.theta = normalised_gaussian(rng, (self.dim,), self.theta_variance)
        self._chunk_pos = _CHUNK_ROUNDS
        self._t = -1

    def _refill(self) -> None:
        shape = (_CHUNK_ROUNDS, self.n_arms, self.dim)
        self._contexts = normalised_gaussian(self._rng, shape, self.context_variance)
        self._expected = self._contexts @ self.theta
        self._noise = self._rng.normal(0.0, self.noise_std, size=_CHUNK_ROUNDS)
        self._chunk_pos = 0

    def next_round(self) -> BanditRound:
        if self.theta is None:
            raise RuntimeError("call reset(rng) before next_round()")
        if self._chunk_pos == _CHUNK_ROUNDS:
            self._refill()
        i = self._chunk_pos
        self._chunk_pos += 1
        self._in_round = True
        return BanditRound(self._contexts[i], self._expected[i])

    def reward(self, arm: int) -> float:
        arm = self._checked_arm(arm)
        i = self._chunk_pos - 1
        return float(self._expected[i, arm] + self._noise[i])
