"""MovieLens ``ratings.dat`` loader and the SVD + k-means user-vector recipe (spec fclub.md §6.2, §8 A19)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from privbandits.datasets.movielens import (
    default_fclub_data_path,
    load_interactions,
    load_ratings,
    most_active,
    preference_vectors,
    user_features,
)
from privbandits.envs.clustered import PooledUsersBandit
from privbandits.papers.fclub.runs import Setting, with_data


def write_ratings(path, groups: int = 3, per_group: int = 20, movies_per_group: int = 30, seed: int = 0):
    """A ratings.dat whose users fall in ``groups`` taste groups (each rates mostly its own block of movies)."""
    rng = np.random.default_rng(seed)
    lines, truth = [], {}
    for user in range(1, groups * per_group + 1):
        group = (user - 1) // per_group
        truth[user * 7] = group  # sparse, unsorted ids as in the real file
        for movie in range(1, groups * movies_per_group + 1):
            own = (movie - 1) // movies_per_group == group
            if rng.random() < (0.8 if own else 0.05):
                lines.append(f"{user * 7}::{movie + 1000}::{rng.integers(1, 6)}::{978300760 + movie}")
    rng.shuffle(lines)
    path.write_text("\n".join(lines) + "\n")
    return truth


def test_loader_reads_the_movielens_format_into_a_binary_matrix(tmp_path):
    path = tmp_path / "ratings.dat"
    path.write_text("1::1193::5::978300760\n1::661::3::978302109\n7::661::4::978301968\n7::661::2::978301969\n\n")
    ratings = load_ratings(path)
    assert ratings.user_ids.tolist() == [1, 7] and ratings.movie_ids.tolist() == [661, 1193]
    np.testing.assert_array_equal(ratings.matrix.toarray(), [[1, 1], [1, 0]])  # the repeated rating is one 1


@pytest.mark.parametrize(
    ("text", "message"),
    [("1::2::3\n", "line 1: expected 'UserID::MovieID::Rating::Timestamp'"),
     ("1::2::3::4\nx::2::3::4\n", "line 2: user and movie ids must be integers"),
     ("\n", "holds no ratings")],
)  # fmt: skip
def test_loader_errors_say_where_and_what(tmp_path, text, message):
    path = tmp_path / "ratings.dat"
    path.write_text(text)
    with pytest.raises(ValueError, match=message):
        load_ratings(path)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_ratings(tmp_path / "missing.dat")


def test_most_active_takes_top_users_then_items_then_users():
    matrix = np.zeros((7, 5))
    matrix[0, :5] = 1  # 5 ratings
    matrix[1, :4] = 1
    matrix[2, [3, 4]] = 1
    matrix[3, 0] = 1
    matrix[4:, 4] = 1  # three users with one rating each, of the least rated item among the top users
    top = most_active(matrix, 2, 3)  # top 6 users: 0..5; items by raters among them: 4 (4), 0 (3), 3 (3)
    np.testing.assert_array_equal(top, [[1, 1, 1], [0, 1, 1]])  # users 0 (3 of those items) and 1 (2, before 2)
    with pytest.raises(ValueError, match="asked for 8 users"):
        most_active(matrix, 8, 2)


def test_features_are_unit_norm_with_last_coordinate_one_over_root_two():
    features = user_features(np.random.default_rng(0).integers(0, 2, (30, 20)), dim=6)
    assert features.shape == (30, 6)
    np.testing.assert_allclose(np.linalg.norm(features, axis=1), 1.0)
    np.testing.assert_allclose(features[:, -1], 1 / np.sqrt(2))
    with pytest.raises(ValueError, match="dim"):
        user_features(np.ones((5, 3)), dim=6)


def test_recipe_on_a_generated_ratings_file_recovers_the_taste_groups(tmp_path):
    """ratings.dat → binary matrix → most active → SVD → k-means: users of a group share one θ."""
    truth = write_ratings(tmp_path / "ratings.dat")
    ratings = load_ratings(tmp_path / "ratings.dat")
    assert ratings.matrix.shape[0] == 60 and set(np.unique(ratings.matrix.data)) == {1.0}
    assert most_active(ratings.matrix, 20, 30).shape == (20, 30)
    prefs = preference_vectors(ratings.matrix.toarray(), dim=5, n_clusters=3, seed=0)
    groups = np.array([truth[user] for user in ratings.user_ids])
    pairs = {(g, label) for g, label in zip(groups, prefs.labels, strict=True)}
    assert len(pairs) == 3  # a one-to-one map between taste groups and k-means labels
    np.testing.assert_array_equal(prefs.user_thetas, prefs.centres[prefs.labels])
    for i, j in itertools.combinations(range(3), 2):
        assert np.linalg.norm(prefs.centres[i] - prefs.centres[j]) > 0.3


def test_pooled_users_environment_samples_users_and_derives_their_clusters():
    prefs = preference_vectors(np.random.default_rng(1).integers(0, 2, (80, 40)), dim=6, n_clusters=4)
    env = PooledUsersBandit(prefs.user_thetas, n_users=20, n_arms=5)
    env.reset(np.random.default_rng(0))
    np.testing.assert_array_equal(env.thetas[env.cluster_of], env.user_thetas)
    assert env.n_clusters == len(np.unique(env.user_thetas, axis=0)) <= 4
    contexts, expected = env.next_round()
    np.testing.assert_allclose(expected, contexts @ env.user_thetas[env.user])
    assert 0 <= expected.min() and expected.max() <= 1 and env.reward(0) in (0.0, 1.0)
    first = env.user_thetas.copy()
    env.reset(np.random.default_rng(1))
    assert not np.array_equal(first, env.user_thetas)  # another seed, another sample of users
    with pytest.raises(ValueError, match="N >= n_users"):
        PooledUsersBandit(prefs.user_thetas, n_users=81)
    fixed = PooledUsersBandit(prefs.user_thetas, n_users=20, n_arms=5, draw=False)
    for seed in (0, 1):
        fixed.reset(np.random.default_rng(seed))
        np.testing.assert_array_equal(fixed.user_thetas, prefs.user_thetas[:20])  # the reference code's first users


@pytest.mark.skipif(default_fclub_data_path() is None, reason="../shared/data/fclub is absent")
def test_reference_users_are_the_reference_codes_first_forty():
    """Spec §7.7: its MovieLens users are the first 40 of its 1000 vectors: 6 distinct θ's, one shared by 31."""
    setting = with_data(Setting(kind="movielens-reference"), None)  # ../shared/data/fclub
    env = setting.environment()
    env.reset(np.random.default_rng(0))
    assert sorted(np.bincount(env.cluster_of).tolist()) == [1, 1, 2, 2, 3, 31]
    with pytest.raises(ValueError, match="kind must be one of"):
        Setting(kind="yelp")
    with pytest.raises(ValueError, match=r"ml_1000user_d10.npy have shape \(1000, 10\), need \(users, dim=5\)"):
        with_data(Setting(kind="movielens-reference", dim=5), None).environment()


