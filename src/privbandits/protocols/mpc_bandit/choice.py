"""Alg. 1 steps 3–4, the choice of a_t: the exploration mix s̃ = s + y(v − s), then the argmax (Alg. 2).

:func:`private_choice` on shares, :func:`dealt_choice` with the exploration dealt (``dealt_exploration``),
:func:`plaintext_choice` in float64 (the twin's, and the dealer's pick of the arm exploration would play).
"""

from __future__ import annotations

import numpy as np

from privbandits.mpc import Engine
from privbandits.mpc.comparison import Kept, packed_bits
from privbandits.mpc.sharing import ArithmeticShares

PACKED_KEY_BITS = 54
"""Scale plus γ bits up to which the argmax packs (s̃, γ) into one key (:func:`~privbandits.mpc.comparison.argmax`):
it leaves 8 bits, |s̃| < 128, below the 62-bit range of the comparison; above (L > 24 with 10 arms) Alg. 2's
two AllMax run instead."""


def private_choice(
    engine: Engine,
    scores: ArithmeticShares,
    coin: ArithmeticShares,
    uniforms: ArithmeticShares,
    gamma: ArithmeticShares,
    *,
    lookup: bool = False,
    tabled: bool = False,
) -> ArithmeticShares:
    """Alg. 1 steps 3–4 over any leading batch axes: s̃ = s + y(v − s), then Argmax (Alg. 2),
    packed into one AllMax of (s̃, γ) keys while they fit (:data:`PACKED_KEY_BITS`): same choice.

    ``scores`` and ``uniforms`` (…, |A|) share a scale; the coin y (…) and the
    permutation γ (…, |A|) are integers. ``lookup``: each AllMax ends in a masked lookup
    (``allmax_lookup``); ``tabled``: its comparisons are table lookups (``lookup_comparison``).
    Returns the one-hot (integer shares).
    """
    noisy = scores + engine.mul(coin[..., None], uniforms - scores)
    return _argmax(engine, noisy, gamma, lookup=lookup, tabled=tabled)


def dealt_choice(
    engine: Engine,
    scores: ArithmeticShares,
    gamma: ArithmeticShares,
    explored: ArithmeticShares,
    exploiting: Kept,
    *,
    lookup: bool = True,
    tabled: bool = False,
) -> ArithmeticShares:
    """:func:`private_choice` with the exploration dealt (``dealt_exploration``): the argmax of the scores
    (packed with γ while they fit), multiplied by the dealer's 1 − y_t in its last lookup, plus the dealer's
    y_t·e_a of the arm exploration picks. The same one-hot, without the product y(v − s)."""
    return _argmax(engine, scores, gamma, lookup=lookup, tabled=tabled, kept=exploiting) + explored


def _argmax(engine: Engine, values: ArithmeticShares, gamma: ArithmeticShares, **options) -> ArithmeticShares:
    """Alg. 2 on ``values`` with the dealer's γ, packed into one AllMax of (value, γ) keys while they fit
    (:data:`PACKED_KEY_BITS`); ``options`` as :func:`~privbandits.mpc.comparison.argmax`'s."""
    packed = values.scale + packed_bits(values.shape[-1]) <= PACKED_KEY_BITS
    return engine.argmax(values, gamma, packed=packed, **options)


def plaintext_choice(
    scores: np.ndarray, coin: np.typing.ArrayLike, uniforms: np.ndarray, gamma: np.ndarray
) -> np.ndarray:
    """:func:`private_choice` in float64, as arm indices: the maximum of s̃ with the largest γ."""
    noisy = np.where(np.asarray(coin, dtype=bool)[..., None], uniforms, scores)
    return np.argmax(np.where(noisy == noisy.max(axis=-1, keepdims=True), gamma, 0), axis=-1)
