"""Compiled kernels of disjoint LinUCB on one-hot codes: per-(arm, code) tables read from the server's model
plus each user's own increments in local slots; one user's rounds, and a whole population's in parallel."""

from __future__ import annotations

import numba
import numpy as np

from privbandits.linear.population.picking import _pick


@numba.njit(cache=True)
def _find_slot(slot_codes: np.ndarray, n_slots: int, code: int) -> int:
    """The user's local slot of ``code``, or -1 if the user has not learnt on it yet."""
    for s in range(n_slots):
        if slot_codes[s] == code:
            return s
    return -1


@numba.njit(cache=True)
def _code_scores(
    base_counts: np.ndarray,
    base_sums: np.ndarray,
    local_counts: np.ndarray,
    local_sums: np.ndarray,
    slot: int,
    code: int,
    alpha: float,
    out: np.ndarray,
) -> None:
    """``s / (1 + n) + α / sqrt(1 + n)`` per arm, n and s the server's value plus the user's own."""
    for a in range(out.shape[0]):
        n = base_counts[code, a]
        s = base_sums[code, a]
        if slot >= 0:
            n += local_counts[slot, a]
            s += local_sums[slot, a]
        denom = 1.0 + n
        out[a] = s / denom + alpha / np.sqrt(denom)


@numba.njit(cache=True)
def _code_update(
    slot_codes: np.ndarray,
    n_slots: int,
    local_counts: np.ndarray,
    local_sums: np.ndarray,
    code: int,
    arm: int,
    reward: float,
) -> int:
    """Add one pull of ``arm`` on ``code`` to a user's own tables; returns its new number of slots."""
    slot = _find_slot(slot_codes, n_slots, code)
    if slot < 0:
        slot = n_slots
        slot_codes[slot] = code
        n_slots += 1
    local_counts[slot, arm] += 1
    local_sums[slot, arm] += reward
    return n_slots


@numba.njit(cache=True)
def _code_play(
    base_counts: np.ndarray,
    base_sums: np.ndarray,
    slot_codes: np.ndarray,
    n_slots: int,
    local_counts: np.ndarray,
    local_sums: np.ndarray,
    Y: np.ndarray,
    R: np.ndarray,
    arms: np.ndarray,
    alpha: float,
    tolerance: float,
    random: bool,
    uniforms: np.ndarray,
) -> int:
    """One user's rounds on codes ``Y``, skipping NaN (unknown) rewards; returns its number of slots.

    Stops at a NaN score.
    """
    scores = np.empty(base_counts.shape[1])
    for t in range(Y.shape[0]):
        code = Y[t]
        slot = _find_slot(slot_codes, n_slots, code)
        _code_scores(base_counts, base_sums, local_counts, local_sums, slot, code, alpha, scores)
        arm = _pick(scores, tolerance, uniforms[t] if random else -1.0)
        arms[t] = arm
        if arm < 0:
            break
        if R[t, arm] == R[t, arm]:
            n_slots = _code_update(slot_codes, n_slots, local_counts, local_sums, code, arm, R[t, arm])
    return n_slots


@numba.njit(cache=True)
def _code_scores_all(
    base_counts: np.ndarray,
    base_sums: np.ndarray,
    slot_codes: np.ndarray,
    n_slots: np.ndarray,
    local_counts: np.ndarray,
    local_sums: np.ndarray,
    codes: np.ndarray,
    alpha: float,
) -> np.ndarray:
    out = np.empty((codes.shape[0], base_counts.shape[1]))
    for u in range(codes.shape[0]):
        slot = _find_slot(slot_codes[u], n_slots[u], codes[u])
        _code_scores(base_counts, base_sums, local_counts[u], local_sums[u], slot, codes[u], alpha, out[u])
    return out


@numba.njit(cache=True)
def _code_update_all(
    slot_codes: np.ndarray,
    n_slots: np.ndarray,
    local_counts: np.ndarray,
    local_sums: np.ndarray,
    codes: np.ndarray,
    arms: np.ndarray,
    rewards: np.ndarray,
) -> None:
    for u in range(codes.shape[0]):
        n_slots[u] = _code_update(
            slot_codes[u], n_slots[u], local_counts[u], local_sums[u], codes[u], arms[u], rewards[u]
        )


@numba.njit(cache=True)
def _code_run(
    base_counts: np.ndarray,
    base_sums: np.ndarray,
    slot_codes: np.ndarray,
    n_slots: np.ndarray,
    local_counts: np.ndarray,
    local_sums: np.ndarray,
    Y: np.ndarray,
    R: np.ndarray,
    alpha: float,
    tolerance: float,
    random: bool,
    uniforms: np.ndarray,
) -> np.ndarray:
    """Every user of a :class:`BatchedCodeLinUCB` plays its rounds on its own persistent tables."""
    arms = np.empty(Y.shape, dtype=np.int64)
    for u in range(Y.shape[0]):
        n_slots[u] = _code_play(
            base_counts, base_sums, slot_codes[u], n_slots[u], local_counts[u], local_sums[u], Y[u], R[u],
            arms[u], alpha, tolerance, random, uniforms[u if random else 0],
        )  # fmt: skip
    return arms


@numba.njit(cache=True, parallel=True)
def _code_population(
    base_counts: np.ndarray,
    base_sums: np.ndarray,
    Y: np.ndarray,
    R: np.ndarray,
    alpha: float,
    tolerance: float,
    random: bool,
    uniforms: np.ndarray,
    block: int,
) -> np.ndarray:
    """Every user plays its rounds from the server's tables, its own pulls kept in scratch slots."""
    (n_users, n_rounds), n_arms = Y.shape, base_counts.shape[1]
    arms = np.empty(Y.shape, dtype=np.int64)
    for first in numba.prange((n_users + block - 1) // block):
        slot_codes = np.empty(n_rounds, dtype=np.int64)
        local_counts = np.zeros((n_rounds, n_arms), dtype=np.int64)
        local_sums = np.zeros((n_rounds, n_arms))
        for u in range(first * block, min(n_users, (first + 1) * block)):
            # ignored: the stub types this argument as the int it is; np.int64, not 0, so that numba compiles no
            # second specialisation for a literal 0 (tests/linear/test_kernel_specialisations.py)
            used = _code_play(
                base_counts, base_sums, slot_codes, np.int64(0), local_counts, local_sums, Y[u], R[u],  # type: ignore[arg-type]
                arms[u], alpha, tolerance, random, uniforms[u if random else 0],
            )  # fmt: skip
            local_counts[:used] = 0
            local_sums[:used] = 0.0
    return arms
