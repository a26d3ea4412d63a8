"""LinUCB, LinTS and ε-greedy in the two layouts the papers use.

Layouts
-------
``shared``
    One parameter θ for all arms; every arm has its own context row, so a
    round's contexts have shape ``(n_arms, dim)``. Used by the vertical O3M
    paper (spec ``vertical-o3m.md`` §1.2) and FCLUB.
``disjoint``
    One ridge model per arm (Li et al. 2010, "disjoint linear models"); a round
    has either one shared context of shape ``(dim,)`` (P2B, the MPC paper) or
    per-arm contexts of shape ``(n_arms, dim)``.

Every policy scores all arms with vectorised numpy (no Python loop over arms),
picks the best arm with an explicit :class:`~privbandits.linear.tiebreak.TieBreak`
rule, and learns from ``update(contexts, arm, reward)``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from enum import StrEnum
from math import isfinite
from typing import Protocol, TypeVar

import numpy as np

from privbandits._kernel_args import writable
from privbandits.linear._kernels import shared_ucb_scores
from privbandits.linear.ridge import DEFAULT_REFRESH_EVERY, RidgeStatistics
from privbandits.linear.tiebreak import DEFAULT_TIE_TOLERANCE, TieBreak, break_ties
from privbandits.options import UNOWNED, Option, declare
from privbandits.validation import (
    Choice,
    Integer,
    InvalidInputError,
    Real,
    check,
    check_arm,
    check_finite_array,
    check_reward,
    describe,
)


class Layout(StrEnum):
    """How parameters are shared across arms (see module docstring)."""

    SHARED = "shared"
    DISJOINT = "disjoint"


class Policy(Protocol):
    """What the experiment runner needs from a bandit policy."""

    def select(self, contexts: np.ndarray) -> int:
        """Choose an arm for this round's contexts."""

    def update(self, contexts: np.ndarray, arm: int, reward: float) -> None:
        """Learn from the reward of the arm chosen on these contexts."""


E = TypeVar("E", bound=StrEnum)


def named_choice(enum: type[E], value: str, name: str) -> E:
    """``enum(value)``, or a ValueError naming the option and its allowed values."""
    return check(value, name, Choice(enum))


def as_generator(rng: np.random.Generator | int | None, name: str = "rng") -> np.random.Generator:
    """A numpy Generator from a Generator, a seed (a non-negative integer or SeedSequence), or None (OS entropy)."""
    if isinstance(rng, np.random.Generator):
        return rng
    allowed = "a numpy Generator, a non-negative integer seed, a SeedSequence or None"
    if isinstance(rng, bool | np.bool_ | float | str | bytes):
        raise InvalidInputError(f"{name} must be {allowed}, got {describe(rng)}")
    try:
        return np.random.default_rng(rng)
    except (TypeError, ValueError) as error:
        raise InvalidInputError(f"{name} must be {allowed}, got {describe(rng)} ({error})") from None


class UniformRandom:
    """Baseline that pulls an arm uniformly at random every round."""

    OPTIONS = declare({"n_arms": Option(Integer(low=1), doc="K, the number of arms")})

    def __init__(self, n_arms: int, rng: np.random.Generator | int | None = None) -> None:
        self.n_arms = self.OPTIONS["n_arms"].check(n_arms, "n_arms", "UniformRandom")
        self.rng = as_generator(rng)

    def select(self, contexts: np.ndarray) -> int:
        return int(self.rng.integers(self.n_arms))

    def update(self, contexts: np.ndarray, arm: int, reward: float) -> None:
        """Nothing to learn (the arm and the reward are still checked)."""
        check_arm(arm, self.n_arms)
        check_reward(reward)


