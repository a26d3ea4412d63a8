"""The delayed replay: rewards arrive ``delay`` events late, every one of them in the end; with no delay the served
reference learner chooses exactly what the learner itself chooses."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import Clock, learner, open_service

from privbandits.serve.decider import DecidedEvent, DecideInput
from privbandits.serve.reference import ReferenceDecider
from privbandits.serve.replay import Replayer, replay


def _recorded(delay: int, rounds: int) -> list[str]:
    calls: list[str] = []
    replayer = Replayer(lambda t: calls.append(f"d{t}") or 0, lambda t, arm: calls.append(f"r{t}"))
    replay(replayer, np.zeros((rounds, 2)), delay)
    return calls


def test_rewards_come_delay_events_late_and_all_come() -> None:
    assert _recorded(0, 3) == ["d0", "r0", "d1", "r1", "d2", "r2"]
    assert _recorded(2, 4) == ["d0", "d1", "d2", "r0", "d3", "r1", "r2", "r3"]
    assert _recorded(10, 3) == ["d0", "d1", "d2", "r0", "r1", "r2"]
    with pytest.raises(ValueError, match="delay must be >= 0 events, got -1"):
        _recorded(-1, 3)


def test_the_regret_is_the_expected_reward_given_up() -> None:
    expected = np.array([[0.2, 0.9], [0.5, 0.1]])
    result = replay(Replayer(lambda t: 0, lambda t, arm: None), expected, 0)
    assert result.arms.tolist() == [0, 0] and result.regret == pytest.approx([0.7, 0.0])


def test_served_with_no_delay_the_reference_learner_decides_as_itself(tmp_path) -> None:
    rng = np.random.default_rng(2)
    features, rewards = rng.normal(size=(80, 3, 2)), rng.random((80, 3))
    service = open_service(tmp_path / "s.sqlite", learner("epsilon-greedy"), Clock())
    served = Replayer(
        lambda t: service.decide(DecideInput(f"e{t}", "u", features[t])).arm,
        lambda t, arm: service.reward(f"e{t}", float(rewards[t, arm])) and None,
    )
    alone = ReferenceDecider(learner("epsilon-greedy"))
    states: dict[int, dict] = {}

    def decide_alone(t: int) -> int:
        decision = alone.decide(DecideInput(f"e{t}", "u", features[t]))
        states[t] = decision.event_state
        return decision.arm

    def reward_alone(t: int, arm: int) -> None:
        alone.absorb(DecidedEvent(f"e{t}", "u", arm, None, 0, states.pop(t)), float(rewards[t, arm]))

    assert (replay(served, rewards, 0).arms == replay(Replayer(decide_alone, reward_alone), rewards, 0).arms).all()
    service.close()
