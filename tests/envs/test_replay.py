"""Replay evaluation (Li et al. 2010, 2011) on uniformly-random logs."""

from __future__ import annotations

import numpy as np
import pytest
from project_paths import OBD_SAMPLE as REAL_OBD

from privbandits.datasets import EventContexts, LoggedBanditData, load_obd, vertical_obd_contexts
from privbandits.envs import check_uniform_logging, relative_ctr, replay
from privbandits.linear.policies import LinUCB, UniformRandom


def uniform_log(rng: np.random.Generator, n_events: int, n_arms: int, click_rates, **overrides) -> LoggedBanditData:
    """A log of a uniformly random policy over ``n_arms`` arms with per-arm click rates."""
    actions = rng.integers(n_arms, size=n_events)
    fields = {
        "user_features": np.zeros((n_events, 1)),
        "item_features": np.eye(n_arms),
        "actions": actions,
        "rewards": (rng.random(n_events) < np.asarray(click_rates)[actions]).astype(float),
        "propensities": np.full(n_events, 1 / n_arms),
        "positions": None,
        "user_feature_names": ("bias",),
        "item_feature_names": tuple(f"item{a}" for a in range(n_arms)),
    }
    return LoggedBanditData(**{**fields, **overrides})


def item_contexts(data: LoggedBanditData) -> EventContexts:
    items = data.item_features
    return EventContexts(
        lambda event: items.copy(), data.n_events, data.n_items, (items.shape[1],), data.item_feature_names
    )


class ConstantArm:
    def __init__(self, arm: int) -> None:
        self.arm, self.updates = arm, []

    def select(self, contexts: np.ndarray) -> int:
        return self.arm

    def update(self, contexts: np.ndarray, arm: int, reward: float) -> None:
        self.updates.append((arm, reward))


class FollowMarkedArm(ConstantArm):
    """Picks the arm whose context has the largest first coordinate."""

    def __init__(self) -> None:
        super().__init__(-1)

    def select(self, contexts: np.ndarray) -> int:
        return int(np.argmax(contexts[:, 0]))


def test_a_policy_that_picks_the_logged_arm_matches_every_event():
    data = uniform_log(np.random.default_rng(0), 500, 4, [0.1, 0.2, 0.3, 0.4])

    def build(event: int) -> np.ndarray:
        contexts = np.zeros((4, 2))
        contexts[data.actions[event], 0] = 1.0  # the log's arm is marked in its context
        return contexts

    policy = FollowMarkedArm()
    result = replay(policy, data, EventContexts(build, 500, 4, (2,), ("mark", "zero")), rng=1)
    assert (result.matched, result.scanned, result.match_rate) == (500, 500, 1.0)
    assert result.total_reward == data.rewards.sum() and result.ctr == data.rewards.mean()
    assert sorted(result.matched_events.tolist()) == list(range(500))
    assert len(policy.updates) == 500


def test_a_fixed_policy_matches_about_one_event_in_k():
    n_events, n_arms = 6_000, 5
    data = uniform_log(np.random.default_rng(2), n_events, n_arms, [0.1] * n_arms)
    result = replay(ConstantArm(3), data, item_contexts(data), rng=0)
    mean, sd = n_events / n_arms, np.sqrt(n_events * (1 / n_arms) * (1 - 1 / n_arms))
    assert abs(result.matched - mean) < 4 * sd


@pytest.mark.parametrize("order", ["shuffle", "logged"])
def test_constant_arm_ctr_is_that_arms_empirical_ctr_and_only_matches_learn(order):
    data = uniform_log(np.random.default_rng(4), 3_000, 3, [0.05, 0.3, 0.15])
    policy = ConstantArm(1)
    result = replay(policy, data, item_contexts(data), order=order, rng=5, series_points=10)
    logged = data.actions == 1
    assert result.matched == logged.sum() and result.ctr == data.rewards[logged].mean()
    assert set(result.matched_events.tolist()) == set(np.flatnonzero(logged).tolist())
    if order == "logged":
        np.testing.assert_array_equal(result.matched_events, np.flatnonzero(logged))
    assert policy.updates == [(1, data.rewards[event]) for event in result.matched_events]
    assert result.series_matched[-1] == result.matched and result.ctr_series[-1] == result.ctr
    assert result.series_matched.size == 10 and np.all(np.diff(result.series_matched) > 0)
    k = result.series_matched[3]
    assert result.ctr_series[3] == pytest.approx(data.rewards[result.matched_events[:k]].mean(), abs=1e-15)


def test_shuffled_replay_is_reproducible_from_its_seed():
    data = uniform_log(np.random.default_rng(6), 2_000, 4, [0.2] * 4)
    runs = [replay(UniformRandom(4, rng=9), data, item_contexts(data), rng=seed).matched_events for seed in (3, 3, 4)]
    np.testing.assert_array_equal(runs[0], runs[1])
    assert not np.array_equal(runs[0], runs[2])