class LinearBandit(ABC):
    """Ridge-regression bandit: statistics in a layout, vectorised arm scores.

    Parameters
    ----------
    n_arms, dim : int
        Number of arms K and context dimension d.
    layout : {"shared", "disjoint"}
        One θ for all arms, or one model per arm.
    reg : float
        Ridge regulariser λ (Λ_1 = λI).
    refresh_every : int
        Exact inverse refresh period of :class:`RidgeStatistics` (0 = never).
    tie_break : {"lowest", "random"}
        Rule among arms whose scores tie within ``tie_tolerance``.
    tie_tolerance : float
        Relative tolerance defining a tie.
    rng : Generator, int or None
        Source of the policy's randomness (sampling, random tie-breaking).
    """

    OPTIONS = declare(
        {
            "n_arms": UniformRandom.OPTIONS["n_arms"],
            **RidgeStatistics.OPTIONS.only("dim", "reg", "refresh_every"),
            "tie_tolerance": Option(Real(low=0), DEFAULT_TIE_TOLERANCE, "relative tolerance within which scores tie"),
            "layout": Option(Choice(Layout), Layout.SHARED, "one θ for all arms, or one model per arm", UNOWNED),
            "tie_break": Option(Choice(TieBreak), TieBreak.LOWEST, "rule among arms whose scores tie", UNOWNED),
        }
    )
    """Checked in this order: the numbers first, then the names."""

    def __init__(
        self,
        n_arms: int,
        dim: int,
        *,
        layout: Layout | str = Layout.SHARED,
        reg: float = 1.0,
        refresh_every: int = DEFAULT_REFRESH_EVERY,
        tie_break: TieBreak | str = TieBreak.LOWEST,
        tie_tolerance: float = DEFAULT_TIE_TOLERANCE,
        rng: np.random.Generator | int | None = None,
    ) -> None:
        values: dict[str, object] = {"n_arms": n_arms, "dim": dim, "reg": reg, "refresh_every": refresh_every}
        values |= {"tie_tolerance": tie_tolerance, "layout": layout, "tie_break": tie_break}
        checked = LinearBandit.OPTIONS.check(type(self).__name__, values)
        n_arms, dim = checked["n_arms"], checked["dim"]
        self.n_arms, self.dim = n_arms, dim
        self._per_arm = (n_arms, dim)
        self.layout = checked["layout"]
        self._shared = self.layout is Layout.SHARED
        self._single = None if self._shared else (dim,)  # the disjoint layout's shared context
        self.tie_break = checked["tie_break"]
        self.tie_tolerance = float(tie_tolerance)
        self.rng = as_generator(rng)
        n_models = 1 if self.layout is Layout.SHARED else n_arms
        self.stats = RidgeStatistics(n_models, dim, reg=reg, refresh_every=refresh_every)

    # -- scores --------------------------------------------------------------
    @abstractmethod
    def scores(self, contexts: np.ndarray) -> np.ndarray:
        """Score of every arm for this round, shape ``(n_arms,)``."""

    def estimates(self, contexts: np.ndarray) -> np.ndarray:
        """Ridge estimates ``x_a^T θ̂`` (shared) or ``x_a^T θ̂_a`` (disjoint) per arm."""
        return self._linear_forms(self.stats.theta, self._check(contexts))

    def confidence_widths(self, contexts: np.ndarray) -> np.ndarray:
        """``sqrt(x_a^T A^{-1} x_a)`` per arm (A is the arm's model in the disjoint layout)."""
        return self._widths(self._check(contexts))

    def select(self, contexts: np.ndarray) -> int:
        """Arm with the best score, ties broken by the named rule.

        Contexts must have the layout's shape and be finite; nothing changes
        when they are refused.
        """
        scores = self.scores(contexts)
        try:
            return break_ties(scores, self.tie_break, self.rng, self.tie_tolerance)
        except ValueError:  # scores not finite: blame the contexts if they are at fault
            self._diagnose(contexts)
            raise

    def update(self, contexts: np.ndarray, arm: int, reward: float) -> None:
        """Add the chosen arm's context and its reward to the arm's model.

        ``arm`` is an integer in ``[0, n_arms)``, ``reward`` a finite real and the
        arm's context finite; a refused call leaves the learner unchanged.
        """
        if not (type(arm) is int and 0 <= arm < self.n_arms):
            arm = check_arm(arm, self.n_arms)
        if not (isinstance(reward, float) and isfinite(reward)):  # fast path: a finite (numpy) float
            reward = check_reward(reward)
        try:
            shape = contexts.shape
        except AttributeError:
            contexts = np.asarray(contexts)
            shape = contexts.shape
        if contexts.dtype.kind not in "fiub":
            check_finite_array(contexts, "contexts")  # raises: complex, object or text is not a context
        if shape == self._per_arm:
            x, name = contexts[arm], "contexts[arm]"
            total = contexts.sum()  # NaN or inf in any arm's row, also one not chosen, makes it non-finite
            if not total - total == 0.0:
                check_finite_array(contexts, "contexts")  # raises, naming the entry (passes if the sum overflowed)
        elif shape == self._single:
            x, name = contexts, "contexts"
        else:
            self._check(contexts)  # raises, naming the shapes
        self.stats._absorb(0 if self._shared else arm, x, reward, name)  # refuses a non-finite x untouched

    @property
    def theta(self) -> np.ndarray:
        """Ridge estimate(s): ``(dim,)`` for shared, ``(n_arms, dim)`` for disjoint."""
        return self.stats.theta[0] if self.layout is Layout.SHARED else self.stats.theta

    # -- vectorised forms over arms -----------------------------------------
    def _check(self, contexts: np.ndarray) -> np.ndarray:
        """The contexts as a contiguous float64 array, after checking their shape."""
        try:
            shape = contexts.shape
        except AttributeError:
            contexts = np.asarray(contexts)
            shape = contexts.shape
        per_arm = (self.n_arms, self.dim)
        if shape == per_arm or (self.layout is Layout.DISJOINT and shape == (self.dim,)):
            if contexts.dtype.kind not in "fiub":
                check_finite_array(contexts, "contexts")  # raises: complex, object or text is not a context
            return writable(np.ascontiguousarray(contexts, dtype=np.float64))
        allowed = f"{per_arm}" if self.layout is Layout.SHARED else f"{per_arm} or ({self.dim},)"
        raise InvalidInputError(f"contexts have shape {shape}; a {self.layout} layout needs {allowed}")

    def _check_finite(self, contexts: np.ndarray) -> np.ndarray:
        """:meth:`_check`, and every entry finite (for rounds that draw random numbers before scoring)."""
        contexts = self._check(contexts)
        check_finite_array(contexts, "contexts")
        return contexts

    def _diagnose(self, contexts: np.ndarray) -> None:
        """After non-finite scores: an error naming the contexts when they are the cause (else return)."""
        contexts = self._check_finite(contexts)
        params = (self.stats.A_inv, self.stats.theta)
        if all(np.isfinite(p).all() for p in params):
            raise InvalidInputError(
                f"contexts are too large: arm scores overflow float64 (max |x| = {np.abs(contexts).max():g})"
            )

    def _linear_forms(self, vectors: np.ndarray, contexts: np.ndarray) -> np.ndarray:
        """``<x_a, w_a>`` per arm for w of shape (1, d) (shared) or (K, d) (disjoint)."""
        if self.layout is Layout.SHARED:
            return contexts @ vectors[0]
        if contexts.ndim == 1:
            return vectors @ contexts
        return np.vecdot(vectors, contexts)

    def _widths(self, contexts: np.ndarray) -> np.ndarray:
        """``sqrt(x_a^T A_a^{-1} x_a)`` per arm, computed in place."""
        A_inv = self.stats.A_inv
        if self.layout is Layout.SHARED:
            quad = np.vecdot(contexts @ A_inv[0], contexts)
        elif contexts.ndim == 1:  # two gemvs: the stacked inverses times x, then their rows times x
            quad = (A_inv.reshape(-1, self.dim) @ contexts).reshape(self.n_arms, self.dim) @ contexts
        else:
            quad = np.vecdot(np.matmul(A_inv, contexts[:, :, None])[..., 0], contexts)
        return np.sqrt(np.maximum(quad, 0.0, out=quad), out=quad)


