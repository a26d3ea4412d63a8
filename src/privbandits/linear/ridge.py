"""Ridge-regression sufficient statistics with Sherman–Morrison inverse updates.

For each of ``n_models`` independent models the class keeps

* ``A = reg * I + sum_s x_s x_s^T`` (the Gram matrix, Λ in the vertical paper),
* ``A_inv``, its inverse, updated in O(d^2) by Sherman–Morrison,
* ``b = sum_s r_s x_s`` and ``theta = A_inv @ b`` (the ridge estimate).

A shared-parameter learner uses one model; a disjoint (per-arm) learner uses one
model per arm (Li et al. 2010). Rank-one updates accumulate round-off, so the
inverse is recomputed exactly every ``refresh_every`` updates of a model.

The arrays are updated in place by a compiled kernel; replace their contents,
never the arrays themselves.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg

from privbandits._kernel_args import writable
from privbandits.linear._kernels import fold_pending, sherman_morrison_step
from privbandits.linear.defaults import DEFAULT_REFRESH_EVERY
from privbandits.options import Option, declare
from privbandits.validation import (
    Integer,
    InvalidInputError,
    Real,
    check_context_row,
    check_finite_array,
    check_index,
    check_reward,
    check_shape,
)

_PENDING_ROWS = 32  # contexts batched into one update of the Gram matrix


class RidgeStatistics:
    """Statistics of ``n_models`` ridge regressions on ``dim`` features.

    Parameters
    ----------
    n_models : int
        Number of independent models (1 for a shared θ, ``n_arms`` for disjoint).
    dim : int
        Feature dimension d.
    reg : float
        Ridge regulariser λ > 0 (``A`` starts at λI).
    refresh_every : int
        Recompute a model's inverse exactly (Cholesky) after this many
        Sherman–Morrison updates of it; 0 disables refreshes.

    Attributes
    ----------
    A, A_inv : ndarray of shape (n_models, dim, dim)
    b, theta : ndarray of shape (n_models, dim)
    n_updates : ndarray of shape (n_models,)
        Number of observations each model has absorbed.
    """

    OPTIONS = declare(
        {
            "n_models": Option(Integer(low=1), doc="independent models: 1 for a shared θ, n_arms for disjoint ones"),
            "dim": Option(Integer(low=1), doc="d, the context dimension"),
            "reg": Option(Real(low=0, low_open=True), 1.0, "ridge regulariser λ (A starts at λI)"),
            "refresh_every": Option(
                Integer(low=0, note="0 = never"),
                DEFAULT_REFRESH_EVERY,
                "Sherman–Morrison updates of an inverse between exact (Cholesky) refreshes",
            ),
        }
    )

    def __init__(
        self,
        n_models: int,
        dim: int,
        reg: float = 1.0,
        refresh_every: int = DEFAULT_REFRESH_EVERY,
    ) -> None:
        checked = self.OPTIONS.check(
            "RidgeStatistics", {"n_models": n_models, "dim": dim, "reg": reg, "refresh_every": refresh_every}
        )
        n_models, dim = checked["n_models"], checked["dim"]
        self.n_models, self.dim = n_models, dim
        self.reg, self.refresh_every = float(reg), int(refresh_every)
        eye = np.eye(dim)
        self._gram = np.tile(reg * eye, (n_models, 1, 1))
        self._pending = np.zeros((n_models, min(dim, _PENDING_ROWS), dim))
        self._n_pending = np.zeros(n_models, dtype=np.int64)
        self.A_inv = np.tile(eye / reg, (n_models, 1, 1))
        self.b = np.zeros((n_models, dim))
        self.theta = np.zeros((n_models, dim))
        self.n_updates = np.zeros(n_models, dtype=np.int64)

    def update(self, model: int, x: np.ndarray, reward: float) -> None:
        """Absorb one observation ``(x, reward)`` into ``model``.

        Sherman–Morrison: ``(A + x x^T)^{-1} = A^{-1} - w w^T`` with
        ``w = A^{-1}x / sqrt(1 + x^T A^{-1} x)``, applied in place so that a
        symmetric inverse stays exactly symmetric (see
        :func:`~privbandits.linear._kernels.sherman_morrison_step`).
        ``model`` is an integer in ``[0, n_models)``, ``x`` finite of shape
        ``(dim,)``, ``reward`` a finite real; a refused call changes nothing.
        """
        model = check_index(model, self.n_models, "model", "n_models")
        x = check_shape(x, (self.dim,), "x", "dim")
        self._absorb(model, x, check_reward(reward), "x")

    def _absorb(self, model: int, x: np.ndarray, reward: float, name: str) -> None:
        """:meth:`update` once ``model`` and ``reward`` are checked: ``x`` is refused (as ``name``),
        before any state changes, if it is not finite."""
        x = writable(np.ascontiguousarray(x, dtype=np.float64))
        count = sherman_morrison_step(
            self._gram,
            self._pending,
            self._n_pending,
            self.A_inv,
            self.b,
            self.theta,
            self.n_updates,
            model,
            x,
            float(reward),
        )
        if count < 0:
            check_context_row(x, name)  # raises, naming the first non-finite entry or the overflow
        if self.refresh_every and count % self.refresh_every == 0:
            self.refresh(model)

    @property
    def A(self) -> np.ndarray:
        """The Gram matrices ``reg * I + sum_s x_s x_s^T``, shape ``(n_models, dim, dim)``.

        Recent contexts wait in a small block and are added to ``A`` in one
        matrix product (cheaper than one rank-one update per round); reading
        ``A`` adds them first.
        """
        for model in np.flatnonzero(self._n_pending):
            fold_pending(self._gram, self._pending, self._n_pending, model)
        return self._gram

    def refresh(self, model: int) -> None:
        """Replace ``A_inv[model]`` by the exact, symmetrised inverse of ``A[model]``."""
        fold_pending(self._gram, self._pending, self._n_pending, model)
        self.A_inv[model] = exact_inverse(self._gram[model], f"A[{model}]")
        np.matmul(self.A_inv[model], self.b[model], out=self.theta[model])

    def load(self, A: np.ndarray, b: np.ndarray) -> None:
        """Start from given statistics (a warm start from a server model): ``A`` (n_models, d, d), ``b`` (n_models, d).

        The inverses and estimates are recomputed exactly; the update counters restart at 0.
        """
        shape = (self.n_models, self.dim, self.dim)
        if np.shape(A) != shape or np.shape(b) != shape[:2]:
            raise InvalidInputError(
                f"A and b must have shapes {shape} and {shape[:2]}, got {np.shape(A)} and {np.shape(b)}"
            )
        A, b = np.asarray(A, dtype=np.float64), np.asarray(b, dtype=np.float64)
        check_finite_array(A, "A")
        check_finite_array(b, "b")
        for model in range(self.n_models):  # refuse before any state changes
            if not np.array_equal(A[model], A[model].T):
                raise InvalidInputError(f"A[{model}] must be symmetric")
            exact_inverse(A[model], f"A[{model}]")
        self._gram[:] = A
        self._n_pending[:] = 0
        self.b[:] = b
        self.n_updates[:] = 0
        for model in range(self.n_models):
            self.refresh(model)

    def inverse_drift(self) -> float:
        """Largest absolute entry of ``A_inv - inv(A)`` over all models (diagnostic)."""
        exact = np.linalg.inv(self.A)
        return float(np.abs(self.A_inv - exact).max())


def exact_inverse(A: np.ndarray, name: str = "A") -> np.ndarray:
    """The exact inverse of a symmetric positive definite ``A`` by Cholesky, symmetrised: ``(X + X^T) / 2``.

    The one exact refresh of the plaintext learners (:meth:`RidgeStatistics.refresh`,
    the batched agents' warm start); an :class:`~privbandits.validation.InvalidInputError`
    naming ``name`` if ``A`` is not positive definite.
    """
    try:
        factor = scipy.linalg.cho_factor(A, check_finite=False)
    except np.linalg.LinAlgError:
        raise InvalidInputError(f"{name} is not positive definite") from None
    exact = scipy.linalg.cho_solve(factor, np.eye(A.shape[-1]), check_finite=False)
    return 0.5 * (exact + exact.T)
