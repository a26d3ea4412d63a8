"""What the active party learns from O3M messages: leakage and attacks beyond the paper.

The paper's only privacy argument is Theorem 4.2: a masked block ``Q^j x^j`` has
infinitely many preimages (spec ``vertical-o3m.md`` §4.3). It has no attack
experiment (§6). The functions here work on the AP's view under Alg. 1, where
each passive party j sends its masked vectors ``y = Q^j x^j`` separately, and
measure what that view reveals (spec §6, items 1-4; all **[beyond the paper]**):

1. geometry: ``Q^j`` has orthonormal columns, so the Gram matrix of the masked
   vectors *is* the Gram matrix of the raw ones (:func:`gram_from_masked`);
2. known plaintexts: d_j independent pairs ``(x, Q^j x)`` determine ``Q^j``
   exactly (:func:`recover_mask_block`, :func:`mask_recovery_curve`); with the
   span of ``Q^j`` learned from the messages, d_j - 1 pairs leave one sign
   (:func:`complete_mask_block`);
3. subspace: the messages span ``span(Q^j)`` (:func:`subspace_from_masked`);
4. distribution: independent non-Gaussian features are unmixed by ICA up to
   sign, order and scale (:func:`ica_unmix`, :func:`matched_correlation`).

:func:`secure_aggregation_view` models the spec's optional extension (§8.4.9):
with secure aggregation the AP sees only the sum over the passive parties.

Arrays hold one vector per row: raw blocks ``(n, d_j)``, masked ``(n, d)``, and a
mask block ``Q^j`` of shape ``(d, d_j)``, so ``masked = raw @ Q^j.T``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import scipy.linalg
from scipy.optimize import linear_sum_assignment
from sklearn.decomposition import FastICA

RANK_TOLERANCE = 1e-10
"""Relative singular-value threshold below which a direction counts as unseen."""


def _matrix(values: np.ndarray, name: str) -> np.ndarray:
    """``values`` as a finite 2-D float64 array, or a ValueError naming ``name``."""
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array (one vector per row), got shape {array.shape}")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name} contains NaN or infinite values")
    return array


def _check_rows(raw: np.ndarray, masked: np.ndarray) -> None:
    if raw.shape[0] != masked.shape[0]:
        raise ValueError(f"raw and masked must have the same number of rows, got {raw.shape[0]} and {masked.shape[0]}")


def gram_from_masked(masked: np.ndarray) -> np.ndarray:
    """Gram matrix ``Y Y^T`` of one party's masked vectors (spec §6, item 1).

    Equals the raw Gram matrix ``X X^T`` because ``(Q^j)^T Q^j = I``: the AP
    learns the norm of every local context and every inner product and
    distance between them, across users, arms and rounds.
    """
    masked = _matrix(masked, "masked")
    return masked @ masked.T


def recover_mask_block(raw: np.ndarray, masked: np.ndarray) -> np.ndarray:
    """Known-plaintext estimate of ``Q^j`` (d×d_j) from n pairs (spec §6, item 2).

    Least squares ``min ||raw @ Q^T - masked||``, minimum-norm when the raw
    vectors span fewer than d_j directions. With d_j independent pairs the
    estimate is exact; with rank r < d_j it is ``Q^j P`` (P the projector onto
    the known span), which is off by ``sqrt(d_j - r)`` in Frobenius norm.
    """
    raw, masked = _matrix(raw, "raw"), _matrix(masked, "masked")
    _check_rows(raw, masked)
    solution, *_ = np.linalg.lstsq(raw, masked, rcond=RANK_TOLERANCE)
    return solution.T


def unmask(mask_estimate: np.ndarray, masked: np.ndarray) -> np.ndarray:
    """Raw vectors ``(n, d_j)`` the AP reads off masked ones with an estimated mask block.

    Minimum-norm least squares ``min ||Q_hat x - y||``; exact when the estimate is.
    """
    mask_estimate, masked = _matrix(mask_estimate, "mask_estimate"), _matrix(masked, "masked")
    if masked.shape[1] != mask_estimate.shape[0]:
        raise ValueError(f"masked rows have length {masked.shape[1]}; mask_estimate has {mask_estimate.shape[0]} rows")
    solution, *_ = np.linalg.lstsq(mask_estimate, masked.T, rcond=RANK_TOLERANCE)
    return solution.T


@dataclass(frozen=True)
class RecoveryCurve:
    """Known-plaintext recovery error versus the number of known pairs.

    Attributes
    ----------
    n_pairs : ndarray of int
        Number of known ``(x, Q^j x)`` pairs.
    mask_max_error, mask_frobenius_error : ndarray
        ``max |Q_hat - Q^j|`` and ``||Q_hat - Q^j||_F``.
    unmask_error : ndarray
        Root-mean-square relative error ``||x_hat - x|| / ||x||`` over held-out
        vectors unmasked with ``Q_hat`` (:func:`unmask`).
    """

    n_pairs: np.ndarray
    mask_max_error: np.ndarray
    mask_frobenius_error: np.ndarray
    unmask_error: np.ndarray


def mask_recovery_curve(
    mask_block: np.ndarray,
    known_raw: np.ndarray,
    held_out_raw: np.ndarray,
    n_pairs: Sequence[int] | None = None,
) -> RecoveryCurve:
    """Error of :func:`recover_mask_block` using the first n rows of ``known_raw``.

    ``n_pairs`` defaults to ``1..len(known_raw)``. The masked vectors are
    ``raw @ mask_block.T``, as party j would send them.
    """
    mask_block = _matrix(mask_block, "mask_block")
    known_raw, held_out_raw = _matrix(known_raw, "known_raw"), _matrix(held_out_raw, "held_out_raw")
    d_j = mask_block.shape[1]
    for name, raw in (("known_raw", known_raw), ("held_out_raw", held_out_raw)):
        if raw.shape[1] != d_j:
            raise ValueError(f"{name} has {raw.shape[1]} features, the mask block has d_j = {d_j} columns")
    counts = np.arange(1, len(known_raw) + 1) if n_pairs is None else np.asarray(n_pairs, dtype=int)
    if counts.size == 0 or counts.min() < 1 or counts.max() > len(known_raw):
        raise ValueError(f"n_pairs must lie in 1..{len(known_raw)} (rows of known_raw), got {counts.tolist()}")
    known_masked, held_out_masked = known_raw @ mask_block.T, held_out_raw @ mask_block.T
    norms = np.linalg.norm(held_out_raw, axis=1)
    max_error, frobenius, unmasking = [], [], []
    for n in counts:
        estimate = recover_mask_block(known_raw[:n], known_masked[:n])
        difference = estimate - mask_block
        max_error.append(np.max(np.abs(difference)))
        frobenius.append(np.linalg.norm(difference))
        relative = np.linalg.norm(unmask(estimate, held_out_masked) - held_out_raw, axis=1) / norms
        unmasking.append(np.sqrt(np.mean(relative**2)))
    return RecoveryCurve(counts, np.array(max_error), np.array(frobenius), np.array(unmasking))


def subspace_from_masked(masked: np.ndarray, d_j: int) -> np.ndarray:
    """Orthonormal basis ``(d, d_j)`` of the principal subspace of one party's messages.

    Every message ``Q^j x^j`` lies in ``span(Q^j)``, so once the party has sent
    d_j independent vectors the top d_j right singular vectors span it exactly
    (spec §6, item 3). Together with its own ``Q^1`` the AP then knows the
    d_j-dimensional space each party's features live in.
    """
    masked = _matrix(masked, "masked")
    if not 1 <= d_j <= masked.shape[1]:
        raise ValueError(f"d_j must be in 1..{masked.shape[1]} (the message length), got {d_j}")
    _, _, vt = np.linalg.svd(masked, full_matrices=False)
    if vt.shape[0] < d_j:
        raise ValueError(f"need at least d_j = {d_j} masked vectors to span the subspace, got {masked.shape[0]}")
    return vt[:d_j].T


def subspace_distance(basis: np.ndarray, other: np.ndarray) -> float:
    """Sine of the largest principal angle between two column spaces (0 = same span)."""
    basis, other = _matrix(basis, "basis"), _matrix(other, "other")
    return float(np.sin(np.max(scipy.linalg.subspace_angles(basis, other))))


def complete_mask_block(raw: np.ndarray, masked: np.ndarray, subspace: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The two masks consistent with d_j - 1 known pairs and the span of ``Q^j``.

    Least squares fixes ``Q^j`` on the known span; the missing raw direction u
    must map to the unit vector q of ``subspace`` orthogonal to the images of
    the known ones (the columns are orthonormal), so ``Q^j = Q_hat ± q u^T``.
    One pair fewer than :func:`recover_mask_block` needs, up to one sign.
    """
    raw, subspace = _matrix(raw, "raw"), _matrix(subspace, "subspace")
    d_j = subspace.shape[1]
    if raw.shape[1] != d_j:
        raise ValueError(f"raw has {raw.shape[1]} features, the subspace has d_j = {d_j} columns")
    _, singular, vt = np.linalg.svd(raw)
    rank = int(np.sum(singular > RANK_TOLERANCE * singular[0])) if singular.size else 0
    if rank != d_j - 1:
        raise ValueError(f"the known raw vectors must span exactly d_j - 1 = {d_j - 1} directions, they span {rank}")
    estimate = recover_mask_block(raw, masked)
    seen, _, _ = np.linalg.svd(estimate, full_matrices=False)
    missing = subspace - seen[:, : d_j - 1] @ (seen[:, : d_j - 1].T @ subspace)
    q = np.linalg.svd(missing)[0][:, :1]
    u = vt[d_j - 1 :]
    return estimate + q @ u, estimate - q @ u


