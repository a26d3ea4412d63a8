"""Continual release of prefix sums by the square-root matrix factorization (the alternative to the binary tree).

The prefix sums of a stream ``x_1 … x_T`` are ``A x``, A the T × T lower-triangular matrix of ones. Any
factorization ``A = B·C`` gives a mechanism: release ``B(C x + z)``, z Gaussian; only ``C x + z`` sees the data,
so the privacy is that of one Gaussian mechanism on ``C x``, whose L2 sensitivity to one datum (entering column
j) is ``‖C e_j‖·Δ`` at most, the largest column norm of C times the datum's sensitivity Δ. The square-root
factorization takes ``B = C``, C lower-triangular Toeplitz with the coefficients of ``(1 − x)^(−1/2)``,
``c_k = binom(2k, k)/4^k`` (``C·C = A``, since ``(1 − x)^(−1/2)·(1 − x)^(−1/2) = (1 − x)^(−1)``): Fichtenberger,
Henzinger & Upadhyay, "Constant matters: fine-grained error bound on differentially private continual
observation" (ICML 2023); the Toeplitz / buffered-linear-Toeplitz family of McMahan et al. (2024) generalises it.
Its first column is its largest, ``Σ_{k<T} c_k² ≈ (ln T)/π + 1``, and the release at round t carries noise of
variance ``σ² Σ_{k<t} c_k²`` per coordinate: about ``(ln T/π)²`` times the unit Gaussian's variance in all, where
the tree's is ``popcount(t)·(1 + ⌈log₂ T⌉)`` times it (:func:`tree_variance_ratio`).

Streaming: round t releases ``(C y)_t``, ``y_t = snap((C x)_t) + g·Z_t``, with Z_t i.i.d. discrete Gaussians on
the noise's grid g (:mod:`~privbandits.privacy.noise`); :class:`ToeplitzStream` computes each row of a Toeplitz
product as its input arrives, the rows before the current block by one matrix product per block (memory O(T),
about ``T²·n`` multiply-adds in all). The noise of the releases is ``C z``: correlated across rounds.

Snapping: ``(C x)_t`` has irrational-looking coefficients, so the data cannot sit on the noise's grid as the
tree's do; each row is snapped (toward zero) before its noise is added, and a datum then moves a neighbour by up
to one grid step more per coordinate in every row (T rows of n coordinates: ``g·√(nT)`` in L2), plus twice the
floating-point error of a row's dot product (:func:`rounding_bound`). :func:`factorization_noise` calibrates σ
with the analytic Gaussian at that effective sensitivity (a fixed point in σ, as
:func:`~privbandits.privacy.calibration.snapped_std`); it is one Gaussian release, accounted as such
(:func:`releases`).

Banded: the snapping slack grows with the rows a datum enters (``g·√(nT)``), and the full factor keeps every
round (memory ``T·n``). With ``band`` b < T, C keeps only ``c_0 … c_{b−1}`` (the banded square root of Kalinin &
Lampert, "Banded square root matrix factorization for differentially private model training", NeurIPS 2024): a
datum enters b rows, its column norm is ``√(Σ_{k<b} c_k²)``, and the releases are ``A C⁻¹ y`` (B = A C⁻¹, post-
processing), computed by the recurrence ``w_t = y_t − Σ_{0<k<b} c_k w_{t−k}`` and a running sum: memory ``b·n``.
B's coefficients (:func:`decoder_coefficients`) give the noise's variance; C's positive, decreasing coefficients
keep ``1/p`` bounded (Eneström–Kakeya: p has no zero inside the unit disc). :func:`choose_band` takes, among the
bands whose streams fit :data:`MAX_STREAM_CELLS`, the one of least noise variance averaged over the rounds, with the
snapping counted: at d = 100 the full factor's snapping can exceed its whole sensitivity, where a band of a few
hundred rows keeps it small.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from privbandits.privacy.accountant import Release
from privbandits.privacy.calibration import analytic_gaussian_std, snapped_noise
from privbandits.privacy.noise import TAIL, discrete_gaussian, snap_to

__all__ = [
    "FACTORIZATION_KEY", "MAX_STREAM_CELLS", "BandedInverse", "BandedOuterStream", "BandedStream",
    "FactorizationNoise", "SqrtFactorization", "ToeplitzStream", "candidate_bands", "choose_band", "column_norm",
    "decoder_coefficients", "factorization_noise", "mean_variance", "releases", "rounding_bound", "sqrt_coefficients",
    "sqrt_factor", "tree_variance_ratio",
]  # fmt: skip

MAX_STREAM_CELLS = 2**23
"""The most float64 cells (2²³) one of the mechanism's two streams may keep: bounds the band (and so the memory
and the time of each release) where the band is chosen automatically."""
SMALLEST_BAND = 16
FACTORIZATION_KEY = "sqrt/banded-auto-2"
"""Names the mechanism in run specs (a changed mechanism or band choice is a new name, so no stored run is reused)."""

UNIT_ROUNDOFF = 2.0**-53
"""float64's unit roundoff u: a dot product of n terms, in any order, is within ``n·u/(1 − n·u)·Σ|aᵢbᵢ|`` of the
exact one (Higham, Accuracy and Stability of Numerical Algorithms, §3.1)."""


@functools.lru_cache(maxsize=16)
def _coefficients(length: int) -> np.ndarray:
    k = np.arange(1, length, dtype=np.float64)
    values = np.concatenate([[1.0], np.cumprod((2.0 * k - 1.0) / (2.0 * k))])
    values.flags.writeable = False
    return values


def sqrt_coefficients(length: int) -> np.ndarray:
    """``c_0 … c_{length−1}`` of ``(1 − x)^(−1/2)``: ``c_0 = 1``, ``c_k = c_{k−1}·(2k − 1)/(2k)`` (read-only)."""
    if type(length) is not int or length < 1:
        raise ValueError(f"length must be an integer >= 1, got {length!r}")
    return _coefficients(length)


def sqrt_factor(length: int) -> np.ndarray:
    """The dense ``length × length`` matrix C (lower-triangular Toeplitz, ``C[t, k] = c_{t−k}``): ``C·C = A``."""
    c = sqrt_coefficients(length)
    lags = np.subtract.outer(np.arange(length), np.arange(length))
    return np.where(lags >= 0, c[np.maximum(lags, 0)], 0.0)


def column_norm(length: int) -> float:
    """The largest column norm of C (its first column's, ``√(Σ_{k<T} c_k²)``): a datum's factor of sensitivity.
    For a band b, ``column_norm(b)``."""
    c = sqrt_coefficients(length)
    return float(math.sqrt(float(np.dot(c, c))))


def _series_inverse(p: np.ndarray, length: int) -> np.ndarray:
    """The first ``length`` coefficients of ``1/p(x)`` (p_0 = 1) by Newton's iteration ``h ← 2h − h·(p·h)`` with FFT
    products: each step doubles the number of exact coefficients."""
    from scipy.signal import fftconvolve

    p = np.pad(p, (0, max(0, length - len(p))))
    h = np.array([1.0 / p[0]])
    while len(h) < length:
        size = min(2 * len(h), length)
        correction = fftconvolve(h, fftconvolve(p[:size], h)[:size])[:size]
        h = 2.0 * np.pad(h, (0, size - len(h))) - correction
    return h


@functools.lru_cache(maxsize=32)
def _decoder(horizon: int, band: int) -> np.ndarray:
    if band >= horizon:
        return _coefficients(horizon)  # B = C: the square root's own
    values = np.cumsum(_series_inverse(_coefficients(band), horizon))
    values.flags.writeable = False
    return values


def decoder_coefficients(horizon: int, band: int) -> np.ndarray:
    """The coefficients ``H_0 … H_{T−1}`` of B = A·C⁻¹ (lower-triangular Toeplitz) for C of band ``band``: the
    running sums of ``1/p(x)``'s, p the band's ``c_0 … c_{b−1}``; C's own at ``band ≥ horizon`` (``C·C = A``)."""
    if type(horizon) is not int or type(band) is not int or not 1 <= band or horizon < 1:
        raise ValueError(f"horizon and band must be integers >= 1, got {horizon!r} and {band!r}")
    return _decoder(horizon, min(band, horizon))


def rounding_bound(length: int, data_bound: float, factors: int = 1) -> float:
    """The most a row of ``C x`` computed in float64 can differ from the exact one, for data whose coordinates
    are at most ``data_bound`` in magnitude: ``γ_{T+f−1}·Σ_k c_k·data_bound``, γ_n = n·u/(1 − n·u), for terms that
    are products of ``factors`` f numbers besides c_k (f = 2: ``c_k·z_i·z_j``, a datum ``z zᵀ`` formed in the sum)."""
    terms = length + factors - 1
    gamma = terms * UNIT_ROUNDOFF / (1.0 - terms * UNIT_ROUNDOFF)
    return gamma * float(np.sum(sqrt_coefficients(length))) * data_bound


@dataclass(frozen=True)
class FactorizationNoise:
    """The noise of a square-root factorization over ``horizon`` rounds: σ per coordinate of ``C x + z``, the grid
    its rows are snapped to, the effective L2 sensitivity of ``C x`` to one datum (``Δ·‖C‖_col`` plus snapping and
    rounding), the column norm ``‖C‖_col`` and C's band (None: the full factor)."""

    std: float
    grid: float
    sensitivity: float
    column_norm: float
    horizon: int
    band: int | None = None

    @property
    def bandwidth(self) -> int:
        """The rows of ``C x`` one datum enters: the band, at most T."""
        return self.horizon if self.band is None else min(self.band, self.horizon)

    @property
    def banded(self) -> bool:
        """Whether C is banded (b < T: the releases are ``A C⁻¹ y``) rather than the full square root."""
        return self.bandwidth < self.horizon

    def variance(self, rounds: int) -> float:
        """Per-coordinate variance of the noise of release ``rounds`` (1-based): ``σ² Σ_{k<t} H_k²``, H the
        decoder's coefficients (C's own for the full factor)."""
        h = decoder_coefficients(self.horizon, self.bandwidth)[:rounds]
        return self.std**2 * float(np.dot(h, h))

    @property
    def decoder_norm(self) -> float:
        """The largest row norm of the decoder B (its last row's, ``√(Σ_{k<T} H_k²)``): the noise at round T is
        σ times it per coordinate (the column norm for the full factor, where B = C)."""
        h = decoder_coefficients(self.horizon, self.bandwidth)
        return float(math.sqrt(float(np.dot(h, h))))


def factorization_noise(
    epsilon: float,
    delta: float,
    horizon: int,
    sensitivity: float,
    coordinates: int,
    data_bound: float,
    band: int | None = None,
) -> FactorizationNoise:
    """σ of the analytic Gaussian (one release, Balle & Wang 2018) that makes ``C x + z`` (ε, δ)-DP for data of
    L2 sensitivity ``sensitivity`` with ``coordinates`` coordinates each at most ``data_bound`` in magnitude.

    C has band ``band`` (None: :func:`choose_band`'s; ``band ≥ horizon``: the full square root). The effective
    sensitivity is ``Δ·‖C‖_col + (2r + g(σ))·√(n·b)``: r the rounding of a row (:func:`rounding_bound`, in both
    neighbours), g the grid each of the b rows' n coordinates a datum enters is snapped to; σ the fixed point, as
    :func:`~privbandits.privacy.calibration.snapped_std` finds it. The cap (orders of magnitude above the
    sensitivity wherever measured) is the toward-zero snap's own bound: no snapped row coordinate exceeds
    ``data_bound·Σ c_k + r``, so two differ by at most twice that. ε = ∞: no noise (σ = 0, grid 0)."""
    if band is None:
        return _least_noise(epsilon, delta, horizon, sensitivity, coordinates, data_bound)
    if type(band) is not int or band < 1:
        raise ValueError(f"band must be an integer >= 1 or None (chosen), got {band!r}")
    return _calibrated(epsilon, delta, horizon, sensitivity, coordinates, data_bound, min(band, horizon))


def _calibrated(
    epsilon: float, delta: float, horizon: int, sensitivity: float, coordinates: int, data_bound: float, band: int
) -> FactorizationNoise:
    norm = column_norm(band)
    if math.isinf(epsilon):
        return FactorizationNoise(0.0, 0.0, sensitivity * norm, norm, horizon, band)
    rows, rounding = coordinates * band, rounding_bound(band, data_bound, factors=2)  # either way of forming Cx
    base = sensitivity * norm + 2.0 * rounding * math.sqrt(rows)
    largest = data_bound * float(np.sum(sqrt_coefficients(band)))
    cap = 2.0 * (largest + rounding) * math.sqrt(rows)
    std = analytic_gaussian_std(epsilon, delta, base)
    noise = snapped_noise(std, base, rows, max(cap, base), largest, 2 * TAIL)
    return FactorizationNoise(noise.std, noise.grid, noise.sensitivity, norm, horizon, band)


def candidate_bands(horizon: int, coordinates: int) -> list[int]:
    """Bands :func:`choose_band` weighs: powers of two from :data:`SMALLEST_BAND` below T, and T itself (the full
    factor), each whose stream of ``band × coordinates`` cells fits :data:`MAX_STREAM_CELLS` (the smallest when
    none does)."""
    bands = [1 << k for k in range(SMALLEST_BAND.bit_length() - 1, horizon.bit_length()) if 1 << k < horizon]
    bands.append(horizon)
    fitting = [band for band in bands if band * coordinates <= MAX_STREAM_CELLS]
    return fitting or bands[:1]


def mean_variance(noise: FactorizationNoise) -> float:
    """Per-coordinate noise variance averaged over the T releases: ``σ² Σ_k H_k² (T − k)/T``."""
    h = decoder_coefficients(noise.horizon, noise.bandwidth)
    weights = (noise.horizon - np.arange(noise.horizon)) / noise.horizon
    return noise.std**2 * float(np.dot(h * h, weights))


def choose_band(
    epsilon: float, delta: float, horizon: int, sensitivity: float, coordinates: int, data_bound: float
) -> int:
    """The band of least noise variance averaged over the rounds (:func:`mean_variance`, each calibrated with its
    own snapping) among :func:`candidate_bands`; the smallest at ε = ∞ (no noise: the cheapest)."""
    return _least_noise(epsilon, delta, horizon, sensitivity, coordinates, data_bound).bandwidth


def _least_noise(
    epsilon: float, delta: float, horizon: int, sensitivity: float, coordinates: int, data_bound: float
) -> FactorizationNoise:
    noises = [
        _calibrated(epsilon, delta, horizon, sensitivity, coordinates, data_bound, band)
        for band in candidate_bands(horizon, coordinates)
    ]
    return noises[int(np.argmin([mean_variance(noise) for noise in noises]))]


def releases(noise: FactorizationNoise) -> list[Release]:
    """What one datum's privacy unit enters: one Gaussian release of σ at the effective sensitivity."""
    return [Release.gaussian(noise.std, noise.sensitivity)]


def tree_variance_ratio(horizon: int, tree_std: float, noise: FactorizationNoise, rounds: int | None = None) -> float:
    """The tree's per-coordinate noise variance at release ``rounds`` (default: the last, T) over the
    factorization's: ``popcount(t)·σ_tree²`` against ``σ² Σ_{k<t} c_k²``."""
    t = horizon if rounds is None else rounds
    return t.bit_count() * tree_std**2 / noise.variance(t)


class ToeplitzStream:
    """Rows of a lower-triangular Toeplitz product ``y_t = Σ_{k≤t} c_{t−k} x_k``, one per row ``x_t`` pushed.

    At the start of each block of ``block`` rows the contributions of every earlier row to the block's rows are
    computed in one matrix product; within the block each row adds its own lags. Memory: the T rows pushed.
    """

    def __init__(self, coefficients: np.ndarray, width: int, block: int | None = None) -> None:
        self.coefficients = coefficients
        self._reversed = np.ascontiguousarray(coefficients[::-1])
        self.length = len(coefficients)
        self.block = block or max(1, math.isqrt(self.length))
        self.history = np.zeros((self.length, width))
        self._earlier = np.zeros((self.block, width))
        self.count = 0

    def push(self, row: np.ndarray) -> np.ndarray:
        """``y_t`` for the next row ``x_t`` (a new array of the rows' width)."""
        t = self.count
        if t >= self.length:
            raise ValueError(f"ToeplitzStream: all {self.length} rows were pushed")
        start = t - t % self.block
        if t == start:
            self._flush(start)
        self.history[t] = row
        lags = self.coefficients[t - start :: -1]  # c_{t−k} for k = start … t
        value = self._earlier[t - start] + lags @ self.history[start : t + 1]
        self.count += 1
        return value

    def _flush(self, start: int) -> None:
        if start == 0:
            self._earlier[:] = 0.0
            return
        rows = min(self.block, self.length - start)
        # C[t, k] = c[t − k] = reversed[L − 1 − t + k]: row t of the block is the window of ``reversed`` at L − 1 − t
        windows = np.lib.stride_tricks.sliding_window_view(self._reversed, start)
        self._earlier[:rows] = windows[self.length - start - rows : self.length - start][::-1] @ self.history[:start]


class BandedStream:
    """Rows of a banded lower-triangular Toeplitz product ``y_t = Σ_{k<b} c_k x_{t−k}``, one per row pushed, from
    the last b rows (a ring: memory ``b·n``, of ``dtype``)."""

    def __init__(self, coefficients: np.ndarray, width: int, dtype: type = np.float64) -> None:
        self.coefficients: np.ndarray = np.asarray(coefficients, dtype=dtype)
        self.band = len(coefficients)
        self.history: np.ndarray = np.zeros((self.band, width), dtype=dtype)
        self.count = 0
        self._slots = np.arange(self.band)

    def _weights(self, t: int) -> np.ndarray:
        return self.coefficients[(t - self._slots) % self.band]  # slot p holds the row of lag (t − p) mod b

    def push(self, row: np.ndarray) -> np.ndarray:
        """``y_t`` for the next row ``x_t`` (a new array)."""
        t = self.count
        self.history[t % self.band] = row
        self.count += 1
        return self._weights(t) @ self.history


class BandedOuterStream(BandedStream):
    """:class:`BandedStream` for data ``z zᵀ`` given as z (``push(z)``): ``Σ_{k<b} c_k z_{t−k} z_{t−k}ᵀ`` from the
    last b vectors, as one matrix product (memory ``b·s``, not ``b·s²``), the entries ``upper`` packed. Each entry
    is a sum of b products ``c_k·z_i·z_j``: :func:`rounding_bound` with two factors."""

    def __init__(self, coefficients: np.ndarray, size: int, upper: tuple[np.ndarray, np.ndarray]) -> None:
        super().__init__(coefficients, size)
        self.upper = upper

    def push(self, row: np.ndarray) -> np.ndarray:
        t = self.count
        self.history[t % self.band] = row
        self.count += 1
        weighted = self.history * self._weights(t)[:, None]
        return (weighted.T @ self.history)[self.upper]


class BandedInverse(BandedStream):
    """The running sums of ``w = C⁻¹ y`` for C banded Toeplitz (``c_0 = 1``): ``w_t = y_t − Σ_{0<k<b} c_k w_{t−k}``,
    one per row ``y_t`` pushed; the sums are ``A C⁻¹ y``. The last b w's may be kept in float32 (half the memory
    read per row; the releases are post-processing of y, so only their accuracy depends on it), the sums in
    float64."""

    def __init__(self, coefficients: np.ndarray, width: int, dtype: type = np.float64) -> None:
        super().__init__(coefficients, width, dtype)
        self.total = np.zeros(width)

    def push(self, row: np.ndarray) -> np.ndarray:
        t = self.count
        weights = self._weights(t)
        weights[t % self.band] = 0.0  # that slot holds w_{t−b}: outside the band
        w = (row - weights @ self.history) / float(self.coefficients[0])
        self.history[t % self.band] = w
        self.count += 1
        self.total += w
        return self.total.copy()


class SqrtFactorization:
    """The square-root factorization mechanism: ``release(datum)`` gives the next noisy prefix sum.

    Parameters
    ----------
    noise : FactorizationNoise
        σ, the grid, the horizon T and the band (:func:`factorization_noise`).
    shape : tuple of int
        The shape of a datum. With ``symmetric``, ``(s, s)``: each round's noise is a symmetric matrix
        (:func:`~privbandits.privacy.tree_mechanism.symmetric_gaussian`, as the tree's nodes) and the upper
        triangle is what the mechanism carries; else every coordinate gets i.i.d. noise (a leading axis of
        independent streams, for tests and audits, is just more coordinates).
    rng : numpy.random.Generator or None
        Source of the noise (None: OS entropy).
    keep_rows : bool
        Keep every ``y_t`` for :attr:`noisy_rows` (tests and audits; the full factor keeps them anyway).
    outer : bool
        Every datum is ``z zᵀ``, given as z (:meth:`release_outer` only; symmetric): a band then forms its rows from
        the last b vectors (:class:`BandedOuterStream`).
    """

    def __init__(
        self,
        noise: FactorizationNoise,
        shape: tuple[int, ...],
        rng: np.random.Generator | None,
        symmetric: bool = False,
        keep_rows: bool = False,
        outer: bool = False,
    ) -> None:
        if symmetric and (len(shape) != 2 or shape[0] != shape[1]):
            raise ValueError(f"SqrtFactorization: symmetric needs a square shape (s, s), got {shape}")
        if outer and not symmetric:
            raise ValueError("SqrtFactorization: outer needs symmetric = True (data z zᵀ)")
        self.outer = outer
        self.noise, self.shape, self.rng, self.symmetric = noise, tuple(shape), rng, symmetric
        self._upper = np.triu_indices(shape[0]) if symmetric else None
        self.width = len(self._upper[0]) if self._upper is not None else math.prod(shape)
        self._data: ToeplitzStream | BandedStream
        self._released: ToeplitzStream | BandedInverse
        if noise.banded:
            c = sqrt_coefficients(noise.bandwidth)
            self._data, self._released = BandedStream(c, self.width), BandedInverse(c, self.width, np.float32)
            if outer and self._upper is not None:
                self._data = BandedOuterStream(c, shape[0], self._upper)
        else:
            c = sqrt_coefficients(noise.horizon)
            self._data, self._released = ToeplitzStream(c, self.width), ToeplitzStream(c, self.width)
        self._rows: list[np.ndarray] | None = [] if keep_rows and noise.banded else None

    @property
    def releases(self) -> int:
        """Prefix sums released so far."""
        return self._released.count

    @property
    def noisy_rows(self) -> np.ndarray:
        """``y_1 … y_t`` so far, ``snap((C x)_s) + z_s`` packed (the one Gaussian release the privacy rests on; every
        prefix sum released is ``B y``): a read-only array (a banded factorization keeps them only with
        ``keep_rows``)."""
        if isinstance(self._released, ToeplitzStream):
            rows = self._released.history[: self._released.count]
        elif self._rows is not None:
            rows = np.array(self._rows).reshape(-1, self.width)
        else:
            raise ValueError("SqrtFactorization: a banded factorization keeps its rows only with keep_rows = True")
        rows.flags.writeable = False
        return rows

    def release(self, datum: np.ndarray) -> np.ndarray:
        """The next prefix sum plus its noise ``(B z)_t`` (a new array of the datum's shape)."""
        if self.outer:
            raise ValueError("SqrtFactorization: made with outer = True, it takes z of each datum z zᵀ "
                             "(release_outer)")  # fmt: skip
        return self._released_row(self._pack(np.asarray(datum, dtype=np.float64)))

    def release_outer(self, vector: np.ndarray) -> np.ndarray:
        """:meth:`release` of the datum ``z zᵀ`` (symmetric only), given z: a band forms its rows from the last b
        vectors (:class:`BandedOuterStream`)."""
        z = np.asarray(vector, dtype=np.float64)
        if not self.symmetric or z.shape != self.shape[:1]:
            raise ValueError(f"SqrtFactorization: release_outer needs a symmetric factorization and z of shape "
                             f"{self.shape[:1]}, got {z.shape}")  # fmt: skip
        return self._released_row(z if isinstance(self._data, BandedOuterStream) else self._pack(np.outer(z, z)))

    def _released_row(self, row: np.ndarray) -> np.ndarray:
        """The release of the next row (packed, or z for the outer stream), checked against the horizon first: a
        refused release changes nothing."""
        if self.releases >= self.noise.horizon:
            raise ValueError(f"SqrtFactorization: all {self.noise.horizon} releases were made")
        y = self._data.push(row)
        if self.noise.std > 0:
            y = snap_to(y, self.noise.grid) + self._draw()
        if self._rows is not None:
            self._rows.append(y)
        return self._unpack(self._released.push(y))

    def _draw(self) -> np.ndarray:
        if self._upper is None:
            return discrete_gaussian(self.rng, self.noise.std, (self.width,))
        from privbandits.privacy.tree_mechanism import symmetric_gaussian

        return symmetric_gaussian(self.rng, self.shape[0], self.noise.std)[self._upper]

    def _pack(self, datum: np.ndarray) -> np.ndarray:
        if datum.shape != self.shape:
            raise ValueError(f"SqrtFactorization: a datum must have shape {self.shape}, got {datum.shape}")
        return datum[self._upper] if self._upper is not None else datum.reshape(-1)

    def _unpack(self, row: np.ndarray) -> np.ndarray:
        if self._upper is None:
            return row.reshape(self.shape)
        matrix = np.zeros(self.shape)
        matrix[self._upper] = row
        return matrix + np.triu(matrix, 1).T
