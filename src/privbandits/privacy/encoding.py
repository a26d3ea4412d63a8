"""P2B's context encoder: k-means over the simplex grid (spec ``p2b.md`` §2.4).

A context is a normalised histogram with ``q`` decimal digits: non-negative
entries, multiples of ``10^-q``, summing to 1. There are
``n = C(10^q + d − 1, d − 1)`` such points (Eq. 1), spread on a grid in the
simplex. The encoder clusters that grid (not user data) into ``k`` cells and
sends a context's cell number ``y ∈ {0, …, k−1}`` instead of the context.

Like the reference ``build_hasher``, clusters are renumbered by ascending
centroid coordinate sum (§2.4 [R]), the grid is enumerated when it is small and
sampled uniformly when it is not (§9.8), and the number of grid points per code
gives the encoder's smallest crowd (§3.4, §9.21). Real-data contexts are brought
onto the grid with :func:`round_to_grid` (§5.3–5.4, §9.23); synthetic ones are
encoded as they are (§2.4 [R]).
"""

from __future__ import annotations

import math
import os
import tempfile
import warnings
import zipfile
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numba
import numpy as np
from threadpoolctl import threadpool_limits

from privbandits._kernel_args import read_only

MAX_PRECISION = 9
"""Largest q: 10^q grid units must stay exact in float64 and in int64 sums."""

MAX_GRID_ROWS = 5_000_000
"""Largest grid :func:`simplex_grid` enumerates (5·10^6 rows of d float64 words)."""

MAX_ENUMERATE = 1_000_000
"""Largest grid :func:`fit_encoder` clusters whole; larger grids are sampled (§9.8).

Whole-grid fits grow with n·k: d = 13, k = 1024 has seven times the points of d = 10, k = 1024 (646,646
against 92,378); either is fitted once per cache (``benchmarks/p2b_scale.py`` prints the fit's time)."""

SAMPLE_SIZE = 500_000
"""Grid points drawn to fit (and, separately, to count) a sampled encoder."""

KMEANS_N_INIT = 1
"""k-means++ restarts. The reference uses sklearn's former default of 10; one
restart does a tenth of the work of the reference's ten, and the encoder only needs a reasonable partition, not
the best of ten."""

KMEANS_MAX_ITER = 300
"""Lloyd iterations at most (the reference's value; d = 10, k = 1024 converges in about 60)."""

MINIBATCH_SIZE = 4096
"""Mini-batch size of the sampled fit (the reference's bin_size² = 100 is far too noisy for 10^5+ points)."""

MINIBATCH_N_INIT = 3
"""k-means++ restarts of the sampled fit, each on an initial sample of 3k points."""

MINIBATCH_MAX_ITER = 100
"""Passes over the sample at most in the sampled fit."""

TIE_TOLERANCE = 1e-10
"""Squared distances within this fraction of ``‖x‖² + max ‖c‖²`` of the nearest
count as ties; ties go to the lowest code, whatever the floating-point noise."""

GRID_TABLE_MAX = 200_000
"""Largest grid whose every point's code :class:`ContextEncoder` tabulates (on first use) to encode grid
contexts by lookup: d = 10, q = 1 (92,378 points) is tabulated once, then O(d) per context."""

ON_GRID_TOLERANCE = 1e-9
"""A context whose entries are within this many grid units (10^-q) of a grid point is that grid point."""

FIT_THREADS = 2
"""Threads of every k-means fit (the count of this project's machines, on which the cached encoders were fitted)."""

CACHE_FORMAT_VERSION = 1
"""Bumped whenever the fit or the file layout changes, so old cache files are refitted."""

CACHE_ENV = "PRIVBANDITS_CACHE"
"""Environment variable naming privbandits' cache root; encoders go in its ``encoders`` folder."""


class EncoderCacheWarning(UserWarning):
    """A cached encoder file was unusable and the encoder was refitted."""


def _is_int(value: object) -> bool:
    return isinstance(value, int | np.integer) and not isinstance(value, bool)


