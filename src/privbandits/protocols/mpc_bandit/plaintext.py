"""The float64 twin of the private learner (spec §4.5), on the same exploration samples."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from privbandits.protocols.mpc_bandit.choice import plaintext_choice
from privbandits.protocols.mpc_bandit.config import MPCBanditConfig, _check_context, _check_reward
from privbandits.protocols.mpc_bandit.exploration import ExplorationStream, _seeds
from privbandits.validation import Instance, check


class PlaintextEpsilonGreedy:
    """The float64 twin of Alg. 1 with the private learner's exploration samples (spec §4.5).

    Only the pulled arm is updated (Sherman–Morrison on W_a^{-1}, then w_a = W_a^{-1} b_a).
    Ties among maximal scores go to the largest γ, as the private argmax does.
    """

    def __init__(self, config: MPCBanditConfig, *, seed: int | np.random.SeedSequence | None = None) -> None:
        check(config, "config", Instance((MPCBanditConfig,)), "PlaintextEpsilonGreedy")
        self.config = config
        a, d = config.n_arms, config.dim
        self.exploration = ExplorationStream(config.n_arms, config.epsilon, config.precision, _seeds(seed)[1])
        self.inverse = np.tile(np.eye(d), (a, 1, 1))
        self.b = np.zeros((a, d))
        self.weights = np.zeros((a, d))
        self._grid = float(1 << config.precision)
        self._norm_limit = config.context_norm_limit
        self.rounds = 0

    def step(self, x: np.ndarray, pull: Callable[[int], float]) -> int:
        """Play one round; same contract as :meth:`PrivateEpsilonGreedy.step`."""
        x = _check_context(x, self.config.dim, self._norm_limit)
        draw = self.exploration.draw()
        arm = int(plaintext_choice(self.weights @ x, draw.coin, draw.uniforms / self._grid, draw.permutation))
        reward = _check_reward(pull(arm), self.config)  # the private learner's rule; refused: the model is untouched
        inverse = self.inverse[arm]
        u = inverse @ x
        inverse -= np.outer(u, u / (1.0 + u @ x))
        self.b[arm] += reward * x
        self.weights[arm] = inverse @ self.b[arm]
        self.rounds += 1
        return arm

    def checkpoint(self) -> tuple[np.ndarray, np.ndarray]:
        """(W^{-1}, b), copies."""
        return self.inverse.copy(), self.b.copy()
