"""Exponential and Newton–Raphson reciprocal on fixed-point shares (spec §3.10, A9).

The reciprocal is only needed for the Sherman–Morrison denominator d ∈ [1, c] with
c < 10 (in this application d ∈ [1, 2]); no sign pre-pass is done.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from privbandits.mpc.arithmetic import mul_public
from privbandits.mpc.overlap import Mul, Square, Steps, run_steps
from privbandits.mpc.sharing import ArithmeticShares
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


def _reciprocal(ctx: Engine, d: ArithmeticShares, iterations: int, start: str) -> Steps:
    if start == "exp":
        y = (yield from exp_steps(ctx, 0.5 - d)) * 3 + 0.003
    else:
        y = mul_public(ctx, d, -8 / 17) + 24 / 17
    for _ in range(iterations):
        dy = yield Mul(d, y)
        y = yield Mul(y, 2.0 - dy)
    return y
