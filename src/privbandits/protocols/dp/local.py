"""Local-DP LinUCB: each user privatizes x xᵀ and r·x before sending (Zheng et al., NeurIPS 2020)."""

from __future__ import annotations

import math

import numpy as np

from privbandits.privacy.accountant import Release, ledger_epsilons
from privbandits.privacy.calibration import GaussianCalibration, SnappedNoise, analytic_gaussian_std, snapped_noise
from privbandits.privacy.ledger import LedgerEntry
from privbandits.privacy.noise import TAIL, discrete_gaussian, grid_step, snap_to
from privbandits.protocols.dp.base import PrivateLinUCB, spectral_bound, symmetric_upper_gaussian

PRIVACY_UNIT = "one user's (x, r) report (local DP)"

REPORT_SENSITIVITY = math.sqrt(6.0)
"""L2 sensitivity of one report (upper triangle of x xᵀ, r x) under replacement, ‖x‖ ≤ 1, |r| ≤ 1:
the triangle moves by at most √2, r x by at most 2, so √(2 + 4)."""
SNAPPED_REPORT_CAP = 2.0 * math.sqrt(2.0)
"""The most one report snapped toward zero moves, whatever the grid: each has norm ≤ √(‖x‖⁴ + r²‖x‖²) ≤ √2."""


def report_coordinates(dim: int) -> int:
    """Coordinates of one report, the upper triangle of x xᵀ and r x: d(d+1)/2 + d (the n of the slack g√n)."""
    return dim * (dim + 1) // 2 + dim


def report_noise(std: float, dim: int) -> SnappedNoise:
    """``std``, calibrated at :data:`REPORT_SENSITIVITY`, recalibrated for a report of dimension ``dim`` snapped
    to σ's grid: effective sensitivity ``min(√6 + g√n, 2√2)`` (:func:`~privbandits.privacy.calibration.snapped_noise`;
    a report's entries are at most 1, its noise at most 2·TAIL·σ)."""
    return snapped_noise(std, REPORT_SENSITIVITY, report_coordinates(dim), SNAPPED_REPORT_CAP, 1.0, 2 * TAIL)


def snapped_report_std(std: float, dim: int | None) -> float:
    """:func:`report_noise`'s σ (None: ``std`` unchanged, the formula alone)."""
    return std if dim is None else report_noise(std, dim).std


def local_noise_std(
    epsilon: float,
    delta: float,
    calibration: GaussianCalibration | str = GaussianCalibration.PAPER,
    dim: int | None = None,
) -> float:
    """σ = 4 √(2 ln(1.25/δ)) / ε (Zheng et al. 2020, the LDP linear bandit's Gaussian randomizer,
    Alg. 5 of arXiv:2006.00701 as its authors' code states it); 0 when ε = ∞.
    ``calibration="analytic"``: the analytic Gaussian for sensitivity :data:`REPORT_SENSITIVITY` instead.
    With ``dim``: for the snapped report (:func:`snapped_report_std`)."""
    if math.isinf(epsilon):
        return 0.0
    if GaussianCalibration(calibration) is GaussianCalibration.ANALYTIC:
        return snapped_report_std(analytic_gaussian_std(epsilon, delta, REPORT_SENSITIVITY), dim)
    return snapped_report_std(4.0 * math.sqrt(2.0 * math.log(1.25 / delta)) / epsilon, dim)


class LocalRandomizer:
    """The user's side: ``(x xᵀ + B, r x + ξ)`` with B symmetric, upper triangle i.i.d. N(0, σ²), ξ ~ N(0, σ² I),
    both discrete Gaussians on σ's grid added to the snapped report (:mod:`~privbandits.privacy.noise`)."""

    def __init__(self, std: float, rng: np.random.Generator, grid: float | None = None) -> None:
        self.std, self.rng = float(std), rng
        self.grid = (grid_step(self.std) if self.std > 0 else 0.0) if grid is None else grid  # the data's grid

    def report(self, x: np.ndarray, reward: float) -> tuple[np.ndarray, np.ndarray]:
        gram, vector = np.outer(x, x), reward * x
        if self.std > 0:  # the report snapped to the noise's grid, so its bits carry nothing finer (noise.py)
            gram = snap_to(gram, self.grid) + symmetric_upper_gaussian(self.rng, x.shape[0], self.std)
            vector = snap_to(vector, self.grid) + discrete_gaussian(self.rng, self.std, x.shape)
        return gram, vector