class LinUCB(LinearBandit):
    """LinUCB: score ``x^T θ̂ + alpha * sqrt(x^T A^{-1} x)`` (Li et al. 2010, Eq. 4).

    ``alpha`` is β_t of the vertical paper (Eq. 1, constant 0.5 in its
    experiments) and α of P2B (1.0). See :class:`LinearBandit` for the others.
    """

    OPTIONS = declare({"alpha": Option(Real(low=0), 1.0, "weight of the confidence width")}) | LinearBandit.OPTIONS

    def __init__(self, n_arms: int, dim: int, *, alpha: float = 1.0, **kwargs) -> None:
        self.OPTIONS["alpha"].check(alpha, "alpha", type(self).__name__)
        super().__init__(n_arms, dim, **kwargs)
        self.alpha = float(alpha)

    def scores(self, contexts: np.ndarray) -> np.ndarray:
        contexts = self._check(contexts)
        if self.layout is Layout.SHARED:
            return shared_ucb_scores(contexts, self.stats.A_inv[0], self.stats.theta[0], self.alpha)
        scores = self._widths(contexts)
        scores *= self.alpha
        scores += self._linear_forms(self.stats.theta, contexts)
        return scores


class Sampler(StrEnum):
    """Square root of the posterior covariance used by LinTS.

    CHOLESKY
        lower Cholesky factor (cheapest).
    EIGH
        symmetric square root ``U sqrt(w) U^T``; rotates with the basis, so a
        masked run (``Q A^{-1} Q^T``) reproduces the plaintext draws pathwise
        (spec ``vertical-o3m.md`` §4.2).
    """

    CHOLESKY = "cholesky"
    EIGH = "eigh"


