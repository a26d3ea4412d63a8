"""Exact discrete Laplace noise on a power-of-two grid, for pure ε-DP releases.

Why a second sampler: the project's Gaussian (:mod:`~privbandits.privacy.noise`) cuts its table at 10 σ, which
costs a δ below 1e-21, harmless for (ε, δ)-DP. A pure ε-DP release cannot afford any cut: every output must stay
reachable from every input. Here ``Z`` is drawn *exactly* from the discrete Laplace law ``P(Z = z) ∝ e^{-|z|/t}``
on the integers by Canonne, Kamath & Steinke's rejection sampler (NeurIPS 2020, Algorithms 1 and 2), which uses
uniform integers and comparisons only, never floating point.

The grid is :mod:`~privbandits.privacy.noise`'s: noise of scale ``b`` is ``g·Z`` with ``g = grid_step(b)``, so
``t = b/g`` lies in ``[2^16, 2^17)``; t is rounded *up* to a multiple of 2⁻¹⁰ (``t = m/1024``, m an integer below
2^27: all arithmetic fits 64-bit integers), which only adds noise (:func:`laplace_grid`). A release snaps its
data to the same grid first, so ``snapped sum + g·Z`` is exact in float64 and its bits say nothing finer than g
about the data (Mironov, CCS 2012). ``Lap_Z(t)`` of an integer-valued query of sensitivity k grid steps is
``(k/t)``-DP.

The bits: ``rng=None`` reads OS entropy (``os.urandom``); a seeded ``numpy.random.Generator`` gives the same draws
for the same seed (simulations and tests: reproducible, not secret). The sampler is a deterministic function of a
stream of 64-bit words read in order; a batch that needs more words than it was given is continued on a longer
stream, never restarted, so its law is exact whatever the batch size.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numba
import numpy as np

from privbandits.privacy.noise import _words, grid_step

__all__ = ["DENOMINATOR", "LAPLACE_SAMPLER", "LaplaceGrid", "discrete_laplace", "discrete_laplace_integers",
           "laplace_grid"]  # fmt: skip

DENOMINATOR = 1024
"""t = m / DENOMINATOR: the scale in grid steps is rounded up to a multiple of 2⁻¹⁰ (relative change below 2⁻²⁶)."""
LAPLACE_SAMPLER = "discrete_laplace/cks2020/grid16"
"""Names the sampler in ledger details and result specs (a new sampler is a new name)."""
WORDS_PER_DRAW = 8
"""Words requested per draw still to make (a draw reads about five on average; more are fetched if needed)."""


@dataclass(frozen=True)
class LaplaceGrid:
    """Noise of scale ``scale`` = ``numerator / DENOMINATOR · grid``: ``Z ~ Lap_Z(numerator / DENOMINATOR)``."""

    scale: float
    grid: float
    numerator: int


def laplace_grid(scale: float) -> LaplaceGrid:
    """The grid ``g = grid_step(scale)`` and the scale rounded up so that ``scale / g`` is a multiple of 2⁻¹⁰."""
    step = grid_step(scale)
    numerator = math.ceil(scale / step * DENOMINATOR)
    return LaplaceGrid(numerator * step / DENOMINATOR, step, numerator)


@numba.njit(cache=True)
def _below(words, position, n):  # pragma: no cover - compiled
    """A uniform integer in [0, n) by rejection on the top bits of whole words, and the next position; -1 when the
    words run out."""
    if n == 1:
        return 0, position
    bits = 0
    rest = n - 1
    while rest > 0:
        bits += 1
        rest >>= 1
    shift = np.uint64(64 - bits)
    while position < words.shape[0]:
        value = np.int64(words[position] >> shift)
        position += 1
        if value < n:
            return value, position
    return -1, position


@numba.njit(cache=True)
def _bernoulli_exp(words, position, numerator, denominator):  # pragma: no cover - compiled
    """Bernoulli(exp(-γ)) for γ = numerator/denominator in [0, 1] (CKS Algorithm 1): K ← 1; while
    Bernoulli(γ/K) is 1, K ← K + 1; 1 when K is odd. -1 when the words run out."""
    k = 1
    while True:
        value, position = _below(words, position, denominator * k)
        if value < 0:
            return -1, position
        if value >= numerator:
            return k % 2, position
        k += 1


@numba.njit(cache=True)
def _draw(words, position, t, s):  # pragma: no cover - compiled
    """One draw of Lap_Z(t/s) (CKS Algorithm 2): (done, value, next position)."""
    while True:
        u, position = _below(words, position, t)
        if u < 0:
            return False, 0, position
        keep, position = _bernoulli_exp(words, position, u, t)
        if keep < 0:
            return False, 0, position
        if keep == 0:
            continue
        v = 0
        while True:
            more, position = _bernoulli_exp(words, position, 1, 1)
            if more < 0:
                return False, 0, position
            if more == 0:
                break
            v += 1
        y = (u + t * v) // s
        sign, position = _below(words, position, 2)
        if sign < 0:
            return False, 0, position
        if sign == 1 and y == 0:
            continue
        return True, (1 - 2 * sign) * y, position


@numba.njit(cache=True)
def _fill(words, t, s, out, start):  # pragma: no cover - compiled
    """Draws into ``out[start:]`` from ``words``: (draws filled, position after the last whole draw)."""
    position = 0
    index = start
    while index < out.shape[0]:
        done, value, following = _draw(words, position, t, s)
        if not done:
            break
        out[index] = value
        position = following
        index += 1
    return index, position


def discrete_laplace_integers(
    rng: np.random.Generator | None, numerator: int, count: int, denominator: int = DENOMINATOR
) -> np.ndarray:
    """``count`` exact draws of ``Lap_Z(numerator / denominator)`` (int64), ``P(z) ∝ exp(-|z|·denominator /
    numerator)``."""
    if not (numerator >= 1 and denominator >= 1 and numerator * denominator < 2**40):
        raise ValueError(f"need integers numerator, denominator >= 1 with a product below 2^40, got {numerator}, "
                         f"{denominator}")  # fmt: skip
    out = np.empty(count, dtype=np.int64)
    words = _words(rng, max(64, WORDS_PER_DRAW * count))
    filled = 0
    while True:
        filled, used = _fill(words, numerator, denominator, out, filled)
        if filled == count:
            return out
        fresh = _words(rng, max(64, WORDS_PER_DRAW * (count - filled)))
        words = np.concatenate([words[used:], fresh])  # the unfinished draw rereads its words, then continues


def discrete_laplace(rng: np.random.Generator | None, scale: float, shape: tuple[int, ...]) -> np.ndarray:
    """Noise ``g·Z`` of scale ``scale`` on the grid of :func:`laplace_grid` (zeros when scale = 0); its actual scale is
    ``laplace_grid(scale).scale``, at least ``scale``."""
    if scale == 0:
        return np.zeros(shape)
    grid = laplace_grid(scale)
    draws = discrete_laplace_integers(rng, grid.numerator, math.prod(shape))
    return (draws.astype(np.float64) * grid.grid).reshape(shape)
