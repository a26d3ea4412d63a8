"""Data and privacy pieces of the MPC bandit experiments: the MNIST IDX loader on a generated
fixture, the paper's preprocessing, the digits stand-in, k-means arms (spec §6.1–6.2), η of
Theorem 1 and the two membership-inference metrics (§6.5)."""

from __future__ import annotations

import gzip
import math
import struct

import numpy as np
import pytest
from sklearn.decomposition import PCA

from privbandits.datasets.mnist import MNIST_FILES, digits_stand_in, load_mnist, paper_preprocess, read_idx
from privbandits.envs.kmeans_arms import KMeansArmsBandit, kmeans_centres
from privbandits.privacy import epsilon_greedy
from privbandits.privacy.membership import Outcomes, membership_advantages, per_arm_advantage, reward_gap_advantage


def _write_idx(path, array, code=0x08, compress=False):
    header = bytes([0, 0, code, array.ndim]) + struct.pack(f">{array.ndim}I", *array.shape)
    data = header + array.astype(array.dtype.newbyteorder(">")).tobytes()
    path.write_bytes(gzip.compress(data) if compress else data)


@pytest.mark.parametrize(("code", "dtype"), [(0x08, np.uint8), (0x0C, np.int32), (0x0D, np.float32)])
@pytest.mark.parametrize("compress", [False, True])
def test_read_idx_round_trips_types_and_compression(tmp_path, code, dtype, compress):
    array = (np.arange(24).reshape(2, 3, 4) * 3).astype(dtype)
    path = tmp_path / ("a.idx.gz" if compress else "a.idx")
    _write_idx(path, array, code, compress)
    read = read_idx(path)
    np.testing.assert_array_equal(read, array)
    assert read.dtype == np.dtype(dtype)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"\x01\x00\x08\x01", r"not an IDX file \(magic bytes 01000801\)"),
        (b"\x00\x00\x08\x02\x00\x00\x00\x02", r"header needs 2 dimension sizes"),
        (b"\x00\x00\x08\x01\x00\x00\x00\x05abc", r"IDX shape \(5,\) of uint8 needs 13 bytes, file has 11"),
    ],
)
def test_read_idx_refuses_malformed_files(tmp_path, data, message):
    path = tmp_path / "bad.idx"
    path.write_bytes(data)
    with pytest.raises(ValueError, match=message):
        read_idx(path)


def test_load_mnist_applies_the_papers_preprocessing_to_a_fixture(tmp_path):
    """Pixels / 255, PCA fitted on train (eigh of the covariance), projection, unit norm (spec §6.1)."""
    rng = np.random.default_rng(0)
    images = {"train": rng.integers(0, 256, (60, 28, 28)), "test": rng.integers(0, 256, (15, 28, 28))}
    labels = {"train": rng.integers(0, 10, 60), "test": rng.integers(0, 10, 15)}
    for part in ("train", "test"):
        _write_idx(tmp_path / (MNIST_FILES[f"{part}_images"] + ".gz"), images[part].astype(np.uint8), compress=True)
        _write_idx(tmp_path / MNIST_FILES[f"{part}_labels"], labels[part].astype(np.uint8))
    data = load_mnist(tmp_path)
    assert data.train.features.shape == (60, 20) and data.test.features.shape == (15, 20)
    np.testing.assert_array_equal(data.train.labels, labels["train"])
    np.testing.assert_allclose(np.linalg.norm(data.test.features, axis=1), 1.0)
    assert not data.stand_in
    pixels = images["train"].reshape(60, -1) / 255.0
    reference = PCA(20, svd_solver="full").fit(pixels).transform(images["test"].reshape(15, -1) / 255.0)
    reference /= np.linalg.norm(reference, axis=1, keepdims=True)
    np.testing.assert_allclose(np.abs(data.test.features), np.abs(reference), atol=1e-8)  # up to component signs


def test_load_mnist_names_the_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"has no train-images-idx3-ubyte or train-images-idx3-ubyte.gz"):
        load_mnist(tmp_path)


