"""Replaying a problem through a served party with rewards that come ``delay`` events late (issue 46: delayed
feedback, measured).

:func:`replay` asks for event t's decision, then sends the reward of event ``t - delay`` (so ``delay = 0`` is each
reward right after its decision, the replay that must equal ``deploy local``), and at the end the rewards still
owed, oldest first. What is asked and how is the caller's: a :class:`Replayer` (in process through a
:class:`~privbandits.serve.service.DecisionService`, or over HTTP through a client) decides event t and rewards it.
The regret is the problem's: ``max_a E[r_t,a] - E[r_t,a_t]`` summed, from its expected rewards.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Replayer:
    """How events reach the served parties: ``decide(t)`` returns event t's arm, ``reward(t, arm)`` sends its reward."""

    decide: Callable[[int], int]
    reward: Callable[[int, int], None]


@dataclass(frozen=True)
class ReplayResult:
    """The arms chosen, event by event, and the regret they cost."""

    arms: np.ndarray
    regret: np.ndarray

    @property
    def cumulative_regret(self) -> float:
        return float(self.regret.sum())


def replay(replayer: Replayer, expected_rewards: np.ndarray, delay: int) -> ReplayResult:
    """Every event of ``expected_rewards`` (rounds × arms) through ``replayer``, each reward ``delay`` events late."""
    if delay < 0:
        raise ValueError(f"delay must be >= 0 events, got {delay}")
    owed: deque[tuple[int, int]] = deque()
    arms = np.empty(len(expected_rewards), dtype=np.int64)
    for t in range(len(expected_rewards)):
        arms[t] = replayer.decide(t)
        owed.append((t, int(arms[t])))
        while len(owed) > delay:
            replayer.reward(*owed.popleft())
    while owed:
        replayer.reward(*owed.popleft())
    chosen = expected_rewards[np.arange(len(arms)), arms]
    return ReplayResult(arms, expected_rewards.max(axis=1) - chosen)
