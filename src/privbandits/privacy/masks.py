"""Orthogonal masks of the O3M mechanism (spec ``vertical-o3m.md`` §2).

A mask is a Haar-random orthogonal ``Q`` (d×d) split by columns into one
block ``Q^j`` (d×d_j) per party; party j sends ``Q^j x^j`` instead of its raw
features ``x^j``. Because ``Q^T Q = I`` the masked statistics give exactly the
plaintext LinUCB scores (Eq. 3–4), so the mask must be orthogonal to machine
precision and must not leave coordinates in place (identity, signed
permutations, block-diagonal masks), which :func:`check_mask` enforces.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from enum import StrEnum

import numpy as np

ORTHOGONALITY_TOLERANCE = 1e-12
"""Largest allowed ``max |Q^T Q - I|`` (spec §2.2)."""


class MaskError(ValueError):
    """A mask that would break the lossless property or expose coordinates."""


class MaskSource(StrEnum):
    """Where the Gaussian matrix behind a mask comes from.

    SEEDED
        a numpy Generator (reproducible experiments).
    OS
        the operating system's CSPRNG (``os.urandom``), for deployments
        (spec §2.2: "a cryptographically secure method").
    """

    SEEDED = "seeded"
    OS = "os"


def check_partition(partition: Sequence[int], dim: int | None = None) -> tuple[int, ...]:
    """The partition ``(d_1, ..., d_M)`` as a tuple, after checking it is usable."""
    sizes = tuple(int(size) for size in partition)
    if not sizes:
        raise ValueError("partition must list at least one block size")
    if any(size < 1 for size in sizes):
        raise ValueError(f"partition sizes must be >= 1, got {list(sizes)}")
    if dim is not None and sum(sizes) != dim:
        raise ValueError(f"partition {list(sizes)} sums to {sum(sizes)}, but the context dimension is {dim}")
    return sizes


def block_slices(partition: Sequence[int]) -> list[slice]:
    """Coordinate range of each party's block, in party order."""
    ends = np.cumsum(check_partition(partition))
    return [slice(int(end - size), int(end)) for size, end in zip(partition, ends, strict=True)]


def _os_standard_normal(shape: tuple[int, int]) -> np.ndarray:
    """Standard normals from ``os.urandom`` via Box–Muller on 53-bit uniforms."""
    count = int(np.prod(shape))
    pairs = (count + 1) // 2
    words = np.frombuffer(os.urandom(16 * pairs), dtype=np.uint64).reshape(2, pairs)
    u1 = ((words[0] >> np.uint64(11)) + 1) * 2.0**-53  # (0, 1]: log is finite
    u2 = (words[1] >> np.uint64(11)) * 2.0**-53
    radius = np.sqrt(-2.0 * np.log(u1))
    normals = np.concatenate([radius * np.cos(2 * np.pi * u2), radius * np.sin(2 * np.pi * u2)])
    return normals[:count].reshape(shape)


def haar_orthogonal(dim: int, rng: np.random.Generator | None = None) -> np.ndarray:
    """A Haar-distributed orthogonal d×d matrix.

    QR of an i.i.d. N(0, 1) matrix with each column multiplied by the sign of
    R's diagonal (Mezzadri 2007), the recommendation of spec §2.2. With
    ``rng=None`` the Gaussian matrix comes from the OS CSPRNG.
    """
    if dim < 1:
        raise ValueError(f"dim must be >= 1, got {dim}")
    gaussian = _os_standard_normal((dim, dim)) if rng is None else rng.standard_normal((dim, dim))
    q, r = np.linalg.qr(gaussian)
    signs = np.sign(np.diagonal(r))
    signs[signs == 0] = 1.0
    return q * signs


def check_mask(mask: np.ndarray, partition: Sequence[int], tolerance: float = ORTHOGONALITY_TOLERANCE) -> None:
    """Raise :class:`MaskError` unless ``mask`` is a safe O3M mask for ``partition``.

    Safe means: square, finite, orthogonal to ``tolerance``, and no party's
    column block maps only onto that party's own coordinates (which covers the
    identity and block-diagonal masks) and no column is a signed unit vector
    (which covers signed permutations).
    """
    mask = np.asarray(mask)
    if mask.ndim != 2 or mask.shape[0] != mask.shape[1]:
        raise MaskError(f"a mask must be a square matrix, got shape {mask.shape}")
    dim = mask.shape[0]
    sizes = check_partition(partition, dim)
    if not np.all(np.isfinite(mask)):
        raise MaskError("the mask has non-finite entries")
    error = float(np.max(np.abs(mask.T @ mask - np.eye(dim))))
    if error > tolerance:
        raise MaskError(f"the mask is not orthogonal: max |Q^T Q - I| = {error:.3g} > {tolerance:.0e}")
    if dim == 1:
        raise MaskError("a 1-dimensional mask is ±1 and hides nothing; use at least 2 features")
    unit = 1.0 - np.sqrt(tolerance)
    if np.any(np.max(np.abs(mask), axis=0) >= unit):
        raise MaskError("the mask has a signed unit column (identity or signed permutation), which exposes a feature")
    if len(sizes) > 1:
        for party, block in enumerate(block_slices(sizes)):
            outside = np.delete(mask[:, block], np.arange(dim)[block], axis=0)
            if np.max(np.abs(outside)) <= np.sqrt(tolerance):
                raise MaskError(
                    f"the mask is block-diagonal for party {party}: its block maps only onto its own coordinates"
                )


def draw_mask(
    partition: Sequence[int],
    source: MaskSource | str = MaskSource.SEEDED,
    rng: np.random.Generator | None = None,
) -> np.ndarray:
    """A checked Haar-random mask for ``partition`` (d = sum of the sizes).

    ``source="seeded"`` needs ``rng``; ``source="os"`` ignores it and uses the
    OS CSPRNG. An unsafe draw (probability zero for Haar, but checked anyway)
    is redrawn.
    """
    sizes = check_partition(partition)
    source = MaskSource(source)
    if source is MaskSource.SEEDED and rng is None:
        raise ValueError("a seeded mask needs rng (a numpy Generator); use source='os' for OS entropy")
    for _ in range(8):
        mask = haar_orthogonal(sum(sizes), rng if source is MaskSource.SEEDED else None)
        try:
            check_mask(mask, sizes)
        except MaskError:
            continue
        return mask
    raise MaskError(f"could not draw a safe mask for partition {list(sizes)}; is every d_j small and d = 1?")


def split_columns(mask: np.ndarray, partition: Sequence[int]) -> list[np.ndarray]:
    """The column blocks ``Q^j`` (d×d_j) of ``mask``, one per party (spec §2.3, step 2)."""
    return [np.ascontiguousarray(mask[:, block]) for block in block_slices(check_partition(partition, len(mask)))]
