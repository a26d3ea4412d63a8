"""Secure multi-party computation over Z_2^64 for the private ε-greedy bandit (spec mpc-bandit §3).

fixed_point
    Fixed-point encoding with L fractional bits.
ring, sharing
    Ring helpers (wrap counts); arithmetic and XOR shares with local operations.
dealer
    The trusted dealer: Beaver triples (and input triples, whose mask each input's owner
    learns), square pairs, daBits, wrap pairs, private Bernoulli / uniform samples, random
    permutations, rotated one-hots and lookup tables.
channel
    Openings and inputs as messages on :mod:`privbandits.comm`, so rounds and bytes are measured.
arithmetic, truncation, rounding
    Beaver multiplication, square, matmul; division by 2^k (local, Alg. 3, exact), each rounding
    without bias; the measured rounding error of each mode.
binary, comparison
    AND, the log-depth adder, A2B / B2A; comparison, sign, AllMax, argmax (Alg. 2).
lookup
    Masked lookups of public tables (one-time truth tables) and the 3-round comparison on them.
approximations
    Exponential; the Newton–Raphson and Goldschmidt reciprocals.
overlap
    Multiplications that ride on another computation's openings (same values, fewer rounds).
engine
    :class:`Engine`, which gathers all of the above as methods.
"""

from privbandits.mpc.dealer import Dealer
from privbandits.mpc.engine import Engine
from privbandits.mpc.fixed_point import DEFAULT_PRECISION, decode, encode
from privbandits.mpc.sharing import (
    ArithmeticShares,
    BinaryShares,
    concatenate,
    reconstruct,
    reconstruct_xor,
    share,
    share_xor,
    stack,
)

__all__ = [
    "DEFAULT_PRECISION",
    "ArithmeticShares",
    "BinaryShares",
    "Dealer",
    "Engine",
    "concatenate",
    "decode",
    "encode",
    "reconstruct",
    "reconstruct_xor",
    "share",
    "share_xor",
    "stack",
]
