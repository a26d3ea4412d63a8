"""Masked table lookups (one-time truth tables) and the 3-round comparison built on them (2 parties).

A *lookup* evaluates a public function f of an 8-bit value I that the parties hold in XOR shares:
the dealer draws a uniform mask R and shares the rotated table T_R[i] = f(i ⊕ R); the parties open
c = I ⊕ R (uniform: it says nothing of I) and each reads entry c of its share of T_R, a share of
f(I). One round, whatever f is (Ishai, Kushilevitz, Meldgaard, Orlandi and Paskin-Cherniavsky,
"On the power of correlated randomness in secure computation", TCC 2013). Outputs are XOR shares of
``width``-bit values, or shares adding up modulo 2^width (:class:`Table`).

:func:`ltz` gives ``[x < 0]`` for additive shares x = x0 + x1 (mod 2^64) of 2 parties in 3 such
rounds instead of the 8 of A2B and a daBit (:func:`~privbandits.mpc.comparison.ltz`). The sign bit of
x is m0 ⊕ m1 ⊕ [A > B], with m_p the top bit of x_p, A the low 63 bits of x0 and B = 2^63 − 1 − (the
low 63 bits of x1): the carry into bit 63 of x0 + x1. Party 0 knows A and m0, party 1 knows B and m1, so
the 16 digit pairs (a_j, b_j) of 4 bits each are XOR shares of the 8-bit I_j = a_j·16 + b_j without
any round. Round 1 looks up (gt_j, eq_j) = ([a_j > b_j], [a_j = b_j]) of every digit (the top one with
m0 ⊕ m1 XORed into gt); round 2 combines each group of 4 digits into its (gt, eq) with
gt = gt_3 ⊕ eq_3·(gt_2 ⊕ eq_2·(gt_1 ⊕ eq_1·gt_0)); round 3 combines the 4 groups the same way and
returns the bit as shares modulo 16 or 256, ready to be summed into a count. Exact: no statistical
error, no assumption on the size of x.
"""

from __future__ import annotations

import math
from functools import cache
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from privbandits.mpc.ring import WORD

if TYPE_CHECKING:
    from privbandits.mpc.engine import Engine

ENTRIES = 256
"""Entries of every table: indices are 8-bit values."""

DIGITS = 16
"""4-bit digits of a 64-bit share."""

_LOW63 = WORD((1 << 63) - 1)
_DIGIT_SHIFTS = (4 * np.arange(DIGITS)).astype(WORD)
_PAIR_SHIFTS = np.array([0, 2, 4, 6], dtype=np.uint8)


class Table(NamedTuple):
    """A public function of an 8-bit index: ``values[..., i]`` (uint8, leading axes match the last axes of
    the indices looked up), ``width`` output bits (1, 2, 4 or 8), and how the outputs are shared."""

    values: np.ndarray
    width: int
    additive: bool
    """Shares add up modulo 2^width (else they XOR)."""


