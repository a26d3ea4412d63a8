"""The private ε-greedy learner and its plaintext twin on a small problem (two parties, three arms), and their rounds:
for the MPC bandit's bad-input tests and the refused-calls suite.

Not a test module: ``tests/`` is on ``sys.path`` (pyproject.toml's ``[tool.pytest.ini_options] pythonpath``).
"""

from __future__ import annotations

import numpy as np

from privbandits.comm import InMemoryNetwork
from privbandits.protocols.mpc_bandit import MPCBanditConfig, PlaintextEpsilonGreedy, PrivateEpsilonGreedy

PARTITION = (2, 2)
D = sum(PARTITION)
CONFIG = MPCBanditConfig(n_arms=3, partition=PARTITION, epsilon=0.3, precision=16)
REAL = MPCBanditConfig(n_arms=3, partition=PARTITION, epsilon=0.3, precision=16, binary_rewards=False)


def _unit(rng: np.random.Generator) -> np.ndarray:
    x = rng.normal(size=D)
    return x / np.linalg.norm(x) * rng.uniform(0.2, 1.0)


def _reward(config: MPCBanditConfig):
    """Binary: 1 for arm 1. Real: never 0, whose product with x a truncation may turn into -2^-L, breaking the
    exact tie of never-rewarded arms that the twin keeps."""
    return (lambda arm: int(arm == 1)) if config.binary_rewards else (lambda arm: 0.25 + (arm == 1))


def _warm(learner, rounds: int = 3) -> np.random.Generator:
    rng = np.random.default_rng(11)
    for _ in range(rounds):
        learner.step(_unit(rng), _reward(learner.config))
    return rng


LEARNERS = {
    "private": lambda config=CONFIG: PrivateEpsilonGreedy(config, seed=3, network=InMemoryNetwork(record=True)),
    "twin": lambda config=CONFIG: PlaintextEpsilonGreedy(config, seed=3),
}
