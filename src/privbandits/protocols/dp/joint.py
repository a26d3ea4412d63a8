"""Joint-DP LinUCB with the tree-based mechanism (Shariff & Sheffet, NeurIPS 2018)."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from enum import StrEnum

import numpy as np

from privbandits.options import Option
from privbandits.privacy import factorization
from privbandits.privacy.accountant import Release, ledger_epsilons
from privbandits.privacy.bounds import CONTEXT_BOUND, REWARD_BOUND
from privbandits.privacy.calibration import GaussianCalibration, SnappedNoise, analytic_gaussian_std, snapped_noise
from privbandits.privacy.ledger import LedgerEntry
from privbandits.privacy.noise import TAIL, snap_to
from privbandits.privacy.tree_mechanism import (
    REPLACE_SENSITIVITY,
    SNAPPED_CAP,
    TreeMechanism,
    augmented_coordinates,
)
from privbandits.protocols.dp.base import PrivateLinUCB, spectral_bound
from privbandits.validation import CallOrderError, Choice, Integer, InvalidInputError, NoneOr

PRIVACY_UNIT = "one round's (x, r) (joint DP: every other round's arm)"


class ContinualRelease(StrEnum):
    """How joint-DP LinUCB releases its prefix sums of ``z zᵀ``.

    TREE
        The binary tree (Shariff & Sheffet 2018, the paper's:
        :class:`~privbandits.privacy.tree_mechanism.TreeMechanism`).
    SQRT_FACTORIZATION
        The square-root matrix factorization (:class:`~privbandits.privacy.factorization.SqrtFactorization`): one
        Gaussian release of ``C x + z``, noise correlated across rounds, lower variance at equal (ε, δ).
    """

    TREE = "tree"
    SQRT_FACTORIZATION = "sqrt_factorization"


def tree_levels(horizon: int) -> int:
    """m = 1 + ⌈log₂ T⌉: the tree's levels, the most nodes one datum enters (Shariff & Sheffet Alg. 1)."""
    return 1 + math.ceil(math.log2(horizon))


def joint_noise_std(
    epsilon: float,
    delta: float,
    horizon: int,
    calibration: GaussianCalibration | str = GaussianCalibration.PAPER,
    dim: int | None = None,
) -> float:
    """σ_noise with σ² = 16 m L̃⁴ ln(4/δ)² / ε² (Shariff & Sheffet 2018 §4.2, Gaussian noise).

    ``L̃² = L² + B̃² = 2`` for ``‖x‖ ≤ 1`` and ``|r| ≤ 1``; every node of the tree gets
    ``(N̄ + N̄ᵀ)/√2`` with ``N̄_pq ~ N(0, σ²)``; 0 when ε = ∞. ``calibration="analytic"``:
    the analytic Gaussian for m nodes of sensitivity 2 (:data:`REPLACE_SENSITIVITY`) instead. With ``dim``: the
    same calibration for the learner's snapped data, at ``Δ + g√n`` (:func:`joint_noise`; None: at Δ, the
    formula alone).
    """
    if math.isinf(epsilon):
        return 0.0
    if GaussianCalibration(calibration) is GaussianCalibration.ANALYTIC:
        std = analytic_gaussian_std(epsilon, delta, REPLACE_SENSITIVITY, tree_levels(horizon))
    else:
        l_tilde_4 = (CONTEXT_BOUND**2 + REWARD_BOUND**2) ** 2
        std = math.sqrt(16.0 * tree_levels(horizon) * l_tilde_4) * math.log(4.0 / delta) / epsilon  # √ of the above
    return std if dim is None else joint_noise(std, horizon, dim).std


