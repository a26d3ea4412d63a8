"""Beaver multiplication, square and matrix product on fixed-point shares (spec §3.4).

The product of scales s and t has scale s + t and is truncated by min(s, t) bits,
so two fixed-point operands (scale L) give scale L after one division by 2^L, and
an integer operand (scale 0, e.g. a bit or a one-hot) needs no truncation.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple, cast

import numpy as np

from privbandits.mpc.dealer import Triple
from privbandits.mpc.fixed_point import encode
from privbandits.mpc.ring import WORD
from privbandits.mpc.sharing import ArithmeticShares, common_shape, expand
from privbandits.mpc.truncation import divide_shares

if TYPE_CHECKING:
    from privbandits.mpc.dealer import SquarePair
    from privbandits.mpc.engine import Engine


def _rescale(ctx: Engine, shares: np.ndarray, scale_x: int, scale_y: int) -> ArithmeticShares:
    return ArithmeticShares(divide_shares(ctx, shares, min(scale_x, scale_y)), max(scale_x, scale_y), ctx.leads)


def mul(ctx: Engine, x: ArithmeticShares, y: ArithmeticShares) -> ArithmeticShares:
    """Elementwise ``[x·y]`` (numpy broadcasting): open α = x − a, β = y − b in 1 round,
    then [c] + α[b] + β[a] + αβ, then truncation."""
    return mul_many(ctx, [(x, y)])[0]


def mul_many(ctx: Engine, pairs: Sequence[tuple[ArithmeticShares, ArithmeticShares]]) -> list[ArithmeticShares]:
    """Independent elementwise products of any shapes with one opening (and one truncation
    per distinct scale pair) for all of them: the rounds of a single :func:`mul`."""
    if not pairs:
        raise ValueError("mul_many needs at least one pair of operands")
    if len(pairs) == 1:  # fast path: no packing
        x, y = pairs[0]
        triple, masked = beaver_masks(ctx, x, y)
        alpha, beta = ctx.channel.open_many(masked)
        return [beaver_product(ctx, triple, alpha, beta, x.scale, y.scale)]
    n = len(pairs[0][0].shares)  # rows held: every party's, or this party's own
    shapes, left, right, cuts = [], [], [], [0]
    for x, y in pairs:
        shape = common_shape(x.shape, y.shape)
        shapes.append(shape)
        left.append(expand(x.shares, shape).reshape(n, -1))
        right.append(expand(y.shares, shape).reshape(n, -1))
        cuts.append(cuts[-1] + math.prod(shape))
    xs, ys = (np.concatenate(side, axis=1) if len(pairs) > 1 else side[0] for side in (left, right))
    a, b, c = ctx.dealer.triple(xs.shape[1:])
    alpha, beta = ctx.channel.open_many([xs - a.shares, ys - b.shares])
    z = c.shares + alpha * b.shares + beta * a.shares
    if ctx.leads:
        z[0] += alpha * beta
    scales = [(x.scale, y.scale) for x, y in pairs]
    products: list[ArithmeticShares | None] = [None] * len(pairs)
    for scale_x, scale_y in dict.fromkeys(scales):  # one truncation per distinct pair of scales
        members = [index for index, scales_here in enumerate(scales) if scales_here == (scale_x, scale_y)]
        if len(members) < len(pairs):
            columns = np.concatenate([np.arange(cuts[index], cuts[index + 1]) for index in members])
            rescaled = _rescale(ctx, z[:, columns], scale_x, scale_y)
        else:
            rescaled = _rescale(ctx, z, scale_x, scale_y)
        offset = 0
        for index in members:
            size = cuts[index + 1] - cuts[index]
            products[index] = rescaled[offset : offset + size].reshape(*shapes[index])
            offset += size
    return cast("list[ArithmeticShares]", products)  # every pair's product is in place


def beaver_masks(ctx: Engine, x: ArithmeticShares, y: ArithmeticShares) -> tuple[Triple, tuple[np.ndarray, np.ndarray]]:
    """The triple of ``[x·y]`` (drawn now) and the shares of α = x − a, β = y − b to open."""
    shape = common_shape(x.shape, y.shape)
    triple = ctx.dealer.triple(shape)
    return triple, (expand(x.shares, shape) - triple.a.shares, expand(y.shares, shape) - triple.b.shares)


def beaver_product(
    ctx: Engine, triple: Triple, alpha: np.ndarray, beta: np.ndarray, scale_x: int, scale_y: int
) -> ArithmeticShares:
    """``[x·y]`` = [c] + α[b] + β[a] + αβ from the opened α, β, then truncation."""
    a, b, c = triple
    alpha, beta = alpha.reshape(c.shape), beta.reshape(c.shape)
    z = c.shares + alpha * b.shares + beta * a.shares
    if ctx.leads:
        z[0] += alpha * beta
    return _rescale(ctx, z, scale_x, scale_y)


def square(ctx: Engine, x: ArithmeticShares) -> ArithmeticShares:
    """``[x²]`` from a square pair: open α = x − a (1 round), [a²] + 2α[a] + α², truncation."""
    pair, (masked,) = square_masks(ctx, x)
    return square_product(ctx, pair, ctx.channel.open(masked), x.scale)


def square_masks(ctx: Engine, x: ArithmeticShares) -> tuple[SquarePair, tuple[np.ndarray]]:
    """The square pair of ``[x²]`` (drawn now) and the shares of α = x − a to open."""
    pair = ctx.dealer.square_pair(x.shape)
    return pair, (x.shares - pair.a.shares,)


def square_product(ctx: Engine, pair: SquarePair, alpha: np.ndarray, scale: int) -> ArithmeticShares:
    """``[x²]`` = [a²] + 2α[a] + α² from the opened α, then truncation."""
    a, b = pair
    alpha = alpha.reshape(a.shape)
    z = b.shares + WORD(2) * alpha * a.shares
    if ctx.leads:
        z[0] += alpha * alpha
    return _rescale(ctx, z, scale, scale)


def matmul(ctx: Engine, x: ArithmeticShares, y: ArithmeticShares) -> ArithmeticShares:
    """``[x @ y]`` (numpy matmul shapes) with one matrix triple: opens x − A and y − B
    together (1 round), one truncation per output element (spec §3.4, recommended [D])."""
    material, masked = matmul_masks(ctx, x, y)
    alpha, beta = ctx.channel.open_many(masked)
    return matmul_product(ctx, material, alpha, beta, x.scale, y.scale)


class MatmulMaterial(NamedTuple):
    """A matrix triple and whether each operand was a vector (its axis is dropped from the product)."""

    triple: Triple
    x_vector: bool
    y_vector: bool


def matmul_masks(
    ctx: Engine, x: ArithmeticShares, y: ArithmeticShares
) -> tuple[MatmulMaterial, tuple[np.ndarray, np.ndarray]]:
    """The matrix triple of ``[x @ y]`` (drawn now) and the shares of x − A, y − B to open."""
    if x.shape == () or y.shape == ():
        raise ValueError("matmul needs operands with at least one axis; use mul for scalars")
    x_vector, y_vector = len(x.shape) == 1, len(y.shape) == 1
    if x_vector:
        x = x[None, :]
    if y_vector:
        y = y[:, None]
    if x.shape[-1] != y.shape[-2]:
        raise ValueError(f"matmul shapes {x.shape} and {y.shape} do not match: {x.shape[-1]} != {y.shape[-2]}")
    np.broadcast_shapes(x.shape[:-2], y.shape[:-2])  # raises on incompatible batch axes
    ndim = max(len(x.shape), len(y.shape))  # equal ranks, so the party axes line up in broadcasting
    x, y = x.reshape(*(1,) * (ndim - len(x.shape)), *x.shape), y.reshape(*(1,) * (ndim - len(y.shape)), *y.shape)
    triple = ctx.dealer.matrix_triple(x.shape, y.shape)
    return MatmulMaterial(triple, x_vector, y_vector), (x.shares - triple.a.shares, y.shares - triple.b.shares)


def matmul_product(
    ctx: Engine, material: MatmulMaterial, alpha: np.ndarray, beta: np.ndarray, scale_x: int, scale_y: int
) -> ArithmeticShares:
    """``[x @ y]`` = [C] + α[B] + [A]β + αβ from the opened α, β, then truncation."""
    a, b, c = material.triple
    alpha, beta = alpha.reshape(a.shape), beta.reshape(b.shape)
    z = c.shares + np.matmul(alpha, b.shares) + np.matmul(a.shares, beta)
    if ctx.leads:
        z[0] += np.matmul(alpha, beta)
    if material.x_vector:
        z = z[..., 0, :]
    if material.y_vector:
        z = z[..., 0]
    return _rescale(ctx, z, scale_x, scale_y)


def matmul_inputs(
    ctx: Engine, x: ArithmeticShares, inputs: Sequence[tuple[np.typing.ArrayLike, str]], scale: int | None = None
) -> tuple[ArithmeticShares, ArithmeticShares]:
    """``([x @ y], [y])`` for the vector y that is the concatenation of the computing parties' plaintext blocks
    ``inputs`` (``(values, owner)`` in order; where this process does not hold an owner's row, its values are
    placeholders of the right size), at ``scale`` (default L); 1 round.

    The dealer tells each owner its block of the matrix triple's B (:meth:`~privbandits.mpc.dealer.Dealer.
    input_triple`), so the owner opens its block of y − B itself, in the product's round, instead of
    secret-sharing y in a round before it: y − B is uniform (B is), and [y] = (y − B) + [B]. A party learns
    only the mask of its own input.
    """
    scale = ctx.precision if scale is None else scale
    words = [encode(np.ravel(values), scale) for values, _ in inputs]
    owners = np.concatenate(
        [np.full(len(block), ctx.names.index(owner)) for block, (_, owner) in zip(words, inputs, strict=True)]
    )
    y_shape = (len(owners), 1)
    padded_x = x.reshape(*(1,) * max(0, 2 - len(x.shape)), *x.shape)
    padded_y = (*(1,) * (len(padded_x.shape) - 2), *y_shape)
    a, b, c, revealed = ctx.dealer.input_triple(padded_x.shape, padded_y, tuple(owners.tolist()))
    triple = MatmulMaterial(Triple(a, b, c), False, False)
    plain = np.concatenate(words).reshape(padded_y)
    own = owners.reshape(padded_y)[None] == np.asarray(ctx.rows).reshape(-1, *(1,) * len(padded_y))
    masked_y = np.where(own, plain[None] - revealed.shares, WORD(0))  # each row opens its own block of y − B
    alpha, beta = ctx.channel.open_many([padded_x.shares - a.shares, masked_y])
    product = matmul_product(ctx, triple, alpha, beta, x.scale, scale)
    y = b.shares.copy()
    if ctx.leads:
        y[0] += beta.reshape(padded_y)
    return product.reshape(*x.shape[:-1]), ArithmeticShares(y.reshape(len(y), -1), scale, ctx.leads)


def mul_public(ctx: Engine, x: ArithmeticShares, value: np.typing.ArrayLike) -> ArithmeticShares:
    """``[x·c]`` for public reals ``c``: local product with c at precision L, then truncation."""
    return _rescale(ctx, x.shares * encode(value, ctx.precision), x.scale, ctx.precision)