def _check_precision(precision: int) -> None:
    if not _is_int(precision) or not 0 <= precision <= MAX_PRECISION:
        raise ValueError(
            f"precision must be an integer between 0 and {MAX_PRECISION} (decimal digits), got {precision!r}"
        )


def _check_grid(dim: int, precision: int) -> None:
    if not _is_int(dim) or dim < 1:
        raise ValueError(f"dim must be an integer >= 1, got {dim!r}")
    _check_precision(precision)


def grid_size(dim: int, precision: int) -> int:
    """n = C(10^q + d − 1, d − 1): the number of normalised contexts with q decimal digits (Eq. 1).

    Exact (a Python int): 66 for d = 3, q = 1 (Figure 2), 92,378 for d = 10 and
    20,030,010 for d = 20.
    """
    _check_grid(dim, precision)
    return math.comb(10**precision + dim - 1, dim - 1)


def _grid_units(dim: int, precision: int, max_rows: int) -> np.ndarray:
    """Every non-negative integer vector of length d summing to 10^q, in lexicographic order."""
    n = grid_size(dim, precision)
    if n > max_rows:
        raise ValueError(
            f"the grid for dim={dim}, precision={precision} has {n:,} points, more than the limit of "
            f"{max_rows:,} rows; use sample_simplex_grid instead"
        )
    total = 10**precision
    rows = np.zeros((1, 0), dtype=np.int64)
    remaining = np.array([total], dtype=np.int64)
    for _ in range(dim - 1):  # each row branches into one child per value 0..remaining of the next entry
        branches = remaining + 1
        parent = np.repeat(np.arange(len(rows)), branches)
        value = np.arange(parent.size) - np.repeat(np.cumsum(branches) - branches, branches)
        rows = np.column_stack([rows[parent], value])
        remaining = remaining[parent] - value
    return np.column_stack([rows, remaining])


def _compositions(dim: int, precision: int) -> np.ndarray:
    """``N[s, m] = C(s + m − 1, m − 1)``: compositions of s ≤ 10^q units into m ≤ d entries (0 for m = 0)."""
    total = 10**precision
    return np.array([[math.comb(s + m - 1, m - 1) if m else 0 for m in range(dim + 1)] for s in range(total + 1)])


@numba.njit(cache=True)
def _rank_of(units: np.ndarray, total: int, compositions: np.ndarray) -> int:
    """Lexicographic rank of one grid point's units (see :func:`grid_rank`)."""
    dim, left, rank = units.shape[0], total, 0
    for i in range(dim):
        rank += compositions[left, dim - i] - compositions[left - units[i], dim - i]
        left -= units[i]
    return rank


@numba.njit(cache=True)
def _ranks(units: np.ndarray, total: int, compositions: np.ndarray) -> np.ndarray:
    ranks = np.empty(units.shape[0], dtype=np.int64)
    for row in range(units.shape[0]):
        ranks[row] = _rank_of(units[row], total, compositions)
    return ranks


def grid_rank(units: np.ndarray, precision: int) -> np.ndarray:
    """Row index in :func:`simplex_grid` of each grid point given as integer units (m×d, rows sum to 10^q).

    With ``N(s, m) = C(s + m − 1, m − 1)`` compositions of s units into m
    entries and ``R_i`` the units left for entries i…d−1, the vectors before
    ``c`` in lexicographic order are ``Σ_i N(R_i, d − i) − N(R_i − c_i, d − i)``
    (those that agree before entry i and are smaller there). O(d) per row.
    """
    units = np.ascontiguousarray(units, dtype=np.int64)
    return _ranks(units, 10**precision, _compositions(units.shape[1], precision))


