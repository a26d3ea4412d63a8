"""Comparison, sign, AllMax and argmax with random tie-breaking (spec §3.8–3.9, Alg. 2).

Results are integer shares (scale 0) of bits, so multiplying them into fixed-point
values needs no truncation.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from privbandits.mpc import lookup as tables
from privbandits.mpc.arithmetic import mul
from privbandits.mpc.binary import a2b, bit_to_arithmetic
from privbandits.mpc.ring import WORD
from privbandits.mpc.sharing import ArithmeticShares, concatenate

if TYPE_CHECKING:
    from privbandits.mpc.engine import Engine


class Kept(NamedTuple):
    """A secret integer factor of the dealer's (e.g. 1 − y_t) that the last masked lookup of an AllMax multiplies
    into its result at no cost: the dealer deals its one-hot times the factor. ``factor`` is its value where the
    dealer runs in this process (a placeholder elsewhere), ``kind`` its name in the dealer's replayed schedule."""

    factor: np.typing.ArrayLike
    kind: str


def ltz(ctx: Engine, x: ArithmeticShares) -> ArithmeticShares:
    """``[x < 0]``: the most significant bit of ⟨x⟩ converted back (A2B + one daBit); 8 rounds for 2 parties."""
    return bit_to_arithmetic(ctx, a2b(ctx, x) >> 63)


def ge(ctx: Engine, x: ArithmeticShares, y: ArithmeticShares) -> ArithmeticShares:
    """``[x ≥ y]`` = 1 − [x − y < 0]; exact while x − y does not overflow (|x|, |y| < 2^62 as words)."""
    return 1 - ltz(ctx, x - y)


def lt(ctx: Engine, x: ArithmeticShares, y: ArithmeticShares) -> ArithmeticShares:
    """``[x < y]`` = [x − y < 0]."""
    return ltz(ctx, x - y)


def sign(ctx: Engine, x: ArithmeticShares) -> ArithmeticShares:
    """``[sign(x)]`` in {−1, +1} (scale 0), with sign(0) = +1 (the paper's x ≥ 0 test)."""
    return 1 - 2 * ltz(ctx, x)


def allmax(
    ctx: Engine,
    x: ArithmeticShares,
    *,
    lookup: bool = False,
    tabled: bool = False,
    distinct: bool = False,
    kept: Kept | None = None,
) -> ArithmeticShares:
    """Alg. 2, AllMax over the last axis: bit i is 1 iff x_i is a maximum.

    All |A|(|A|−1) comparisons x_i ≥ x_j (j ≠ i, as cyclic rolls) run in one batch, then a
    product tree over j takes ⌈log2(|A|−1)⌉ rounds; with ``lookup``, one round instead where that
    is fewer (|A| > 3): x_i is a maximum iff its count Σ_j [x_i ≥ x_j] is |A|−1, read from a masked
    lookup (:func:`count_is`). ``tabled`` (with ``lookup``, 2 parties): the comparisons are
    :func:`~privbandits.mpc.lookup.ltz`'s 3 rounds of table lookups instead of 8, and the count follows in
    one more (:func:`_tabled_allmax`); ``distinct``: the values are known to differ, so half of them do.
    ``kept`` (with ``lookup``, which then ends in a lookup whatever |A|): the bits come out multiplied by the
    dealer's factor (:class:`Kept`).
    """
    if x.shape == () or x.shape[-1] == 0:
        raise ValueError(f"allmax needs a non-empty last axis, got shape {x.shape}")
    size = x.shape[-1]
    if kept is not None and (not lookup or size == 1):
        raise ValueError(
            f"kept needs the lookup AllMax (lookup=True) of 2 values or more, got {size} (lookup={lookup})"
        )
    if size == 1:
        ones = np.zeros_like(x.shares)
        if ctx.leads:
            ones[0] = 1
        return ArithmeticShares(ones, 0, ctx.leads)
    if tabled and lookup:
        return _tabled_allmax(ctx, x, distinct, kept)
    others = (np.arange(size)[:, None] + np.arange(1, size)[None, :]) % size
    bits = ge(ctx, x[..., None], x[..., others])
    if lookup and (size > 3 or kept is not None):
        return count_is(ctx, bits.sum(axis=-1), size - 1, kept)
    while bits.shape[-1] > 1:
        half = bits.shape[-1] // 2
        product = mul(ctx, bits[..., :half], bits[..., half : 2 * half])
        bits = concatenate([product, bits[..., 2 * half :]]) if bits.shape[-1] % 2 else product
    return bits[..., 0]