def ica_unmix(masked: np.ndarray, d_j: int, rng: np.random.Generator) -> np.ndarray:
    """ICA estimate ``(n, d_j)`` of one party's raw features from its messages alone.

    Projects the messages onto their principal subspace (coordinates ``R x``
    for an unknown orthogonal R) and runs FastICA. When the features are
    independent and non-Gaussian (uniform, Laplace, binary...) this recovers
    them up to sign, order and scale (spec §6, item 4), contrary to the paper's
    claim that rotation hides the distribution. For i.i.d. Gaussian features
    the masked distribution does not depend on the mask and nothing is learned.
    """
    masked = _matrix(masked, "masked")
    coordinates = masked @ subspace_from_masked(masked, d_j)
    ica = FastICA(n_components=d_j, whiten="unit-variance", random_state=int(rng.integers(2**31)))
    return ica.fit_transform(coordinates)


def matched_correlation(recovered: np.ndarray, raw: np.ndarray) -> float:
    """Mean |correlation| between recovered and raw features under the best one-to-one matching.

    1 means every raw feature is recovered up to sign and scale; the matching
    (Hungarian algorithm) removes the order ambiguity of ICA.
    """
    recovered, raw = _matrix(recovered, "recovered"), _matrix(raw, "raw")
    if recovered.shape != raw.shape:
        raise ValueError(f"recovered and raw must have the same shape, got {recovered.shape} and {raw.shape}")
    d_j = raw.shape[1]
    correlation = np.abs(np.corrcoef(recovered, raw, rowvar=False)[:d_j, d_j:])
    rows, cols = linear_sum_assignment(correlation, maximize=True)
    return float(correlation[rows, cols].mean())


