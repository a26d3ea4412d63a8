"""FCLUB's numerics (spec ``fclub.md`` §8 A15): the compiled kernel that absorbs a round's observation, and the
factorizations that repair a Gram matrix that is not positive definite, counting their repairs in :class:`Repairs`."""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

from privbandits.linear._kernels import cholesky_inverse, cholesky_logdet, inverse_step
from privbandits.protocols.fclub.config import PDRepair


@numba.njit(cache=True)
def _absorb(x, y, V, b, raw_S, raw_u, M_inv, v, R_inv, theta_R):
    """One observation of a round, in place; returns ``c = 1 + xᵀM⁻¹x`` (matrix determinant lemma).

    ``V, b`` (the user) and ``raw_S, raw_u`` (the upload buffer) gain ``xxᵀ, yx``;
    ``M⁻¹ −= (M⁻¹x)(M⁻¹x)ᵀ/c`` (Sherman–Morrison, valid for any invertible M);
    with a non-empty ``R_inv`` the own-buffer recommendation statistics are updated too.
    """
    d = x.shape[0]
    c = 1.0
    for i in range(d):
        s = 0.0
        for j in range(d):
            s += M_inv[i, j] * x[j]
        v[i] = s
        c += x[i] * s
    for i in range(d):
        vi = v[i] / c
        xi = x[i]
        for j in range(d):
            M_inv[i, j] -= vi * v[j]
            xx = xi * x[j]
            V[i, j] += xx
            raw_S[i, j] += xx
        b[i] += y * xi
        raw_u[i] += y * xi
    if R_inv.shape[0] > 0:
        inverse_step(R_inv, theta_R, x, y, R_inv @ x)
    return c


@numba.njit(cache=True)
def _absorb_snapped(x, y, step, V, b, S, u):
    """The released side of one observation, in place: ``V, b`` (the user's) and ``S, u`` (the upload buffer's)
    gain ``xxᵀ, yx`` each entry snapped toward zero to a multiple of ``step`` (as :func:`privacy.noise.snap_to`),
    so these sums are exact on the privatizers' grid (the raw sums of :func:`_absorb` serve the trigger and
    the server's own estimates)."""
    d = x.shape[0]
    scale = 1.0 / step  # exact: the step is a power of two, so multiplying by it is dividing by the step
    for i in range(d):
        xi = x[i]
        for j in range(i, d):  # x xᵀ is symmetric: each off-diagonal entry computed once, added to both sides
            xx = np.trunc(xi * x[j] * scale) * step
            V[i, j] += xx
            S[i, j] += xx
            if j != i:
                V[j, i] += xx
                S[j, i] += xx
        yx = np.trunc(y * xi * scale) * step
        b[i] += yx
        u[i] += yx


@numba.njit(cache=True)
def _absorb_on_grid(x, y, V, b, raw_S, raw_u, M_inv, v, R_inv, theta_R, step, V_grid, b_grid, grid_S, grid_u):
    """:func:`_absorb` and :func:`_absorb_snapped` of one observation in one call (one dispatch a round)."""
    c = _absorb(x, y, V, b, raw_S, raw_u, M_inv, v, R_inv, theta_R)
    _absorb_snapped(x, y, step, V_grid, b_grid, grid_S, grid_u)
    return c


@dataclass
class Repairs:
    """Numerical events (§8 A15): Gram matrices repaired to be positive definite, and
    releases whose noise had ‖H‖_op > ρ (the w.h.p. bound of Eq. 7 failed).

    Each local server keeps its own; ``a + b`` composes them."""

    not_positive_definite: int = 0
    rho_exceeded: int = 0

    def __add__(self, other: Repairs) -> Repairs:
        return Repairs(self.not_positive_definite + other.not_positive_definite, self.rho_exceeded + other.rho_exceeded)


def _spd_inverse(matrix: np.ndarray, repair: PDRepair, floor: float, repairs: Repairs) -> tuple[np.ndarray, float]:
    """(inverse, log det) of a symmetric matrix, repaired first if it is not positive definite."""
    inverse = np.empty_like(matrix)
    logdet = cholesky_inverse(matrix, inverse)
    if logdet == logdet:
        return inverse, logdet
    repairs.not_positive_definite += 1
    w, U = np.linalg.eigh(0.5 * (matrix + matrix.T))
    w = np.maximum(w, floor) if repair is PDRepair.CLIP else w + (floor - w.min())
    return (U / w) @ U.T, float(np.log(w).sum())


def _logdet(matrix: np.ndarray) -> float:
    """``log |det|`` of a symmetric matrix (Cholesky when positive definite, LU otherwise)."""
    logdet = cholesky_logdet(matrix)
    return logdet if logdet == logdet else float(np.linalg.slogdet(matrix)[1])
