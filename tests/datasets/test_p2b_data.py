"""P2B data: the UserInteractions container, the synthetic benchmark, MediaMill/TMC, Criteo and OBD."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import numpy as np
import pytest
from multilabel_fixture import tmc_arff
from sklearn.feature_selection import chi2

from privbandits.datasets.criteo import CATEGORICAL_COLUMNS, KAGGLE_COLUMNS, NUMERIC_COLUMNS, load_criteo
from privbandits.datasets.interactions import UserInteractions, interactions_from_rows, normalise_rows
from privbandits.datasets.multilabel import (
    MultiLabelData,
    chi2_relevance,
    cluster_labels,
    load_arff,
    mediamill_rows,
    multilabel_interactions,
    multilabel_stand_in,
    tmc_rows,
    top_features,
)
from privbandits.datasets.obd import default_obd_path
from privbandits.datasets.p2b_criteo import criteo_interactions, criteo_stand_in, obd_interactions
from privbandits.envs.p2b_synthetic import BLOCK_USERS, P2BSynthetic, p2b_synthetic_chunks, p2b_synthetic_interactions


def on_grid(contexts: np.ndarray, decimals: int = 1) -> bool:
    """Every row sums to 1 and every entry is a multiple of 10^-decimals."""
    scaled = contexts * 10**decimals
    return bool(np.allclose(contexts.sum(axis=-1), 1.0) and np.allclose(scaled, np.rint(scaled)))


# -- UserInteractions and the shared preparation ---------------------------------------------------


def small_interactions(**overrides) -> UserInteractions:
    fields = {
        "contexts": np.arange(4 * 3 * 2, dtype=float).reshape(4, 3, 2),
        "rewards": np.arange(4 * 3 * 5).reshape(4, 3, 5) % 2 == 0,
        "name": "tiny",
        "source": "synthetic: a test",
    }
    return UserInteractions(**{**fields, **overrides})


def test_user_interactions_views_first_and_split():
    data = small_interactions()
    assert data.rewards.dtype == np.int8 and data.contexts.dtype == np.float64
    assert (data.n_users, data.n_interactions, data.dim, data.n_actions) == (4, 3, 2, 5)
    assert not data.is_real and data.observed is None
    with pytest.raises(ValueError, match="read-only"):
        data.contexts[0, 0, 0] = 1.0
    head = data.first(2)
    assert head.contexts.shape == (4, 2, 2) and np.shares_memory(head.contexts, data.contexts)
    np.testing.assert_array_equal(head.rewards, data.rewards[:, :2])
    early, late = data.split()  # int(0.7 · 4) = 2 early users
    np.testing.assert_array_equal(early.contexts, data.contexts[:2])
    np.testing.assert_array_equal(late.rewards, data.rewards[2:])
    assert (early.name, late.source) == ("tiny", "synthetic: a test")
    assert [
        part.n_users
        for part in small_interactions(contexts=np.zeros((10, 3, 2)), rewards=np.zeros((10, 3, 1))).split(0.7)
    ] == [7, 3]
    observed = np.zeros((4, 3, 5), dtype=bool)
    observed[..., 0] = True
    masked = small_interactions(rewards=observed.astype(np.int64), observed=observed)
    assert masked.first(1).observed.shape == (4, 1, 5) and masked.split(0.5)[1].observed.shape == (2, 3, 5)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (
            {"contexts": np.zeros((4, 3))},
            "contexts must be a non-empty (users, interactions, dim) array, got shape (4, 3)",
        ),
        ({"contexts": np.full((4, 3, 2), np.nan)}, "contexts must be finite (no NaN or inf)"),
        ({"rewards": np.zeros((4, 2, 5))}, "rewards must have shape (4, 3, n_actions >= 1), got (4, 2, 5)"),
        ({"rewards": np.full((4, 3, 5), 2)}, "rewards must be 0 or 1"),
        ({"rewards": np.full((4, 3, 5), 0.5)}, "rewards must be 0 or 1"),
        (
            {"rewards": np.full((4, 3, 5), "1")},
            "rewards must be a bool, integer or float array of 0/1 values, got dtype <U1",
        ),
        ({"observed": np.ones((4, 3, 5))}, "observed must be a bool array of shape (4, 3, 5), got float64 (4, 3, 5)"),
        ({"observed": np.zeros((4, 3, 5), dtype=bool)}, "rewards must be 0 wherever observed is False"),
        ({"name": ""}, "name must be a non-empty string"),
        (
            {"source": "somewhere"},
            "source must start with one of 'real data', 'offline stand-in', 'synthetic', got 'somewhere'",
        ),
    ],
)
def test_user_interactions_rejects_bad_fields(overrides, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        small_interactions(**overrides)


def test_first_and_split_errors():
    data = small_interactions()
    with pytest.raises(ValueError, match=r"t must be in \[1, 3\], got 4"):
        data.first(4)
    with pytest.raises(ValueError, match=r"early_fraction must be in \(0, 1\), got 1.0"):
        data.split(1.0)
    with pytest.raises(ValueError, match="early_fraction=0.2 of 4 users gives 0 early users"):
        data.split(0.2)


def test_normalise_rows_by_hand():
    rows = np.array([[0.0, 0, 0], [1, 1, 1], [0.25, 0.25, 0.5], [2, 1, 1], [0, 3, 0]])
    # uniform 1/3 → 3.33 each: floors 3, 3, 3 and the missing unit to the first of the tied remainders
    expected = [[0.4, 0.3, 0.3], [0.4, 0.3, 0.3], [0.3, 0.2, 0.5], [0.5, 0.3, 0.2], [0, 1, 0]]
    np.testing.assert_allclose(normalise_rows(rows, 1), expected)
    np.testing.assert_allclose(normalise_rows(rows, None)[2:], [[0.25, 0.25, 0.5], [0.5, 0.25, 0.25], [0, 1, 0]])
    np.testing.assert_allclose(normalise_rows(rows, 2)[1], [0.34, 0.33, 0.33])
    random = normalise_rows(np.random.default_rng(0).random((500, 10)), 1)
    assert on_grid(random)
    with pytest.raises(ValueError, match="contexts must be finite and non-negative to be normalised to sum 1"):
        normalise_rows(-rows)
    with pytest.raises(ValueError, match="precision must be an integer between 0 and 9"):
        normalise_rows(rows, -1)


def test_interactions_from_rows_chunks_like_array_split():
    contexts = np.eye(2)[np.arange(10) % 2] * (1 + np.arange(10))[:, None]
    rewards = (np.arange(10)[:, None] == np.array([[3, 4, 5]])).astype(np.int8)
    data = interactions_from_rows(contexts, rewards, 3, name="rows", source="real data: a test")
    # np.array_split(10 rows, 3) = [0..3], [4..6], [7..9]; every user keeps ⌊10/3⌋ = 3 rows
    np.testing.assert_array_equal(data.contexts[:, :, 1], [[0, 1, 0], [0, 1, 0], [1, 0, 1]])
    np.testing.assert_array_equal(data.rewards[:, :, 1], [[0, 0, 0], [1, 0, 0], [0, 0, 0]])
    assert data.is_real
    shuffled = interactions_from_rows(contexts, rewards, 3, name="rows", source="real data", shuffle_seed=4)
    order = np.random.default_rng(4).permutation(10)
    np.testing.assert_array_equal(shuffled.rewards[1], rewards[order[4:7]])
    with pytest.raises(ValueError, match=r"n_users must be in \[1, 10\] \(the number of rows\), got 11"):
        interactions_from_rows(contexts, rewards, 11, name="rows", source="real data")


# -- Synthetic benchmark -------------------------------------------------------------------------


def test_synthetic_shapes_probabilities_and_no_bias():
    for mapping in ("softmax", "linear"):
        data = p2b_synthetic_interactions(50, 4, 6, 7, mapping=mapping, seed=1)
        assert data.contexts.shape == (50, 4, 6) and data.rewards.shape == (50, 4, 7)
        np.testing.assert_allclose(data.contexts.sum(axis=2), 1.0)
        assert data.source.startswith("synthetic") and f"mapping={mapping}" in data.source
    generator = P2BSynthetic(6, 7, "softmax", noise_std=0.0, seed=1)
    contexts = generator.sample_contexts(300, np.random.default_rng(0))
    assert contexts.min() >= 0 and np.allclose(contexts.sum(axis=1), 1)
    scores = contexts @ generator.weights.T  # b = 0
    probabilities = generator.reward_probabilities(contexts, np.random.default_rng(1))
    np.testing.assert_allclose(probabilities, 0.1 * np.exp(scores) / np.exp(scores).sum(axis=1, keepdims=True))
    linear = P2BSynthetic(6, 7, "linear", noise_std=0.0, seed=1)
    np.testing.assert_allclose(
        linear.reward_probabilities(contexts, np.random.default_rng(1)), np.clip(0.1 * scores, 0, 1)
    )
    noisy = P2BSynthetic(6, 7, "softmax", beta=5.0, noise_std=3.0, seed=1).reward_probabilities(
        contexts, np.random.default_rng(1)
    )
    assert noisy.min() == 0.0 and noisy.max() == 1.0  # clipped


def test_glorot_weights_bounds_and_fixed_by_seed():
    generator = P2BSynthetic(10, 50, seed=3)
    limit = np.sqrt(6 / (10 + 50))
    weights = generator.weights
    assert weights.shape == (50, 10) and not weights.flags.writeable
    assert np.abs(weights).max() <= limit and np.abs(weights).max() > 0.95 * limit
    assert abs(weights.mean()) < 0.05 and abs(weights.var() - limit**2 / 3) < 0.01
    np.testing.assert_array_equal(weights, P2BSynthetic(10, 50, "linear", seed=3).weights)
    assert not np.array_equal(weights, P2BSynthetic(10, 50, seed=4).weights)


def test_synthetic_reproducible_prefix_and_chunk_size_independent():
    n_users = BLOCK_USERS + 600
    whole = p2b_synthetic_interactions(n_users, 3, 5, 4, mapping="linear", seed=7)
    again = p2b_synthetic_interactions(n_users, 3, 5, 4, mapping="linear", seed=7)
    np.testing.assert_array_equal(whole.contexts, again.contexts)
    np.testing.assert_array_equal(whole.rewards, again.rewards)
    prefix = p2b_synthetic_interactions(100, 3, 5, 4, mapping="linear", seed=7)
    np.testing.assert_array_equal(prefix.contexts, whole.contexts[:100])
    other = p2b_synthetic_interactions(100, 3, 5, 4, mapping="linear", seed=8)
    assert not np.array_equal(other.contexts, prefix.contexts)
    for chunk_users in (7, 1000, BLOCK_USERS, n_users + 5):
        chunks = list(p2b_synthetic_chunks(n_users, 3, chunk_users, 5, 4, mapping="linear", seed=7))
        assert [chunk.n_users for chunk in chunks[:-1]] == [chunk_users] * (len(chunks) - 1)
        np.testing.assert_array_equal(np.concatenate([chunk.contexts for chunk in chunks]), whole.contexts)
        np.testing.assert_array_equal(np.concatenate([chunk.rewards for chunk in chunks]), whole.rewards)
    with pytest.raises(ValueError, match="chunk_users must be >= 1, got 0"):
        p2b_synthetic_chunks(10, 3, 0)  # checked on the call, before any chunk is drawn


def test_linear_mode_reward_scale_and_mappings_differ():
    linear_rates = []
    for n_actions in (10, 50):
        linear = p2b_synthetic_interactions(4000, 10, 10, n_actions, mapping="linear", seed=0)
        linear_rates.append(linear.rewards.mean())
        best_arm = linear.rewards.mean(axis=(0, 1)).max()
        assert 0.001 <= linear_rates[-1] <= 0.03 and best_arm <= 0.03  # spec §5.2 [R]: about 0.001-0.03
    assert linear_rates[1] < linear_rates[0]  # more actions, each less often rewarded
    softmax = p2b_synthetic_interactions(4000, 10, 10, 10, mapping="softmax", seed=0)
    # β·softmax ≈ 0.01 per action, so clip(0.01 + N(0, 0.1²)) has mean ≈ 0.045: noise-dominated
    assert 0.035 < softmax.rewards.mean() < 0.055
    assert not np.array_equal(softmax.rewards, p2b_synthetic_interactions(4000, 10, 10, 10, mapping="linear").rewards)


def test_synthetic_context_options_and_errors():
    dirichlet = P2BSynthetic(4, 3, contexts="dirichlet", decimals=1).generate(200, 2)
    assert on_grid(dirichlet.contexts) and "dirichlet rounded to q=1" in dirichlet.source
    uniform = P2BSynthetic(4, 3).generate(200, 2).contexts
    assert not on_grid(uniform)  # the reference does not round
    with pytest.raises(ValueError, match="mapping must be one of 'softmax', 'linear', got 'relu'"):
        P2BSynthetic(mapping="relu")
    with pytest.raises(ValueError, match="contexts must be one of 'uniform_normalised', 'dirichlet', got 'gauss'"):
        P2BSynthetic(contexts="gauss")
    with pytest.raises(ValueError, match="dim and n_actions must be >= 1, got dim=0, n_actions=3"):
        P2BSynthetic(0, 3)
    with pytest.raises(ValueError, match="n_users and t must be >= 1, got n_users=5, t=0"):
        P2BSynthetic().generate(5, 0)


# -- ARFF and the multi-label reductions ----------------------------------------------------------

DENSE_ARFF = """% MULAN layout: features first, then the labels
@relation 'scene: test'