def local_accounting(std: float, delta: float, sensitivity: float = REPORT_SENSITIVITY) -> dict[str, float]:
    """ε at δ of one report with noise ``std`` by the one accountant: ``accounted_epsilon`` (PLD) and
    ``rdp_epsilon`` (:func:`~privbandits.privacy.accountant.ledger_epsilons`; a snapped report's sensitivity is
    :func:`report_noise`'s)."""
    return ledger_epsilons([Release.gaussian(std, sensitivity)], delta)


class LocalDPLinUCB(PrivateLinUCB):
    """Local-DP LinUCB (Zheng, Cai, Huang, Li & Wang 2020, §5, LDP contextual linear bandits).

    The server sends its model; the user picks the arm, and sends back
    ``x xᵀ + B_t`` and ``r x + ξ_t`` (:class:`LocalRandomizer`, σ from
    :func:`local_noise_std`), so every report is (ε, δ)-LDP and the server never sees
    raw data. The server sums the reports and plays LinUCB with the regulariser
    shifted by ``2Υ_t``, ``Υ_t = σ √t (4√d + 2 ln(2T/α))`` (the bound on the summed
    noise's spectral norm; the authors' code sets c = 2γ with this γ).

    The ledger gets one entry per report (each user reports once: parallel
    composition), with σ and the ε the one accountant gives that noise at δ for the
    report's L2 sensitivity √6 (``accounted_epsilon``, PLD; ``rdp_epsilon`` beside it). Privacy unit: one
    report. A user who reports k times pays the composition of k reports
    (:func:`~privbandits.privacy.accountant.pld_epsilon` of ``Release.gaussian(σ, Δ, k)``).

    Differences: constant width α (the paper's β_t and the authors' code, which
    scores with ``x ᵀ V⁻¹ x`` without the square root, are not used); the authors'
    MindSpore code computes σ = 4 √(ln(1.25/δ))/ε (dropping the √2 its own comment and
    README state) — we use the stated formula. Chowdhury & Zhou's reference code
    (``LDPLinUCB``) uses σ = √(ln(2.5/δ))/ε and shift 2σ√T√d.
    """

    mechanism = "dp_linucb.local"

    def __init__(self, n_arms: int, dim: int, **kwargs) -> None:
        super().__init__(n_arms, dim, **kwargs)
        noise = report_noise(local_noise_std(self.epsilon, self.delta, self.noise_calibration), self.dim)
        self._noise_std, sensitivity = noise.std, noise.sensitivity
        self.randomizer = LocalRandomizer(self._noise_std, self.rng, noise.grid)
        self._details = {
            "noise_std": self._noise_std,
            "sensitivity": REPORT_SENSITIVITY,
            "snapping_slack": sensitivity - REPORT_SENSITIVITY,
            "effective_sensitivity": sensitivity,
            "calibration": str(self.noise_calibration),
        }
        if self.private:
            self._details |= local_accounting(self._noise_std, self.delta, sensitivity)
        self._refresh()

    @property
    def noise_std(self) -> float:
        return self._noise_std

    def upsilon(self, reports: int) -> float:
        """Υ_t after ``reports`` summed reports."""
        if not self.private:
            return 0.0
        return spectral_bound(self._noise_std * math.sqrt(reports), self.dim, self.horizon, self.failure_probability)

    def _report(self, x: np.ndarray, reward: float) -> None:
        gram, vector = self.randomizer.report(x, reward)
        if self.private:
            self.ledger.record(LedgerEntry(self.mechanism, self.epsilon, self.delta, PRIVACY_UNIT, self._details))
        else:
            self.ledger.record(LedgerEntry(f"{self.mechanism}.plaintext", math.inf, None, PRIVACY_UNIT, self._details))
        self.gram += gram
        self.u += vector
        if self.shift_regularizer:
            self.shift = 2.0 * self.upsilon(self.rounds + 1)
        self._refresh()
