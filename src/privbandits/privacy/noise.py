"""The one sampler of DP noise: a discrete Gaussian on a fine power-of-two grid, from integer bits.

Why: a Gaussian drawn in floating point (``numpy``'s ``normal``) leaks its input through the
low-order bits of ``value + noise`` (Mironov, CCS 2012). Here the noise is ``g·Z`` with
``Z`` a discrete Gaussian on the integers and ``g = 2^(⌊log₂ σ⌋ − GRID_BITS)`` (so σ/g lies in
``[2^GRID_BITS, 2^(GRID_BITS+1))``), and a release snaps its value to the same grid first
(:func:`snap`): ``snap(value) + g·Z`` is a multiple of g, computed exactly in float64, and its
bits depend on the value only through the grid point. A running sum is released as the sum of its snapped
increments (each datum snapped before it is accumulated, never the prefix: a snapped prefix rounds
differently after every datum, so two neighbours would differ at every later release, not only in the tree
nodes that hold the datum); the sum of grid multiples is exact while it stays below 2⁵³ steps
(:func:`check_exact`).

Sampling: Z's magnitude by table lookup (cumulative-distribution table) against 63 uniform
bits, its sign from one more bit, one 64-bit word per sample, vectorised. The table holds
``|Z| ≤ TAIL·σ/g`` (the mass beyond is below 1e-21) with thresholds rounded to float64
precision, so each atom's probability is within 2⁻⁵² of the exact law's (total variation
below about 1e-11 per draw, added to δ). A discrete Gaussian of parameter σ/g is
``Δ²/(2σ²)``-zCDP for integer shifts, like the continuous one (Canonne, Kamath & Steinke
2020, Thm 4); snapping one datum's n coordinates toward zero can move a neighbour by up to ``g·√n`` more in L2
(:func:`snapping_slack`: each snapped coordinate differs by less than its difference + g), at most
``σ·√n / 2^GRID_BITS``, and never beyond the triangle inequality's bound (no snapped datum is larger than the
datum), so every calibration of a snapped release is made at ``min(Δ + g·√n, cap)``
(:func:`~privbandits.privacy.calibration.snapped_std`).

The bits: ``rng=None`` reads OS entropy (``os.urandom``, what a deployment's party uses);
a seeded ``numpy.random.Generator`` gives the same draws for the same seed (simulations and
tests: reproducible, not secret — every run that passes a seeded generator is a simulation
and records its seed). Both feed the same table, so the law is the same.
"""

from __future__ import annotations

import functools
import math
import os

import numba
import numpy as np

__all__ = [
    "GRID_BITS", "NOISE_SAMPLER", "check_exact", "discrete_gaussian", "grid_step", "snap", "snap_to", "snapping_slack",
]  # fmt: skip

GRID_BITS = 16
"""σ/g ∈ [2^16, 2^17): the grid is at least 65,536 times finer than the noise, so snapping adds little to a
datum's sensitivity (``g·√n``: at 12 bits the calibration for it raised joint-DP LinUCB's σ by more than a quarter
at d = 100, ε = 1; here by a few hundredths). A table holds up to ``TAIL·2^17`` thresholds, so few are cached."""
TAIL = 10.0
"""The table covers |Z| ≤ 10 σ/g; the discrete Gaussian's mass beyond is below 1e-21."""
NOISE_SAMPLER = "discrete_gaussian/grid16/snapped-increments"
"""Names the sampler in run specs and ledger details (a new sampler is a new name; ``snapped-increments``:
data are snapped datum by datum and the σ calibrated for the slack, which moved every DP run's numbers)."""
EXACT_STEPS = 2.0**53
"""A sum of multiples of g is exact in float64 while every partial sum stays below this many steps."""

_SIGN_BIT = np.uint64(1)
_SHIFT = np.uint64(1)


def grid_step(std: float) -> float:
    """The grid ``g = 2^(⌊log₂ std⌋ − GRID_BITS)`` of noise of standard deviation ``std`` > 0."""
    if not (std > 0 and math.isfinite(std)):
        raise ValueError(f"std: must be a positive finite number (got {std})")
    return math.ldexp(1.0, math.frexp(std)[1] - 1 - GRID_BITS)


def snap(value: np.ndarray, std: float) -> np.ndarray:
    """``value`` rounded toward zero to the grid of noise ``std`` (:func:`snap_to`): what a release adds its noise
    to, one datum at a time."""
    return snap_to(value, grid_step(std))


def snap_to(value: np.ndarray, step: float) -> np.ndarray:
    """``value`` rounded toward zero to a multiple of ``step``: no coordinate grows, so every norm bound of the
    data holds for the snapped data, and two values' snapped difference exceeds theirs by less than ``step``."""
    return np.trunc(np.asarray(value, dtype=np.float64) / step) * step


