"""Compiled per-round kernels for the plaintext learners (numba).

A bandit round touches a few small arrays many times; in plain numpy each of
the ~20 calls of a round costs a microsecond or two of interpreter overhead,
which dominates at the sizes the papers use (d ≤ 100, K ≤ 100). These kernels
do a round's ridge update and its shared-layout UCB scores in one call each,
with the same formulas as the numpy reference (see ``tests/linear/test_linear.py``).
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True)
def inverse_step(A_inv: np.ndarray, theta: np.ndarray, x: np.ndarray, reward: float, v: np.ndarray) -> None:
    """Sherman–Morrison and recursive least squares for one observation, in place.

    ``v`` holds ``A^{-1}x`` on entry (callers compute it the fastest way for
    their size) and is overwritten. With ``c = 1 + x^T v``: ``A^{-1} -= w w^T``
    for ``w = v / sqrt(c)``, so entries (i, j) and (j, i) get the same product
    and a symmetric inverse stays exactly symmetric; ``theta += (v / c)(reward
    - x^T theta)``, the recursive form of ``theta = A^{-1} b`` (O(d), not O(d^2)).
    """
    d = x.shape[0]
    c = 1.0
    residual = reward
    for i in range(d):
        c += x[i] * v[i]
        residual -= x[i] * theta[i]
    gain = residual / c
    scale = 1.0 / np.sqrt(c)
    for i in range(d):
        theta[i] += gain * v[i]
        v[i] *= scale
    for i in range(d):
        vi = v[i]
        for j in range(d):
            A_inv[i, j] -= vi * v[j]


@numba.njit(cache=True)
def sherman_morrison_step(
    gram: np.ndarray,
    pending: np.ndarray,
    n_pending: np.ndarray,
    A_inv: np.ndarray,
    b: np.ndarray,
    theta: np.ndarray,
    n_updates: np.ndarray,
    model: int,
    x: np.ndarray,
    reward: float,
) -> int:
    """Add ``(x, reward)`` to model ``model`` of stacked statistics, in place.

    :func:`inverse_step` updates ``A^{-1}`` and ``theta``; ``b += reward x``.
    The Gram matrix ``A = gram + P^T P`` gains ``x`` as a row of the pending
    block ``P``, folded into ``gram`` by one matrix product when the block is
    full. Returns the model's new update count, or -1 without touching
    anything if ``x`` is not finite or its squared norm overflows.
    """
    squared = 0.0
    for i in range(x.shape[0]):
        squared += x[i] * x[i]
    if not squared < np.inf:  # NaN or inf entry, or |x|^2 beyond float64
        return -1
    inverse_step(A_inv[model], theta[model], x, reward, A_inv[model] @ x)
    row = pending[model, n_pending[model]]
    for i in range(x.shape[0]):
        b[model, i] += reward * x[i]
        row[i] = x[i]
    n_pending[model] += 1
    if n_pending[model] == pending.shape[1]:
        fold_pending(gram, pending, n_pending, model)
    n_updates[model] += 1
    return n_updates[model]


@numba.njit(cache=True)
def fold_pending(gram: np.ndarray, pending: np.ndarray, n_pending: np.ndarray, model: int | np.integer) -> None:
    """``gram[model] += P^T P`` for the model's pending rows ``P``; empties the block."""
    block = pending[model, : n_pending[model]]
    gram[model] += block.T @ block
    n_pending[model] = 0


@numba.njit(cache=True)
def shared_ucb_scores(X: np.ndarray, A_inv: np.ndarray, theta: np.ndarray, alpha: float) -> np.ndarray:
    """``x_a^T θ + alpha * sqrt(x_a^T A^{-1} x_a)`` for every row ``x_a`` of ``X``.

    NaN for a row whose squared norm is not finite (an entry NaN or ±inf, or one so large that
    its square overflows), whatever ``alpha`` and ``θ``: a caller may test the scores instead of
    the contexts (the sum costs d multiply-adds per row, less than a separate compiled pass).
    """
    Y = X @ A_inv
    n_arms, d = X.shape
    scores = np.empty(n_arms)
    for a in range(n_arms):
        quad = 0.0
        mean = 0.0
        norm = 0.0
        for j in range(d):
            quad += Y[a, j] * X[a, j]
            mean += X[a, j] * theta[j]
            norm += X[a, j] * X[a, j]
        scores[a] = mean + alpha * np.sqrt(max(quad, 0.0)) if norm < np.inf else np.nan
    return scores


