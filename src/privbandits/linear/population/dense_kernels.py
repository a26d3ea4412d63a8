"""Compiled kernels of disjoint LinUCB on dense contexts: one user's scores, updates and rounds, and a whole
population's, in parallel over blocks of users (the user's statistics = the shared start + its own updates)."""

from __future__ import annotations

import numba
import numpy as np

from privbandits.linear._kernels import cholesky_inverse, inverse_step
from privbandits.linear.population.picking import _pick


@numba.njit(cache=True, fastmath={"reassoc", "contract"})
def _dense_scores(
    A_inv: np.ndarray, theta: np.ndarray, x: np.ndarray, alpha: float, out: np.ndarray, outer: np.ndarray
) -> None:
    """``θ_aᵀx + α sqrt(xᵀA_a⁻¹x)`` for every arm of one user (``outer`` is scratch of size d²).

    ``xᵀA_a⁻¹x`` is the dot product of ``A_a⁻¹`` with ``x xᵀ``. The compiler
    may reassociate and fuse these sums (to vectorise them), so scores agree
    with LinUCB's to ~1e-15 relative, not bitwise (the tie tolerance absorbs
    that); identical statistics still give identical scores (exact ties).
    """
    n_arms, d = theta.shape
    for i in range(d):
        for j in range(d):
            outer[i * d + j] = x[i] * x[j]
    flat = A_inv.reshape(n_arms, d * d)
    for a in range(n_arms):
        quad = 0.0
        for k in range(d * d):
            quad += flat[a, k] * outer[k]
        mean = 0.0
        for i in range(d):
            mean += theta[a, i] * x[i]
        out[a] = mean + alpha * np.sqrt(max(quad, 0.0))


@numba.njit(cache=True)
def _dense_update(
    A: np.ndarray,
    A_inv: np.ndarray,
    b: np.ndarray,
    theta: np.ndarray,
    n_updates: np.ndarray,
    arm: int,
    x: np.ndarray,
    reward: float,
    refresh_every: int,
    scratch: np.ndarray,
) -> None:
    """One user's update of ``arm``, the arithmetic of ``ridge.sherman_morrison_step`` (``scratch`` is 2×d).

    ``A_inv -= w wᵀ`` with ``w = A⁻¹x / sqrt(c)``, ``c = 1 + xᵀA⁻¹x`` (a
    symmetric inverse stays exactly symmetric); ``θ += (A⁻¹x / c)(r − xᵀθ)``;
    ``A += x xᵀ``; ``b += r x``. After every ``refresh_every``-th update of
    the arm, ``A_inv`` becomes the (symmetric) Cholesky inverse of ``A`` and
    ``θ = A⁻¹b``, as in ``RidgeStatistics.refresh``.
    """
    Ai = A_inv[arm]
    th = theta[arm]
    d = x.shape[0]
    v, row = scratch[0], scratch[1]  # row: x copied, writable like the rows ridge and fclub pass inverse_step
    for i in range(d):  # v = A⁻¹x by loops: at P2B's small d a BLAS call costs more than it saves
        s = 0.0
        for j in range(d):
            s += Ai[i, j] * x[j]
        v[i] = s
        row[i] = x[i]
    inverse_step(Ai, th, row, reward, v)
    n_updates[arm] += 1
    for i in range(d):
        b[arm, i] += reward * x[i]
        for j in range(d):
            A[arm, i, j] += x[i] * x[j]
    if refresh_every > 0 and n_updates[arm] % refresh_every == 0:
        cholesky_inverse(A[arm], Ai)
        for i in range(d):
            s = 0.0
            for j in range(d):
                s += Ai[i, j] * b[arm, j]
            th[i] = s