def _combine(index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(gt, eq) of 4 (gt_i, eq_i) pairs packed 2 bits each in ``index``, pair 3 the most significant."""
    gt = index & 1
    eq = (index >> 1) & 1
    for pair in range(1, 4):
        gt_i, eq_i = (index >> (2 * pair)) & 1, (index >> (2 * pair + 1)) & 1
        gt = gt_i ^ (eq_i & gt)
        eq = eq & eq_i
    return gt, eq


def _tables() -> dict[str, Table]:
    i = np.arange(ENTRIES, dtype=np.uint8)
    a, b = i >> 4, i & 15
    digits = np.tile((a > b) | (a == b) << 1, (DIGITS, 1)).astype(np.uint8)
    low_a, low_b = a & 7, b & 7
    digits[-1] = ((low_a > low_b) ^ (a >> 3) ^ (b >> 3)) | (low_a == low_b) << 1  # the sign bits join gt
    gt, eq = _combine(i)
    return {
        "digits": Table(digits, 2, False),
        "combine": Table((gt | eq << 1).astype(np.uint8), 2, False),
        "ltz4": Table(gt.astype(np.uint8), 4, True),
        "ltz8": Table(gt.astype(np.uint8), 8, True),
    }


TABLES = _tables()
"""The tables the dealer may be asked for (:meth:`~privbandits.mpc.dealer.Dealer.lookup_table`), by name."""


def table_words(name: str) -> int:
    """Words of one party's share of one table ``name``."""
    return ENTRIES * TABLES[name].width // 64


def mask_words(count: int) -> int:
    """Words that hold ``count`` 8-bit masks (or opened indices)."""
    return -(-count // 8)


def pack(values: np.ndarray, width: int) -> np.ndarray:
    """Tables ``values`` (..., 256) of ``width``-bit entries as words (..., 256·width/64), entry i at bit i·width."""
    per_byte = 8 // width
    grouped = values.astype(np.uint8, copy=False).reshape(*values.shape[:-1], ENTRIES // per_byte, per_byte)
    packed = grouped[..., 0].copy()
    for k in range(1, per_byte):
        packed |= grouped[..., k] << np.uint8(k * width)
    return packed.view(WORD)


def unpack(words: np.ndarray, width: int) -> np.ndarray:
    """:func:`pack` undone: (..., 256) uint8."""
    per_byte = 8 // width
    octets = np.ascontiguousarray(words).view(np.uint8)
    entries = np.empty((*octets.shape, per_byte), dtype=np.uint8)
    low = np.uint8((1 << width) - 1)
    for k in range(per_byte):
        np.bitwise_and(octets >> np.uint8(k * width), low, out=entries[..., k])
    return entries.reshape(*words.shape[:-1], ENTRIES)


def entry(words: np.ndarray, index: np.ndarray, width: int) -> np.ndarray:
    """Entry ``index`` (uint8, broadcast to the tables' leading axes) of each packed table ``words``."""
    octets = np.ascontiguousarray(words).view(np.uint8)
    shape = octets.shape[:-1]
    bit = np.broadcast_to(index, shape).astype(np.intp).ravel() * width
    flat = octets.reshape(-1, octets.shape[-1])
    chosen = flat[np.arange(len(flat)), bit >> 3]
    return ((chosen >> (bit & 7).astype(np.uint8)) & np.uint8((1 << width) - 1)).reshape(shape)


def bytes_to_words(octets: np.ndarray) -> np.ndarray:
    """Rows of 8-bit values (rows, ...) packed into words (rows, ⌈n/8⌉), zero-padded."""
    rows = len(octets)
    flat = octets.reshape(rows, -1)
    padded = np.zeros((rows, 8 * mask_words(flat.shape[1])), dtype=np.uint8)
    padded[:, : flat.shape[1]] = flat
    return padded.view(WORD)


def words_to_bytes(words: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """:func:`bytes_to_words` undone for the values of ``shape`` (leading axes of ``words`` kept)."""
    octets = np.ascontiguousarray(words).view(np.uint8)
    return octets[..., : math.prod(shape)].reshape(*words.shape[:-1], *shape)


@cache
def rotations(name: str, packed: bool = True) -> np.ndarray:
    """Every rotation of table ``name``: ``[..., r, :]`` holds i ↦ f(i ⊕ r) (the dealer's lookup), packed
    (:func:`pack`) or one entry a byte."""
    table = TABLES[name]
    index = np.arange(ENTRIES)[:, None] ^ np.arange(ENTRIES)[None, :]  # [r, i] = i ⊕ r
    values = np.ascontiguousarray(table.values[..., index])
    return pack(values, table.width) if packed else values


def lookup(ctx: Engine, index: np.ndarray, name: str) -> np.ndarray:
    """Shares of f(I) for table ``name`` (:data:`TABLES`) from XOR shares ``index`` (rows held, then the
    values' shape; uint8) of 8-bit I; 1 round. Returns uint8 shares of the same shape (XOR, or adding up
    modulo 2^width)."""
    shape = index.shape[1:]
    material = ctx.dealer.lookup_table(name, shape)
    masked = index ^ words_to_bytes(material.mask.shares, shape)
    opened = words_to_bytes(ctx.channel.open(bytes_to_words(masked), xor=True), shape)
    return entry(material.table.shares, opened, TABLES[name].width)


def ltz(ctx: Engine, x: np.ndarray, width: int = 4) -> np.ndarray:
    """Shares adding up modulo 2^``width`` (4 or 8) to the sign bit of x (``[x < 0]`` for signed words), from
    2 parties' additive shares ``x`` (rows held, ...; uint64); 3 rounds (the module's docstring)."""
    if ctx.n_parties != 2:
        raise ValueError(f"the lookup comparison is for 2 computing parties, got {ctx.n_parties}")
    rows = np.asarray(ctx.rows).reshape(-1, *(1,) * (x.ndim - 1))
    words = x ^ np.where(rows == 1, _LOW63, WORD(0))  # party 1 holds B = 2^63 − 1 − its low 63 bits
    digits = ((words[..., None] >> _DIGIT_SHIFTS) & WORD(15)).astype(np.uint8)
    digits <<= np.where(rows == 0, 4, 0).astype(np.uint8)[..., None]  # index a·16 + b: party 0 holds a·16
    pairs = lookup(ctx, digits, "digits")
    groups = lookup(ctx, _packed_pairs(pairs), "combine")
    return lookup(ctx, _packed_pairs(groups)[..., 0], f"ltz{width}")


def _packed_pairs(pairs: np.ndarray) -> np.ndarray:
    """XOR shares of (gt, eq) pairs (..., 4k) as the 8-bit indices (..., k) of groups of 4, least significant first."""
    grouped = pairs.reshape(*pairs.shape[:-1], -1, 4) << _PAIR_SHIFTS
    return np.bitwise_or.reduce(grouped, axis=-1).astype(np.uint8)
