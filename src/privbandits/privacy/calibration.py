"""Gaussian noise calibration and accounting: the papers' formulas, the analytic Gaussian, PLD and RDP.

Every DP baseline here is calibrated by its paper's closed form (:attr:`GaussianCalibration.PAPER`),
which holds only for ε ≤ 1 and is loose there: the classic ``σ = Δ √(2 ln(1.25/δ))/ε`` and
its tree variants add several times the noise the guarantee needs.
:attr:`GaussianCalibration.ANALYTIC` is the smallest σ for which a Gaussian mechanism of L2
sensitivity Δ is (ε, δ)-DP, for every ε > 0 (Balle & Wang, ICML 2018, Theorem 8; computed by
``dp-accounting``). A datum that enters k Gaussian releases of equal σ is one Gaussian
mechanism of sensitivity ``Δ √k`` (the releases are independent and the privacy loss of
Gaussians adds in quadrature), so the analytic σ of a k-fold composition is exact too.

Accounting: :func:`pld_epsilon` composes with privacy loss distributions (``dp-accounting``'s
PLD accountant, tight up to its discretisation); :func:`rdp_epsilon` with Rényi DP, an upper
bound kept as a cross-check (PLD ≤ RDP).
"""

from __future__ import annotations

import functools
import math
from enum import StrEnum

__all__ = ["GaussianCalibration", "analytic_gaussian_std", "gaussian_event", "pld_epsilon", "rdp_epsilon"]

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


@functools.lru_cache(maxsize=4096)
def _unit_sigma(epsilon: float, delta: float) -> float:
    """dp-accounting's analytic σ at sensitivity 1 (a numerical search, so each (ε, δ) is searched once)."""
    import dp_accounting

    return float(dp_accounting.get_sigma_gaussian(epsilon, delta))


def gaussian_event(std: float, compositions: int, sensitivity: float):
    """dp-accounting's event of ``compositions`` Gaussian mechanisms with noise multiplier std/sensitivity."""
    import dp_accounting

    return dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(std / sensitivity), compositions)


def pld_epsilon(std: float, compositions: int, delta: float, sensitivity: float) -> float:
    """ε at δ of ``compositions`` Gaussian mechanisms of noise ``std`` and sensitivity (dp-accounting, PLD)."""
    return _accounted(std, compositions, delta, sensitivity, "pld")


def rdp_epsilon(std: float, compositions: int, delta: float, sensitivity: float) -> float:
    """ε at δ of the same composition as :func:`pld_epsilon` with Rényi DP (an upper bound; the cross-check)."""
    return _accounted(std, compositions, delta, sensitivity, "rdp")


def _accounted(std: float, compositions: int, delta: float, sensitivity: float, method: str) -> float:
    if compositions == 0:
        return 0.0
    if std == 0:
        return math.inf
    from dp_accounting import pld, rdp

    accountant = pld.PLDAccountant() if method == "pld" else rdp.RdpAccountant()
    accountant.compose(gaussian_event(std, compositions, sensitivity))
    return float(accountant.get_epsilon(delta))
