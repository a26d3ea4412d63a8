"""P2B's context encoder: the simplex grid, rounding, k-means codes and the cache (spec p2b.md §2.4, §9.8, §9.23)."""

from __future__ import annotations

import time

import numpy as np
import pytest
from scipy import stats

import privbandits.privacy.encoding as encoding
from privbandits.privacy.encoding import (
    ContextEncoder,
    EncoderCacheWarning,
    cache_path,
    default_cache_dir,
    fit_encoder,
    grid_rank,
    grid_size,
    load_or_fit_encoder,
    reindex_by_centroid_sum,
    round_to_grid,
    sample_simplex_grid,
    simplex_grid,
)


def units(points: np.ndarray, precision: int = 1) -> np.ndarray:
    """Grid points as integer vectors (entries times 10^q), checking they are integers."""
    scaled = points * 10**precision
    rounded = np.rint(scaled)
    np.testing.assert_allclose(scaled, rounded, rtol=0, atol=1e-9)
    return rounded.astype(np.int64)


def squared_distances(points: np.ndarray, centroids: np.ndarray) -> np.ndarray:
    return ((points[:, None, :] - centroids[None, :, :]) ** 2).sum(axis=-1)


# --- the grid ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("dim", "precision", "n"),
    [(3, 1, 66), (6, 1, 3_003), (10, 1, 92_378), (20, 1, 20_030_010), (4, 0, 4), (1, 2, 1), (2, 2, 101)],
)
def test_grid_size_is_eq_1(dim, precision, n):
    assert grid_size(dim, precision) == n
    assert isinstance(grid_size(dim, precision), int)


@pytest.mark.parametrize(("dim", "precision"), [(3, 1), (6, 1), (4, 2), (1, 1), (5, 0)])
def test_simplex_grid_enumerates_every_point_once(dim, precision):
    grid = simplex_grid(dim, precision)
    counts = units(grid, precision)
    assert grid.shape == (grid_size(dim, precision), dim)
    assert len(np.unique(counts, axis=0)) == len(grid)
    assert np.all(counts >= 0)
    assert np.all(counts.sum(axis=1) == 10**precision)
    np.testing.assert_allclose(grid.sum(axis=1), 1.0, rtol=0, atol=1e-12)


def test_simplex_grid_is_in_lexicographic_order():
    counts = units(simplex_grid(3, 1))
    assert counts[0].tolist() == [0, 0, 10]
    assert counts[1].tolist() == [0, 1, 9]
    assert counts[-1].tolist() == [10, 0, 0]
    assert [tuple(row) for row in counts] == sorted(tuple(row) for row in counts)


def test_simplex_grid_refuses_large_grids():
    with pytest.raises(ValueError) as error:
        simplex_grid(20, 1)
    assert str(error.value) == (
        "the grid for dim=20, precision=1 has 20,030,010 points, more than the limit of 5,000,000 rows; "
        "use sample_simplex_grid instead"
    )
    with pytest.raises(ValueError, match="has 66 points, more than the limit of 65 rows"):
        simplex_grid(3, 1, max_rows=65)


@pytest.mark.parametrize(
    ("dim", "precision", "message"),
    [
        (0, 1, "dim must be an integer >= 1, got 0"),
        (2.0, 1, "dim must be an integer >= 1, got 2.0"),
        (3, -1, "precision must be an integer between 0 and 9 (decimal digits), got -1"),
        (3, 10, "precision must be an integer between 0 and 9 (decimal digits), got 10"),
        (3, True, "precision must be an integer between 0 and 9 (decimal digits), got True"),
    ],
)
def test_grid_arguments_are_checked(dim, precision, message):
    with pytest.raises(ValueError) as error:
        grid_size(dim, precision)
    assert str(error.value) == message


def test_sampler_hits_grid_points_uniformly():
    grid = units(simplex_grid(3, 1))
    index = {tuple(row): i for i, row in enumerate(grid)}
    draws = units(sample_simplex_grid(3, 1, 66_000, np.random.default_rng(12345)))
    hits = np.bincount([index[tuple(row)] for row in draws], minlength=len(grid))  # KeyError if off the grid
    assert len(hits) == 66 and hits.sum() == 66_000
    assert stats.chisquare(hits).pvalue > 0.01


def test_sampler_on_a_grid_too_large_to_enumerate():
    draws = sample_simplex_grid(20, 1, 20_000, np.random.default_rng(0))
    counts = units(draws)
    assert draws.shape == (20_000, 20)
    assert np.all(counts >= 0) and np.all(counts.sum(axis=1) == 10)
    # a uniform grid point has E[entry] = 10/20 units and P(entry = 0) = C(28, 18)/C(29, 19) = 19/29
    assert abs(counts.mean() - 0.5) < 0.01
    assert abs((counts == 0).mean() - 19 / 29) < 0.01


