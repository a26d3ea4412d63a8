"""What the three DP LinUCB baselines share: LinUCB on released (noisy) ridge statistics.

Each baseline keeps the statistics the server is allowed to see — a noisy Gram
matrix ``G̃ ≈ Σ x xᵀ`` and a noisy vector ``ũ ≈ Σ r x`` — and plays LinUCB on them:

    Ã = (λ + shift) I + G̃,   θ̃ = Ã⁻¹ ũ,   score_a = x_aᵀ θ̃ + α ‖x_a‖_{Ã⁻¹},

ties broken by the named rule, exactly as the project's
:class:`~privbandits.linear.policies.LinUCB` in the shared layout (one θ, one context
per arm). ``shift`` is the paper's regulariser shift (2Υ: the noise's spectral bound,
so Ã stays positive definite with high probability); where the noise still makes Ã
indefinite, its eigenvalues are clipped at λ (counted in ``repairs``).

Privacy needs bounded data, as every one of these papers assumes: ``‖x‖ ≤ 1`` and
``|r| ≤ 1``. With a finite ε the chosen context is scaled into the unit ball and the
reward clipped to [−1, 1] before anything is released. ``epsilon = math.inf`` turns the
mechanism off — no clipping, no noise, no shift — and the learner is LinUCB.

Differences from the papers (all three): the confidence width is a constant α, as in
the project's LinUCB, instead of the papers' worst-case β_t (the reference code of
Chowdhury & Zhou also scales a fixed width); Ã is solved exactly (Cholesky) whenever
the released statistics change.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod

import numpy as np
import scipy.linalg

from privbandits.linear.defaults import DEFAULT_TIE_TOLERANCE
from privbandits.linear.policies import as_generator
from privbandits.linear.tiebreak import TieBreak, break_ties
from privbandits.options import Option, declare
from privbandits.privacy.bounds import DataBounds
from privbandits.privacy.calibration import GaussianCalibration
from privbandits.privacy.ledger import PrivacyLedger
from privbandits.privacy.noise import discrete_gaussian
from privbandits.validation import (
    Boolean,
    Choice,
    Instance,
    Integer,
    InvalidInputError,
    NoneOr,
    Real,
    check_arm,
    check_finite_array,
    check_reward,
)


def spectral_bound(std: float, dim: int, horizon: int, failure_probability: float) -> float:
    """``std · (4√d + 2 ln(2T/α))``: w.p. ≥ 1 − α/T the spectral norm of a d × d symmetric Gaussian
    matrix whose entries have standard deviation ``std`` (Shariff & Sheffet 2018 §4.2; Zheng et al. 2020)."""
    return std * (4.0 * math.sqrt(dim) + 2.0 * math.log(2.0 * horizon / failure_probability))


def symmetric_upper_gaussian(rng: np.random.Generator | None, dim: int, std: float) -> np.ndarray:
    """A symmetric matrix whose upper triangle (diagonal included) is i.i.d. Gaussian of standard deviation
    ``std`` (Zheng et al.'s B), drawn on a grid by :func:`~privbandits.privacy.noise.discrete_gaussian`."""
    draw = np.triu(discrete_gaussian(rng, std, (dim, dim)))
    return draw + np.triu(draw, 1).T


class PrivateLinUCB(ABC):
    """LinUCB on privately released ridge statistics (see the module docstring).

    Parameters
    ----------
    n_arms, dim : int
        Number of arms K and context dimension d (one context per arm, one shared θ).
    epsilon : float
        The privacy ε (> 0); ``math.inf`` turns the mechanism off.
    delta : float
        The privacy δ, in (0, 1).
    horizon : int
        T, the number of rounds the run is calibrated for.
    alpha : float
        Confidence width multiplier (as :class:`~privbandits.linear.policies.LinUCB`).
    reg : float
        Ridge regulariser λ > 0.
    failure_probability : float or None
        α of the noise bound Υ (in (0, 1)); None: 1/T (as the reference code).
    shift_regularizer : bool
        Add the paper's shift 2Υ to the regulariser (True), or only repair an indefinite Ã.
    calibration : GaussianCalibration or str
        ``"analytic"`` (default: the smallest σ that is (ε, δ)-DP, :mod:`~privbandits.privacy.calibration`)
        or ``"paper"`` (the paper's σ formula, several times the noise the guarantee needs; for reproductions).
    tie_break, tie_tolerance
        As :class:`~privbandits.linear.policies.LinUCB`.
    rng : Generator, int or None
        Source of the mechanism's noise (and of random tie-breaking).
    ledger : PrivacyLedger or None
        Where releases are recorded (a new one when None).
    """

    mechanism: str = "dp_linucb"

    OPTIONS = declare(
        {
            "n_arms": Option(Integer(low=1), doc="K, the number of arms"),
            "dim": Option(Integer(low=1), doc="d, the context dimension (one context per arm, one shared θ)"),
            "epsilon": Option(
                Real(low=0, low_open=True, finite=False, note="inf = no privacy"), doc="the privacy ε"
            ),
            "delta": Option(Real(low=0, high=1, low_open=True, high_open=True), doc="the privacy δ"),
            "horizon": Option(Integer(low=1), doc="T, the number of rounds the noise is calibrated for"),
            "alpha": Option(Real(low=0), 1.0, "LinUCB width multiplier"),
            "reg": Option(Real(low=0, low_open=True), 1.0, "ridge λ (before the paper's shift)"),
            "failure_probability": Option(
                NoneOr(Real(low=0, high=1, low_open=True, high_open=True), "1/horizon"),
                None,
                "α of the noise bound Υ (None: 1/T)",
            ),
            "shift_regularizer": Option(Boolean(), True, "add the paper's 2Υ to the regulariser"),
            "tie_break": Option(Choice(TieBreak), TieBreak.LOWEST, "rule among arms whose scores tie"),
            "tie_tolerance": Option(Real(low=0), DEFAULT_TIE_TOLERANCE, "relative tolerance within which scores tie"),
            "calibration": Option(
                Choice(GaussianCalibration),
                GaussianCalibration.ANALYTIC,
                "noise σ from the analytic Gaussian (tight, Balle & Wang 2018), or the paper's formula (reproductions)",
            ),
            "ledger": Option(
                NoneOr(Instance((PrivacyLedger,))), None, "where releases are recorded (None: a new PrivacyLedger)"
            ),
        }
    )
    """The options every DP LinUCB baseline takes (checked at construction; the experiment config's fields)."""

    def __init__(
        self,
        n_arms: int,
        dim: int,
        *,
        epsilon: float,
        delta: float,
        horizon: int,
        alpha: float = 1.0,
        reg: float = 1.0,
        failure_probability: float | None = None,
        shift_regularizer: bool = True,
        calibration: GaussianCalibration | str = GaussianCalibration.ANALYTIC,
        tie_break: TieBreak | str = TieBreak.LOWEST,
        tie_tolerance: float = DEFAULT_TIE_TOLERANCE,
        rng: np.random.Generator | int | None = None,
        ledger: PrivacyLedger | None = None,
    ) -> None:
        checked = PrivateLinUCB.OPTIONS.check(
            type(self).__name__,
            {
                "n_arms": n_arms,
                "dim": dim,
                "epsilon": epsilon,
                "delta": delta,
                "horizon": horizon,
                "alpha": alpha,
                "reg": reg,
                "failure_probability": failure_probability,
                "shift_regularizer": shift_regularizer,
                "tie_break": tie_break,
                "tie_tolerance": tie_tolerance,
                "calibration": calibration,
                "ledger": ledger,
            },
        )
        self.n_arms, self.dim = checked["n_arms"], checked["dim"]
        self.epsilon, self.delta = float(epsilon), float(delta)
        self.horizon = checked["horizon"]
        self.alpha, self.reg = float(alpha), float(reg)
        self.failure_probability = 1.0 / self.horizon if failure_probability is None else float(failure_probability)
        self.shift_regularizer = checked["shift_regularizer"]
        self.noise_calibration = GaussianCalibration(checked["calibration"])
        self.tie_break, self.tie_tolerance = checked["tie_break"], float(tie_tolerance)
        self.rng = as_generator(rng)
        self.ledger = PrivacyLedger() if ledger is None else ledger
        self.private = math.isfinite(self.epsilon)
        self.bounds = DataBounds(self.private)
        self.rounds = 0  # updates absorbed (reports made)
        self.repairs = 0  # times an indefinite Ã was repaired
        self.shift = 0.0
        d = self.dim
        self.gram = np.zeros((d, d))  # released Σ x xᵀ (+ noise)
        self.u = np.zeros(d)  # released Σ r x (+ noise)
        self.A_inv = np.eye(d) / self.reg
        self.theta = np.zeros(d)

    # -- the learner's contract ----------------------------------------------------------------
    def select(self, contexts: np.ndarray) -> int:
        """Arm with the best UCB score on the released statistics, ties broken by the named rule."""
        contexts = self._contexts(contexts)
        quad = np.vecdot(contexts @ self.A_inv, contexts)
        scores = contexts @ self.theta + self.alpha * np.sqrt(np.maximum(quad, 0.0))
        return break_ties(scores, self.tie_break, self.rng, self.tie_tolerance)

    def update(self, contexts: np.ndarray, arm: int, reward: float) -> None:
        """Report the chosen arm's context and reward through the mechanism.

        ``arm`` is an integer in ``[0, n_arms)``, ``reward`` a finite real, ``contexts``
        finite of shape ``(n_arms, dim)``; a refused call changes nothing (and draws no noise).
        """
        arm = check_arm(arm, self.n_arms)
        reward = check_reward(reward)
        contexts = self._contexts(contexts)
        self._before_report()
        x, reward = self.bounds.apply(np.array(contexts[arm], dtype=np.float64), reward)
        self._report(x, reward)
        self.rounds += 1

    def _before_report(self) -> None:
        """Refuse a report the mechanism cannot make (checked before any state changes); none by default."""
        return None

    @abstractmethod
    def _report(self, x: np.ndarray, reward: float) -> None:
        """Pass one (bounded) observation through the mechanism; refresh the model when something is released."""

    # -- helpers ---------------------------------------------------------------------------------
    def _contexts(self, contexts: np.ndarray) -> np.ndarray:
        shape = getattr(contexts, "shape", None)
        if shape is None:
            contexts = np.asarray(contexts)
            shape = contexts.shape
        if shape != (self.n_arms, self.dim):
            raise InvalidInputError(
                f"contexts have shape {shape}; {type(self).__name__} needs one context per arm, "
                f"({self.n_arms}, {self.dim})"
            )
        contexts = np.ascontiguousarray(contexts, dtype=np.float64)
        check_finite_array(contexts, "contexts")
        return contexts

    def _refresh(self) -> None:
        """Recompute Ã⁻¹ and θ̃ from the released statistics (exact; eigenvalues clipped at λ if indefinite)."""
        A = self.gram + (self.reg + self.shift) * np.eye(self.dim)
        A = 0.5 * (A + A.T)
        try:
            factor = scipy.linalg.cho_factor(A, check_finite=False)
            inverse = scipy.linalg.cho_solve(factor, np.eye(self.dim), check_finite=False)
        except np.linalg.LinAlgError:
            self.repairs += 1
            w, U = np.linalg.eigh(A)
            inverse = (U / np.maximum(w, self.reg)) @ U.T
        self.A_inv = 0.5 * (inverse + inverse.T)
        self.theta = self.A_inv @ self.u

    def privacy_metrics(self) -> dict[str, float]:
        """Scalars a run stores: the claimed (ε, δ), the noise scale and the regulariser shift."""
        return {
            "claimed_epsilon": self.epsilon,
            "claimed_delta": self.delta,
            "noise_std": self.noise_std,
            "regularizer_shift": self.shift,
            "pd_repairs": float(self.repairs),
        } | self.bounds.metrics()

    @property
    @abstractmethod
    def noise_std(self) -> float:
        """Per-entry standard deviation of the mechanism's Gaussian noise (0 when ε = ∞)."""