@pytest.mark.skipif(default_fclub_data_path() is None, reason="../shared/data/fclub is absent")
def test_recipe_on_the_shipped_movielens_matrix_gives_four_separated_clusters():
    binary = load_interactions(default_fclub_data_path() / "ml_500user_500item.npy")
    prefs = preference_vectors(binary, dim=10, n_clusters=4, seed=0)
    assert binary.shape == (500, 500) and np.bincount(prefs.labels).min() > 50
    gaps = np.linalg.norm(prefs.centres[:, None] - prefs.centres[None], axis=-1)[np.triu_indices(4, 1)]
    assert gaps.min() > 0.3


def test_reference_users_name_the_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="ml_1000user_d10.npy is absent: movielens-reference needs it"):
        Setting(kind="movielens-reference").environment()
    assert with_data(Setting(kind="movielens-reference"), tmp_path) is None  # a folder without it


# -- MovieLens-100K from raw ratings (issue 15 item 3) -----------------------------------------------


def _ratings_file(path, users=60, items=40, seed=0):
    """A u.data-style file: user item rating timestamp, tab-separated, users with different tastes."""
    rng = np.random.default_rng(seed)
    lines = []
    for user in range(1, users + 1):
        liked = rng.choice(items, size=rng.integers(5, items), replace=False) + 1
        lines += [f"{user}\t{item}\t{rng.integers(1, 6)}\t{880000000 + user}" for item in liked]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_the_a19_panel_runs_from_raw_ratings(tmp_path):
    from privbandits.papers.fclub.panels import a19_setting, title

    setting, note = a19_setting(None, _ratings_file(tmp_path / "u.data"))
    assert setting.kind == "movielens-100k" and note is None
    env = setting.environment()
    env.reset(np.random.default_rng(0))
    assert env.user_thetas.shape == (40, 10) and 1 <= env.n_clusters <= 4
    np.testing.assert_allclose(np.linalg.norm(env.user_thetas, axis=1) <= 1 + 1e-12, True)
    assert title(setting, 100).startswith("MovieLens-100K, spec A19 from raw ratings")


def test_without_the_cached_ratings_the_a19_panel_falls_back_to_the_shipped_matrix_and_says_so():
    from privbandits.papers.fclub.panels import a19_setting, title

    setting, note = a19_setting(None)  # tests point the data cache at an empty folder
    assert "FALLS BACK to the shipped 500 × 500 matrix" in note
    if setting is not None:  # ../shared/data/fclub is there
        assert setting.kind == "movielens" and "fallback" in title(setting, 100)


def test_with_the_cached_ratings_fig2_runs_movielens_100k_by_default(tmp_path, monkeypatch):
    from privbandits.papers.fclub import fig2, panels
    from privbandits.papers.fclub.options import Fig2Options

    ratings = _ratings_file(tmp_path / "ml-100k.inter")
    monkeypatch.setattr(panels, "is_cached", lambda name: name == "movielens-100k")
    monkeypatch.setattr(panels, "cached", lambda name: ratings)
    kinds = {t.params["setting"]["kind"] for t in fig2.tasks(Fig2Options(horizon=14, seeds=1))}
    assert "movielens-100k" in kinds and "movielens" not in kinds
    units = [t for t in fig2.tasks(Fig2Options(horizon=14, seeds=1)) if t.params["setting"]["kind"] == "movielens-100k"]
    assert units[0].params["data"]["sha256"]  # the ratings file's identity is in the key
