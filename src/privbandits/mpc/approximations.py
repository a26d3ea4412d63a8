"""Exponential and Newton–Raphson reciprocal on fixed-point shares (spec §3.10, A9).

The reciprocal is only needed for the Sherman–Morrison denominator d ∈ [1, c] with
c < 10 (in this application d ∈ [1, 2]); no sign pre-pass is done.
"""

from __future__ import annotations

import math
from collections.abc import Generator
from typing import TYPE_CHECKING

from privbandits.mpc.arithmetic import mul_public
from privbandits.mpc.overlap import Mul, Request, Square, Steps, run_steps
from privbandits.mpc.sharing import ArithmeticShares, concatenate, expand
from privbandits.mpc.truncation import truncate

if TYPE_CHECKING:
    from privbandits.mpc.engine import Engine

EXP_ITERATIONS = 8
"""Squarings of the limit approximation e^u ≈ (1 + u/2^8)^(2^8) (CrypTen's default)."""

NR_ITERATIONS = 7
"""Newton–Raphson iterations of the paper's experiments (spec §6.3)."""


def _check_fixed_point(ctx: Engine, x: ArithmeticShares, name: str) -> None:
    if x.scale != ctx.precision:
        raise ValueError(f"{name} needs fixed-point shares of scale {ctx.precision}, got scale {x.scale}")


def exp(ctx: Engine, x: ArithmeticShares, iterations: int = EXP_ITERATIONS) -> ArithmeticShares:
    """``[e^x]`` ≈ (1 + x/2^k)^(2^k): one public division, then k squarings (k rounds for 2 parties)."""
    return run_steps(ctx, exp_steps(ctx, x, iterations))


def exp_steps(ctx: Engine, x: ArithmeticShares, iterations: int = EXP_ITERATIONS) -> Steps:
    """:func:`exp` as steps (:mod:`~privbandits.mpc.overlap`); the arguments are checked now."""
    _check_fixed_point(ctx, x, "exp")
    if iterations < 0:
        raise ValueError(f"exp iterations must be >= 0, got {iterations}")
    return _exp(ctx, x, iterations)


def _exp(ctx: Engine, x: ArithmeticShares, iterations: int) -> Steps:
    y = 1.0 + truncate(ctx, x, iterations)
    for _ in range(iterations):
        y = yield Square(y)
    return y


RECIPROCAL_STARTS = ("exp", "linear")
"""Initial values of the Newton–Raphson reciprocal: the paper's ``3·e^(0.5−d) + 0.003`` (valid for
d in [1, 10], 8 rounds of squarings for 2 parties), or ``linear``: 24/17 − 8/17·d, the minimax line
for 1/d on [1, 2] (relative error at most 1/17; local, no round), where this application's
Sherman–Morrison denominator lies; Newton–Raphson converges from it for d in (0, 3)."""


def reciprocal(
    ctx: Engine, d: ArithmeticShares, iterations: int = NR_ITERATIONS, start: str = "exp"
) -> ArithmeticShares:
    """``[1/d]``: y_0 from ``start`` (:data:`RECIPROCAL_STARTS`), then y_{k+1} = y_k(2 − d·y_k).

    ``exp`` is the paper's initial value (not modern CrypTen's), for d in [1, 10]; relative
    error |1 − d·y_k| follows the table of spec §3.10. ``linear`` needs d in [1, 2] (converges
    for d in (0, 3)): its error 1/17 squares each iteration (1/289, 1.2e-5, 1.4e-10), so 3
    iterations reach L = 20 bits with no round for the start. 2 rounds per iteration for 2 parties.
    """
    return run_steps(ctx, reciprocal_steps(ctx, d, iterations, start))


def reciprocal_steps(ctx: Engine, d: ArithmeticShares, iterations: int = NR_ITERATIONS, start: str = "exp") -> Steps:
    """:func:`reciprocal` as steps (:mod:`~privbandits.mpc.overlap`); the arguments are checked now."""
    _check_fixed_point(ctx, d, "reciprocal")
    if iterations < 0:
        raise ValueError(f"Newton-Raphson iterations must be >= 0, got {iterations}")
    if start not in RECIPROCAL_STARTS:
        raise ValueError(f"reciprocal start must be one of {RECIPROCAL_STARTS}, got {start!r}")
    return _reciprocal(ctx, d, iterations, start)


