"""Noisy sums of bounded per-record statistics: the release behind every DP off-policy estimator.

A release declares k statistics (:class:`Bound`): record i contributes ``v_ij`` in the public range
``[low_j, high_j]`` (the caller clips to it) and the release is, per statistic, ``Σ_i snap(v_ij) + noise_j``.

**Neighbouring relation**: one record replaced by any other (the number of records n is public). Statistic j then
moves by at most ``Δ_j = high_j − low_j``; snapping each datum toward zero to the noise's grid g_j
(:mod:`~privbandits.privacy.noise`) adds at most one step, so the calibration is made at
``Δ_eff = min(Δ_j + g_j, 2·max(|low_j|, |high_j|))`` (:func:`~privbandits.privacy.calibration.snapped_std`, n = 1).

**The budget is split by shares** ``s_j`` (summing to 1), which the caller states and the ledger records:

* ``delta = 0``: discrete Laplace noise (:mod:`~privbandits.privacy.laplace`) of scale ``b_j = Δ_eff / (s_j ε)``:
  statistic j is ``s_j ε``-DP and the k of them ``ε``-DP together (basic composition, exact for pure DP).
* ``delta > 0``: discrete Gaussian noise (:mod:`~privbandits.privacy.noise`) with ``σ_j = Δ_eff·σ₁/√s_j``, σ₁ the
  analytic Gaussian's σ at sensitivity 1 and (ε, δ) (Balle & Wang 2018): the change of the k sums, each divided by
  its σ_j, has L2 norm at most ``√(Σ s_j)/σ₁ = 1/σ₁``, so the vector is one Gaussian mechanism that is (ε, δ)-DP.
  ``accounted_epsilon`` is dp-accounting's PLD ε at δ of that mechanism (the project's accountant).
* ``epsilon = inf``: no noise and no snapping; the sums are exact (a run without privacy).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from privbandits.privacy.calibration import analytic_gaussian_std, effective_sensitivity, pld_epsilon, snapped_std
from privbandits.privacy.laplace import LAPLACE_SAMPLER, discrete_laplace_integers, laplace_grid
from privbandits.privacy.ledger import LedgerEntry
from privbandits.privacy.noise import NOISE_SAMPLER, TAIL, check_exact, discrete_gaussian, grid_step, snap_to

__all__ = ["Bound", "BoundedSums", "NoiseScale"]

MECHANISMS = ("laplace", "gaussian", "none")


@dataclass(frozen=True)
class Bound:
    """One released statistic: its name, the range ``[low, high]`` each record's value lies in, and its share of
    the budget."""

    name: str
    low: float
    high: float
    share: float

    def __post_init__(self) -> None:
        if not (math.isfinite(self.low) and math.isfinite(self.high) and self.low < self.high):
            raise ValueError(f"{self.name}: need finite low < high, got [{self.low}, {self.high}]")
        if not 0.0 < self.share <= 1.0:
            raise ValueError(f"{self.name}: share must be in (0, 1], got {self.share}")

    @property
    def width(self) -> float:
        """Δ = high − low: the most one replaced record moves the sum."""
        return self.high - self.low

    @property
    def cap(self) -> float:
        """Twice the largest magnitude: what a snapped datum's change never exceeds."""
        return 2.0 * max(abs(self.low), abs(self.high))


@dataclass(frozen=True)
class NoiseScale:
    """The noise of one statistic: ``scale`` (Laplace b or Gaussian σ), its standard deviation, the grid the data
    are snapped to (0: none), the sensitivity calibrated for (Δ_eff) and the ε this statistic spends (its share;
    for the Gaussian, of the joint mechanism)."""

    name: str
    scale: float
    std: float
    grid: float
    sensitivity: float
    epsilon: float
    numerator: int = 0
    """Laplace only: the scale in grid steps times :data:`~privbandits.privacy.laplace.DENOMINATOR`."""