def joint_noise(std: float, horizon: int, dim: int) -> SnappedNoise:
    """``std`` (calibrated at sensitivity 2) recalibrated for the snapped ``z zᵀ`` of dimension d + 1: the
    effective sensitivity ``min(2 + g√n, 2√2)``, n = (d+1)(d+2)/2, and the grid the data are snapped to
    (:func:`~privbandits.privacy.calibration.snapped_noise`: |z zᵀ| ≤ 1 entrywise over T rounds, each
    release's noise at most 2·TAIL·σ per node)."""
    return snapped_noise(std, REPLACE_SENSITIVITY, augmented_coordinates(dim), SNAPPED_CAP, float(horizon),
                         2 * TAIL * tree_levels(horizon))  # fmt: skip


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
    claimed (ε, δ) of the paper's calibration, with σ, m and the ε the one accountant
    (:mod:`~privbandits.privacy.accountant`) gives the same noise at δ, ``accounted_epsilon`` (PLD) with
    ``rdp_epsilon`` (Rényi DP) beside it: one datum enters m
    Gaussian nodes of L2 sensitivity 2 plus the slack of its snapping (each z zᵀ is snapped to
    σ's grid before it is summed, so the prefix released is exact and no other node differs;
    :func:`joint_sensitivity`, recorded as ``snapping_slack`` and ``effective_sensitivity``).

    Privacy unit: one round's (x, r) (:data:`PRIVACY_UNIT`). A user who plays several rounds pays more: the
    rounds' data share tree nodes, so a node holding c of them moves by c times the sensitivity;
    :meth:`user_releases` and :meth:`user_epsilon` compose every node a user's rounds enter (the per-user ε,
    with the user, all of their rounds, as the unit).

    ``continual_release = "sqrt_factorization"`` (:class:`ContinualRelease`) releases the same prefix sums by
    the square-root matrix factorization instead (:mod:`~privbandits.privacy.factorization`): one Gaussian
    release of ``C x + z`` at sensitivity ``2‖C‖_col`` plus its snapping, σ analytic, the ledger entry
    ``dp_linucb.joint.sqrt_factorization``; the regulariser shift uses its noise at round T, ``σ‖B‖_row``. C is
    banded (``factorization_band``; by default the band of least noise whose memory fits), the releases ``A C⁻¹``
    of the noisy rows.

    Differences from the paper: a constant width α (not β_t); the Gaussian noise of
    §4.2 only (not the Wishart noise of §4.1). The reference code of Chowdhury &
    Zhou (``sayakrc/Differentially-Private-Bandits``, ``JDPLinUCB``) instead draws
    ⌊ln(1+t)⌋ + 1 fixed nodes, uses σ = √(ln T) ln(2.5/δ)/ε and shift
    2σ√(ln T)√d; we follow the paper's tree and constants.
    """

    mechanism = "dp_linucb.joint"

    OPTIONS = PrivateLinUCB.OPTIONS | {
        "continual_release": Option(
            Choice(ContinualRelease),
            ContinualRelease.TREE,
            "prefix sums released by the binary tree (the paper's) or the square-root matrix factorization "
            "(lower noise at equal ε, δ; needs calibration = analytic)",
        ),
        "factorization_band": Option(
            NoneOr(Integer(low=1), "chosen"),
            None,
            "rows of C a datum enters with the factorization (None: the band of least noise whose memory fits; "
            "T or more: the full square root)",
        ),
    }

    def __init__(
        self,
        n_arms: int,
        dim: int,
        *,
        continual_release: ContinualRelease | str = ContinualRelease.TREE,
        factorization_band: int | None = None,
        **kwargs,
    ) -> None:
        name = type(self).__name__
        release = ContinualRelease(self.OPTIONS["continual_release"].check(continual_release, "continual_release",
                                                                          name))  # fmt: skip
        self.factorization_band = self.OPTIONS["factorization_band"].check(factorization_band, "factorization_band",
                                                                           name)  # fmt: skip
        if self.factorization_band is not None and release is ContinualRelease.TREE:
            raise InvalidInputError(
                f"{name}: factorization_band needs continual_release = 'sqrt_factorization' (the tree has no band), "
                f"got factorization_band = {self.factorization_band!r} with continual_release = 'tree'"
            )
        super().__init__(n_arms, dim, **kwargs)
        self.continual_release = release
        if release is ContinualRelease.SQRT_FACTORIZATION:
            self._factorized()
            return
        self.factorization: factorization.SqrtFactorization | None = None
        self.levels = tree_levels(self.horizon)
        formula = joint_noise_std(self.epsilon, self.delta, self.horizon, self.noise_calibration)
        self.snapping = joint_noise(formula, self.horizon, self.dim)
        self._noise_std, self.sensitivity = self.snapping.std, self.snapping.sensitivity
        self.upsilon = (
            spectral_bound(
                self._noise_std * math.sqrt(2 * self.levels), self.dim, self.horizon, self.failure_probability
            )
            if self.private
            else 0.0
        )
        self.shift = 2.0 * self.upsilon if self.shift_regularizer else 0.0
        self.tree = TreeMechanism(self.dim + 1, self._noise_std, self.rng) if self.private else None
        self._moments = np.zeros((self.dim + 1, self.dim + 1))  # Σ of the snapped z zᵀ: exact on the grid
        self._refresh()

    def _factorized(self) -> None:
        """The square-root factorization in place of the tree: σ of one analytic Gaussian release of ``C x`` at
        sensitivity 2·‖C‖_col (plus snapping), C of band ``factorization_band``, and the shift for its noise at
        round T, ``σ‖B‖_row`` per off-diagonal entry (√2 times on the diagonal, as the tree's)."""
        if self.private and self.noise_calibration is not GaussianCalibration.ANALYTIC:
            raise InvalidInputError(
                f"{type(self).__name__}: continual_release = 'sqrt_factorization' needs calibration = 'analytic' "
                f"(the paper's formula is the tree's), got calibration = {str(self.noise_calibration)!r}"
            )
        self.tree, self.levels = None, 1
        self.factorization_noise = factorization.factorization_noise(
            self.epsilon,
            self.delta,
            self.horizon,
            REPLACE_SENSITIVITY,
            augmented_coordinates(self.dim),
            1.0,
            self.factorization_band,
        )
        self._noise_std, self.sensitivity = self.factorization_noise.std, self.factorization_noise.sensitivity
        width = self._noise_std * self.factorization_noise.decoder_norm * math.sqrt(2)
        self.upsilon = spectral_bound(width, self.dim, self.horizon, self.failure_probability) if self.private else 0.0
        self.shift = 2.0 * self.upsilon if self.shift_regularizer else 0.0
        self.factorization = (
            factorization.SqrtFactorization(
                self.factorization_noise, (self.dim + 1,) * 2, self.rng, symmetric=True, outer=True
            )
            if self.private
            else None
        )
        self._moments = np.zeros((self.dim + 1, self.dim + 1))
        self._refresh()

    @property
    def noise_std(self) -> float:
        return self._noise_std

    def releases_per_round(self) -> list[Release]:
        """The releases one round's (x, r) enters: the m tree nodes, Gaussians of σ at the effective sensitivity
        (what the ledger's ``accounted_epsilon`` composes); with the factorization, its one Gaussian release."""
        if self.continual_release is ContinualRelease.SQRT_FACTORIZATION:
            return factorization.releases(self.factorization_noise)
        return [Release.gaussian(self._noise_std, self.sensitivity, self.levels)]

    def user_releases(self, rounds: Sequence[int]) -> list[Release]:
        """The releases a user whose (x, r) were reported at ``rounds`` (1-based, distinct) enters: at each of the m
        levels the node ``⌈t/2^ℓ⌉`` of each round t, a node holding c of the user's rounds moving by c·Δ; the
        Gaussians of all those nodes are one Gaussian of sensitivity ``Δ·√(Σ c²)`` (``Δ√m`` for one round: the
        ledger's composition; at most ``kΔ√m`` for k rounds)."""
        times = sorted(set(int(t) for t in rounds))
        if len(times) != len(rounds) or (times and not 1 <= times[0] <= times[-1] <= self.horizon):
            raise ValueError(f"rounds must be distinct rounds in [1, {self.horizon}], got {list(rounds)}")
        if self.continual_release is ContinualRelease.SQRT_FACTORIZATION:
            return self._factorized_user_releases(times)
        squares = sum(
            count * count
            for level in range(self.levels)
            for count in Counter(-((-t) >> level) for t in times).values()  # the node ⌈t/2^ℓ⌉
        )
        return [Release.gaussian(self._noise_std, self.sensitivity * math.sqrt(squares))] if squares else []

    def _factorized_user_releases(self, times: list[int]) -> list[Release]:
        """With the factorization, a user's rounds move ``C x`` by at most ``Δ·‖Σ_{t∈rounds} C e_t‖`` (C's entries
        are all positive: the worst case has every datum's change aligned) plus the same snapping and rounding as
        one round (one snap per row however many data it holds; rows of the band only): one Gaussian release."""
        if not times:
            return []
        noise = self.factorization_noise
        indicator = np.zeros(self.horizon)
        indicator[np.asarray(times) - 1] = 1.0
        columns = np.convolve(indicator, factorization.sqrt_coefficients(noise.bandwidth))[: self.horizon]
        slack = noise.sensitivity - REPLACE_SENSITIVITY * noise.column_norm
        return [Release.gaussian(noise.std, REPLACE_SENSITIVITY * float(np.linalg.norm(columns)) + slack)]

    def user_epsilon(self, rounds: Sequence[int]) -> float:
        """The per-user ε at δ (PLD) of a user who played ``rounds`` (:meth:`user_releases`; ∞ without privacy)."""
        if not self.private:
            return math.inf
        return ledger_epsilons(self.user_releases(rounds), self.delta)["accounted_epsilon"]

    def _before_report(self) -> None:
        if self.rounds >= self.horizon:
            raise CallOrderError(
                f"JointDPLinUCB: the tree is calibrated for horizon = {self.horizon} releases; "
                f"no more updates (round {self.rounds + 1})"
            )

    def _report(self, x: np.ndarray, reward: float) -> None:
        z = np.append(x, reward)
        if self.factorization is not None:
            released = self.factorization.release_outer(z)
        elif self.tree is not None:  # each datum snapped to the noise's grid, never the prefix (noise.py): exact sums
            self._moments += snap_to(np.outer(z, z), self.snapping.grid)
            released = self._moments + self.tree.release()
        else:
            self._moments += np.outer(z, z)
            released = self._moments
        if self.rounds == 0:
            self._record()
        d = self.dim
        self.gram = released[:d, :d].copy()
        self.u = released[:d, d].copy()
        self._refresh()

    def _record(self) -> None:
        if self.continual_release is ContinualRelease.SQRT_FACTORIZATION:
            self._enter("sqrt_factorization", self._factorized_details())
            return
        self._enter(
            "tree",
            {
                "noise_std": self._noise_std,
                "levels": self.levels,
                "horizon": self.horizon,
                "regularizer_shift": self.shift,
                "sensitivity": REPLACE_SENSITIVITY,
                "snapping_slack": self.sensitivity - REPLACE_SENSITIVITY,
                "effective_sensitivity": self.sensitivity,
                "calibration": str(self.noise_calibration),
            },
        )

    def _factorized_details(self) -> dict:
        noise = self.factorization_noise
        return {
            "continual_release": str(self.continual_release),
            "noise_std": self._noise_std,
            "column_norm": noise.column_norm,
            "band": noise.bandwidth,
            "decoder_norm": noise.decoder_norm,
            "horizon": self.horizon,
            "regularizer_shift": self.shift,
            "sensitivity": REPLACE_SENSITIVITY,
            "snapping_slack": self.sensitivity - REPLACE_SENSITIVITY * noise.column_norm,
            "effective_sensitivity": self.sensitivity,
            "calibration": str(self.noise_calibration),
        }

    def _enter(self, release: str, details: dict) -> None:
        """The ledger's one entry: ``dp_linucb.joint.RELEASE`` with the accounted ε, or the plaintext one."""
        if self.private:
            details |= ledger_epsilons(self.releases_per_round(), self.delta)
            entry = LedgerEntry(f"{self.mechanism}.{release}", self.epsilon, self.delta, PRIVACY_UNIT, details)
        else:
            entry = LedgerEntry(f"{self.mechanism}.plaintext", math.inf, None, PRIVACY_UNIT, details)
        self.ledger.record(entry)
