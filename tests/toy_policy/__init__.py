"""A toy policy kind that lives in the test suite only: it proves a policy kind plugs into the experiments (config
validation and its errors, the runner's one loop, the results store and its keys, ``privbandits list`` / ``show``)
through :data:`privbandits.experiments.registry.POLICY_KINDS`, with no edit to ``src/``.

:class:`ToyCycleConfig` (kind ``toy_cycle``) plays the arms in turn from ``offset``, and with probability
``explore`` a uniformly random arm instead, drawn from the run's policy stream. It declares what it cannot run on
(an ``offset`` beyond the environment's arms) and what it adds to a run's store key (``toy_coins`` while it draws
coins). A test registers it with ``POLICY_KINDS.extended(ToyCycleConfig)`` for as long as it needs it.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field

from privbandits.experiments.adapters import PolicyLearner
from privbandits.experiments.config import PolicyKindConfig
from privbandits.experiments.registry import kind_of


class ToyCycle:
    """The learner: arm ``(offset + t) mod K`` in round t, or a uniform arm with probability ``explore``."""

    def __init__(self, n_arms: int, offset: int, explore: float, rng: np.random.Generator) -> None:
        self.n_arms, self.offset, self.explore, self.rng = n_arms, offset, explore, rng
        self.rounds, self.pulls = 0, np.zeros(n_arms, dtype=np.int64)

    def select(self, contexts: np.ndarray) -> int:
        if self.explore > 0 and self.rng.random() < self.explore:
            return int(self.rng.integers(self.n_arms))
        return (self.offset + self.rounds) % self.n_arms

    def update(self, contexts: np.ndarray, arm: int, reward: float) -> None:
        self.rounds += 1
        self.pulls[arm] += 1


class ToyCycleConfig(PolicyKindConfig):
    """A toy kind of the test suite: the arms in turn from offset, a uniform arm with probability explore."""

    kind: Literal["toy_cycle"]
    offset: int = Field(0, ge=0, description="the arm of the first round")
    explore: float = Field(0.0, ge=0, le=1, description="probability of a uniform arm instead")
    per_arm_only: ClassVar[bool] = False

    def learner(self, source: Any, horizon: int, seed: np.random.SeedSequence) -> PolicyLearner:
        return PolicyLearner(ToyCycle(source.n_arms, self.offset, self.explore, np.random.default_rng(seed)))

    def environment_problem(self, env: Any) -> str | None:
        arms = getattr(env, "n_arms", None)
        if arms is not None and self.offset >= arms:
            return f"offset: must be < the environment's {arms} arms (got {self.offset})"
        return None

    def noise_key(self) -> dict[str, str]:
        return {"toy_coins": "uniform"} if self.explore > 0 else {}


KIND = kind_of(ToyCycleConfig)
"""The toy's kind, as its config declares it."""