@numba.njit(cache=True, parallel=True)
def _lookup_codes(
    rows: np.ndarray, total: int, compositions: np.ndarray, table: np.ndarray, tolerance: float
) -> np.ndarray:
    """The grid point's code of each row on the grid (within ``tolerance`` units), -1 for rows off it."""
    n, dim = rows.shape
    codes = np.empty(n, dtype=np.int64)
    block = 4096
    for first in numba.prange((n + block - 1) // block):
        units = np.empty(dim, dtype=np.int64)
        for row in range(first * block, min(n, (first + 1) * block)):
            on_grid, units_sum = True, 0
            for j in range(dim):
                scaled = rows[row, j] * total
                nearest = np.rint(scaled)
                if abs(scaled - nearest) > tolerance or nearest < 0:
                    on_grid = False
                    break
                units[j] = int(nearest)
                units_sum += units[j]
            codes[row] = table[_rank_of(units, total, compositions)] if on_grid and units_sum == total else -1
    return codes


def simplex_grid(dim: int, precision: int, max_rows: int = MAX_GRID_ROWS) -> np.ndarray:
    """All n grid points (n×d): the integer vectors summing to 10^q, divided by 10^q.

    Rows come in lexicographic order of the integer vectors, from
    ``(0, …, 0, 1)`` to ``(1, 0, …, 0)``. Refuses grids above ``max_rows``
    points (default 5·10^6), where :func:`sample_simplex_grid` is the tool.
    """
    return _grid_units(dim, precision, max_rows) / 10**precision


def sample_simplex_grid(dim: int, precision: int, size: int, rng: np.random.Generator) -> np.ndarray:
    """``size`` grid points (size×d) drawn uniformly, with replacement, from all n.

    Stars and bars: a grid point is a choice of d − 1 bar positions among
    10^q + d − 1 slots, so a uniform (d − 1)-subset of the slots, drawn with
    Floyd's algorithm, gives a uniform grid point; the counts of stars between
    the bars are its entries times 10^q.
    """
    _check_grid(dim, precision)
    if not _is_int(size) or size < 0:
        raise ValueError(f"size must be an integer >= 0, got {size!r}")
    total = 10**precision
    slots = total + dim - 1
    bars = np.empty((size, dim - 1), dtype=np.int64)
    for i, top in enumerate(range(slots - dim + 1, slots)):  # Floyd: each step adds one new slot in 0..top
        pick = rng.integers(0, top + 1, size=size)
        taken = (bars[:, :i] == pick[:, None]).any(axis=1)
        bars[:, i] = np.where(taken, top, pick)
    bars.sort(axis=1)
    edges = np.column_stack([np.full(size, -1), bars, np.full(size, slots)])
    return (np.diff(edges, axis=1) - 1) / total


@numba.njit(cache=True)
def _hamilton(shares: np.ndarray, total: int, units: np.ndarray, remainders: np.ndarray) -> None:
    """``units``: integers summing to ``total``, each the floor or ceiling of its share (Hamilton's method).

    Every entry gets the floor of its share; the shortfall goes one unit at a
    time to the largest remainders, ties to the lowest index. Shares and
    remainders within 1e-9 of an integer are snapped first so that float noise
    (2.9999999999999996) neither loses a unit nor breaks a tie: remainders are
    compared in units of 1e-9 (``remainders`` is scratch).
    """
    floor_sum = 0
    for j in range(shares.shape[0]):
        share = shares[j]
        nearest = np.rint(share)
        if abs(share - nearest) < 1e-9:
            share = nearest
        whole = np.floor(share)
        units[j] = int(whole)
        floor_sum += int(whole)
        remainders[j] = np.rint((share - whole) * 1e9)
    shortfall = total - floor_sum
    for j in range(shares.shape[0]):  # entry j's place among the remainders (larger first, ties: lower index)
        place = 0
        for k in range(shares.shape[0]):
            place += (remainders[k] > remainders[j]) | ((remainders[k] == remainders[j]) & (k < j))
        units[j] += place < shortfall


@numba.njit(cache=True)
def _largest_remainder(shares: np.ndarray, totals: np.ndarray) -> np.ndarray:
    """:func:`_hamilton` of every row of ``shares`` with its own total."""
    units = np.empty(shares.shape, dtype=np.int64)
    remainders = np.empty(shares.shape[1])
    for i in range(shares.shape[0]):
        _hamilton(shares[i], totals[i], units[i], remainders)
    return units


@numba.njit(cache=True)
def _round_rows(rows: np.ndarray, total: int) -> np.ndarray:
    """Each row over its sum (all-zero: uniform 1/d), times ``total``, rounded by :func:`_hamilton`, over ``total``.

    Sequential: generators call it on blocks of ~10^4 rows, where threads cost more than they save.
    """
    n, d = rows.shape
    out = np.empty((n, d))
    shares, units, remainders = np.empty(d), np.empty(d, dtype=np.int64), np.empty(d)
    for i in range(n):
        row_sum = 0.0
        for j in range(d):
            row_sum += rows[i, j]
        for j in range(d):
            shares[j] = (rows[i, j] / row_sum if row_sum > 0 else 1.0 / d) * total
        _hamilton(shares, total, units, remainders)
        for j in range(d):
            out[i, j] = units[j] / total
    return out


def round_to_grid(contexts: np.ndarray, precision: int) -> np.ndarray:
    """Normalise each context to sum 1 and round it onto the q-digit grid (§5.3–5.4, §9.23).

    A row is divided by its sum (an all-zero row becomes uniform 1/d, as in the
    reference), then rounded to q decimals with largest-remainder rounding, so
    the result still sums to exactly 1 and is a grid point: the nearest one in
    Euclidean distance. Accepts one context (d,) or a batch (m×d).
    """
    _check_precision(precision)
    values = np.asarray(contexts, dtype=np.float64)
    if values.ndim not in (1, 2) or values.shape[-1] == 0:
        raise ValueError(f"contexts must be one context (d,) or a batch (m, d) with d >= 1, got shape {values.shape}")
    if not np.all(np.isfinite(values)):
        raise ValueError("contexts must be finite (no NaN or infinity)")
    if np.any(values < 0):
        raise ValueError("contexts must be non-negative to be normalised into a histogram; found a negative entry")
    return _round_rows(read_only(np.ascontiguousarray(np.atleast_2d(values))), 10**precision).reshape(values.shape)


def reindex_by_centroid_sum(centroids: np.ndarray) -> np.ndarray:
    """The reference's renumbering: ``code[label]`` of each k-means cluster (§2.4 [R]).

    Clusters sorted by ascending sum of centroid coordinates (stable, so equal
    sums keep label order) get codes 0, 1, …, k − 1 in that order. All sums are
    about 1, so the order is arbitrary but fixed; it matters only where the code
    value itself is a feature (the scalar-code mode, §9.8).
    """
    order = np.argsort(np.asarray(centroids).sum(axis=1), kind="stable")
    code = np.empty_like(order)
    code[order] = np.arange(len(order))
    return code


@numba.njit(cache=True, parallel=True)
def _nearest_kernel(
    points: np.ndarray, centroids_t: np.ndarray, centroid_sq: np.ndarray, tolerance: float
) -> np.ndarray:
    """Fused nearest-centroid search: no distance matrix is written, so memory traffic stays per row.

    ``centroids_t`` is (d, k): the inner loops run over centroids, contiguous, so they vectorise.
    """
    n, d, k = points.shape[0], centroids_t.shape[0], centroids_t.shape[1]
    largest_sq = centroid_sq.max()
    codes = np.empty(n, dtype=np.int64)
    for i in numba.prange(n):
        distance = centroid_sq.copy()
        point_sq = 0.0
        for j in range(d):
            weight = -2.0 * points[i, j]
            point_sq += points[i, j] * points[i, j]
            for c in range(k):
                distance[c] += weight * centroids_t[j, c]
        limit = distance.min() + tolerance * (point_sq + largest_sq)
        for c in range(k):
            if distance[c] <= limit:
                codes[i] = c
                break
    return codes


def _nearest_centroid(points: np.ndarray, centroids: np.ndarray) -> np.ndarray:
    """Index of the nearest centroid of each point, ties (within :data:`TIE_TOLERANCE`) to the lowest.

    Squared distances less ‖x‖², i.e. ``‖c‖² − 2x·c``, computed row by row in
    a compiled kernel (parallel over rows) that never materialises the n×k
    distance matrix: the search is bound by arithmetic, not memory traffic.
    """
    points = np.ascontiguousarray(points, dtype=np.float64)
    centroids = np.asarray(centroids, dtype=np.float64)
    centroid_sq = np.einsum("ij,ij->i", centroids, centroids)
    centroids_t = read_only(np.ascontiguousarray(centroids.T))
    return _nearest_kernel(read_only(points), centroids_t, centroid_sq, TIE_TOLERANCE)


@dataclass(frozen=True, eq=False)
class ContextEncoder:
    """A fitted encoder: nearest of k centroids, O(kd) per context (§2.4).

    centroids
        k×d cluster centres in code order: row y is the centre of code y, already
        renumbered by :func:`reindex_by_centroid_sum`.
    precision
        q, the decimal digits of the grid the encoder was fitted on.
    grid_points_per_code
        how many of the n grid points each code receives; they sum to n.
    grid_counts_exact
        True when counted over the whole grid, False when estimated from an
        independent uniform sample of grid points (large grids).
    """

    centroids: np.ndarray
    precision: int
    grid_points_per_code: np.ndarray
    grid_counts_exact: bool

    def __post_init__(self) -> None:
        centroids = np.array(self.centroids, dtype=np.float64)
        if centroids.ndim != 2 or centroids.shape[0] < 1 or centroids.shape[1] < 1:
            raise ValueError(f"centroids must be a (k, d) array with k, d >= 1, got shape {centroids.shape}")
        if not np.all(np.isfinite(centroids)):
            raise ValueError("centroids must be finite (no NaN or infinity)")
        _check_grid(centroids.shape[1], self.precision)
        counts = np.array(self.grid_points_per_code, dtype=np.int64)
        if counts.shape != (len(centroids),):
            raise ValueError(
                f"grid_points_per_code must have one count per code, shape ({len(centroids)},), got {counts.shape}"
            )
        n = grid_size(centroids.shape[1], self.precision)
        if np.any(counts < 0) or counts.sum() != n:
            raise ValueError(f"grid_points_per_code must be non-negative and sum to the grid size n={n:,}")
        centroids.setflags(write=False)
        counts.setflags(write=False)
        object.__setattr__(self, "centroids", centroids)
        object.__setattr__(self, "precision", int(self.precision))
        object.__setattr__(self, "grid_points_per_code", counts)
        object.__setattr__(self, "grid_counts_exact", bool(self.grid_counts_exact))

    @property
    def n_codes(self) -> int:
        """k, the number of codes."""
        return len(self.centroids)

    @property
    def dim(self) -> int:
        """d, the context dimension."""
        return self.centroids.shape[1]

    @property
    def min_crowd(self) -> int:
        """The smallest cluster in grid points: the crowd l of a sub-optimal encoder (§3.4, §9.21)."""
        return int(self.grid_points_per_code.min())

    @cached_property
    def _grid_codes(self) -> tuple[np.ndarray, np.ndarray] | None:
        """The code of every grid point in :func:`simplex_grid` order and the rank table of :func:`grid_rank`.

        None above :data:`GRID_TABLE_MAX` grid points.
        """
        if grid_size(self.dim, self.precision) > GRID_TABLE_MAX:
            return None
        codes = _nearest_centroid(simplex_grid(self.dim, self.precision), self.centroids)
        return codes, _compositions(self.dim, self.precision)

    def encode(self, contexts: np.ndarray) -> np.ndarray | int:
        """Code ``y`` of each context: the index of its nearest centroid (ties: lowest code).

        Takes one context (d,) and returns an int, or a batch (m×d) and returns
        int64 codes (m,). Contexts off the grid are searched in a compiled
        kernel (``benchmarks/p2b_scale.py`` times it). Grid
        contexts (within :data:`ON_GRID_TOLERANCE` units) of a grid of at most
        :data:`GRID_TABLE_MAX` points get their grid point's code from a table
        (built on first use) by :func:`grid_rank`: the same codes, in O(d).
        """
        values = np.asarray(contexts, dtype=np.float64)
        if values.ndim not in (1, 2) or values.shape[-1] != self.dim:
            raise ValueError(
                f"contexts must be one context ({self.dim},) or a batch (m, {self.dim}), got shape {values.shape}"
            )
        if not np.all(np.isfinite(values)):
            raise ValueError("contexts must be finite (no NaN or infinity)")
        rows = read_only(np.ascontiguousarray(np.atleast_2d(values)))
        lookup = self._grid_codes
        if lookup is None:
            return self._finish(values, _nearest_centroid(rows, self.centroids))
        codes = _lookup_codes(rows, 10**self.precision, lookup[1], lookup[0], ON_GRID_TOLERANCE)
        off_grid = codes < 0
        if off_grid.any():
            codes[off_grid] = _nearest_centroid(rows[off_grid], self.centroids)
        return self._finish(values, codes)

    @staticmethod
    def _finish(values: np.ndarray, codes: np.ndarray) -> np.ndarray | int:
        return int(codes[0]) if values.ndim == 1 else codes


def _check_codes(n_codes: int, n: int) -> None:
    if not _is_int(n_codes) or not 1 <= n_codes <= n:
        raise ValueError(f"n_codes must be an integer between 1 and the grid size n={n:,}, got {n_codes!r}")


def _check_seed(seed: int) -> None:
    if not _is_int(seed) or seed < 0:
        raise ValueError(f"seed must be an integer >= 0, got {seed!r}")


def fit_encoder(
    dim: int,
    precision: int,
    n_codes: int,
    *,
    seed: int = 0,
    max_enumerate: int = MAX_ENUMERATE,
    sample_size: int = SAMPLE_SIZE,
) -> ContextEncoder:
    """Fit P2B's k-means encoder with k = ``n_codes`` on the (d, q) grid (§2.4, §9.8).

    With n ≤ ``max_enumerate`` grid points: k-means++ then Lloyd (sklearn
    ``KMeans``, random_state = ``seed``) on the whole grid, and exact counts of
    grid points per code. Otherwise: ``MiniBatchKMeans`` on ``sample_size``
    uniform grid points, and counts estimated from a second, independent sample
    of the same size, scaled to sum to n. Deterministic for a given seed. The
    settings depart from the reference's where noted (:data:`KMEANS_N_INIT`,
    :data:`MINIBATCH_SIZE`).
    """
    from sklearn.cluster import KMeans, MiniBatchKMeans  # here: 1.5 s CPU to import, and only fitting needs it

    n = grid_size(dim, precision)
    _check_codes(n_codes, n)
    _check_seed(seed)
    if not _is_int(max_enumerate) or max_enumerate < 0:
        raise ValueError(f"max_enumerate must be an integer >= 0, got {max_enumerate!r}")
    if not _is_int(sample_size) or sample_size < n_codes:
        raise ValueError(f"sample_size must be an integer >= n_codes={n_codes}, got {sample_size!r}")
    if n <= max_enumerate:
        grid = simplex_grid(dim, precision, max_rows=max(max_enumerate, MAX_GRID_ROWS))
        kmeans = KMeans(n_clusters=n_codes, n_init=KMEANS_N_INIT, max_iter=KMEANS_MAX_ITER, random_state=seed)
        points, counted, exact = grid, grid, True
    else:
        fit_rng, count_rng = (np.random.default_rng(child) for child in np.random.SeedSequence(seed).spawn(2))
        points = sample_simplex_grid(dim, precision, sample_size, fit_rng)
        counted = sample_simplex_grid(dim, precision, sample_size, count_rng)
        kmeans = MiniBatchKMeans(
            n_clusters=n_codes,
            batch_size=MINIBATCH_SIZE,
            init_size=min(sample_size, 3 * n_codes),
            n_init=MINIBATCH_N_INIT,
            max_iter=MINIBATCH_MAX_ITER,
            random_state=seed,
        )
        exact = False
    # k-means sums in per-thread chunks, so its centroids depend on the thread count: fix it, so the
    # fit is the same in the main process, a pool worker limited to one BLAS thread, or on Ray.
    with threadpool_limits(limits=FIT_THREADS):
        labels_centroids = kmeans.fit(points).cluster_centers_
    centroids = np.empty_like(labels_centroids)
    centroids[reindex_by_centroid_sum(labels_centroids)] = labels_centroids
    hits = np.bincount(_nearest_centroid(counted, centroids), minlength=n_codes)
    counts = hits if exact else _largest_remainder(hits[None, :] * (n / len(counted)), np.array([n]))[0]
    return ContextEncoder(centroids, precision, counts, exact)


def default_cache_dir() -> Path:
    """``$PRIVBANDITS_CACHE/encoders`` when the variable is set, else ``~/.cache/privbandits/encoders``."""
    root = os.environ.get(CACHE_ENV)
    return Path(root) / "encoders" if root else Path.home() / ".cache" / "privbandits" / "encoders"


def cache_path(
    dim: int, precision: int, n_codes: int, seed: int = 0, cache_dir: str | os.PathLike | None = None
) -> Path:
    """The file an encoder with these parameters is cached in."""
    folder = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    return folder / f"p2b-encoder-d{dim}-q{precision}-k{n_codes}-seed{seed}-v{CACHE_FORMAT_VERSION}.npz"


def _read_cached(path: Path, dim: int, precision: int, n_codes: int, seed: int) -> ContextEncoder:
    """The encoder stored at ``path``; ValueError if the file does not hold exactly that encoder."""
    with np.load(path, allow_pickle=False) as stored:
        missing = {
            "format_version",
            "dim",
            "precision",
            "n_codes",
            "seed",
            "centroids",
            "grid_points_per_code",
            "grid_counts_exact",
        } - set(stored.files)
        if missing:
            raise ValueError(f"missing fields {sorted(missing)}")
        found = tuple(int(stored[key]) for key in ("format_version", "dim", "precision", "n_codes", "seed"))
        wanted = (CACHE_FORMAT_VERSION, dim, precision, n_codes, seed)
        if found != wanted:
            raise ValueError(f"it holds (format_version, dim, precision, n_codes, seed) = {found}, not {wanted}")
        encoder = ContextEncoder(
            stored["centroids"], precision, stored["grid_points_per_code"], bool(stored["grid_counts_exact"])
        )
    if encoder.centroids.shape != (n_codes, dim):
        raise ValueError(f"centroids have shape {encoder.centroids.shape}, not {(n_codes, dim)}")
    return encoder


def _write_cached(path: Path, encoder: ContextEncoder, seed: int) -> None:
    """Write atomically: a temporary file in the same folder, then ``os.replace``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=path.stem + ".", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as file:
            np.savez(
                file,
                format_version=CACHE_FORMAT_VERSION,
                dim=encoder.dim,
                precision=encoder.precision,
                n_codes=encoder.n_codes,
                seed=seed,
                centroids=encoder.centroids,
                grid_points_per_code=encoder.grid_points_per_code,
                grid_counts_exact=encoder.grid_counts_exact,
            )
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def load_or_fit_encoder(
    dim: int,
    precision: int,
    n_codes: int,
    *,
    seed: int = 0,
    cache_dir: str | os.PathLike | None = None,
) -> ContextEncoder:
    """The (d, q, k, seed) encoder from the on-disk cache, fitting and storing it on a miss.

    Files are ``.npz`` (no pickles) in ``cache_dir`` (default
    :func:`default_cache_dir`), named by d, q, k, seed and the format version,
    and written atomically, so processes sharing a cache never read half a file.
    A file that cannot be read or holds another encoder is refitted and
    overwritten with an :class:`EncoderCacheWarning`, never trusted silently.
    """
    _check_codes(n_codes, grid_size(dim, precision))
    _check_seed(seed)
    path = cache_path(dim, precision, n_codes, seed, cache_dir)
    if path.exists():
        try:
            return _read_cached(path, dim, precision, n_codes, seed)
        except (OSError, ValueError, TypeError, EOFError, zipfile.BadZipFile) as error:
            warnings.warn(
                f"refitting the encoder: cached file {path} is unusable ({error})", EncoderCacheWarning, stacklevel=2
            )
    encoder = fit_encoder(dim, precision, n_codes, seed=seed)
    _write_cached(path, encoder, seed)
    return encoder
