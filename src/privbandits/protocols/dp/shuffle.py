"""Shuffle-model LinUCB: batched local reports through a trusted shuffler (Chowdhury & Zhou, ICML 2022)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from privbandits.options import Option
from privbandits.privacy.amplification import amplified_delta, amplified_epsilon, local_epsilon_for
from privbandits.privacy.calibration import GaussianCalibration
from privbandits.privacy.ledger import LedgerEntry
from privbandits.protocols.dp.base import PrivateLinUCB, spectral_bound
from privbandits.protocols.dp.local import (
    REPORT_SENSITIVITY,
    LocalRandomizer,
    local_accounting,
    local_noise_std,
    report_noise,
)
from privbandits.validation import Integer

PRIVACY_UNIT = "one user's (x, r) report (shuffle DP, central view of one batch)"


@dataclass(frozen=True)
class ShuffleCalibration:
    """The local randomizer's (ε₀, δ₀, σ₀) and the central (ε, δ) one shuffled batch of n reports gets.

    ``amplified``: whether amplification by shuffling applied (else ε₀ = ε, δ₀ = δ and the
    batch is only as private as each local report).
    """

    epsilon0: float
    delta0: float
    noise_std: float
    central_epsilon: float
    central_delta: float
    amplified: bool
    grid: float = 0.0
    """The grid each report's data are snapped to (0: none given, σ₀'s own)."""
    sensitivity: float = REPORT_SENSITIVITY
    """A report's effective L2 sensitivity on that grid (with ``dim``: the snapping slack included)."""


def shuffle_calibration(
    epsilon: float,
    delta: float,
    batch_size: int,
    calibration: GaussianCalibration | str = GaussianCalibration.PAPER,
    dim: int | None = None,
) -> ShuffleCalibration:
    """Calibrate the local Gaussian randomizer of a batch of ``batch_size`` shuffled reports to central (ε, δ).

    Half of δ goes to Feldman–McMillan–Talwar's Theorem 3.1 (ε₀ = the largest local ε
    whose shuffled batch is ε-DP, :func:`~privbandits.privacy.amplification.local_epsilon_for`),
    half to the local δ₀ of their Theorem 3.8: ``δ₀ = (δ/2) / ((e^ε + 1)(1 + e^−ε₀/2) n)``.
    When the theorem gives no ε₀ > ε (small batches), ε₀ = ε and δ₀ = δ. The randomizer is
    Zheng et al.'s, σ₀ = 4 √(2 ln(1.25/δ₀)) / ε₀, raised where needed to the analytic
    Gaussian (Balle & Wang 2018, via dp-accounting) for the report's sensitivity √6, since
    the classic formula does not hold for ε₀ > 1. ``calibration="analytic"``: the analytic
    Gaussian alone. With ``dim``: σ₀ for the snapped report of that dimension
    (:func:`~privbandits.protocols.dp.local.snapped_report_std`).
    """
    if math.isinf(epsilon):
        return ShuffleCalibration(math.inf, 0.0, 0.0, math.inf, 0.0, False)
    half = delta / 2.0
    epsilon0 = local_epsilon_for(epsilon, batch_size, half)
    if epsilon0 is not None and epsilon0 > epsilon:
        delta0 = half / ((math.exp(epsilon) + 1.0) * (1.0 + math.exp(-epsilon0) / 2.0) * batch_size)
        central = amplified_epsilon(epsilon0, batch_size, half)
        central_delta = amplified_delta(central, epsilon0, delta0, batch_size, half)
        amplified = True
    else:
        epsilon0, delta0, central, central_delta, amplified = epsilon, delta, epsilon, delta, False
    std = local_noise_std(epsilon0, delta0, GaussianCalibration.ANALYTIC)
    if GaussianCalibration(calibration) is GaussianCalibration.PAPER:
        std = max(local_noise_std(epsilon0, delta0), std)
    if dim is None:
        return ShuffleCalibration(epsilon0, delta0, std, central, central_delta, amplified)
    noise = report_noise(std, dim)
    return ShuffleCalibration(epsilon0, delta0, noise.std, central, central_delta, amplified, noise.grid,
                              noise.sensitivity)  # fmt: skip


class Shuffler:
    """The trusted shuffler: forwards a batch of reports in a uniformly random order."""

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng

    def shuffle(self, reports: list) -> list:
        return [reports[i] for i in self.rng.permutation(len(reports))]