def _tabled_allmax(ctx: Engine, x: ArithmeticShares, distinct: bool, kept: Kept | None) -> ArithmeticShares:
    """AllMax (|A| ≥ 2) by lookup comparisons, counted modulo 16 (or 256 above 16 values); 4 rounds.

    With ``distinct`` values only the pairs i < j are compared: [x_j ≥ x_i] = 1 − [x_i ≥ x_j] = [x_i < x_j].
    """
    size = x.shape[-1]
    if size > 256:
        raise ValueError(f"the lookup AllMax counts up to 255 wins, so it takes at most 256 values, got {size}")
    width = 4 if size <= 16 else 8
    if distinct:
        first, second = np.triu_indices(size, 1)
    else:
        first, second = np.nonzero(~np.eye(size, dtype=bool))
    less = tables.ltz(ctx, (x[..., first] - x[..., second]).shares, width).astype(WORD)  # [x_i < x_j] per pair
    wins = np.zeros((*less.shape[:-1], size), dtype=WORD)  # shares of Σ_j [x_i ≥ x_j], up to the constant below
    # ignored below: numpy's stub types ufunc.at's indices without tuples (Ellipsis), which numpy accepts
    np.subtract.at(wins, (..., first), less)  # type: ignore[arg-type]
    if distinct:
        np.add.at(wins, (..., second), less)  # type: ignore[arg-type]  # as above
    beaten = np.bincount(first, minlength=size).astype(WORD)  # comparisons made with i first
    if ctx.leads:
        wins[0] += beaten
    return count_is(ctx, ArithmeticShares(wins, 0, ctx.leads), size - 1, kept)


def count_is(ctx: Engine, count: ArithmeticShares, value: int, kept: Kept | None = None) -> ArithmeticShares:
    """``[count = value]`` (integers) for integer counts in 0..value; 1 round.

    With m the power of two above ``value`` and the dealer's ``[r]``, r uniform in Z_m, and its one-hot
    ``[e_r]``, the parties open c = count + r mod m (each sends its share mod m: uniform, so c says
    nothing of the count); then count = value iff r = c − value mod m, whose indicator is the entry
    c − value of ``[e_r]``, a local selection. ``kept``: ``[factor·(count = value)]`` in the same round, from the
    dealer's ``[factor·e_r]`` (:class:`Kept`).
    """
    size = 1 << value.bit_length()
    if kept is None:
        mask = ctx.dealer.rotated_onehot(count.shape, size)
    else:  # the dealer's one-hot times its secret factor: so is the result
        mask = ctx.dealer.rotated_onehot(count.shape, size, factor=kept.factor, factor_kind=kept.kind)
    low = WORD(size - 1)
    opened = ctx.channel.open((count.shares + mask.r.shares) & low) & low
    index = ((opened - WORD(value)) & low).astype(np.intp)
    selected = np.take_along_axis(
        mask.onehot.shares, np.broadcast_to(index[..., None], (len(count.shares), *index.shape, 1)), axis=-1
    )
    return ArithmeticShares(selected[..., 0], 0, ctx.leads)


def argmax(
    ctx: Engine,
    x: ArithmeticShares,
    gamma: ArithmeticShares | None = None,
    *,
    packed: bool = False,
    lookup: bool = False,
    tabled: bool = False,
    kept: Kept | None = None,
) -> ArithmeticShares:
    """One-hot ``[z]`` of a maximum of the last axis, ties broken uniformly at random (§3.9).

    Alg. 2: AllMax, times a secret permutation γ of 1..|A| (fresh from the dealer unless
    given, integer shares), then AllMax again: the γ values are distinct, so exactly one
    maximum survives. ``packed``: one AllMax of the distinct keys x·2^k + γ (k bits hold γ),
    which picks the same element (the maximum with the largest γ) in half the rounds; the
    keys must stay below 2^62 as words, which is the caller's to ensure (:func:`packed_bits`).
    ``lookup``: each AllMax ends in one masked lookup instead of a product tree (:func:`allmax`);
    ``tabled``: its comparisons are table lookups too (2 parties), only half of them on the distinct packed keys;
    ``kept``: the one-hot comes out multiplied by the dealer's factor (:class:`Kept`; with ``lookup``).
    """
    if gamma is None:
        gamma = ctx.dealer.permutation(x.shape[-1], x.shape[:-1])
    if packed:
        keys = x.shares * np.uint64(1 << packed_bits(x.shape[-1])) + gamma.shares
        keys = ArithmeticShares(keys, 0, ctx.leads)
        return allmax(ctx, keys, lookup=lookup, tabled=tabled, distinct=True, kept=kept)
    maxima = allmax(ctx, x, lookup=lookup, tabled=tabled)
    return allmax(ctx, mul(ctx, maxima, gamma), lookup=lookup, tabled=tabled, kept=kept)


def packed_bits(size: int) -> int:
    """Bits that hold γ ∈ 1..size below the scores in :func:`argmax`'s packed keys."""
    return size.bit_length()