class BoundedSums:
    """The release of ``bounds``' sums over ``n_records`` records at (``epsilon``, ``delta``)."""

    def __init__(self, bounds: Sequence[Bound], epsilon: float, delta: float, n_records: int) -> None:
        if not bounds:
            raise ValueError("BoundedSums needs at least one statistic")
        total = math.fsum(bound.share for bound in bounds)
        if abs(total - 1.0) > 1e-9:
            raise ValueError(f"the shares must sum to 1, got {total}")
        if not (epsilon > 0 and 0.0 <= delta < 1.0 and n_records >= 1):
            raise ValueError(f"need epsilon > 0, 0 <= delta < 1, n_records >= 1; got {epsilon}, {delta}, {n_records}")
        self.bounds = tuple(bounds)
        self.epsilon, self.delta, self.n_records = float(epsilon), float(delta), int(n_records)
        self.mechanism = "none" if math.isinf(epsilon) else "laplace" if delta == 0 else "gaussian"
        self.noise = tuple(self._calibrate(bound) for bound in self.bounds)
        for bound, noise in zip(self.bounds, self.noise, strict=True):
            if noise.grid > 0:
                check_exact(self.n_records * bound.cap / 2 + 4 * TAIL * noise.std, noise.grid, bound.name)

    def _calibrate(self, bound: Bound) -> NoiseScale:
        if self.mechanism == "none":
            return NoiseScale(bound.name, 0.0, 0.0, 0.0, bound.width, math.inf)
        if self.mechanism == "laplace":
            fixed = snapped_std(bound.width / (bound.share * self.epsilon), bound.width, 1, bound.cap)
            sensitivity = effective_sensitivity(fixed, bound.width, 1, bound.cap)
            grid = laplace_grid(fixed)  # the scale rounded up, on the grid of the fixed point
            return NoiseScale(bound.name, grid.scale, math.sqrt(2.0) * grid.scale, grid.grid, sensitivity,
                              sensitivity / grid.scale, grid.numerator)  # fmt: skip
        unit = _unit_sigma(self.epsilon, self.delta)
        sigma = snapped_std(bound.width * unit / math.sqrt(bound.share), bound.width, 1, bound.cap)
        sensitivity = effective_sensitivity(sigma, bound.width, 1, bound.cap)
        return NoiseScale(bound.name, sigma, sigma, grid_step(sigma), sensitivity, bound.share * self.epsilon)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(bound.name for bound in self.bounds)

    def exact(self, values: np.ndarray) -> np.ndarray:
        """The sums of the snapped values (shape ``(n_records, k)``): what the noise is added to. Not private."""
        values = np.asarray(values, dtype=np.float64)
        if values.shape != (self.n_records, len(self.bounds)):
            raise ValueError(f"values must have shape {(self.n_records, len(self.bounds))}, got {values.shape}")
        sums = np.empty(len(self.bounds))
        for j, (bound, noise) in enumerate(zip(self.bounds, self.noise, strict=True)):
            column = values[:, j]
            if not (np.all(column >= bound.low) and np.all(column <= bound.high)):
                raise ValueError(f"{bound.name}: every value must lie in [{bound.low}, {bound.high}] (clip first)")
            sums[j] = (snap_to(column, noise.grid) if noise.grid > 0 else column).sum()
        return sums

    def noise_draws(self, rng: np.random.Generator | None, runs: int) -> np.ndarray:
        """``runs`` independent draws of the k noise terms, shape ``(runs, k)``, from ``rng`` (None: OS entropy)."""
        columns = []
        for noise in self.noise:
            if self.mechanism == "laplace":
                columns.append(discrete_laplace_integers(rng, noise.numerator, runs).astype(np.float64) * noise.grid)
            else:
                columns.append(discrete_gaussian(rng, noise.std, (runs,)))
        return np.stack(columns, axis=1)

    def release(self, values: np.ndarray, rng: np.random.Generator | None) -> np.ndarray:
        """The k noisy sums of ``values`` (shape ``(n_records, k)``), noise from ``rng`` (None: OS entropy)."""
        return self.exact(values) + self.noise_draws(rng, 1)[0]

    @property
    def accounted_epsilon(self) -> float:
        """ε of the release by its accountant: Laplace, the pure-ε sum of the statistics' ε; Gaussian, dp-accounting's
        PLD ε at δ of the joint mechanism (noise multiplier ``1/√(Σ (Δ_eff/σ_j)²)``); inf without noise."""
        if self.mechanism == "none":
            return math.inf
        if self.mechanism == "laplace":
            return math.fsum(noise.epsilon for noise in self.noise)
        return _pld(self.normalised_sensitivity, self.delta)

    @property
    def normalised_sensitivity(self) -> float:
        """``√(Σ_j (Δ_eff,j / scale_j)²)``: the Gaussian vector's sensitivity in units of its noise."""
        return math.sqrt(math.fsum((noise.sensitivity / noise.scale) ** 2 for noise in self.noise if noise.scale > 0))

    def details(self) -> dict[str, Any]:
        """What a ledger entry and a result record of this release: the mechanism, the sampler, each statistic's
        range, share, noise scale, grid and sensitivity."""
        sampler = {"laplace": LAPLACE_SAMPLER, "gaussian": NOISE_SAMPLER, "none": "none"}[self.mechanism]
        statistics = {
            bound.name: {"low": bound.low, "high": bound.high, "share": bound.share, "scale": noise.scale,
                         "std": noise.std, "grid": noise.grid, "sensitivity": noise.sensitivity}
            for bound, noise in zip(self.bounds, self.noise, strict=True)
        }  # fmt: skip
        return {"noise": self.mechanism, "sampler": sampler, "n_records": self.n_records, "statistics": statistics,
                "accounted_epsilon": self.accounted_epsilon}  # fmt: skip

    def ledger_entry(self, mechanism: str, unit: str, details: dict[str, Any] | None = None) -> LedgerEntry:
        """The release's ledger entry: its (ε, δ) (ε = inf and δ None without noise) and :meth:`details`."""
        extra = {**self.details(), **(details or {})}
        if self.mechanism == "none":
            return LedgerEntry(f"{mechanism}.plaintext", math.inf, None, unit, extra)
        return LedgerEntry(mechanism, self.epsilon, self.delta, unit, extra)


@functools.lru_cache(maxsize=256)
def _unit_sigma(epsilon: float, delta: float) -> float:
    return analytic_gaussian_std(epsilon, delta, 1.0)


@functools.lru_cache(maxsize=256)
def _pld(normalised: float, delta: float) -> float:
    return pld_epsilon(1.0 / normalised, 1, delta, 1.0)