@numba.njit(cache=True)
def _dense_play(
    A: np.ndarray,
    A_inv: np.ndarray,
    b: np.ndarray,
    theta: np.ndarray,
    n_updates: np.ndarray,
    X: np.ndarray,
    R: np.ndarray,
    arms: np.ndarray,
    alpha: float,
    tolerance: float,
    random: bool,
    uniforms: np.ndarray,
    refresh_every: int,
) -> None:
    """One user's rounds: score ``X[t]``, pick ``arms[t]``, learn ``R[t, arms[t]]`` unless it is NaN (unknown).

    Stops at a NaN score.
    """
    n_arms, d = theta.shape
    scores, scratch, outer = np.empty(n_arms), np.empty((2, d)), np.empty(d * d)
    for t in range(X.shape[0]):
        x = X[t]
        _dense_scores(A_inv, theta, x, alpha, scores, outer)
        arm = _pick(scores, tolerance, uniforms[t] if random else -1.0)
        arms[t] = arm
        if arm < 0:
            return
        if R[t, arm] == R[t, arm]:
            _dense_update(A, A_inv, b, theta, n_updates, arm, x, R[t, arm], refresh_every, scratch)


@numba.njit(cache=True)
def _dense_scores_all(A_inv: np.ndarray, theta: np.ndarray, X: np.ndarray, alpha: float) -> np.ndarray:
    out, outer = np.empty(theta.shape[:2]), np.empty(X.shape[1] ** 2)
    for u in range(X.shape[0]):
        _dense_scores(A_inv[u], theta[u], X[u], alpha, out[u], outer)
    return out


@numba.njit(cache=True)
def _dense_update_all(
    A: np.ndarray,
    A_inv: np.ndarray,
    b: np.ndarray,
    theta: np.ndarray,
    n_updates: np.ndarray,
    X: np.ndarray,
    arms: np.ndarray,
    rewards: np.ndarray,
    refresh_every: int,
) -> None:
    scratch = np.empty((2, X.shape[1]))
    for u in range(X.shape[0]):
        _dense_update(A[u], A_inv[u], b[u], theta[u], n_updates[u], arms[u], X[u], rewards[u], refresh_every, scratch)


@numba.njit(cache=True)
def _dense_run(
    A: np.ndarray,
    A_inv: np.ndarray,
    b: np.ndarray,
    theta: np.ndarray,
    n_updates: np.ndarray,
    X: np.ndarray,
    R: np.ndarray,
    alpha: float,
    tolerance: float,
    random: bool,
    uniforms: np.ndarray,
    refresh_every: int,
) -> np.ndarray:
    """Every user of a :class:`BatchedLinUCB` plays its rounds on its own persistent statistics."""
    arms = np.empty(X.shape[:2], dtype=np.int64)
    for u in range(X.shape[0]):
        _dense_play(
            A[u], A_inv[u], b[u], theta[u], n_updates[u], X[u], R[u], arms[u],
            alpha, tolerance, random, uniforms[u if random else 0], refresh_every,
        )  # fmt: skip
    return arms