def check_exact(bound: float, step: float, what: str) -> None:
    """Refuse a sum of multiples of ``step`` that can reach ``bound`` in magnitude, beyond which float64 would
    round it (:data:`EXACT_STEPS`): the release would no longer be exactly on its grid."""
    if not bound / step < EXACT_STEPS:
        raise ValueError(
            f"{what}: values up to {bound:g} on a grid of step {step:g} need {bound / step:.3g} steps; "
            f"float64 sums them exactly only below 2^53 = {EXACT_STEPS:.3g}"
        )


def snapping_slack(std: float, coordinates: int) -> float:
    """Most that snapping ``coordinates`` values adds to the L2 distance of two neighbours: ``g·√n``."""
    return grid_step(std) * math.sqrt(coordinates)


@functools.lru_cache(maxsize=8)
def _table(scale: float) -> np.ndarray:
    """63-bit cumulative thresholds of |Z| for a discrete Gaussian of parameter ``scale`` (P(k) ∝ e^{-k²/2s²})."""
    support = np.arange(int(math.ceil(TAIL * scale)) + 1, dtype=np.float64)
    weights = np.exp(-(support * support) / (2.0 * scale * scale))
    weights[1:] *= 2.0
    cdf = np.cumsum(weights)
    cdf /= cdf[-1]
    thresholds = (cdf * 2.0**63).astype(np.uint64)  # a float64 ≤ 2^63 converts exactly
    thresholds[-1] = np.uint64(2**63)  # above every 63-bit word: |Z| never leaves the table
    return thresholds


GUIDE_BITS = 16
"""The guide of a table splits the 63-bit words into 2^16 equal buckets and holds, per bucket boundary, the
magnitude a word there would get: a draw then searches only its bucket's few thresholds, where a binary search
over the whole table (up to ``TAIL·2^17`` entries) missed the cache at nearly every step."""


@functools.lru_cache(maxsize=8)
def _guide(scale: float) -> np.ndarray:
    """Per bucket boundary ``j·2^(63 − GUIDE_BITS)``, j = 0 … 2^GUIDE_BITS, the magnitude ``searchsorted`` gives."""
    starts = np.arange((1 << GUIDE_BITS) + 1, dtype=np.uint64) << np.uint64(63 - GUIDE_BITS)
    return np.searchsorted(_table(scale), starts, side="right").astype(np.int64)


@numba.njit(cache=True)
def _guided_search(table, guide, words, shift):  # pragma: no cover - compiled
    """For each word, the number of thresholds ≤ it, searched between its bucket's two guide entries."""
    found = np.empty(words.shape[0], dtype=np.int64)
    for index in range(words.shape[0]):
        word = words[index]
        bucket = word >> shift
        low, high = guide[bucket], guide[bucket + 1]
        while low < high:  # the first threshold above the word
            middle = (low + high) >> 1
            if table[middle] <= word:
                low = middle + 1
            else:
                high = middle
        found[index] = low
    return found


def _magnitudes(scale: float, words: np.ndarray) -> np.ndarray:
    """``searchsorted(_table(scale), words, side="right")`` for 63-bit ``words``, searching only each word's bucket
    (the same numbers: the thresholds are sorted, so a word's magnitude lies between its bucket's two ends)."""
    return _guided_search(_table(scale), _guide(scale), words, np.uint64(63 - GUIDE_BITS))


def _words(rng: np.random.Generator | None, size: int) -> np.ndarray:
    """``size`` uniform 64-bit words: from OS entropy when ``rng`` is None, else from the seeded generator
    (its bit generator's raw 64-bit output; MT19937's raw words are 32-bit, so through ``integers``)."""
    if rng is None:
        return np.frombuffer(os.urandom(8 * size), dtype=np.uint64)
    if isinstance(rng.bit_generator, np.random.MT19937):
        return rng.integers(0, np.iinfo(np.uint64).max, size=size, dtype=np.uint64, endpoint=True)
    return rng.bit_generator.random_raw(size)


def discrete_integers(rng: np.random.Generator | None, scale: float, shape: tuple[int, ...]) -> np.ndarray:
    """Integer discrete Gaussian draws of parameter ``scale`` (``P(k) ∝ e^{-k²/(2 scale²)}``), as float64."""
    words = _words(rng, math.prod(shape))
    magnitude = _magnitudes(scale, words >> _SHIFT).astype(np.float64)
    return np.copysign(magnitude, (words & _SIGN_BIT).astype(np.float64) - 0.5).reshape(shape)


def discrete_gaussian(rng: np.random.Generator | None, std: float, shape: tuple[int, ...]) -> np.ndarray:
    """Noise ``g·Z`` of standard deviation ``std`` on the grid :func:`grid_step` (zeros when std = 0)."""
    if std == 0:
        return np.zeros(shape)
    step = grid_step(std)
    return discrete_integers(rng, std / step, shape) * step