def test_sampler_is_reproducible_and_checks_size():
    first = sample_simplex_grid(6, 1, 100, np.random.default_rng(7))
    np.testing.assert_array_equal(first, sample_simplex_grid(6, 1, 100, np.random.default_rng(7)))
    assert sample_simplex_grid(6, 1, 0, np.random.default_rng(7)).shape == (0, 6)
    assert units(sample_simplex_grid(1, 1, 3, np.random.default_rng(7))).tolist() == [[10], [10], [10]]
    with pytest.raises(ValueError) as error:
        sample_simplex_grid(6, 1, -1, np.random.default_rng(7))
    assert str(error.value) == "size must be an integer >= 0, got -1"


# --- rounding onto the grid -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("context", "rounded"),
    [
        ([0.33, 0.33, 0.34], [0.3, 0.3, 0.4]),
        ([0.26, 0.26, 0.48], [0.3, 0.2, 0.5]),  # two units short: the largest remainders, ties to the lower index
        ([0.25, 0.25, 0.5], [0.3, 0.2, 0.5]),
        ([0.15, 0.15, 0.7], [0.2, 0.1, 0.7]),  # 0.15 · 10 is 1.4999999999999998 in floats, still a tie
        ([1.0, 2.0, 3.0], [0.2, 0.3, 0.5]),  # normalised first: 1/6, 2/6, 3/6
        ([0.0, 0.0, 0.0], [0.4, 0.3, 0.3]),  # all-zero: uniform 1/3 each, then rounded
        ([0, 0, 0, 0], [0.3, 0.3, 0.2, 0.2]),
        ([0, 0, 0, 0, 0], [0.2, 0.2, 0.2, 0.2, 0.2]),
        ([0.0, 5.0, 0.0], [0.0, 1.0, 0.0]),
        ([0.1] * 10, [0.1] * 10),
    ],
)
def test_round_to_grid_hand_cases(context, rounded):
    result = round_to_grid(np.array(context, dtype=float), 1)
    np.testing.assert_allclose(result, rounded, rtol=0, atol=1e-12)
    assert units(result).sum() == 10


def test_round_to_grid_gives_the_nearest_grid_point():
    rng = np.random.default_rng(3)
    for dim in (3, 6):
        grid = simplex_grid(dim, 1)
        contexts = rng.random((300, dim)) ** 3
        contexts /= contexts.sum(axis=1, keepdims=True)
        rounded = round_to_grid(contexts, 1)
        assert np.all(units(rounded).sum(axis=1) == 10)
        nearest = squared_distances(contexts, grid).min(axis=1)
        np.testing.assert_allclose(((rounded - contexts) ** 2).sum(axis=1), nearest, rtol=0, atol=1e-12)


def test_round_to_grid_keeps_grid_points_and_shapes():
    grid = simplex_grid(6, 1)
    np.testing.assert_array_equal(units(round_to_grid(grid, 1)), units(grid))
    assert round_to_grid(np.zeros((0, 4)), 1).shape == (0, 4)
    assert round_to_grid([3.0, 1.0], 2).tolist() == [0.75, 0.25]
    assert round_to_grid([[1.0, 2.0]], 0).tolist() == [[0.0, 1.0]]


@pytest.mark.parametrize(
    ("contexts", "message"),
    [
        ([0.5, -0.1, 0.6], "contexts must be non-negative to be normalised into a histogram; found a negative entry"),
        ([0.5, np.nan], "contexts must be finite (no NaN or infinity)"),
        (np.ones((2, 2, 2)), "contexts must be one context (d,) or a batch (m, d) with d >= 1, got shape (2, 2, 2)"),
        (np.ones((3, 0)), "contexts must be one context (d,) or a batch (m, d) with d >= 1, got shape (3, 0)"),
    ],
)
def test_round_to_grid_rejects_bad_contexts(contexts, message):
    with pytest.raises(ValueError) as error:
        round_to_grid(contexts, 1)
    assert str(error.value) == message


# --- the encoder ------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def figure_2() -> ContextEncoder:
    """The paper's Figure 2: d = 3, q = 1 (66 points), k = 6 codes."""
    return fit_encoder(3, 1, 6, seed=0)