def _start(ctx: Engine, d: ArithmeticShares, start: str) -> Steps:
    if start == "exp":
        return (yield from exp_steps(ctx, 0.5 - d)) * 3 + 0.003
    return mul_public(ctx, d, -8 / 17) + 24 / 17


def _reciprocal(ctx: Engine, d: ArithmeticShares, iterations: int, start: str) -> Steps:
    y = yield from _start(ctx, d, start)
    for _ in range(iterations):
        dy = yield Mul(d, y)
        y = yield Mul(y, 2.0 - dy)
    return y


def goldschmidt_steps(
    ctx: Engine,
    d: ArithmeticShares,
    iterations: int = NR_ITERATIONS,
    start: str = "exp",
    numerator: ArithmeticShares | None = None,
) -> Steps:
    """``[n/d]`` (``[1/d]`` without ``numerator``) by Goldschmidt's iteration, as steps (:mod:`.overlap`).

    From y_0 (``start``, as :func:`reciprocal`): e_0 = 1 − d·y_0 and z_0 = n·y_0 in one round, then
    z_{k+1} = z_k(1 + e_k) and e_{k+1} = e_k², independent products, one round per iteration. z_k =
    (n/d)(1 − e_0^(2^k)): the error of Newton–Raphson after k iterations, in 1 + k rounds instead of 2k (and
    n/d needs no further product). Not self-correcting: each round's truncation (2^-L) stays in z, so for
    |n| <= 1 z is within about (k + 1)·2^-L of n/d (measured: 3.1·2^-20 after 3 iterations from the linear
    start, 6.8 after 7 from the exp start), where Newton–Raphson's 1/d is within 2·2^-L. ``numerator``'s
    shape extends ``d``'s.
    """
    _check_fixed_point(ctx, d, "reciprocal")
    if iterations < 0:
        raise ValueError(f"Goldschmidt iterations must be >= 0, got {iterations}")
    if start not in RECIPROCAL_STARTS:
        raise ValueError(f"reciprocal start must be one of {RECIPROCAL_STARTS}, got {start!r}")
    if numerator is not None and numerator.shape[: len(d.shape)] != d.shape:
        raise ValueError(f"the numerator's shape must extend the denominator's {d.shape}, got {numerator.shape}")
    return _goldschmidt(ctx, d, iterations, start, numerator)


def _goldschmidt(
    ctx: Engine, d: ArithmeticShares, iterations: int, start: str, numerator: ArithmeticShares | None
) -> Steps:
    y = yield from _start(ctx, d, start)
    if numerator is None:
        z, dy = y, (yield Mul(d, y))
    else:
        dy, z = yield from _products([(d, y), (numerator, y)])
    error = 1.0 - dy
    for k in range(iterations):
        if k == iterations - 1:
            (z,) = yield from _products([(z, 1.0 + error)])
        else:
            z, error = yield from _products([(z, 1.0 + error), (error, error)])
    return z


def _products(
    pairs: list[tuple[ArithmeticShares, ArithmeticShares]],
) -> Generator[Request, ArithmeticShares, list[ArithmeticShares]]:
    """Elementwise products of fixed-point pairs, in one request: the right operand is broadcast over the
    trailing axes of the left's shape (y_k against n_k)."""
    lefts: list[ArithmeticShares] = []
    rights: list[ArithmeticShares] = []
    for x, y in pairs:
        y = y.reshape(*y.shape, *(1,) * (len(x.shape) - len(y.shape)))
        lefts.append(x.reshape(-1))
        rights.append(ArithmeticShares(expand(y.shares, x.shape), y.scale, y.lead).reshape(-1))
    product = yield Mul(concatenate(lefts), concatenate(rights))
    parts, at = [], 0
    for x, _ in pairs:
        size = math.prod(x.shape)
        parts.append(product[at : at + size].reshape(*x.shape))
        at += size
    return parts