class ShuffleDPLinUCB(PrivateLinUCB):
    """Shuffle-model LinUCB (Chowdhury & Zhou 2022, Alg. 1 with the amplification instantiation).

    Rounds come in batches of ``batch_size`` users. Within a batch the server's model is
    fixed; each user sends its local report ``(x xᵀ + B, r x + ξ)`` (the randomizer of
    :class:`~privbandits.protocols.dp.local.LocalDPLinUCB` at the local (ε₀, δ₀) of
    :func:`shuffle_calibration`) to the shuffler, which forwards the batch in random
    order; the server adds the batch's sums and recomputes LinUCB with the regulariser
    shifted by ``2Υ``, ``Υ = σ₀ √n (4√d + 2 ln(2T/α))`` for the n reports summed so far.
    A batch still filling at the end of the run is never released.

    The ledger gets one entry per released batch (each user is in one batch): the
    central (ε, δ) of the calibration, with ε₀, δ₀, σ₀, whether amplification applied,
    and the local ε the one accountant gives σ₀ at δ₀ (``accounted_local_epsilon``, PLD; ``rdp_local_epsilon``);
    where the batch does not amplify, that local ε is also the entry's ``accounted_epsilon`` (and
    ``rdp_epsilon``); where it does, the central ε is the amplification bound's, which PLD does not give.

    Differences: the paper's constants for the amplification step were not available to
    us; we use Feldman–McMillan–Talwar's closed form (their Thms 3.1/3.8), which
    amplifies only batches larger than ``16 ln(4/δ)`` reports. Chowdhury & Zhou's
    reference code (``SDPLinUCBPAmp``) uses σ₀ = √(ln(2.5B/δ))/(ε√B) and shift
    2σ₀√T√d whatever the batch size. The vector-sum instantiation (their second
    protocol) is not implemented. Constant width α, as the other baselines.
    """

    mechanism = "dp_linucb.shuffle"

    OPTIONS = PrivateLinUCB.OPTIONS | {
        "batch_size": Option(Integer(low=1), 100, "users per shuffled batch (the model is fixed within one)")
    }

    def __init__(self, n_arms: int, dim: int, *, batch_size: int = 100, **kwargs) -> None:
        batch_size = self.OPTIONS["batch_size"].check(batch_size, "batch_size", type(self).__name__)
        super().__init__(n_arms, dim, **kwargs)
        self.batch_size = batch_size
        self.calibration = shuffle_calibration(self.epsilon, self.delta, batch_size, self.noise_calibration, dim)
        noise_rng, shuffle_rng = self.rng.spawn(2)
        self.randomizer = LocalRandomizer(self.calibration.noise_std, noise_rng, self.calibration.grid)
        self.shuffler = Shuffler(shuffle_rng)
        self.pending: list[tuple[np.ndarray, np.ndarray]] = []
        self.released = 0  # reports in the released sums
        cal = self.calibration
        self._details = {
            "batch_size": batch_size,
            "epsilon0": cal.epsilon0,
            "delta0": cal.delta0,
            "noise_std": cal.noise_std,
            "amplified": cal.amplified,
            "sensitivity": REPORT_SENSITIVITY,
            "snapping_slack": cal.sensitivity - REPORT_SENSITIVITY,
            "effective_sensitivity": cal.sensitivity,
            "calibration": str(self.noise_calibration),
        }
        if self.private:
            local = local_accounting(cal.noise_std, cal.delta0, cal.sensitivity)
            self._details["accounted_local_epsilon"] = local["accounted_epsilon"]
            self._details["rdp_local_epsilon"] = local["rdp_epsilon"]
            if not cal.amplified:  # the shuffled batch is local DP (δ₀ = δ): the central ε is the report's
                self._details |= local
        self._refresh()

    @property
    def noise_std(self) -> float:
        return self.calibration.noise_std

    def upsilon(self, reports: int) -> float:
        """Υ after ``reports`` summed reports."""
        if not self.private:
            return 0.0
        std = self.calibration.noise_std * math.sqrt(reports)
        return spectral_bound(std, self.dim, self.horizon, self.failure_probability)

    def _report(self, x: np.ndarray, reward: float) -> None:
        self.pending.append(self.randomizer.report(x, reward))
        if len(self.pending) == self.batch_size:
            self._release()

    def _release(self) -> None:
        batch, self.pending = self.shuffler.shuffle(self.pending), []
        for gram, vector in batch:
            self.gram += gram
            self.u += vector
        self.released += len(batch)
        cal = self.calibration
        if self.private:
            entry = LedgerEntry(self.mechanism, cal.central_epsilon, cal.central_delta, PRIVACY_UNIT, self._details)
        else:
            entry = LedgerEntry(f"{self.mechanism}.plaintext", math.inf, None, PRIVACY_UNIT, self._details)
        self.ledger.record(entry)
        if self.shift_regularizer:
            self.shift = 2.0 * self.upsilon(self.released)
        self._refresh()

    def privacy_metrics(self) -> dict[str, float]:
        return super().privacy_metrics() | {
            "local_epsilon": self.calibration.epsilon0,
            "amplified": float(self.calibration.amplified),
            "batches": float(self.released // self.batch_size),
        }
