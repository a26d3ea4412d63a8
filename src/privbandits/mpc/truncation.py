"""Public division by 2^k: the truncation after every fixed-point product (spec §3.6, App. C).

Modes (``Engine(truncation=...)``):

``"local"``
    Each of 2 parties shifts its signed share (SecureML / CrypTen 2PC). Wrong by
    ±2^(64-k) with probability about |x|/2^64.
``"wraps"``
    Algorithm 3 with the paper's shortcut η_xr = 0, any number of parties, signed
    shares: wrong by ±2^(64-k) with probability about |x|/2^64 (the cause of the
    collapse above L = 22, Fig. 8).
``"exact"``
    Algorithm 3 with η_xr computed by a secure comparison z < [r] (spec A16) on
    unsigned shares offset by 2^62; correct whenever |x| < 2^62.

Every mode may also be off by up to n_parties units in the last place (each party
floors its own share).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from privbandits.mpc.binary import bit_to_arithmetic, less_than_public
from privbandits.mpc.ring import WORD, add_with_wraps, count_wraps
from privbandits.mpc.sharing import ArithmeticShares, reconstruct

if TYPE_CHECKING:
    from privbandits.mpc.engine import Engine

TRUNCATION_MODES = ("local", "wraps", "exact")
_OFFSET_BITS = 62


def truncate(ctx: Engine, x: ArithmeticShares, bits: int) -> ArithmeticShares:
    """``[x / 2^bits]`` at the same scale (public division, App. C); 0 rounds for 2 parties."""
    if not 0 <= bits < _OFFSET_BITS:
        raise ValueError(f"truncation bits must be in [0, {_OFFSET_BITS}), got {bits}")
    return ArithmeticShares(divide_shares(ctx, x.shares, bits), x.scale, x.lead)


def divide_shares(ctx: Engine, shares: np.ndarray, bits: int) -> np.ndarray:
    """Shares of ``x / 2^bits`` from shares of ``x`` by the engine's truncation mode."""
    if bits == 0:
        return shares
    if ctx.truncation == "local":
        return (shares.view(np.int64) >> bits).view(WORD)
    return _divide_with_wraps(ctx, shares, bits, exact=ctx.truncation == "exact")


def _divide_with_wraps(ctx: Engine, shares: np.ndarray, bits: int, *, exact: bool) -> np.ndarray:
    """Algorithm 3: x/2^k = Σ_p ⌊[x]_p / 2^k⌋ − [θ_x]·2^(64−k), θ_x = θ_z + [β_xr] − [θ_r] − [η_xr]."""
    signed = not exact
    if exact:
        shares = shares.copy()
        if ctx.leads:
            shares[0] += WORD(1 << _OFFSET_BITS)
    pair = ctx.dealer.wrap_pair(shares.shape[1:], signed=signed, binary=exact)
    z_shares, beta = add_with_wraps(shares, pair.r.shares, signed=signed)
    gathered = ctx.channel.gather(z_shares)
    theta = beta.view(WORD) - pair.theta.shares
    if ctx.leads:
        theta[0] += count_wraps(gathered, signed=signed).view(WORD)
    if exact:
        eta = bit_to_arithmetic(ctx, less_than_public(ctx, reconstruct(gathered), pair.binary))
        theta -= eta.shares
        quotient = shares >> WORD(bits)
        if ctx.leads:
            quotient[0] -= WORD(1 << (_OFFSET_BITS - bits))
    else:
        quotient = (shares.view(np.int64) >> bits).view(WORD)
    return quotient - theta * WORD(1 << (64 - bits))


def truncate_zero_exact(ctx: Engine, x: ArithmeticShares, bits: int) -> ArithmeticShares:
    """``[x / 2^bits]`` by local truncation (2 parties, 0 rounds) in which party 0 floors its share and
    party 1 ceils its own: off by less than one unit in the last place, and a secret 0 stays exactly 0
    (both parties flooring, as :func:`truncate`, make 0 into −1 almost always)."""
    if ctx.truncation != "local":
        raise ValueError(f"zero-exact truncation is local truncation (2 parties), not {ctx.truncation!r}")
    if not 0 <= bits < _OFFSET_BITS:
        raise ValueError(f"truncation bits must be in [0, {_OFFSET_BITS}), got {bits}")
    signed = x.shares.view(np.int64)
    quotient = signed >> bits
    for held, row in enumerate(ctx.rows):
        if row == 1:
            quotient[held] = -(-signed[held] >> bits)
    return ArithmeticShares(quotient.view(WORD), x.scale, x.lead)
