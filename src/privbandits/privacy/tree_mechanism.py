"""Tree-based (binary) mechanism with symmetric Gaussian matrix noise.

FCLUB's privatizer PVT(ℓ, j) (spec ``fclub.md`` §4.2, the paper's Alg. 5; Shariff &
Sheffet 2018; Dubey & Pentland 2020): the running sum of augmented outer products
``z zᵀ``, ``z = [x; y]``, is released as prefix sums, and the k-th release carries
the noise of the dyadic cover of ``[1..k]``: one cached node per set bit of k. Each
node is a symmetric Gaussian matrix ``N = (N̄ + N̄ᵀ)/√2`` with i.i.d.
``N̄_pq ~ N(0, σ²)``, so off-diagonal entries have variance σ² and diagonal ones 2σ².

Accounting: one datum enters at most one node per level, so a tree whose releases
use ``levels`` levels is ``levels`` Gaussian mechanisms per datum. Replacing one
``(x, y)`` (‖x‖ ≤ 1, |y| ≤ 1) moves ``z zᵀ`` by at most ``2√2`` in Frobenius norm;
on the independent coordinates of symmetric noise (the upper triangle, the diagonal
scaled by 1/√2) that is an L2 sensitivity of :data:`REPLACE_SENSITIVITY` = 2 with
per-coordinate noise σ. The releases add the noise to a sum of data each snapped toward zero to σ's grid
(:mod:`~privbandits.privacy.noise`), which adds ``g·√n`` to that sensitivity, n the upper triangle's entries
(at most :data:`SNAPPED_CAP` in all). :func:`accounted_epsilon` and :func:`accounted_delta`
compose these with ``dp-accounting`` (Rényi DP).
"""

from __future__ import annotations

import functools
import math
from enum import StrEnum

import numpy as np

from privbandits.privacy.calibration import analytic_gaussian_std, gaussian_event, rdp_epsilon
from privbandits.privacy.noise import discrete_gaussian

REPLACE_SENSITIVITY = 2.0
"""L2 sensitivity of ``z zᵀ`` under symmetric noise when one (x, y) is replaced (see module doc)."""
SNAPPED_CAP = 2.0 * math.sqrt(2.0)
"""The most a datum snapped toward zero can move ``z zᵀ`` in the same measure, whatever the grid: each snapped
``z zᵀ`` has norm at most ‖z‖²/√2 ≤ √2 there (the diagonal scaled by 1/√2), so two differ by at most 2√2."""


def augmented_coordinates(dim: int) -> int:
    """Independent coordinates of ``z zᵀ``, z = [x; y] of d + 1 entries: its upper triangle, (d+1)(d+2)/2, the n
    of one snapped datum's slack ``g·√n`` (:func:`~privbandits.privacy.calibration.snapped_std`)."""
    return (dim + 1) * (dim + 2) // 2


class NoiseVariance(StrEnum):
    """Which printed form of the per-node variance σ² (spec §4.2, §8 A4).

    SQUARED_LOG
        ``64 ν (ln(2/δ))² / ε²`` (Section 3 of the paper; recommended).
    ALGORITHM5
        ``64 ν ln(2/δ) / ε²`` (Algorithm 5 as printed).
    REFERENCE_STD
        ``64 ν (ln(2/δ))² / ε²`` used as the *standard deviation*, as the reference
        code does (spec §7.1): the variance is that number squared.
    ANALYTIC
        The analytic Gaussian (Balle & Wang 2018) for ν nodes of sensitivity
        :data:`REPLACE_SENSITIVITY`: the smallest σ that is (ε, δ)-DP (not in the paper).
    """

    SQUARED_LOG = "squared_log"
    ALGORITHM5 = "algorithm5"
    REFERENCE_STD = "reference_std"
    ANALYTIC = "analytic"


def node_variance(epsilon: float, delta: float, depth: int, form: NoiseVariance = NoiseVariance.SQUARED_LOG) -> float:
    """Per-entry variance σ² of a node's noise for a depth-``depth`` tree that is (ε, δ)-DP (§4.2)."""
    if not (epsilon > 0 and 0 < delta < 1 and depth >= 1):
        raise ValueError(f"need epsilon > 0, 0 < delta < 1, depth >= 1; got {epsilon}, {delta}, {depth}")
    if form is NoiseVariance.ANALYTIC:
        return analytic_gaussian_std(epsilon, delta, REPLACE_SENSITIVITY, depth) ** 2
    log = math.log(2.0 / delta)
    value = 64.0 * depth * (log if form is NoiseVariance.ALGORITHM5 else log * log) / epsilon**2
    return value * value if form is NoiseVariance.REFERENCE_STD else value


def symmetric_gaussian(rng: np.random.Generator | None, size: int, std: float) -> np.ndarray:
    """A symmetric matrix, off-diagonal entries of variance std², diagonal ones 2 std² (as ``(N̄ + N̄ᵀ)/√2``),
    drawn on std's grid by :mod:`~privbandits.privacy.noise` in one call: the strict upper triangle i.i.d.
    discrete Gaussian of standard deviation std, each diagonal entry the sum of two more (``rng=None``: OS
    entropy)."""
    return symmetric_gaussians(rng, 1, size, std)[0]


