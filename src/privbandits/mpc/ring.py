"""Ring Z_2^64 helpers: uniform words and the wrap counts of sums of shares (spec §3.6).

Shares are uint64 arrays with the party on axis 0, so numpy's wrap-around is the
ring arithmetic. A wrap count θ satisfies ``Σ_p s_p = v + θ·2^64`` over the
integers, with the shares read either as unsigned words in [0, 2^64) or as signed
two's-complement words in [-2^63, 2^63) (CrypTen's convention).
"""

from __future__ import annotations

import numpy as np

WORD = np.uint64


def random_words(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Uniform ring elements of ``shape`` (the generator's raw 64-bit outputs)."""
    return rng.bit_generator.random_raw(shape)


def add_with_wraps(a: np.ndarray, b: np.ndarray, *, signed: bool) -> tuple[np.ndarray, np.ndarray]:
    """``(a + b mod 2^64, w)`` with ``a + b = sum + w·2^64`` over the integers (``w`` int64).

    Unsigned words wrap by 0 or +1; signed words by -1 (underflow), 0 or +1 (overflow).
    """
    total = a + b
    if not signed:
        return total, (total < a).astype(np.int64)
    sa, sb, st = a.view(np.int64), b.view(np.int64), total.view(np.int64)
    over = (sa >= 0) & (sb >= 0) & (st < 0)
    under = (sa < 0) & (sb < 0) & (st >= 0)
    return total, over.astype(np.int64) - under.astype(np.int64)


def count_wraps(shares: np.ndarray, *, signed: bool) -> np.ndarray:
    """θ (int64) of the sum over axis 0 of ``shares``: ``Σ_p s_p = v + θ·2^64``."""
    total = shares[0]
    theta = np.zeros(shares.shape[1:], dtype=np.int64)
    for share in shares[1:]:
        total, wraps = add_with_wraps(total, share, signed=signed)
        theta += wraps
    return theta
