"""Public division by 2^k: the truncation after every fixed-point product (spec §3.6, App. C).

Modes (``Engine(truncation=...)``):

``"local"``
    Each of 2 parties divides its signed share locally (SecureML / CrypTen 2PC, which
    floor both). Wrong by ±2^(64-k) with probability about |x|/2^64.
``"wraps"``
    Algorithm 3 with the paper's shortcut η_xr = 0, any number of parties, signed
    shares: wrong by ±2^(64-k) with probability about |x|/2^64 (the cause of the
    collapse above L = 22, Fig. 8).
``"exact"``
    Algorithm 3 with η_xr computed by a secure comparison z < [r] (spec A16) on
    unsigned shares offset by 2^62; correct whenever |x| < 2^62.

Every mode divides each party's share locally and rounds it so that the sum has no
bias (:func:`share_quotients`): with 2 parties party 0 floors and party 1 ceils, so the
result is the exact quotient rounded down or up with the probabilities that make its
mean exact, and a secret 0 stays exactly 0; with more, parties alternate floor and
ceil and an odd one out rounds half to even. Each mode is off by less than one unit
in the last place per party. Both parties flooring (CrypTen's, and this engine's
before issue 29) is −1 ulp on average, a bias that thousands of Sherman–Morrison
updates of one W⁻¹ add up.
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
TRUNCATION_ROUNDINGS = ("unbiased",)
"""How a party rounds its quotient (:func:`share_quotients`): a protocol's results-store keys name it."""
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
        return share_quotients(ctx, shares, bits, signed=True)
    return _divide_with_wraps(ctx, shares, bits, exact=ctx.truncation == "exact")


def _divide_with_wraps(ctx: Engine, shares: np.ndarray, bits: int, *, exact: bool) -> np.ndarray:
    """Algorithm 3: x/2^k = Σ_p [x]_p / 2^k (each rounded, :func:`share_quotients`) − [θ_x]·2^(64−k),
    θ_x = θ_z + [β_xr] − [θ_r] − [η_xr]."""
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
        assert pair.binary is not None, "dealt with binary=exact"
        eta = bit_to_arithmetic(ctx, less_than_public(ctx, reconstruct(gathered), pair.binary))
        theta -= eta.shares
    quotient = share_quotients(ctx, shares, bits, signed=signed)
    if exact and ctx.leads:
        quotient[0] -= WORD(1 << (_OFFSET_BITS - bits))
    return quotient - theta * WORD(1 << (64 - bits))


def share_quotients(ctx: Engine, shares: np.ndarray, bits: int, *, signed: bool) -> np.ndarray:
    """Each held share divided by 2^bits (read as a signed or unsigned word), rounded by its party's rule:
    even parties floor, odd parties ceil, and with an odd number of parties the last rounds half to even.

    Each share is uniform, so a floor is ``(2^bits − 1)/2^(bits+1)`` ulp low on average and a ceil as much
    high: with 2 parties the sum is ``⌊x/2^bits⌋ + 1`` with probability ``(x mod 2^bits)/2^bits``, exactly
    unbiased, and ``x = 0`` gives exactly 0 on every sharing; rounding half to even (the next bit uniform)
    is unbiased too. The wrap count of Algorithm 3 corrects the sum of any such quotients.
    """
    words = shares.view(np.int64) if signed else shares
    quotient = words >> (bits if signed else WORD(bits))
    mask, half = WORD((1 << bits) - 1), WORD(1 << (bits - 1))
    for held, row in enumerate(ctx.rows):
        if row % 2 == 1:  # ceil
            quotient[held] += (shares[held] & mask).astype(bool)
        elif row == ctx.n_parties - 1 and row > 0:  # the odd one out: half to even
            low, odd = shares[held] & mask, (quotient[held] & 1).astype(bool)
            quotient[held] += (low > half) | ((low == half) & odd)
    return quotient.view(WORD)