@attribute Att1 numeric
@attribute 'Att 2' REAL
@attribute Att3\tinteger
@attribute Class1 {0,1}
@attribute "Class2" {0,1}
@data
0.5,1e-1,3,1,0
% a comment between rows

-2,0.25,0,0,1
"""

SPARSE_ARFF = """@RELATION tmc
@ATTRIBUTE w0 {0,1}
@ATTRIBUTE w1 {0,1}
@ATTRIBUTE w2 numeric
@ATTRIBUTE c0 {0,1}
@ATTRIBUTE c1 {0,1}
@DATA
{0 1,2 2.5,4 1}
{}
{1 1, 3 1}
"""


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_load_arff_dense_and_sparse_exactly(tmp_path):
    dense = load_arff(write(tmp_path / "train.arff", DENSE_ARFF), 2)
    np.testing.assert_array_equal(dense.features, [[0.5, 0.1, 3], [-2, 0.25, 0]])
    np.testing.assert_array_equal(dense.labels, [[1, 0], [0, 1]])
    assert dense.labels.dtype == np.int8
    assert (dense.feature_names, dense.label_names) == (("Att1", "Att 2", "Att3"), ("Class1", "Class2"))
    both = load_arff([tmp_path / "train.arff", write(tmp_path / "test.arff", DENSE_ARFF)], 2)
    assert both.features.shape == (4, 3)
    sparse = load_arff(write(tmp_path / "sparse.arff", SPARSE_ARFF), 2)
    np.testing.assert_array_equal(sparse.features, [[1, 0, 2.5], [0, 0, 0], [0, 1, 0]])
    np.testing.assert_array_equal(sparse.labels, [[0, 1], [0, 0], [1, 0]])
    meka = load_arff(tmp_path / "sparse.arff", 2, label_location="start")  # MEKA: labels first
    np.testing.assert_array_equal(meka.labels, [[1, 0], [0, 0], [0, 1]])
    np.testing.assert_array_equal(meka.features, [[2.5, 0, 1], [0, 0, 0], [0, 1, 0]])


@pytest.mark.parametrize(
    ("text", "n_labels", "message"),
    [
        (
            DENSE_ARFF.replace("0.5,1e-1", "?,1e-1"),
            2,
            "line 10: attribute 0 is missing ('?'); missing values are not supported",
        ),
        (DENSE_ARFF.replace("3,1,0", "3,1"), 2, "line 10 has 4 values, expected 5"),
        (DENSE_ARFF.replace("3,1,0", "3,2,0"), 2, "line 10: bad value '2' for attribute 3"),
        (DENSE_ARFF.replace("integer", "string"), 2, "line 6: attribute type 'string' is not supported"),
        (DENSE_ARFF.replace("@data", "@dat"), 2, "line 9: expected @relation, @attribute or @data, got '@dat'"),
        (DENSE_ARFF.split("@data")[0], 2, "has no @data section"),
        (DENSE_ARFF, 3, "the 3 label attributes must be 0 or 1; check n_labels and label_location"),
        (DENSE_ARFF, 5, "n_labels must be in [1, 4] (the file has 5 attributes), got 5"),
        (SPARSE_ARFF.replace("{}", "{7 1}"), 2, "line 9: sparse index 7 is not in [0, 5)"),
        (SPARSE_ARFF.replace("{}", "{1}"), 2, "line 9: bad sparse entry '1'"),
    ],
)
def test_load_arff_errors(tmp_path, text, n_labels, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        load_arff(write(tmp_path / "bad.arff", text), n_labels)


def test_load_arff_argument_errors(tmp_path):
    good = write(tmp_path / "a.arff", DENSE_ARFF)
    with pytest.raises(ValueError, match="label_location must be one of 'end', 'start', got 'middle'"):
        load_arff(good, 2, label_location="middle")
    with pytest.raises(ValueError, match="declares other attributes than"):
        load_arff([good, write(tmp_path / "b.arff", DENSE_ARFF.replace("Att1", "Other"))], 2)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_arff(tmp_path / "missing.arff", 2)


def hand_fixture() -> MultiLabelData:
    """8 samples, 5 features in [0, 1], 4 labels (spelled out in the test below)."""
    labels = np.zeros((8, 4), dtype=np.int8)
    labels[0:4, 0] = 1
    labels[[0, 1, 4, 5], 1] = 1
    labels[0, 2] = 1
    labels[6:8, 3] = 1
    features = np.full((8, 5), 0.1)
    features[0:4, 0] = 0.9  # follows label 0
    features[[0, 1, 4, 5], 1] = 0.9  # follows label 1
    features[:, 2] = 0.5  # constant: χ² = 0
    features[6:8, 3] = 0.9  # follows label 3
    features[:, 4] = [0.2, 0.3] * 4  # balanced against every label: χ² = 0
    return MultiLabelData(features, labels, tuple("abcde"), tuple("wxyz"))


def test_chi2_relevance_by_hand_and_against_sklearn():
    data = hand_fixture()
    kept = data.labels[:, [0, 1, 3]]
    # f3 against label 3 (share 1/4, total 2.4): (1.8 - 0.6)²/0.6 + (0.6 - 1.8)²/1.8 = 3.2; against labels 0 and 1
    # (share 1/2): (0.4 - 1.2)²/1.2 + (2.0 - 1.2)²/1.2 = 16/15 each; mean (3.2 + 32/15)/3 = 16/9.
    # f0 (total 4) against label 0: 2 · (3.6 - 2)²/2 = 2.56; label 1: 0; label 3: (0.2 - 1)²/1 + (3.8 - 3)²/3 = 64/75;
    # mean 256/225, and f1 likewise
    np.testing.assert_allclose(chi2_relevance(data.features, kept), [256 / 225, 256 / 225, 0, 16 / 9, 0])
    rng = np.random.default_rng(0)
    features, labels = rng.random((60, 6)), (rng.random((60, 3)) < 0.4).astype(np.int8)
    reference = np.mean([chi2(features, labels[:, j])[0] for j in range(3)], axis=0)
    np.testing.assert_allclose(chi2_relevance(features, labels), reference)
    np.testing.assert_array_equal(top_features(np.array([1.0, 3, 3, 0, 2]), 3), [1, 2, 4])
    np.testing.assert_array_equal(top_features(np.array([5.0, 1, 1, 1]), 2), [0, 1])  # ties to the lower index


def test_mediamill_reduction_by_hand():
    contexts, rewards = mediamill_rows(
        hand_fixture(),
        n_actions=2,
        dim=3,
        label_min_positives=1,  # label 2 (1 positive) goes: K = 3 kept labels, so 3 most relevant features
        context_sum_range=(2, 5),  # most relevant f0, f1, f3 binarised have sums 4, 4, 2: f3 goes
        pref_min_sum=0,  # least relevant f2 (all 1, sum 8) stays, f4 (all 0) goes
        action_min_positives=1,
    )
    # columns: f0 > 0.45, f1 > 0.45, then the pref column f2 > 0.45
    np.testing.assert_array_equal(
        contexts, [[1, 1, 1], [1, 1, 1], [1, 0, 1], [1, 0, 1], [0, 1, 1], [0, 1, 1], [0, 0, 1], [0, 0, 1]]
    )
    # labels 0, 1, 3: squared distances 4 (0-1), 6 (0-3), 6 (1-3), so 2 groups are {0, 1} and {3}; OR rewards
    np.testing.assert_array_equal(rewards, [[1, 0]] * 6 + [[0, 1]] * 2)
    users = interactions_from_rows(contexts, rewards, 2, name="mediamill", source="real data: hand")
    np.testing.assert_allclose(users.contexts[0], [[0.4, 0.3, 0.3], [0.4, 0.3, 0.3], [0.5, 0, 0.5], [0.5, 0, 0.5]])
    np.testing.assert_allclose(users.contexts[1], [[0, 0.5, 0.5], [0, 0.5, 0.5], [0, 0, 1], [0, 0, 1]])
    with pytest.raises(ValueError, match=r"dim must be <= 3, the context columns left after the filters \(2 context"):
        mediamill_rows(
            hand_fixture(),
            n_actions=2,
            dim=4,
            label_min_positives=1,
            context_sum_range=(2, 5),
            pref_min_sum=0,
            action_min_positives=1,
        )
    with pytest.raises(ValueError, match="n_actions must be <= 2, the labels with more than action_min_positives=2"):
        mediamill_rows(
            hand_fixture(),
            n_actions=3,
            dim=2,
            label_min_positives=1,
            context_sum_range=(2, 5),
            pref_min_sum=0,
            action_min_positives=2,
        )


def test_cluster_labels_groups_and_errors():
    labels = np.array([[1, 1, 0, 0], [1, 1, 0, 1], [0, 0, 1, 1], [0, 0, 1, 1]], dtype=np.int8)
    groups = cluster_labels(labels, 2)
    assert [group.tolist() for group in groups] == [[0, 1], [2, 3]]
    with pytest.raises(ValueError, match=r"n_groups must be in \[1, 4\] \(the number of labels\), got 5"):
        cluster_labels(labels, 5)
    duplicates = cluster_labels(np.ones((3, 3), dtype=np.int8), 2)  # identical columns still fill every group
    assert sorted(np.concatenate(duplicates).tolist()) == [0, 1, 2] and min(map(len, duplicates)) == 1


def test_tmc_reduction_and_pipeline_on_a_sparse_fixture(tmp_path):
    rng = np.random.default_rng(2)
    paths = [
        write(tmp_path / "train.arff", tmc_arff(rng, 40, 30)),
        write(tmp_path / "test.arff", tmc_arff(rng, 25, 30)),
    ]
    data = load_arff(paths, 22)
    contexts, rewards = tmc_rows(data, n_actions=20, dim=6)
    relevant = top_features(chi2_relevance(data.features, data.labels), 6)
    np.testing.assert_array_equal(contexts, data.features[:, relevant])
    np.testing.assert_array_equal(rewards, data.labels[:, :20])
    users = multilabel_interactions("tmc2007_500", paths, n_users=6, dim=6, shuffle_seed=3)
    assert users.contexts.shape == (6, 10, 6) and users.rewards.shape == (6, 10, 20)
    assert on_grid(users.contexts) and users.is_real and str(paths[1]) in users.source
    rows = np.random.default_rng(3).permutation(65)[:10]  # user 0: the first 10 shuffled rows (65 = 6 · 10 + 5)
    np.testing.assert_array_equal(users.rewards[0], rewards[rows])
    np.testing.assert_allclose(users.contexts[0], normalise_rows(contexts[rows]))
    in_order = multilabel_interactions("tmc2007_500", paths, n_users=6, dim=6, shuffle_seed=None)
    np.testing.assert_array_equal(in_order.rewards[1], rewards[11:21])  # array_split: 11 rows for users 0-4
    with pytest.raises(ValueError, match=r"dim must be in \[1, 30\] \(the number of features\), got 31"):
        tmc_rows(data, dim=31)
    with pytest.raises(ValueError, match=r"n_actions must be in \[1, 22\] \(the number of labels\), got 23"):
        tmc_rows(data, n_actions=23)
    with pytest.raises(ValueError, match="name must be one of 'mediamill', 'tmc2007_500', got 'scene'"):
        multilabel_interactions("scene", paths)


def test_multilabel_stand_ins_have_the_papers_shapes():
    mediamill = multilabel_stand_in("mediamill", seed=0)
    assert mediamill.contexts.shape == (425, 103, 20) and mediamill.rewards.shape == (425, 103, 40)
    tmc = multilabel_stand_in("tmc2007_500", seed=0)
    assert tmc.contexts.shape == (275, 103, 20) and tmc.rewards.shape == (275, 103, 20)
    for data in (mediamill, tmc):
        assert data.source.startswith("offline stand-in") and "NOT the real" in data.source and not data.is_real
        assert on_grid(data.contexts)
        assert (data.rewards.sum(axis=(0, 1)) > 0).all()  # every action is sometimes right


# -- Criteo and OBD ------------------------------------------------------------------------------


def kaggle_rows(rng: np.random.Generator, n_rows: int) -> list[list[str]]:
    """Kaggle ``train.txt`` rows; I1, I10 and I12 mostly missing (dropped), as in the real file, so d = 10."""
    rows = []
    for _ in range(n_rows):
        row = {"Label": str(int(rng.random() < 0.5))}
        for column in NUMERIC_COLUMNS:
            missing = rng.random() < (0.6 if column in ("I1", "I10", "I12") else 0.05)
            low = -3 if column == "I2" else 0
            row[column] = "" if missing else str(rng.integers(low, 20))
        for j, column in enumerate(CATEGORICAL_COLUMNS):
            row[column] = f"{rng.integers(2 + j % 3):08x}"
        rows.append([row[column] for column in KAGGLE_COLUMNS])
    return rows


def test_criteo_interactions_on_a_kaggle_fixture(tmp_path):
    path = tmp_path / "train.txt"
    with path.open("w", newline="") as handle:
        csv.writer(handle, delimiter="\t").writerows(kaggle_rows(np.random.default_rng(11), 400))
    users = criteo_interactions(path, n_users=9, n_actions=5)
    log = load_criteo(path, n_items=5, clicked_only=True, scale=False).data
    assert log.user_feature_names == ("I2", "I3", "I4", "I5", "I6", "I7", "I8", "I9", "I11", "I13")
    length = log.n_events // 9
    assert users.contexts.shape == (9, length, 10) and users.rewards.shape == (9, length, 5)
    np.testing.assert_array_equal(users.rewards.sum(axis=2), 1)  # one-hot of the logged label
    starts = np.cumsum([0] + [len(chunk) for chunk in np.array_split(np.arange(log.n_events), 9)])[:-1]
    rows = (starts[:, None] + np.arange(length)).ravel()  # consecutive chunks, no shuffle
    np.testing.assert_array_equal(users.rewards.reshape(-1, 5).argmax(axis=1), log.actions[rows])
    np.testing.assert_allclose(users.contexts.reshape(-1, 10), normalise_rows(log.user_features[rows], 1))
    assert on_grid(users.contexts) and users.is_real and "clicked rows only" in users.source
    assert criteo_interactions(path, n_users=9, n_actions=5, nrows=200).n_interactions < length


REAL_OBD = default_obd_path()


@pytest.mark.skipif(REAL_OBD is None, reason="../shared/data/obd (the OBD sample) is not beside the repo")
def test_obd_interactions_on_the_real_sample():
    users = obd_interactions(REAL_OBD)
    assert users.contexts.shape == (100, 100, 23) and users.rewards.shape == (100, 100, 80)
    assert users.is_real and "replay" in users.source and on_grid(users.contexts)
    np.testing.assert_array_equal(users.observed.sum(axis=2), 1)  # only the logged item is observed
    assert users.rewards.sum() == 38  # all 10,000 rows are kept: the sample's 38 clicks
    top = obd_interactions(REAL_OBD, n_users=20, n_items=10)
    assert top.n_actions == 10 and top.observed.sum(axis=(0, 1))[0] >= top.observed.sum(axis=(0, 1))[-1]
    with pytest.raises(ValueError, match=r"n_items must be in \[1, 80\] or None, got 0"):
        obd_interactions(REAL_OBD, n_items=0)


def test_criteo_stand_in_has_criteo_shapes_and_a_skewed_label_mechanism():
    users = criteo_stand_in(3, n_users=50, n_interactions=40)
    assert users.contexts.shape == (50, 40, 10) and users.rewards.shape == (50, 40, 40)
    assert not users.is_real and "NOT the Criteo log" in users.source and on_grid(users.contexts)
    np.testing.assert_array_equal(users.rewards.sum(axis=2), 1)  # one label per row
    shares = users.rewards.reshape(-1, 40).mean(axis=0)
    assert shares[0] == shares.max() and 0.02 < shares[0] < 0.08  # flat at the top, as the hashed labels are
    again = criteo_stand_in(3, n_users=50, n_interactions=40)
    np.testing.assert_array_equal(again.contexts, users.contexts)
    with pytest.raises(ValueError, match="^dependence must be >= 0, got -1$"):
        criteo_stand_in(dependence=-1)
    with pytest.raises(ValueError, match="^n_users and n_interactions must be >= 1, got 0 and 300$"):
        criteo_stand_in(n_users=0)