def test_figure_2_every_grid_point_gets_one_code(figure_2):
    grid = simplex_grid(3, 1)
    codes = figure_2.encode(grid)
    assert codes.dtype == np.int64 and codes.shape == (66,)
    assert set(codes.tolist()) == set(range(6))
    assert (figure_2.n_codes, figure_2.dim, figure_2.precision) == (6, 3, 1)
    assert figure_2.grid_counts_exact
    np.testing.assert_array_equal(figure_2.grid_points_per_code, np.bincount(codes, minlength=6))
    assert figure_2.grid_points_per_code.sum() == 66
    assert figure_2.min_crowd == figure_2.grid_points_per_code.min() >= 1


def test_figure_2_codes_are_nearest_centroids(figure_2):
    grid = simplex_grid(3, 1)
    distances = squared_distances(grid, figure_2.centroids)
    chosen = distances[np.arange(66), figure_2.encode(grid)]
    np.testing.assert_allclose(chosen, distances.min(axis=1), rtol=0, atol=1e-12)


def test_codes_are_deterministic_for_a_seed(figure_2):
    again = fit_encoder(3, 1, 6, seed=0)
    grid = simplex_grid(3, 1)
    np.testing.assert_array_equal(again.centroids, figure_2.centroids)
    np.testing.assert_array_equal(again.encode(grid), figure_2.encode(grid))
    np.testing.assert_array_equal(again.grid_points_per_code, figure_2.grid_points_per_code)


def test_codes_are_ordered_by_centroid_sum(figure_2):
    sums = figure_2.centroids.sum(axis=1)
    assert np.all(np.diff(sums) >= 0)


def test_reindex_by_centroid_sum_is_the_reference_renumbering():
    centroids = np.array([[0.5, 0.6], [0.1, 0.1], [0.3, 0.3], [0.2, 0.4]])  # sums 1.1, 0.2, 0.6, 0.6
    code = reindex_by_centroid_sum(centroids)
    assert code.tolist() == [3, 0, 1, 2]  # equal sums keep label order
    reordered = np.empty_like(centroids)
    reordered[code] = centroids
    np.testing.assert_array_equal(reordered.sum(axis=1), np.sort(centroids.sum(axis=1)))


def test_encoder_is_a_lloyd_fixed_point_of_the_grid_numbered_by_centroid_sum():
    """What P2B relies on from k-means, not scikit-learn's exact output (which moves between its versions): the
    codes partition the grid into nearest-centroid cells, each centroid is the mean of its cell (to Lloyd's
    stopping rule, sklearn's tol = 1e-4 of the mean variance), the counts are the cells' sizes and the codes run
    by ascending centroid sum (the reference's renumbering)."""
    grid = simplex_grid(6, 1)
    encoder = fit_encoder(6, 1, 16, seed=4)
    codes = encoder.encode(grid)
    np.testing.assert_array_equal(codes, squared_distances(grid, encoder.centroids).argmin(axis=1))
    np.testing.assert_array_equal(encoder.grid_points_per_code, np.bincount(codes, minlength=16))
    assert encoder.grid_points_per_code.min() > 0
    means = np.stack([grid[codes == code].mean(axis=0) for code in range(16)])
    stop = np.sqrt(1e-4 * grid.var(axis=0).mean())
    assert np.abs(means - encoder.centroids).max() <= stop
    assert np.all(np.diff(encoder.centroids.sum(axis=1)) >= 0)


def test_encode_breaks_ties_to_the_lowest_code_and_accepts_one_context():
    encoder = ContextEncoder(np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 1.0]]), 1, [6, 5, 0], True)
    assert encoder.encode(np.array([0.5, 0.5])) == 0
    assert isinstance(encoder.encode([0.5, 0.5]), int)
    assert encoder.encode([0.3, 0.7]) == 1  # equidistant from the duplicated centroids 1 and 2
    assert encoder.encode(np.array([[0.7, 0.3], [0.2, 0.8]])).tolist() == [0, 1]
    assert encoder.min_crowd == 0


@pytest.mark.parametrize(
    ("dim", "precision"), [(1, 1), (2, 3), (3, 1), pytest.param(5, 2, marks=pytest.mark.slow), (10, 1)]
)  # (5, 2): 4.6 million grid points, 3 s
def test_grid_rank_is_the_row_of_simplex_grid(dim, precision):
    grid = simplex_grid(dim, precision)
    np.testing.assert_array_equal(grid_rank(units(grid, precision), precision), np.arange(len(grid)))