@numba.njit(cache=True)
def tie_threshold(scores: np.ndarray, tolerance: float) -> float:
    """The smallest score that ties with the best: ``max - tolerance * max(1, |max|)``; NaN if a score is NaN."""
    best = -np.inf
    for s in scores:
        if s != s:
            return np.nan
        if s > best:
            best = s
    return best - tolerance * max(1.0, abs(best))


@numba.njit(cache=True)
def lowest_tied_index(scores: np.ndarray, tolerance: float) -> int:
    """Lowest index with ``score >= max - tolerance * max(1, |max|)``; -1 if a score is NaN."""
    threshold = tie_threshold(scores, tolerance)
    for a in range(scores.shape[0]):
        if scores[a] >= threshold:
            return a
    return -1


@numba.njit(cache=True)
def _cholesky(A: np.ndarray, L: np.ndarray) -> float:
    """``log det A`` and ``L`` (zeros on entry) the Cholesky factor ``A = L Lᵀ``; NaN if A is not PD."""
    d = A.shape[0]
    logdet = 0.0
    for j in range(d):
        s = A[j, j]
        for k in range(j):
            s -= L[j, k] * L[j, k]
        if not s > 0.0:
            return np.nan
        L[j, j] = np.sqrt(s)
        logdet += 2.0 * np.log(L[j, j])
        for i in range(j + 1, d):
            s = A[i, j]
            for k in range(j):
                s -= L[i, k] * L[j, k]
            L[i, j] = s / L[j, j]
    return logdet


@numba.njit(cache=True)
def cholesky_logdet(A: np.ndarray) -> float:
    """``log det A`` by Cholesky; NaN if A is not positive definite."""
    return _cholesky(A, np.zeros(A.shape))


@numba.njit(cache=True)
def cholesky_inverse(A: np.ndarray, out: np.ndarray) -> float:
    """``log det A`` and ``out = A⁻¹`` by Cholesky; NaN (``out`` untouched) if A is not PD.

    ``A = L Lᵀ``, ``W = L⁻¹`` column by column, ``A⁻¹ = Wᵀ W``, written
    symmetric by construction. Hand-written loops: at the papers' small d a
    compiled O(d³) loop costs less than the Python overhead of LAPACK calls.
    No ``invert`` flag (see :func:`cholesky_logdet`): a flag passed from compiled
    code and from Python would give the kernel two numba types, so two compilations.
    """
    d = A.shape[0]
    L = np.zeros((d, d))
    logdet = _cholesky(A, L)
    if logdet != logdet:
        return logdet
    W = np.zeros((d, d))
    for j in range(d):
        W[j, j] = 1.0 / L[j, j]
        for i in range(j + 1, d):
            s = 0.0
            for k in range(j, i):
                s -= L[i, k] * W[k, j]
            W[i, j] = s / L[i, i]
    for i in range(d):
        for j in range(i + 1):
            s = 0.0
            for k in range(i, d):
                s += W[k, i] * W[k, j]
            out[i, j] = s
            out[j, i] = s
    return logdet


@numba.njit(cache=True)
def finite_row_norms(X: np.ndarray) -> bool:
    """Whether every row of a 2-D array has a finite squared norm (so every entry is finite and no score
    built from the row overflows): one compiled pass, for per-round checks of small contexts
    (``np.isfinite(X).all()`` costs a few interpreter calls more)."""
    for i in range(X.shape[0]):
        s = 0.0
        for j in range(X.shape[1]):
            s += X[i, j] * X[i, j]
        if not s < np.inf:  # False for NaN and inf
            return False
    return True