@numba.njit(cache=True, parallel=True)
def _dense_population(
    A_inv_by_cell: np.ndarray,
    A_inv_by_row: np.ndarray,
    theta_by_dim: np.ndarray,
    X: np.ndarray,
    R: np.ndarray,
    alpha: float,
    tolerance: float,
    random: bool,
    uniforms: np.ndarray,
    block: int,
    identity: bool,
) -> np.ndarray:
    """Every user plays its rounds from the same start ``(A_inv, θ)``, kept as the start plus its own updates.

    A user's statistics are never copied: after its updates s on arm a,
    ``A_a⁻¹ = A_0⁻¹ − Σ_s v_s v_sᵀ / c_s`` and ``θ_a = θ_0 + Σ_s g_s v_s``
    (Sherman–Morrison, ``v_s = A⁻¹x_s`` before update s, ``c_s = 1 + x_sᵀv_s``,
    ``g_s = (r_s − x_sᵀθ) / c_s``). So with ``z_s = v_sᵀx`` a score needs the
    start's ``xᵀA_0⁻¹x`` and ``θ_0ᵀx``, computed for a block of users' rounds
    at once by two matrix products, minus ``Σ z_s² / c_s`` and plus
    ``Σ g_s z_s``: O(d) per earlier update instead of O(K d²) per round; the
    start's ``A_0a⁻¹x`` of an update comes from a third product. No refresh is
    made (callers use it only when none would fall in the rounds). The start
    comes as ``A_inv_by_cell`` (d², K) with ``[i d + j, a] = A_0a⁻¹[i, j]``,
    ``A_inv_by_row`` (d, K d) with ``[j, a d + i] = A_0a⁻¹[i, j]``, and
    ``theta_by_dim`` (d, K). A NaN reward (unknown, replay) is not learnt.
    ``identity`` says the start is ``A_0 = I, θ_0 = 0`` (a cold agent): then
    ``xᵀA_0⁻¹x = ‖x‖²``, ``θ_0ᵀx = 0`` and ``A_0⁻¹x = x``, and the products are skipped.
    """
    n_users, n_rounds, d = X.shape
    n_arms = theta_by_dim.shape[1]
    arms = np.empty((n_users, n_rounds), dtype=np.int64)
    for first in numba.prange((n_users + block - 1) // block):
        users = X[first * block : (first + 1) * block]
        rows = users.shape[0] * n_rounds
        flat = users.reshape(rows, d)
        if identity:
            start_quad, start_mean, start_v = np.empty((0, 0)), np.empty((0, 0)), np.empty((0, 0))
        else:
            outer = np.empty((rows, d * d))
            for n in range(rows):
                for i in range(d):
                    for j in range(d):
                        outer[n, i * d + j] = flat[n, i] * flat[n, j]
            start_quad = np.dot(outer, A_inv_by_cell)  # x_nᵀ A_0a⁻¹ x_n
            start_mean = np.dot(flat, theta_by_dim)  # θ_0aᵀ x_n
            start_v = np.dot(flat, A_inv_by_row)  # A_0a⁻¹ x_n for every arm
        vs, cs, gs, zs = np.empty((n_rounds, d)), np.empty(n_rounds), np.empty(n_rounds), np.empty(n_rounds)
        arm_of = np.empty(n_rounds, dtype=np.int64)
        quad, mean, scores = np.empty(n_arms), np.empty(n_arms), np.empty(n_arms)
        for k in range(users.shape[0]):
            u = first * block + k
            for t in range(n_rounds):
                row = k * n_rounds + t
                x = flat[row]
                if identity:
                    norm_sq = 0.0
                    for i in range(d):
                        norm_sq += x[i] * x[i]
                    for a in range(n_arms):
                        quad[a] = norm_sq
                        mean[a] = 0.0
                else:
                    for a in range(n_arms):
                        quad[a] = start_quad[row, a]
                        mean[a] = start_mean[row, a]
                for s in range(t):
                    if arm_of[s] < 0:
                        continue
                    z = 0.0
                    for i in range(d):
                        z += vs[s, i] * x[i]
                    zs[s] = z
                    quad[arm_of[s]] -= z * z / cs[s]
                    mean[arm_of[s]] += gs[s] * z
                for a in range(n_arms):
                    scores[a] = mean[a] + alpha * np.sqrt(max(quad[a], 0.0))
                arm = _pick(scores, tolerance, uniforms[u, t] if random else -1.0)
                arms[u, t] = arm
                if arm < 0:
                    break
                if R[u, t, arm] != R[u, t, arm]:  # an unknown reward (replay): nothing is learnt
                    arm_of[t] = -1
                    continue
                v = vs[t]  # A_a⁻¹ x = A_0a⁻¹ x − Σ_s v_s z_s / c_s over the arm's earlier updates
                for i in range(d):
                    v[i] = x[i] if identity else start_v[row, arm * d + i]
                for s in range(t):
                    if arm_of[s] == arm:
                        for i in range(d):
                            v[i] -= vs[s, i] * (zs[s] / cs[s])
                c = 1.0
                for i in range(d):
                    c += x[i] * v[i]
                cs[t], gs[t], arm_of[t] = c, (R[u, t, arm] - mean[arm]) / c, arm
    return arms
