"""Replaying a problem through a served party with rewards that come ``delay`` events late (issue 46: delayed
feedback, measured).

:func:`replay` asks for event t's decision, then sends the reward of event ``t - delay`` (so ``delay = 0`` is each
reward right after its decision, the replay that must equal ``deploy local``), and at the end the rewards still
owed, oldest first. What is asked and how is the caller's: a :class:`Replayer` (in process through a
:class:`~privbandits.serve.service.DecisionService`, :func:`service_replayer`; straight over a protocol's serving
roles, :func:`decider_replayer`; or over HTTP through a client) decides event t and rewards it. The regret is the
problem's: ``max_a E[r_t,a] - E[r_t,a_t]`` summed, from its expected rewards (or, where a problem keeps only the
drawn rewards, from those).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from privbandits.serve.decider import DecidedEvent, DecideInput, Decider


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


def service_replayer(service, ask: Callable[[int], DecideInput], reward_of: Callable[[int, int], float]) -> Replayer:
    """A :class:`Replayer` through a :class:`~privbandits.serve.service.DecisionService` in process (its store, its
    journal): ``ask(t)`` is event t's request, ``reward_of(t, arm)`` its reward for the arm chosen."""
    ids: dict[int, str] = {}

    def decide(t: int) -> int:
        request = ask(t)
        ids[t] = request.event_id
        return service.decide(request).arm

    def reward(t: int, arm: int) -> None:
        service.reward(ids.pop(t), float(reward_of(t, arm)))

    return Replayer(decide, reward)


def decider_replayer(route: Callable[[int], Decider], ask: Callable[[int], DecideInput],
                     reward_of: Callable[[int, int], float]) -> Replayer:  # fmt: skip
    """A :class:`Replayer` straight over serving roles (no service, no store): event t is decided by ``route(t)``
    (e.g. its user's FCLUB local server) on ``ask(t)``; its decision is kept, as a service's store keeps it, until
    the same role absorbs ``reward_of(t, arm)``."""
    open_events: dict[int, tuple[Decider, DecidedEvent]] = {}

    def decide(t: int) -> int:
        role, request = route(t), ask(t)
        decision = role.decide(request)
        event = DecidedEvent(request.event_id, request.user_id, decision.arm, decision.propensity,
                             decision.model_version, decision.event_state)  # fmt: skip
        open_events[t] = (role, event)
        return decision.arm

    def reward(t: int, arm: int) -> None:
        role, event = open_events.pop(t)
        role.absorb(event, float(reward_of(t, arm)))

    return Replayer(decide, reward)