def test_grid_contexts_are_encoded_by_lookup_as_the_kernel_would(monkeypatch):
    encoder = fit_encoder(5, 1, 40, seed=1)
    rng = np.random.default_rng(2)
    on_grid = round_to_grid(rng.dirichlet(np.ones(5), size=3000), 1)
    off_grid = rng.dirichlet(np.ones(5), size=3000)
    mixed = np.concatenate([on_grid, off_grid, on_grid + 1e-12])[rng.permutation(9000)]
    expected = squared_distances(mixed, encoder.centroids).argmin(axis=1)
    np.testing.assert_array_equal(encoder.encode(mixed), expected)
    assert encoder._grid_codes is not None
    monkeypatch.setattr(encoding, "GRID_TABLE_MAX", 10)  # a fresh encoder over a larger grid has no table
    big = ContextEncoder(encoder.centroids, 1, encoder.grid_points_per_code, True)
    assert big._grid_codes is None
    np.testing.assert_array_equal(big.encode(mixed), expected)


def test_encode_matches_brute_force(figure_2):
    contexts = np.random.default_rng(5).dirichlet(np.ones(3), size=1_000)
    expected = squared_distances(contexts, figure_2.centroids).argmin(axis=1)
    np.testing.assert_array_equal(figure_2.encode(contexts), expected)
    assert figure_2.encode(np.zeros((0, 3))).shape == (0,)


def test_encoder_is_read_only(figure_2):
    with pytest.raises(ValueError):
        figure_2.centroids[0, 0] = 1.0
    with pytest.raises(AttributeError):
        figure_2.precision = 2


@pytest.mark.parametrize(
    ("contexts", "message"),
    [
        (np.ones((4, 2)), "contexts must be one context (3,) or a batch (m, 3), got shape (4, 2)"),
        (np.ones(4), "contexts must be one context (3,) or a batch (m, 3), got shape (4,)"),
        ([np.inf, 0.0, 0.0], "contexts must be finite (no NaN or infinity)"),
    ],
)
def test_encode_rejects_bad_contexts(figure_2, contexts, message):
    with pytest.raises(ValueError) as error:
        figure_2.encode(contexts)
    assert str(error.value) == message


@pytest.mark.parametrize(
    ("centroids", "counts", "message"),
    [
        (np.ones(3), [1], "centroids must be a (k, d) array with k, d >= 1, got shape (3,)"),
        ([[np.nan, 1.0]], [11], "centroids must be finite (no NaN or infinity)"),
        ([[0.5, 0.5]], [5, 6], "grid_points_per_code must have one count per code, shape (1,), got (2,)"),
        ([[0.5, 0.5], [1.0, 0.0]], [5, 5], "grid_points_per_code must be non-negative and sum to the grid size n=11"),
        ([[0.5, 0.5], [1.0, 0.0]], [12, -1], "grid_points_per_code must be non-negative and sum to the grid size n=11"),
    ],
)
def test_encoder_checks_its_fields(centroids, counts, message):
    with pytest.raises(ValueError) as error:
        ContextEncoder(np.array(centroids, dtype=float), 1, counts, True)
    assert str(error.value) == message


@pytest.mark.parametrize(
    ("n_codes", "kwargs", "message"),
    [
        (0, {}, "n_codes must be an integer between 1 and the grid size n=66, got 0"),
        (67, {}, "n_codes must be an integer between 1 and the grid size n=66, got 67"),
        (6, {"sample_size": 5}, "sample_size must be an integer >= n_codes=6, got 5"),
        (6, {"seed": -1}, "seed must be an integer >= 0, got -1"),
        (6, {"seed": None}, "seed must be an integer >= 0, got None"),
        (6, {"max_enumerate": 1.5}, "max_enumerate must be an integer >= 0, got 1.5"),
    ],
)
def test_fit_encoder_checks_its_arguments(n_codes, kwargs, message):
    with pytest.raises(ValueError) as error:
        fit_encoder(3, 1, n_codes, **kwargs)
    assert str(error.value) == message


def test_sampled_fit_estimates_grid_counts():
    # d = 4, q = 1 has 286 points; max_enumerate=100 forces the sampled (MiniBatchKMeans) path
    encoder = fit_encoder(4, 1, 5, seed=1, max_enumerate=100, sample_size=20_000)
    assert not encoder.grid_counts_exact
    assert encoder.grid_points_per_code.sum() == 286
    exact = np.bincount(encoder.encode(simplex_grid(4, 1)), minlength=5)
    assert np.all(exact >= 1)
    # binomial standard error of a count estimated from 20,000 draws is at most 286 · 0.5/√20,000 ≈ 1
    assert np.max(np.abs(encoder.grid_points_per_code - exact)) <= 5
    again = fit_encoder(4, 1, 5, seed=1, max_enumerate=100, sample_size=20_000)
    np.testing.assert_array_equal(again.centroids, encoder.centroids)
    np.testing.assert_array_equal(again.grid_points_per_code, encoder.grid_points_per_code)