def test_paper_preprocess_checks_the_component_count():
    with pytest.raises(ValueError, match=r"components must be in \[1, 4\], got 5"):
        paper_preprocess(np.ones((3, 4)), np.ones((2, 4)), 5)


def test_digits_stand_in_is_labelled_and_preprocessed_like_mnist():
    data = digits_stand_in()
    assert data.stand_in and "STAND-IN" in data.source
    assert data.train.features.shape == (1438, 20) and data.test.features.shape == (359, 20)
    np.testing.assert_allclose(np.linalg.norm(data.train.features, axis=1), 1.0)
    assert set(np.unique(data.train.labels)) == set(range(10))


def test_kmeans_arms_pay_bernoulli_of_the_unnormalised_kernel():
    """ν_a(x) = exp(−‖x − c_a‖²/(2σ)), σ = 1/2, r = 1{ν_a > U} with one U per round (spec §6.2)."""
    features = digits_stand_in().train.features
    centres = kmeans_centres(features, 5, seed=0)
    assert centres.shape == (5, 20)
    env = KMeansArmsBandit(features, centres)
    env.reset(np.random.default_rng(1))
    wins, means = [], []
    for _ in range(3000):
        round_ = env.next_round()
        expected = np.exp(-((round_.contexts - centres) ** 2).sum(axis=1))
        np.testing.assert_allclose(round_.expected_rewards, expected)
        wins.append(env.reward(2))
        means.append(expected[2])
    assert abs(np.mean(wins) - np.mean(means)) <= 4 * math.sqrt(0.25 / 3000)
    with pytest.raises(ValueError, match=r"n_clusters must be in \[2, 1438\], got 1"):
        kmeans_centres(features, 1)


def test_eta_of_theorem_1_its_tight_version_and_inverse():
    """Spec §4.3 table: ε = |A|e^{−η} for |A| = 10; §5: η* ≤ η (6.899 vs 6.908 at ε = 0.01)."""
    for eta, epsilon in [(5, 0.0674), (6, 0.0248), (7, 0.00912), (8, 0.00335), (9, 0.00123)]:
        assert epsilon_greedy.exploration_for_loss(10, eta) == pytest.approx(epsilon, rel=4e-3)
        assert epsilon_greedy.action_privacy_loss(10, epsilon_greedy.exploration_for_loss(10, eta)) == pytest.approx(
            eta
        )
    assert epsilon_greedy.tight_privacy_loss(10, 0.01) == pytest.approx(6.899, abs=1e-3)
    assert epsilon_greedy.action_privacy_loss(10, 0.01) == pytest.approx(6.908, abs=1e-3)
    assert epsilon_greedy.action_privacy_loss(10, 0.0) == math.inf
    assert epsilon_greedy.action_privacy_loss(10, 1.0) == pytest.approx(math.log(10))
    with pytest.raises(ValueError, match=r"eta must be >= log\(n_arms\)"):
        epsilon_greedy.exploration_for_loss(10, 2.0)


def test_membership_metrics_on_known_outcomes():
    """Members always rewarded on arm 0, non-members never: both advantages are 1; the same
    outcomes for both sets give 0."""
    win = Outcomes(np.zeros(50, dtype=int), np.ones(50))
    lose = Outcomes(np.zeros(50, dtype=int), np.zeros(50))
    assert per_arm_advantage(win, lose, win, lose, 10) == 1.0
    assert reward_gap_advantage(win, lose) == 1.0
    assert per_arm_advantage(win, win, win, win, 10) == 0.0 and reward_gap_advantage(lose, lose) == 0.0


def test_membership_advantage_of_an_uninformed_model_is_small():
    """A model with no data (W^{-1} = I, b = 0) picks arms at random for everyone: advantages ≈ 0."""
    data = digits_stand_in()
    eye, rng = np.eye(10), np.random.default_rng(0)
    members = (data.train.features[:359], eye[data.train.labels[:359]])
    nonmembers = (data.test.features, eye[data.test.labels])
    advantages = membership_advantages(
        np.tile(np.eye(20), (10, 1, 1)), np.zeros((10, 20)), members, nonmembers, 0.1, rng
    )
    assert abs(advantages.per_arm) < 0.12 and advantages.reward_gap < 0.06