def secure_aggregation_view(masked_blocks: Sequence[np.ndarray]) -> np.ndarray:
    """The AP's view under secure aggregation: ``sum_j Q^j x^j`` over the passive parties.

    Models the ideal output of pairwise-mask secure aggregation (Bonawitz et
    al. 2017; spec §8.4.9, an extension): the AP receives one sum per arm
    instead of each ``Q^j x^j``. Its Gram matrix is the *sum* of the parties'
    raw Gram matrices, so no single party's inner products are revealed, and
    :func:`recover_mask_block` then needs the plaintexts of all the passive
    parties together (it recovers ``[Q^2, ..., Q^M]``). With many known pairs
    of one party only, least squares still converges to its ``Q^j``, at rate
    ``sqrt(d_other / n)`` when the other features are independent and centred:
    the other parties' contributions act as noise, not as a secret.
    """
    if len(masked_blocks) == 0:
        raise ValueError("masked_blocks must hold at least one party's masked vectors")
    blocks = [_matrix(block, f"masked_blocks[{j}]") for j, block in enumerate(masked_blocks)]
    shapes = {block.shape for block in blocks}
    if len(shapes) != 1:
        raise ValueError(f"every party's masked vectors must have the same shape, got {sorted(shapes)}")
    return np.sum(blocks, axis=0)