def symmetric_gaussians(rng: np.random.Generator | None, count: int, size: int, std: float) -> np.ndarray:
    """``count`` matrices of :func:`symmetric_gaussian`, the same ones ``count`` calls would draw, in one call."""
    draw = discrete_gaussian(rng, std, (count, size + 1, size))
    upper = np.where(_strict_upper(size), draw[:, :size], 0.0)  # np.triu(…, 1), without building the mask anew
    matrices = upper + np.swapaxes(upper, -1, -2)
    diagonal = np.arange(size)
    matrices[:, diagonal, diagonal] = draw[:, diagonal, diagonal] + draw[:, size]
    return matrices


@functools.lru_cache(maxsize=16)
def _strict_upper(size: int) -> np.ndarray:
    """The boolean mask of a size × size matrix's strict upper triangle (read-only: shared between calls)."""
    mask = np.triu(np.ones((size, size), dtype=bool), 1)
    mask.flags.writeable = False
    return mask


def dyadic_cover(k: int) -> list[tuple[int, int]]:
    """Nodes ``(level, block)`` whose intervals ``((block-1)·2^level, block·2^level]`` tile ``[1..k]``."""
    if k < 1:
        raise ValueError(f"prefix length must be >= 1, got {k}")
    return [(level, k >> level) for level in range(k.bit_length()) if (k >> level) & 1]


class TreeMechanism:
    """A binary mechanism that releases the noise of successive prefixes ``[1..k]``.

    Parameters
    ----------
    size : int
        Side of the noise matrices, d + 1 for FCLUB's augmented statistic.
    std : float
        Per-entry standard deviation σ of ``N̄``.
    rng : numpy.random.Generator
        Source of the node noise (each node drawn once, at first use, then cached).
    runs : int, optional
        Independent trees side by side (an audit's many runs in one): every node, and every
        release, gets a leading axis of this length. None (the learners' use): one tree.

    Attributes
    ----------
    releases : int
        Number of prefixes released so far.
    nodes : dict
        The live cached nodes ``{(level, block): matrix}``: at most one per level,
        since a node is never needed again once k has moved past its interval.
    """

    def __init__(self, size: int, std: float, rng: np.random.Generator, runs: int | None = None) -> None:
        if size < 1 or not std >= 0 or (runs is not None and runs < 1):
            raise ValueError(f"need size >= 1, std >= 0 and runs >= 1, got size={size}, std={std}, runs={runs}")
        self.size, self.std, self.rng, self.runs = size, float(std), rng, runs
        self.releases = 0
        self.nodes: dict[tuple[int, int], np.ndarray] = {}
        self._live: dict[int, tuple[int, int]] = {}  # level -> its live (level, block) key

    def release(self) -> np.ndarray:
        """Noise of the next prefix ``[1..k]``: the sum of its dyadic cover's node noises (a new array;
        ``(runs, size, size)`` with ``runs``)."""
        self.releases += 1
        total = np.zeros((self.size, self.size) if self.runs is None else (self.runs, self.size, self.size))
        for key in dyadic_cover(self.releases):
            node = self.nodes.get(key)
            if node is None:
                stale = self._live.get(key[0])
                if stale is not None:
                    del self.nodes[stale]
                node = self.nodes[key] = self._draw()
                self._live[key[0]] = key
            total += node
        return total

    def _draw(self) -> np.ndarray:
        if self.runs is None:
            return symmetric_gaussian(self.rng, self.size, self.std)
        return symmetric_gaussians(self.rng, self.runs, self.size, self.std)

    @property
    def levels_used(self) -> int:
        """Tree levels touched so far: the most nodes any one datum has entered."""
        return self.releases.bit_length()


def accounted_epsilon(std: float, compositions: int, delta: float, sensitivity: float = REPLACE_SENSITIVITY) -> float:
    """ε at ``delta`` of ``compositions`` Gaussian mechanisms with noise ``std`` (dp-accounting, RDP).

    ``compositions`` is the number of tree nodes one datum entered (summed over
    every tree that released it); 0 compositions cost ε = 0, std = 0 costs ∞.
    :func:`~privbandits.privacy.calibration.pld_epsilon` gives the tighter PLD value.
    """
    return rdp_epsilon(std, compositions, delta, sensitivity)


def accounted_delta(std: float, compositions: int, epsilon: float, sensitivity: float = REPLACE_SENSITIVITY) -> float:
    """δ at ``epsilon`` of the same composition as :func:`accounted_epsilon` (1 when std = 0)."""
    if compositions == 0:
        return 0.0
    if std == 0:
        return 1.0
    from dp_accounting import rdp

    accountant = rdp.RdpAccountant()
    accountant.compose(gaussian_event(std, compositions, sensitivity))
    return float(accountant.get_delta(epsilon))