# --- the cache --------------------------------------------------------------------------------------------------------


def assert_same_encoder(first: ContextEncoder, second: ContextEncoder) -> None:
    np.testing.assert_array_equal(first.centroids, second.centroids)
    np.testing.assert_array_equal(first.grid_points_per_code, second.grid_points_per_code)
    assert (first.precision, first.grid_counts_exact) == (second.precision, second.grid_counts_exact)


def test_cache_round_trip(tmp_path, monkeypatch, figure_2):
    fitted = load_or_fit_encoder(3, 1, 6, cache_dir=tmp_path)
    assert_same_encoder(fitted, figure_2)
    path = cache_path(3, 1, 6, 0, tmp_path)
    assert path.exists() and path.name == "p2b-encoder-d3-q1-k6-seed0-v1.npz"
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]  # no temporary files left behind

    def no_refit(*args, **kwargs):
        raise AssertionError("a cache hit must not refit")

    monkeypatch.setattr(encoding, "fit_encoder", no_refit)
    assert_same_encoder(load_or_fit_encoder(3, 1, 6, cache_dir=tmp_path), figure_2)


@pytest.mark.parametrize("damage", ["garbage", "truncated", "empty"])
def test_corrupt_cache_file_is_refitted_with_a_warning(tmp_path, figure_2, damage):
    path = cache_path(3, 1, 6, 0, tmp_path)
    load_or_fit_encoder(3, 1, 6, cache_dir=tmp_path)
    whole = path.read_bytes()
    path.write_bytes({"garbage": b"not an npz file", "truncated": whole[: len(whole) // 2], "empty": b""}[damage])
    with pytest.warns(EncoderCacheWarning, match="refitting the encoder: cached file .* is unusable"):
        refitted = load_or_fit_encoder(3, 1, 6, cache_dir=tmp_path)
    assert_same_encoder(refitted, figure_2)
    assert_same_encoder(load_or_fit_encoder(3, 1, 6, cache_dir=tmp_path), figure_2)  # the file was rewritten


def test_mismatching_cache_file_is_refitted_with_a_warning(tmp_path, figure_2):
    load_or_fit_encoder(3, 1, 5, cache_dir=tmp_path)
    cache_path(3, 1, 5, 0, tmp_path).replace(cache_path(3, 1, 6, 0, tmp_path))
    with pytest.warns(EncoderCacheWarning) as record:
        refitted = load_or_fit_encoder(3, 1, 6, cache_dir=tmp_path)
    assert "holds (format_version, dim, precision, n_codes, seed) = (1, 3, 1, 5, 0), not (1, 3, 1, 6, 0)" in str(
        record[0].message
    )
    assert_same_encoder(refitted, figure_2)


def test_default_cache_dir_follows_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("PRIVBANDITS_CACHE", str(tmp_path))
    assert default_cache_dir() == tmp_path / "encoders"
    load_or_fit_encoder(3, 1, 4, seed=2)
    assert (tmp_path / "encoders" / "p2b-encoder-d3-q1-k4-seed2-v1.npz").exists()
    monkeypatch.delenv("PRIVBANDITS_CACHE")
    assert default_cache_dir().parts[-3:] == (".cache", "privbandits", "encoders")


# --- the paper's synthetic encoder (slow) -----------------------------------------------------------------------------


@pytest.mark.slow
def test_synthetic_benchmark_encoder_d10_k1024():
    start = time.perf_counter()
    encoder = fit_encoder(10, 1, 1024)
    elapsed = time.perf_counter() - start
    assert elapsed < 120
    assert encoder.grid_counts_exact and encoder.grid_points_per_code.sum() == 92_378
    assert encoder.min_crowd >= 1
    assert np.all(np.diff(encoder.centroids.sum(axis=1)) >= 0)
    contexts = np.random.default_rng(0).random((50_000, 10))
    codes = encoder.encode(contexts / contexts.sum(axis=1, keepdims=True))
    assert codes.min() >= 0 and codes.max() <= 1023


def test_the_encoder_fit_does_not_depend_on_the_callers_thread_limit():
    """A pool worker (one BLAS/OpenMP thread) fits the same codes as the main process."""
    from threadpoolctl import threadpool_limits

    from privbandits.privacy.encoding import fit_encoder

    free = fit_encoder(5, 1, 16).centroids
    with threadpool_limits(limits=1):
        limited = fit_encoder(5, 1, 16).centroids
    np.testing.assert_array_equal(free, limited)
