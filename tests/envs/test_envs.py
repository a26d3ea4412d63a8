"""Environments: the vertical paper's generator and classification→bandit."""

from __future__ import annotations

import numpy as np
import pytest

from privbandits.datasets import load_digits_data
from privbandits.envs import ClassificationBandit, ContextKind, LinearGaussianBandit


def test_linear_gaussian_shapes_norms_and_expected_rewards():
    env = LinearGaussianBandit(dim=100, n_arms=10)
    env.reset(np.random.default_rng(0))
    assert env.context_kind is ContextKind.PER_ARM
    assert np.linalg.norm(env.theta) == pytest.approx(1.0, abs=1e-12)
    for _ in range(300):  # crosses a chunk boundary
        contexts, expected = env.next_round()
        assert contexts.shape == (10, 100)
        np.testing.assert_allclose(np.linalg.norm(contexts, axis=1), 1.0, atol=1e-12)
        np.testing.assert_allclose(expected, contexts @ env.theta, atol=1e-12)


def test_linear_gaussian_noise_has_the_configured_variance():
    env = LinearGaussianBandit(dim=5, n_arms=3, noise_variance=0.05)
    env.reset(np.random.default_rng(1))
    noise = []
    for _ in range(20_000):
        _, expected = env.next_round()
        noise.append(env.reward(1) - expected[1])
    # sample variance of 20,000 normal draws: relative sd ≈ sqrt(2/n) = 1%
    assert np.var(noise) == pytest.approx(0.05, rel=0.05)
    assert abs(np.mean(noise)) < 4 * np.sqrt(0.05 / 20_000)


def test_linear_gaussian_stream_is_independent_of_the_arms_pulled():
    def stream(arm_rule):
        env = LinearGaussianBandit(dim=4, n_arms=5)
        env.reset(np.random.default_rng(7))
        out = []
        for t in range(400):
            contexts, _ = env.next_round()
            out.append((contexts.copy(), env.reward(arm_rule(t))))
        return out

    a, b = stream(lambda t: 0), stream(lambda t: t % 5)
    for (ca, _), (cb, _) in zip(a, b, strict=True):
        np.testing.assert_array_equal(ca, cb)
    # the same noise is added to whichever arm is pulled
    env = LinearGaussianBandit(dim=4, n_arms=5)
    env.reset(np.random.default_rng(7))
    contexts, expected = env.next_round()
    assert env.reward(0) - expected[0] == pytest.approx(env.reward(3) - expected[3])


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"dim": 0}, "LinearGaussianBandit: dim must be >= 1, got 0"),
        ({"n_arms": 0}, "LinearGaussianBandit: n_arms must be >= 1, got 0"),
        ({"context_variance": 0.0}, "LinearGaussianBandit: context_variance must be > 0, got 0.0"),
        ({"noise_variance": -1.0}, "LinearGaussianBandit: noise_variance must be >= 0, got -1.0"),
    ],
)
def test_linear_gaussian_rejects_bad_parameters(kwargs, message):
    with pytest.raises(ValueError) as info:
        LinearGaussianBandit(**kwargs)
    assert str(info.value) == message


def test_linear_gaussian_requires_reset():
    with pytest.raises(RuntimeError, match=r"call reset\(rng\) before next_round\(\)"):
        LinearGaussianBandit().next_round()


def test_classification_bandit_rewards_true_labels_single_and_multi_label():
    features = np.arange(12, dtype=float).reshape(4, 3)
    env = ClassificationBandit(features, np.array([0, 2, 1, 2]))
    assert (env.n_arms, env.dim, env.context_kind) == (3, 3, ContextKind.SHARED)
    env.reset(np.random.default_rng(0))
    seen = []
    for _ in range(4):  # one pass of the shuffled order visits every example once
        context, expected = env.next_round()
        row = int(context[0] // 3)
        seen.append(row)
        assert expected.tolist() == np.eye(3)[[0, 2, 1, 2][row]].tolist()
        assert env.reward([0, 2, 1, 2][row]) == 1.0
    assert sorted(seen) == [0, 1, 2, 3]

    multi = ClassificationBandit(features, np.array([[1, 1, 0], [0, 0, 1], [1, 0, 1], [0, 1, 0]]))
    multi.reset(np.random.default_rng(0))
    context, expected = multi.next_round()
    row = int(context[0] // 3)
    assert [multi.reward(a) for a in range(3)] == expected.tolist()
    assert expected.sum() >= 1 and row in range(4)


@pytest.mark.parametrize(
    ("features", "labels", "message"),
    [
        (np.zeros((3, 2)), np.array([0, 1]), "features have 3 rows but labels have 2"),
        (np.zeros(3), np.array([0, 1, 2]), "features must be a non-empty 2-D array, got shape (3,)"),
        (np.array([[0.0, np.nan]]), np.array([0]), "ClassificationBandit: features must be finite (no NaN or inf), "
         "got nan at index (0, 1)"),
        (np.zeros((2, 2)), np.array([0, -1]), "single-label labels must be non-negative integers"),
        (
            np.zeros((2, 2)),
            np.array([[0, 2], [1, 0]]),
            "labels must be class indices (1-D) or a 0/1 indicator matrix (2-D)",
        ),
    ],
)
def test_classification_bandit_rejects_bad_input(features, labels, message):
    with pytest.raises(ValueError) as info:
        ClassificationBandit(features, labels)
    assert str(info.value) == message


def test_digits_preprocessing_matches_the_mpc_recipe():
    data = load_digits_data(pca_components=20, unit_norm=True)
    assert data.features.shape == (1797, 20)
    np.testing.assert_allclose(np.linalg.norm(data.features, axis=1), 1.0, atol=1e-12)
    assert sorted(np.unique(data.labels).tolist()) == list(range(10))
    raw = load_digits_data(pca_components=None, unit_norm=False)
    assert raw.features.shape == (1797, 64) and raw.features.max() == 16.0
    with pytest.raises(ValueError, match=r"pca_components must be in \[1, 64\] or None, got 65"):
        load_digits_data(pca_components=65)
