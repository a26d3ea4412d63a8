"""The rounding of fixed-point products, measured: each result's error in units in the last place (spec §3.6).

Every product of two values at scale L is divided by 2^L (:mod:`~privbandits.mpc.truncation`). A rounding
that is biased by a fraction of an ulp per product adds up over thousands of Sherman–Morrison updates of
the same W⁻¹ (issue 29: both parties flooring their shares, −1 ulp a product, drove the private learner
away from its twin). :func:`product_errors` opens ``count`` products of random reals in [−1, 1) (or of
0 with them) on an engine with the given parties and truncation mode, and returns each opened result's
error against the exact quotient of the product of the encoded inputs: ``benchmarks/mpc_truncation.py``
tabulates the means and the tests bound them.
"""

from __future__ import annotations

import numpy as np

from privbandits.mpc.engine import Engine

OPERATIONS = ("mul", "square", "matmul", "mul_public", "truncate")
"""What is truncated: a Beaver product, a square pair's square, a row of a matrix triple's product (4 terms),
a product with public reals, and a public division of a value at scale L by 2^L."""

_TERMS = 4


def product_errors(
    parties: int,
    truncation: str,
    operation: str,
    count: int = 100_000,
    *,
    zero: bool = False,
    seed: int = 0,
    precision: int = 20,
) -> np.ndarray:
    """Errors in ulp (2^-L) of ``count`` results of ``operation`` (:data:`OPERATIONS`) among ``parties``
    with ``truncation`` (``Engine``'s modes), against the exact quotient; ``zero``: the left operand is 0
    (so every exact result is 0). Fixed ``seed``: the same inputs and shares on every machine."""
    if operation not in OPERATIONS:
        raise ValueError(f"operation must be one of {OPERATIONS}, got {operation!r}")
    rng = np.random.default_rng(seed)
    grid = 1 << precision
    width = _TERMS if operation == "matmul" else 1
    left = rng.integers(-grid, grid, size=(count, width)) * (not zero)  # encoded words
    right = rng.integers(-grid, grid, size=(count, width))
    if operation == "square":
        right = left
    if operation == "truncate":
        left = left * grid + rng.integers(0, grid, size=left.shape) * (not zero)  # at scale L, 2L bits
    engine = Engine(parties, truncation=truncation, precision=precision, seed=seed)
    with engine.phase(operation):
        x, y = engine.input_many([(np.ldexp(left, -precision), None), (np.ldexp(right, -precision), None)])
        result = _operate(engine, operation, x, y, np.ldexp(right[:, 0], -precision))
        opened = np.ldexp(engine.open(result), precision)
    exact = left[:, 0] / grid if operation == "truncate" else (left * right).sum(axis=1) / grid
    return opened - exact


def _operate(engine: Engine, operation: str, x, y, public: np.ndarray):
    """The truncated result of ``operation`` on the shared (count, width) ``x`` and ``y`` (``public``: y's
    first column in the clear)."""
    count, width = x.shape
    if operation == "mul":
        return engine.mul(x[:, 0], y[:, 0])
    if operation == "square":
        return engine.square(x[:, 0])
    if operation == "matmul":
        return engine.matmul(x.reshape(count, 1, width), y.reshape(count, width, 1)).reshape(count)
    if operation == "mul_public":
        return engine.mul_public(x[:, 0], public)
    return engine.truncate(x[:, 0], engine.precision)
