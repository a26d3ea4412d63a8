"""Gaussian noise calibration and accounting: the papers' formulas, the analytic Gaussian, PLD and RDP.

Every DP baseline here is calibrated by its paper's closed form (:attr:`GaussianCalibration.PAPER`),
which holds only for ε ≤ 1 and is loose there: the classic ``σ = Δ √(2 ln(1.25/δ))/ε`` and
its tree variants add several times the noise the guarantee needs.
:attr:`GaussianCalibration.ANALYTIC` is the smallest σ for which a Gaussian mechanism of L2
sensitivity Δ is (ε, δ)-DP, for every ε > 0 (Balle & Wang, ICML 2018, Theorem 8; computed by
``dp-accounting``). A datum that enters k Gaussian releases of equal σ is one Gaussian
mechanism of sensitivity ``Δ √k`` (the releases are independent and the privacy loss of
Gaussians adds in quadrature), so the analytic σ of a k-fold composition is exact too.

Snapping: every release here is ``snapped data + g·Z`` (:mod:`~privbandits.privacy.noise`), and snapping one
datum's n coordinates adds up to ``g·√n`` to its L2 sensitivity, with g = grid_step(σ) itself a function of
σ. :func:`snapped_std` rescales any calibration linear in Δ (all of the above are) to ``Δ + g(σ)·√n``.

Accounting: :func:`pld_epsilon` composes with privacy loss distributions (``dp-accounting``'s
PLD accountant, tight up to its discretisation); :func:`rdp_epsilon` with Rényi DP, an upper
bound kept as a cross-check (PLD ≤ RDP).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from enum import StrEnum

from privbandits.privacy import accountant
from privbandits.privacy.accountant import Release

__all__ = [
    "GaussianCalibration", "SnappedNoise", "analytic_gaussian_std", "effective_sensitivity", "gaussian_event",
    "pld_epsilon", "rdp_epsilon", "snapped_noise", "snapped_std",
]  # fmt: skip

ANALYTIC_EPSILON_CAP = 1000.0
"""dp-accounting's σ search fails far beyond this ε; the σ at the cap is still (ε, δ)-DP for a larger ε."""


class GaussianCalibration(StrEnum):
    """How a Gaussian mechanism's σ is derived from its claimed (ε, δ).

    PAPER
        The paper's printed formula (kept for the reproductions).
    ANALYTIC
        The analytic Gaussian mechanism (Balle & Wang 2018): the smallest σ that is (ε, δ)-DP.
    """

    PAPER = "paper"
    ANALYTIC = "analytic"


def analytic_gaussian_std(epsilon: float, delta: float, sensitivity: float, compositions: int = 1) -> float:
    """Smallest σ for which ``compositions`` Gaussian releases of one datum, each of L2 sensitivity
    ``sensitivity``, are together (ε, δ)-DP (Balle & Wang 2018, Thm 8); 0 when ε = ∞."""
    if not (epsilon > 0 and 0 < delta < 1 and sensitivity > 0 and compositions >= 1):
        raise ValueError(
            f"need epsilon > 0, 0 < delta < 1, sensitivity > 0, compositions >= 1; "
            f"got {epsilon}, {delta}, {sensitivity}, {compositions}"
        )
    if math.isinf(epsilon):
        return 0.0
    return _unit_sigma(min(float(epsilon), ANALYTIC_EPSILON_CAP), float(delta)) * sensitivity * math.sqrt(compositions)


def snapped_std(std: float, sensitivity: float, coordinates: int, cap: float) -> float:
    """The σ calibrated as ``std`` is for sensitivity Δ, for data snapped to σ's grid instead: the fixed point of
    ``σ = c·Δ_eff(σ)``, ``Δ_eff(σ) = min(Δ + grid_step(σ)·√n, cap)``, c = std/Δ (0 stays 0: nothing released).

    n is the number of coordinates one datum's snapped contribution has; ``cap`` the triangle inequality's
    bound (twice the largest datum's norm), which snapping toward zero never exceeds. Iterated from σ₀ = std:
    f(σ) = c·Δ_eff(σ) is non-decreasing (grid_step is a non-decreasing step function, constant between powers
    of two) and σ₁ = f(σ₀) ≥ σ₀, so the iterates never decrease; they stay ≤ c·cap, so grid_step(σ_k) takes
    finitely many values, stops changing, and one step later σ_{k+1} = f(σ_k) = σ_k exactly: the calibration
    at Δ_eff(σ). Each step that does not stop doubles the grid at least, so there are at most
    log₂(cap/Δ) + 2 of them.
    """
    if not 0 < sensitivity <= cap:
        raise ValueError(f"snapped_std: need 0 < sensitivity <= cap, got sensitivity={sensitivity}, cap={cap}")
    if std == 0:
        return 0.0
    unit, sigma = std / sensitivity, std
    while True:
        following = unit * effective_sensitivity(sigma, sensitivity, coordinates, cap)
        if following == sigma:
            return sigma
        sigma = following


