"""The delayed replay: rewards arrive ``delay`` events late, every one of them in the end; with no delay the served
reference learner chooses exactly what the learner itself chooses."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import Clock, learner, open_service

from privbandits.serve.decider import DecideInput
from privbandits.serve.reference import ReferenceDecider
from privbandits.serve.replay import Replayer, decider_replayer, replay, service_replayer


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


def _reference_replayers(service, alone: ReferenceDecider, features: np.ndarray, rewards: np.ndarray):
    """The same events through the service (its store) and straight through a decider of the same learner."""
    ask = lambda t: DecideInput(f"e{t}", "u", features[t])  # noqa: E731
    reward_of = lambda t, arm: rewards[t, arm]  # noqa: E731
    return service_replayer(service, ask, reward_of), decider_replayer(lambda t: alone, ask, reward_of)


def test_served_with_no_delay_the_reference_learner_decides_as_itself(tmp_path) -> None:
    rng = np.random.default_rng(2)
    features, rewards = rng.normal(size=(80, 3, 2)), rng.random((80, 3))
    service = open_service(tmp_path / "s.sqlite", learner("epsilon-greedy"), Clock())
    served, alone = _reference_replayers(service, ReferenceDecider(learner("epsilon-greedy")), features, rewards)
    assert (replay(served, rewards, 0).arms == replay(alone, rewards, 0).arms).all()
    service.close()


@pytest.mark.parametrize("delay", [1, 7, 200])
def test_a_delayed_replay_absorbs_every_reward_exactly_once_and_decides_as_the_decider_alone(tmp_path, delay) -> None:
    """Rewards ``delay`` events late through the service: every event rewarded, each reward absorbed once (the
    learner's count of absorbed rewards is the number of events), and the decisions are those of the decider driven
    straight with the same delay."""
    rng = np.random.default_rng(5)
    features, rewards = rng.normal(size=(60, 3, 2)), rng.random((60, 3))
    service = open_service(tmp_path / "s.sqlite", learner("linucb"), Clock())
    decider = ReferenceDecider(learner("linucb"))
    served, alone = _reference_replayers(service, decider, features, rewards)
    arms = replay(served, rewards, delay).arms
    assert service.ledger()["events"] == {"open": 0, "rewarded": 60, "expired": 0}
    assert service.ledger()["learner"]["rewards_absorbed"] == 60
    assert (arms == replay(alone, rewards, delay).arms).all() and decider.ledger()["rewards_absorbed"] == 60
    service.close()
