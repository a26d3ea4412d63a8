"""Bad input never corrupts an environment and always gets a clear error (issue 30): parameters of the wrong
type or range, non-finite or complex data, ``reset`` without a generator, ``reward`` outside a round or for an
arm that does not exist. A refused call leaves the environment's state digest unchanged, and it then draws
exactly as a twin that never saw the call."""

from __future__ import annotations

import numpy as np
import pytest
from bad_input import INF, NAN, digest, rejects

from privbandits.envs import LinearGaussianBandit
from privbandits.envs.classification import ClassificationBandit
from privbandits.envs.clustered import ClusteredLinearBandit, PooledUsersBandit
from privbandits.envs.kmeans_arms import KMeansArmsBandit
from privbandits.validation import CallOrderError

FEATURES = np.random.default_rng(0).normal(size=(30, 3))


def _with(array: np.ndarray, value: object) -> np.ndarray:
    array = array.astype(type(value)) if isinstance(value, complex) else array.copy()
    array[1, 2] = value
    return array


CONSTRUCTORS = [
    (lambda: LinearGaussianBandit(dim=10.5), "dim must be an integer >= 1, got 10.5"),
    (lambda: LinearGaussianBandit(n_arms=True), "n_arms"),
    (lambda: LinearGaussianBandit(noise_variance=INF), "noise_variance must be a finite real number >= 0, got inf"),
    (lambda: LinearGaussianBandit(noise_variance=NAN), "noise_variance"),
    (lambda: LinearGaussianBandit(context_variance=INF), "context_variance"),
    (lambda: LinearGaussianBandit(theta_variance=-1.0), "theta_variance"),
    (lambda: ClusteredLinearBandit(dim=4.5), "dim must be an integer >= 2, got 4.5"),
    (lambda: ClusteredLinearBandit(n_users=40.0), "n_users"),
    (lambda: ClusteredLinearBandit(noise_std=INF), "noise_std"),
    (lambda: ClassificationBandit(_with(FEATURES, NAN), np.arange(30) % 3), "features must be finite"),
    (lambda: ClassificationBandit(_with(FEATURES, 1j), np.arange(30) % 3), "features must be a real-valued array"),
    (lambda: KMeansArmsBandit(_with(FEATURES, INF), FEATURES[:3]), "features must be finite"),
    (lambda: KMeansArmsBandit(FEATURES, _with(FEATURES[:3], NAN)), "centres must be finite"),
    (lambda: PooledUsersBandit(_with(FEATURES, NAN), n_users=10), "pool must be finite"),
]


@pytest.mark.parametrize(("make", "name"), CONSTRUCTORS)
def test_constructors_refuse_bad_parameters_and_data(make, name):
    rejects(make, name)


ENVIRONMENTS = {
    "linear-gaussian": lambda: LinearGaussianBandit(dim=4, n_arms=5),
    "clustered": lambda: ClusteredLinearBandit(n_users=6, n_clusters=2, dim=4, n_arms=5),
    "pooled": lambda: PooledUsersBandit(FEATURES, n_users=6, n_arms=5),
    "classification": lambda: ClassificationBandit(FEATURES, np.arange(30) % 5),
    "kmeans-arms": lambda: KMeansArmsBandit(FEATURES, FEATURES[:5]),
}


def _stream(env, rounds: int = 5) -> list:
    out = []
    for t in range(rounds):
        contexts, expected = env.next_round()
        out.append((contexts.tolist(), expected.tolist(), env.reward(t % env.n_arms)))
    return out


@pytest.mark.parametrize("kind", ENVIRONMENTS)
@pytest.mark.parametrize("rng", [0, None, 1.5, np.random.RandomState(0)])
def test_reset_refuses_what_is_not_a_generator_unchanged(kind, rng):
    env, twin = ENVIRONMENTS[kind](), ENVIRONMENTS[kind]()
    for e in (env, twin):
        e.reset(np.random.default_rng(1))
        _stream(e)
    before = digest(env)
    message = rejects(lambda: env.reset(rng), "rng must be a numpy Generator")
    assert "reset" in message and "default_rng" in message
    assert digest(env) == before
    assert _stream(env) == _stream(twin)


@pytest.mark.parametrize("kind", ENVIRONMENTS)
def test_reward_outside_a_round_is_a_call_order_error(kind):
    env = ENVIRONMENTS[kind]()
    rejects(lambda: env.reward(0), "call reset(rng), then next_round(), first", CallOrderError)
    env.reset(np.random.default_rng(1))
    before = digest(env)
    rejects(lambda: env.reward(0), "next_round", CallOrderError)  # reset, but no round drawn yet
    assert digest(env) == before
    _stream(env)
    env.reset(np.random.default_rng(2))  # a new stream: the last round is gone
    rejects(lambda: env.reward(0), "next_round", CallOrderError)


@pytest.mark.parametrize("kind", ENVIRONMENTS)
@pytest.mark.parametrize("arm", [-1, 5, 1.0, True, "0", None])
def test_reward_refuses_an_arm_that_does_not_exist_unchanged(kind, arm):
    """-1 used to score the last arm (numpy's negative index)."""
    env, twin = ENVIRONMENTS[kind](), ENVIRONMENTS[kind]()
    for e in (env, twin):
        e.reset(np.random.default_rng(1))
        e.next_round()
    before = digest(env)
    rejects(lambda: env.reward(arm), "arm must be an integer in [0, n_arms) = [0, 5)")
    assert digest(env) == before
    assert env.reward(3) == twin.reward(3)
    assert _stream(env) == _stream(twin)