@dataclass(frozen=True)
class SnappedNoise:
    """A snapped release's noise: σ, the grid its data are snapped to (a power-of-two multiple of σ's, so a datum
    shifts the release by whole noise steps) and the datum's effective L2 sensitivity there."""

    std: float
    grid: float
    sensitivity: float


def snapped_noise(
    std: float, sensitivity: float, coordinates: int, cap: float, data_bound: float, noise_bound: float
) -> SnappedNoise:
    """:func:`snapped_std` and its grid, for sums whose data reach ``data_bound`` and whose noise reaches
    ``noise_bound``·σ in magnitude: float64 sums them exactly only below 2⁵³ grid steps. Where σ's own grid is
    finer than that (σ below about ``data_bound``·2⁻⁴¹: an ε far beyond any claim), the data are snapped to the
    finest grid that is exact and σ is calibrated at the cap, which holds on every grid."""
    from privbandits.privacy.noise import EXACT_STEPS, check_exact, grid_step

    sigma = snapped_std(std, sensitivity, coordinates, cap)
    if sigma == 0:
        return SnappedNoise(0.0, 0.0, sensitivity)
    if (data_bound + noise_bound * sigma) / grid_step(sigma) < EXACT_STEPS:
        return SnappedNoise(sigma, grid_step(sigma), effective_sensitivity(sigma, sensitivity, coordinates, cap))
    sigma = std / sensitivity * cap
    total = data_bound + noise_bound * sigma
    grid = max(grid_step(sigma), math.ldexp(1.0, math.frexp(total / EXACT_STEPS)[1]))  # the finest power of two
    check_exact(total, grid, "snapped_noise")
    return SnappedNoise(sigma, grid, cap)


def effective_sensitivity(std: float, sensitivity: float, coordinates: int, cap: float) -> float:
    """``min(Δ + g(std)·√n, cap)``: the L2 sensitivity of a datum whose n coordinates were snapped toward zero to
    std's grid (:func:`~privbandits.privacy.noise.snap`); Δ when std = 0 (nothing snapped)."""
    from privbandits.privacy.noise import snapping_slack

    return min(sensitivity + snapping_slack(std, coordinates), cap) if std > 0 else sensitivity


@functools.lru_cache(maxsize=4096)
def _unit_sigma(epsilon: float, delta: float) -> float:
    """dp-accounting's analytic σ at sensitivity 1 (a numerical search, so each (ε, δ) is searched once)."""
    import dp_accounting

    return float(dp_accounting.get_sigma_gaussian(epsilon, delta))


def gaussian_event(std: float, compositions: int, sensitivity: float):
    """dp-accounting's event of ``compositions`` Gaussian mechanisms with noise multiplier std/sensitivity."""
    return Release.gaussian(std, sensitivity, compositions).event()


def pld_epsilon(std: float, compositions: int, delta: float, sensitivity: float) -> float:
    """ε at δ of ``compositions`` Gaussian mechanisms of noise ``std`` and sensitivity (dp-accounting, PLD)."""
    return _accounted(std, compositions, delta, sensitivity, "pld")


def rdp_epsilon(std: float, compositions: int, delta: float, sensitivity: float) -> float:
    """ε at δ of the same composition as :func:`pld_epsilon` with Rényi DP (an upper bound; the cross-check)."""
    return _accounted(std, compositions, delta, sensitivity, "rdp")


def _accounted(std: float, compositions: int, delta: float, sensitivity: float, method: str) -> float:
    """``compositions`` Gaussian releases, through the one accountant (:mod:`~privbandits.privacy.accountant`)."""
    if compositions == 0:
        return 0.0
    composed = [Release.gaussian(std, sensitivity, compositions)]
    return accountant.pld_epsilon(composed, delta) if method == "pld" else accountant.rdp_epsilon(composed, delta)