def covariance_root(cov: np.ndarray, sampler: Sampler) -> np.ndarray:
    """A matrix S with ``S S^T = cov`` for one or a stack of covariance matrices."""
    if sampler is Sampler.CHOLESKY:
        return np.linalg.cholesky(cov)
    w, U = np.linalg.eigh(cov)
    return (U * np.sqrt(np.maximum(w, 0.0))[..., None, :]) @ np.swapaxes(U, -1, -2)


class LinTS(LinearBandit):
    """Linear Thompson sampling: score ``x^T μ`` with ``μ ~ N(θ̂, v^2 A^{-1})``.

    Agrawal & Goyal (2013); ``v`` is the scale (v = 0.01 in the vertical paper,
    spec §8.4.5). One draw per round for the shared layout, one per arm for the
    disjoint layout.
    """

    OPTIONS = (
        declare({"v": Option(Real(low=0), 0.01, "scale of the posterior draw")})
        | LinearBandit.OPTIONS
        | {"sampler": Option(Choice(Sampler), Sampler.CHOLESKY, "square root of the posterior covariance", UNOWNED)}
    )

    def __init__(
        self,
        n_arms: int,
        dim: int,
        *,
        v: float = 0.01,
        sampler: Sampler | str = Sampler.CHOLESKY,
        **kwargs,
    ) -> None:
        self.OPTIONS["v"].check(v, "v", type(self).__name__)
        super().__init__(n_arms, dim, **kwargs)
        self.v = float(v)
        self.sampler = self.OPTIONS["sampler"].check(sampler, "sampler")

    def sample_parameters(self) -> np.ndarray:
        """Draw μ for every model, shape ``(n_models, dim)``."""
        stats = self.stats
        z = self.rng.standard_normal((stats.n_models, stats.dim, 1))
        root = covariance_root(stats.A_inv, self.sampler)
        return stats.theta + self.v * (root @ z)[..., 0]

    def scores(self, contexts: np.ndarray) -> np.ndarray:
        contexts = self._check_finite(contexts)  # before the draw: a refused call uses no random numbers
        return self._linear_forms(self.sample_parameters(), contexts)


class EpsilonGreedy(LinearBandit):
    """ε-greedy on ridge estimates: explore uniformly with probability ``epsilon``.

    Greedy rounds pick the best ``x^T θ̂_a`` under the tie-breaking rule;
    exploring rounds pick a uniform arm, so the greedy arm has probability
    ``1 - ε + ε/K`` (the MPC paper's Alg. 1, spec ``mpc-bandit.md`` §4.3).
    The default layout is ``disjoint``, as in that paper.
    """

    OPTIONS = declare({"epsilon": Option(Real(low=0, high=1), 0.1, "probability of a uniform arm")}) | {
        **LinearBandit.OPTIONS,
        "layout": LinearBandit.OPTIONS["layout"].with_default(Layout.DISJOINT),
    }

    def __init__(
        self,
        n_arms: int,
        dim: int,
        *,
        epsilon: float = 0.1,
        layout: Layout | str = Layout.DISJOINT,
        **kwargs,
    ) -> None:
        self.OPTIONS["epsilon"].check(epsilon, "epsilon", type(self).__name__)
        super().__init__(n_arms, dim, layout=layout, **kwargs)
        self.epsilon = float(epsilon)

    def scores(self, contexts: np.ndarray) -> np.ndarray:
        return self.estimates(contexts)

    def select(self, contexts: np.ndarray) -> int:
        self._check_finite(contexts)  # before the coin: a refused call uses no random numbers
        if self.rng.random() < self.epsilon:
            return int(self.rng.integers(self.n_arms))
        return super().select(contexts)