def test_linucb_on_a_planted_linear_click_model_beats_uniform():
    """Contexts x_{t,a} ∈ [1, U(0,1)^4]; click probability x^T θ* ∈ [0, 0.8]; uniform CTR ≈ 0.4."""
    rng = np.random.default_rng(11)
    n_events, n_arms = 20_000, 4
    theta = np.array([0.3, 0.3, -0.2, 0.2, -0.1])
    contexts = np.concatenate([np.ones((n_events, n_arms, 1)), rng.random((n_events, n_arms, 4))], axis=2)
    actions = rng.integers(n_arms, size=n_events)
    clicks = (rng.random(n_events) < contexts[np.arange(n_events), actions] @ theta).astype(float)
    data = uniform_log(rng, n_events, n_arms, [0.0] * n_arms, actions=actions, rewards=clicks)
    names = ("bias", "x1", "x2", "x3", "x4")
    table = EventContexts(contexts.__getitem__, n_events, n_arms, (5,), names)
    results = [replay(LinUCB(n_arms, 5, alpha=0.5), data, table, rng=seed) for seed in range(3)]
    lifts = [relative_ctr(result.ctr, data) for result in results]
    best = (contexts @ theta).max(axis=1).mean() / (contexts @ theta).mean()  # the oracle's relative CTR ≈ 1.32
    assert min(lifts) > 1.2 and best > 1.25
    uniform = replay(UniformRandom(n_arms, rng=0), data, table, rng=0)
    assert abs(relative_ctr(uniform.ctr, data) - 1) < 0.1


def test_nonuniform_or_unknown_propensities_are_refused_unless_allowed():
    rng = np.random.default_rng(7)
    propensities = np.full(400, 0.25)
    propensities[17] = 0.5
    data = uniform_log(rng, 400, 4, [0.2] * 4, propensities=propensities)
    hint = "replay needs a uniformly random logging policy; pass allow_nonuniform=True to accept a biased estimate"
    with pytest.raises(ValueError) as error:
        replay(ConstantArm(0), data, item_contexts(data))
    assert str(error.value) == f"propensities are not uniform (from 0.25 to 0.5); {hint}"
    with pytest.warns(UserWarning, match=r"replay estimate is biased: propensities are not uniform"):
        result = replay(ConstantArm(0), data, item_contexts(data), allow_nonuniform=True, rng=0)
    assert result.matched == (data.actions == 0).sum()

    unknown = uniform_log(rng, 400, 4, [0.2] * 4, propensities=None)
    with pytest.raises(ValueError) as error:
        replay(ConstantArm(0), unknown, item_contexts(unknown))
    assert str(error.value) == f"the log has no propensities, so uniform logging cannot be checked; {hint}"

    # uniform within each position is enough, even if positions differ
    positions = np.arange(400) % 2 + 1
    by_position = uniform_log(
        rng, 400, 4, [0.2] * 4, positions=positions, propensities=np.where(positions == 1, 0.25, 0.2)
    )
    check_uniform_logging(by_position)
    skewed = np.where(positions == 1, 0.25, 0.2)
    skewed[3] = 0.1
    with pytest.raises(ValueError, match=r"^propensities are not uniform at position 2 \(from 0.1 to 0.2\); replay"):
        check_uniform_logging(uniform_log(rng, 400, 4, [0.2] * 4, positions=positions, propensities=skewed))
    check_uniform_logging(uniform_log(rng, 400, 4, [0.2] * 4, propensities=np.full(400, 0.25) * (1 + 1e-9)))


def test_replay_rejects_bad_arguments():
    data = uniform_log(np.random.default_rng(8), 100, 3, [0.2] * 3)
    contexts = item_contexts(data)
    with pytest.raises(ValueError, match="order must be one of 'shuffle', 'logged', got 'reverse'"):
        replay(ConstantArm(0), data, contexts, order="reverse")
    with pytest.raises(ValueError, match="series_points must be >= 1, got 0"):
        replay(ConstantArm(0), data, contexts, series_points=0)
    other = uniform_log(np.random.default_rng(8), 50, 3, [0.2] * 3)
    with pytest.raises(ValueError, match="contexts cover 50 events × 3 arms but the log has 100 events × 3 items"):
        replay(ConstantArm(0), data, item_contexts(other))
    with pytest.raises(ValueError, match=r"policy chose arm 3; arms are 0..2"):
        replay(ConstantArm(3), data, contexts)


def test_relative_ctr_divides_by_the_mean_logged_reward():
    data = uniform_log(np.random.default_rng(9), 200, 2, [0.5, 0.5])
    assert relative_ctr(0.3, data) == pytest.approx(0.3 / data.rewards.mean())
    empty = uniform_log(np.random.default_rng(9), 200, 2, [0.0, 0.0])
    with pytest.raises(ValueError, match="the mean logged reward is 0.0, so the relative CTR is undefined"):
        relative_ctr(0.3, empty)


def test_no_match_gives_nan_ctr_and_empty_series():
    data = uniform_log(np.random.default_rng(10), 30, 3, [0.5] * 3, actions=np.zeros(30, dtype=int))
    result = replay(ConstantArm(2), data, item_contexts(data), rng=0)
    assert result.matched == 0 and np.isnan(result.ctr) and result.series_matched.size == 0


def test_progress_bar_runs(capsys):
    data = uniform_log(np.random.default_rng(12), 1_200, 3, [0.2] * 3)
    result = replay(ConstantArm(0), data, item_contexts(data), rng=0, show_progress=True)
    assert result.scanned == 1_200
    assert "replay" in capsys.readouterr().out


@pytest.mark.skipif(not REAL_OBD.is_dir(), reason=f"the OBD sample is not at {REAL_OBD}")
def test_replay_on_the_real_obd_sample():
    data = load_obd(REAL_OBD)
    check_uniform_logging(data)
    contexts = vertical_obd_contexts(data)
    result = replay(ConstantArm(7), data, contexts, rng=0)
    assert result.matched == (data.actions == 7).sum()
    assert result.total_reward == data.rewards[data.actions == 7].sum()
