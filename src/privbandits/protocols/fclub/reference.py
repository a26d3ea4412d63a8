"""Reference-code behaviours of FCLUB that live outside the paper's algorithm (spec ``fclub.md`` §7, issues 15, 29).

The options are declared, with their descriptions, in :class:`~privbandits.protocols.fclub.config.FCLUBConfig`;
this module holds what they compute, so that the package ``protocols/fclub/`` only calls it:

* :func:`reference_trigger_fires`, ``ridge_in_recommendation_only``: Eq. 5 as the reference code evaluates
  it, ``det(S + ΔS) / det(S) ≥ U`` on its ridge-free ``S`` with IEEE division (:func:`portable_det`), and
  :func:`absorb_own_upload`, its double count bit for bit;
* :func:`carried_phase_statistics`, ``carry_synchronized_copies``: the reference Homo-DC's phase-start
  statistics, its local clusters' synchronized copies rather than their users' sums;
* :func:`greedy_merge`: the reference code's FCLUB merge (``merge_rule = reference``, synchronous).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np


def reference_trigger_fires(S: np.ndarray, buffer: np.ndarray, threshold: float) -> bool:
    """Eq. 5 as the reference code computes it (``ridge_in_recommendation_only``):
    ``det(S + ΔS) / det(S) ≥ U`` on the ridge-free synchronized copy ``S``.

    ``buffer`` is what the trigger adds to ``S`` (the raw data of the upload buffer, plus the noise difference
    with noise only in the trigger). The determinants are LU determinants in floating point (:func:`portable_det`)
    and the ratio is an IEEE division, as in the reference: while ``S`` is singular its determinant is rounding
    noise of either sign (exactly 0 when ``S = 0``, where the ratio is ±inf or NaN). A negative ``det S`` with a
    full-rank ``S + ΔS`` gives a negative ratio: the cluster never uploads again, and with
    ``carry_synchronized_copies`` never recovers (its copy changes only through its uploads).
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.float64(portable_det(S + buffer)) / np.float64(portable_det(S))
    return bool(ratio >= threshold)


def portable_det(matrix: np.ndarray) -> float:
    """The determinant by LU with partial pivoting (LAPACK's algorithm, as ``np.linalg.det``), every step one
    correctly rounded elementwise operation: no BLAS kernel and no fused multiply-add, so its rounding, and the
    sign of a singular matrix's determinant with it, is the same on every IEEE-754 machine (LAPACK's depends on
    the CPU and the BLAS build, which would make the reference trigger's decisions machine-dependent)."""
    a = np.array(matrix, dtype=np.float64)
    det = 1.0
    for k in range(a.shape[0]):
        pivot_row = k + int(np.argmax(np.abs(a[k:, k])))
        if a[pivot_row, k] == 0.0:
            return 0.0
        if pivot_row != k:
            a[[k, pivot_row]] = a[[pivot_row, k]]
            det = -det
        det *= float(a[k, k])
        factors = np.divide(a[k + 1 :, k], a[k, k])
        a[k + 1 :, k:] = np.subtract(a[k + 1 :, k:], np.multiply(factors[:, None], a[k, k:][None, :]))
    return det


def absorb_own_upload(S: np.ndarray, u: np.ndarray, gram: np.ndarray, moment: np.ndarray, shared: bool,
                      literal: bool) -> None:  # fmt: skip
    """A local cluster's copy absorbs its own upload, in place: once, or twice while it shares its arrays with
    the global cluster (``shared_statistics_defect``). ``literal``: the reference's two ``+=`` on one array,
    bit for bit (with ``ridge_in_recommendation_only`` the sign of a singular ``det S`` depends on those bits);
    otherwise ``+= 2·upload``, as the issue-15 preset stored its runs."""
    if shared and literal:
        for _ in range(2):
            S += gram
            u += moment
        return
    twice = 2.0 if shared else 1.0
    S += twice * gram
    u += twice * moment


def carried_phase_statistics(cluster, phase_shift: float) -> tuple[np.ndarray, np.ndarray, int]:
    """The phase upload of a renewed local cluster under ``carry_synchronized_copies``: its synchronized copy
    ``(S, u, T)`` (new arrays), the ``phase_shift`` its renewal gave it per member (``sharing`` of them)
    replaced by one (both 0 with ``ridge_in_recommendation_only``: the copy is sent bit for bit).

    This is what the reference Homo-DC's renewal sums (``self.clusters[g].S += l_cluster.S``): its local
    clusters are never rebuilt (it has no local detection), so the double count of
    ``shared_statistics_defect`` compounds from phase to phase, and the upload buffers pending at a phase
    start are emptied without being counted anywhere (their data are lost to the cluster).
    """
    held = phase_shift * cluster.sharing
    return cluster.S + (phase_shift - held) * np.eye(cluster.S.shape[0]), cluster.u.copy(), cluster.T


def greedy_merge(
    grams: list[np.ndarray],
    moments: list[np.ndarray],
    counts: list[float],
    width: Callable[[np.ndarray], np.ndarray],
    solve: Callable[[np.ndarray, np.ndarray], np.ndarray],
) -> list[int]:
    """The reference code's FCLUB merge (``merge_rule = reference``, synchronous): in index order, cluster
    c1 absorbs each later c2 that passes Eq. 4 against c1's re-estimated statistics; its loops stop one short
    (``range(cmax - 1)``, ``range(c1 + 1, cmax)``), so the last local cluster never merges.

    ``grams``, ``moments`` and ``counts`` (copies: they are summed into) are the phase uploads in key order,
    ``width`` Eq. 4's half-width of counts, ``solve`` the estimate of stacked statistics. Returns, per local
    cluster, the index of the cluster it ended in.

    Eq. 4's half-widths are elementwise in the counts, so each cluster's is computed once (again after it
    absorbs another) and a pair's test is w1 + w2 (what the sum of the pair's widths is, bit for bit); the
    distance is norm's own sqrt(d·d). With up to n local clusters a round tests O(n²) pairs.
    """
    estimates = list(solve(np.stack(grams), np.stack(moments)))
    into = list(range(len(grams)))
    last = len(grams) - 1
    widths = [float(w) for w in width(np.asarray(counts))]
    for c1 in range(last - 1):
        if into[c1] != c1:
            continue
        for c2 in range(c1 + 1, last):
            if into[c2] != c2:
                continue
            difference = estimates[c1] - estimates[c2]
            if math.sqrt(difference.dot(difference)) < widths[c1] + widths[c2]:
                grams[c1] += grams[c2]
                moments[c1] += moments[c2]
                counts[c1] += counts[c2]
                into[c2] = c1
                estimates[c1] = solve(grams[c1][None], moments[c1][None])[0]
                widths[c1] = float(width(np.asarray([counts[c1]]))[0])
    return into
