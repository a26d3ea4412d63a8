"""Small FCLUB bandits (three variants) and their local baselines (CLUB, SCLUB, per-user LinUCB), six users on two
local servers, and their rounds: for FCLUB's bad-input tests and the refused-calls suite.

Not a test module: ``tests/`` is on ``sys.path`` (pyproject.toml's ``[tool.pytest.ini_options] pythonpath``).
"""

from __future__ import annotations

import numpy as np
from bad_input import digest

from privbandits.protocols.fclub import FederatedClusteredBandit
from privbandits.protocols.fclub.baselines import BaselineConfig, LocalBaselineBandit
from privbandits.protocols.fclub.config import FCLUBConfig

SERVERS = np.array([0, 0, 0, 1, 1, 1])
N_USERS, K, D = len(SERVERS), 4, 3


def _fclub(variant: str):
    config = FCLUBConfig.for_variant(variant, horizon=64, m_bound=2)
    return lambda: FederatedClusteredBandit(config, SERVERS, D, K, rng=np.random.default_rng(7))


def _local(kind: str):
    return lambda: LocalBaselineBandit(BaselineConfig(kind=kind), SERVERS, D, np.random.default_rng(7))


BANDITS = {
    "cdp-fclub-dc": _fclub("cdp-fclub-dc"),
    "fclub": _fclub("fclub"),
    "homo-dc": _fclub("homo-dc"),
    "club": _local("club"),
    "sclub": _local("sclub"),
    "linucb": _local("linucb"),
}


def _round(rng: np.random.Generator) -> tuple[int, np.ndarray]:
    x = rng.normal(size=(K, D))
    return int(rng.integers(N_USERS)), x / np.linalg.norm(x, axis=1, keepdims=True)


def _warm(bandit, rounds: int = 20) -> np.random.Generator:
    rng = np.random.default_rng(3)
    for _ in range(rounds):
        user, contexts = _round(rng)
        arm = bandit.select(user, contexts)
        bandit.update(float(contexts[arm, 0] > 0))
    return rng


def _same_play(bandit, twin, rng: np.random.Generator, rounds: int = 12) -> None:
    for _ in range(rounds):
        user, contexts = _round(rng)
        arm = bandit.select(user, contexts)
        assert arm == twin.select(user, contexts)
        bandit.update(float(contexts[arm, 1] > 0))
        twin.update(float(contexts[arm, 1] > 0))
    assert digest(bandit) == digest(twin)


def _with(value: float, index: tuple = (1, 2)):
    def make(contexts: np.ndarray) -> np.ndarray:
        contexts = contexts.copy()
        contexts[index] = value
        return contexts

    return make
