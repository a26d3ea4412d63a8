"""Joint-DP LinUCB with the tree-based mechanism (Shariff & Sheffet, NeurIPS 2018)."""

from __future__ import annotations

import math

import numpy as np

from privbandits.privacy.bounds import CONTEXT_BOUND, REWARD_BOUND
from privbandits.privacy.calibration import GaussianCalibration, analytic_gaussian_std
from privbandits.privacy.ledger import LedgerEntry
from privbandits.privacy.noise import snap
from privbandits.privacy.tree_mechanism import REPLACE_SENSITIVITY, TreeMechanism, accounted_epsilon
from privbandits.protocols.dp.base import PrivateLinUCB, spectral_bound
from privbandits.validation import CallOrderError

PRIVACY_UNIT = "one round's (x, r) (joint DP: every other round's arm)"


def tree_levels(horizon: int) -> int:
    """m = 1 + ⌈log₂ T⌉: the tree's levels, the most nodes one datum enters (Shariff & Sheffet Alg. 1)."""
    return 1 + math.ceil(math.log2(horizon))


def joint_noise_std(
    epsilon: float, delta: float, horizon: int, calibration: GaussianCalibration | str = GaussianCalibration.PAPER
) -> float:
    """σ_noise with σ² = 16 m L̃⁴ ln(4/δ)² / ε² (Shariff & Sheffet 2018 §4.2, Gaussian noise).

    ``L̃² = L² + B̃² = 2`` for ``‖x‖ ≤ 1`` and ``|r| ≤ 1``; every node of the tree gets
    ``(N̄ + N̄ᵀ)/√2`` with ``N̄_pq ~ N(0, σ²)``; 0 when ε = ∞. ``calibration="analytic"``:
    the analytic Gaussian for m nodes of sensitivity 2 (:data:`REPLACE_SENSITIVITY`) instead.
    """
    if math.isinf(epsilon):
        return 0.0
    if GaussianCalibration(calibration) is GaussianCalibration.ANALYTIC:
        return analytic_gaussian_std(epsilon, delta, REPLACE_SENSITIVITY, tree_levels(horizon))
    l_tilde_4 = (CONTEXT_BOUND**2 + REWARD_BOUND**2) ** 2
    return math.sqrt(16.0 * tree_levels(horizon) * l_tilde_4) * math.log(4.0 / delta) / epsilon  # √ of the above


class JointDPLinUCB(PrivateLinUCB):
    """Joint-DP LinUCB (Shariff & Sheffet 2018, Alg. 1 "Linear UCB with changing perturbations", §4.2).

    Every round t the augmented statistic ``M_t = Σ_{s≤t} z_s z_sᵀ``, ``z = [x; r]``
    ((d+1) × (d+1)), is released through the tree-based mechanism
    (:class:`~privbandits.privacy.tree_mechanism.TreeMechanism`, Chan et al. 2011): the
    prefix ``[1..t]`` carries the noise of its dyadic cover, one symmetric Gaussian
    node per set bit of t, each node ``(N̄ + N̄ᵀ)/√2`` with σ from
    :func:`joint_noise_std`. The top-left d × d block of the noisy M is the Gram
    matrix, the first d entries of its last column ``Σ r x``; the regulariser is
    shifted by ``2Υ``, ``Υ = σ √(2m) (4√d + 2 ln(2T/α))`` (§4.2: ρ_min = Υ,
    ρ_max = 3Υ), so the next round's LinUCB is post-processing of the tree. The
    arm of round t is shown to user t only, so the algorithm is (ε, δ)-jointly DP
    (the billboard lemma, their Claim 5).

    The ledger gets one entry, at the first release, for the whole tree: the
    claimed (ε, δ) of the paper's calibration, with σ, m and the ε that
    ``dp-accounting`` (Rényi DP) gives the same noise at δ: one datum enters m
    Gaussian nodes of L2 sensitivity 2 (see :mod:`~privbandits.privacy.tree_mechanism`).

    Differences from the paper: a constant width α (not β_t); the Gaussian noise of
    §4.2 only (not the Wishart noise of §4.1). The reference code of Chowdhury &
    Zhou (``sayakrc/Differentially-Private-Bandits``, ``JDPLinUCB``) instead draws
    ⌊ln(1+t)⌋ + 1 fixed nodes, uses σ = √(ln T) ln(2.5/δ)/ε and shift
    2σ√(ln T)√d; we follow the paper's tree and constants.
    """

    mechanism = "dp_linucb.joint"

    def __init__(self, n_arms: int, dim: int, **kwargs) -> None:
        super().__init__(n_arms, dim, **kwargs)
        self.levels = tree_levels(self.horizon)
        self._noise_std = joint_noise_std(self.epsilon, self.delta, self.horizon, self.noise_calibration)
        self.upsilon = (
            spectral_bound(
                self._noise_std * math.sqrt(2 * self.levels), self.dim, self.horizon, self.failure_probability
            )
            if self.private
            else 0.0
        )
        self.shift = 2.0 * self.upsilon if self.shift_regularizer else 0.0
        self.tree = TreeMechanism(self.dim + 1, self._noise_std, self.rng) if self.private else None
        self._moments = np.zeros((self.dim + 1, self.dim + 1))  # exact Σ z zᵀ (never released as is)
        self._refresh()

    @property
    def noise_std(self) -> float:
        return self._noise_std

    def _before_report(self) -> None:
        if self.rounds >= self.horizon:
            raise CallOrderError(
                f"JointDPLinUCB: the tree is calibrated for horizon = {self.horizon} releases; "
                f"no more updates (round {self.rounds + 1})"
            )

    def _report(self, x: np.ndarray, reward: float) -> None:
        z = np.append(x, reward)
        self._moments += np.outer(z, z)
        if self.tree is not None:  # snapped to the noise's grid, so the release's bits carry nothing finer (noise.py)
            released = snap(self._moments, self._noise_std) + self.tree.release()
        else:
            released = self._moments
        if self.rounds == 0:
            self._record()
        d = self.dim
        self.gram = released[:d, :d].copy()
        self.u = released[:d, d].copy()
        self._refresh()

    def _record(self) -> None:
        details = {
            "noise_std": self._noise_std,
            "levels": self.levels,
            "horizon": self.horizon,
            "regularizer_shift": self.shift,
            "sensitivity": REPLACE_SENSITIVITY,
            "calibration": str(self.noise_calibration),
        }
        if self.private:
            details["accounted_epsilon"] = (
                accounted_epsilon(self._noise_std, self.levels, self.delta)
                if self._noise_std > 1e-6 * REPLACE_SENSITIVITY
                else math.inf  # beyond what the RDP accountant resolves
            )
            entry = LedgerEntry(f"{self.mechanism}.tree", self.epsilon, self.delta, PRIVACY_UNIT, details)
        else:
            entry = LedgerEntry(f"{self.mechanism}.plaintext", math.inf, None, PRIVACY_UNIT, details)
        self.ledger.record(entry)
