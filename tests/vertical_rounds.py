"""A small vertical O3M protocol (three data holders, four items) and its rounds: for its bad-input tests and the
refused-calls suite (tests/protocols/test_refused_calls_keep_state.py).

Not a test module: ``tests/`` is on ``sys.path`` (pyproject.toml's ``[tool.pytest.ini_options] pythonpath``).
"""

from __future__ import annotations

import numpy as np
from bad_input import NAN, digest

from privbandits.linear import LinUCB
from privbandits.protocols.vertical.core import VerticalFederatedBandit

K, PARTITION = 4, (3, 2, 2)
D = sum(PARTITION)


def protocol(secure: bool = False, learner=None) -> VerticalFederatedBandit:
    learner = learner if learner is not None else LinUCB(K, D, alpha=0.5)
    return VerticalFederatedBandit(PARTITION, learner, rng=np.random.default_rng(3), secure_aggregation=secure)


def contexts(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(K, D)) / 3


def state(vf: VerticalFederatedBandit) -> str:
    """Digest of everything but the wall-clock counters."""
    timers = vf.compute_seconds, vf.critical_path_seconds
    vf.compute_seconds, vf.critical_path_seconds = None, None
    try:
        return digest(vf)
    finally:
        vf.compute_seconds, vf.critical_path_seconds = timers


def play(vf: VerticalFederatedBandit, rounds: range) -> list[int]:
    arms = []
    for t in rounds:
        c = contexts(t)
        arms.append(vf.select(c))
        vf.update(c, arms[-1], 0.1 * t)
    return arms


def _nan_in_passive(c: np.ndarray) -> np.ndarray:
    c = c.copy()
    c[1, D - 1] = NAN  # the last passive party's feature
    return c
