"""Multiplications that ride on another computation's openings: the same values in fewer rounds.

A computation written as *steps* (a generator that yields :class:`Mul`, :class:`Square` and
:class:`Matmul` requests and receives their products) runs either on its own
(:func:`run_steps`: each request is one :func:`~privbandits.mpc.arithmetic.mul`,
:func:`~privbandits.mpc.arithmetic.square` or :func:`~privbandits.mpc.arithmetic.matmul`,
one round each) or *alongside* another
computation (:meth:`Engine.alongside <privbandits.mpc.engine.Engine.alongside>`): its next
request's masked words join the next additive or XOR opening the other computation makes
between the computing parties, so independent work shares rounds. Each request draws the
same dealer material and opens the same words either way (Beaver-masked, uniform to every
party: riding reveals nothing more); only the order of the dealer's draws (and so the
randomness a seed gives) and the rounds differ.

A request rides only on an opening of words among the computing parties (``open``,
``open_many``); bit openings, reveals to one party and inputs carry none. Riding needs
local truncation (2 parties): a request must finish in the one opening it rides.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from privbandits.mpc.arithmetic import (
    beaver_masks,
    beaver_product,
    matmul_masks,
    matmul_product,
    square_masks,
    square_product,
)
from privbandits.mpc.sharing import ArithmeticShares

if TYPE_CHECKING:
    from privbandits.mpc.engine import Engine


class Mul(NamedTuple):
    """Request ``[x·y]`` (elementwise, numpy broadcasting)."""

    x: ArithmeticShares
    y: ArithmeticShares


class Square(NamedTuple):
    """Request ``[x²]``."""

    x: ArithmeticShares


class Matmul(NamedTuple):
    """Request ``[x @ y]`` (numpy matmul shapes)."""

    x: ArithmeticShares
    y: ArithmeticShares


Request = Mul | Square | Matmul
Steps = Generator[Request, ArithmeticShares, ArithmeticShares]
"""A computation as requests: it yields each product it needs and returns its result."""

_PROTOCOL: dict[type, tuple[str, Callable[..., Any], Callable[..., Any]]] = {
    Mul: ("mul", beaver_masks, beaver_product),
    Square: ("square", square_masks, square_product),
    Matmul: ("matmul", matmul_masks, matmul_product),
}
"""Per request: the engine method that runs it alone, and its two halves around the opening."""


def run_steps(ctx: Engine, steps: Steps) -> ArithmeticShares:
    """Run ``steps`` on their own: each request in its own round."""
    product: ArithmeticShares | None = None
    while True:
        try:
            request = next(steps) if product is None else steps.send(product)
        except StopIteration as stop:
            return stop.value
        product = getattr(ctx, _PROTOCOL[type(request)][0])(*request)


class _Pending:
    """A request whose dealer material is drawn and whose masked words wait for an opening."""

    __slots__ = ("request", "material", "words", "cuts")

    def __init__(self, ctx: Engine, request: Request) -> None:
        self.request = request
        self.material, masked = _PROTOCOL[type(request)][1](ctx, *request)
        rows = len(masked[0])
        self.words = np.concatenate([part.reshape(rows, -1) for part in masked], axis=1)
        self.cuts, at = [], 0  # [start, stop) of each opened part
        for part in masked:
            self.cuts.append((at, at + part[0].size))
            at += part[0].size

    def finish(self, ctx: Engine, opened: np.ndarray) -> ArithmeticShares:
        scales = [operand.scale for operand in self.request]
        parts = [opened[start:stop] for start, stop in self.cuts]
        return _PROTOCOL[type(self.request)][2](ctx, self.material, *parts, *scales)


class Rider:
    """Steps running alongside the computation of a ``with engine.alongside(steps):`` block.

    The engine's channel hands it each additive or XOR opening among the computing parties
    (:meth:`ride`); at the end of the block (or at :meth:`finish`) the requests left run on
    their own rounds. :attr:`result` is the steps' return value once they are done.
    """

    def __init__(self, ctx: Engine, steps: Steps) -> None:
        if ctx.truncation != "local":
            raise ValueError(
                f"steps can ride on other openings only with local truncation (2 parties), "
                f"not {ctx.truncation!r}: each request must finish in the opening it rides"
            )
        self.ctx, self.steps = ctx, steps
        self._result: ArithmeticShares | None = None
        self.done = False
        self.rides = 0
        """Requests that shared an opening (each saved a round)."""
        self._pending: _Pending | None = None
        self._advance(None)

    def _advance(self, product: ArithmeticShares | None) -> None:
        try:
            request = next(self.steps) if product is None else self.steps.send(product)
        except StopIteration as stop:
            self._result, self.done, self._pending = stop.value, True, None
            return
        self._pending = _Pending(self.ctx, request)

    @property
    def result(self) -> ArithmeticShares:
        """The steps' return value (an error before they are done)."""
        if self._result is None:
            raise RuntimeError("the steps are not done: their result is not ready")
        return self._result

    def _waiting(self) -> _Pending:
        if self._pending is None:
            raise RuntimeError("the steps are done: no request is waiting for an opening")
        return self._pending

    def ride(self, shares: np.ndarray, xor: bool, broadcast) -> np.ndarray:
        """Open ``shares`` (all rows held, party axis 0; ⊕ when ``xor``) together with the pending
        request's words, through ``broadcast`` (the channel's: the others' rows as received), and
        finish the request; returns the opened value of ``shares``."""
        pending = self._waiting()
        rows = len(shares)
        main = shares.reshape(rows, -1)
        combined = np.concatenate([main, pending.words], axis=1)
        cut = main.shape[1]
        value = combined[0].copy()
        for words in broadcast(combined):
            if xor:
                value[:cut] ^= words[:cut]
            else:
                value[:cut] += words[:cut]
            value[cut:] += words[cut:]
        self.rides += 1
        self._advance(pending.finish(self.ctx, value[cut:]))
        return value[:cut].reshape(shares.shape[1:])

    def finish(self, limit: int | None = None) -> ArithmeticShares | None:
        """Run the requests left, each on its own round (at most ``limit`` of them, and the steps go on
        riding after); the steps' result once they are done, else None."""
        channel = self.ctx.channel
        channel.rider = None
        run = 0
        while not self.done and (limit is None or run < limit):
            pending = self._waiting()
            self._advance(pending.finish(self.ctx, channel.open(pending.words)))
            run += 1
        if not self.done:
            channel.rider = self
        return self._result


class Alongside:
    """Context manager of :meth:`Engine.alongside <privbandits.mpc.engine.Engine.alongside>`."""

    __slots__ = ("ctx", "steps", "rider")

    def __init__(self, ctx: Engine, steps: Steps) -> None:
        self.ctx, self.steps = ctx, steps
        self.rider: Rider | None = None

    def __enter__(self) -> Rider:
        if self.ctx.channel.rider is not None:
            raise RuntimeError("steps already ride alongside this engine's computation (no nesting)")
        rider = self.rider = Rider(self.ctx, self.steps)
        self.ctx.channel.rider = rider if not rider.done else None
        return rider

    def __exit__(self, *exc: object) -> None:
        if exc[0] is not None:
            self.ctx.channel.rider = None
            return
        if self.rider is not None:  # entered
            self.rider.finish()
