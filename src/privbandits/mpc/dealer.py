"""The trusted dealer of offline correlated randomness (spec §3.5, paper footnote 1).

A third party outside the computing parties draws every secret below from its own
generator and hands each party its share before the online phase, so nothing here
crosses the online network. :attr:`Dealer.issued` counts, per kind, the bytes the
dealer sends (all parties' shares, 8 bytes a word): the offline cost.
"""

from __future__ import annotations

from collections import defaultdict
from typing import NamedTuple

import numpy as np

from privbandits.mpc.ring import WORD, count_wraps, random_words
from privbandits.mpc.sharing import ArithmeticShares, BinaryShares, reconstruct, share, share_xor


class Triple(NamedTuple):
    """Beaver triple ``([a], [b], [c])`` with ``c = a·b`` (elementwise or matrix product)."""

    a: ArithmeticShares
    b: ArithmeticShares
    c: ArithmeticShares


class BinaryTriple(NamedTuple):
    """XOR/AND triple ``(⟨a⟩, ⟨b⟩, ⟨c⟩)`` with ``c = a ∧ b`` (spec §3.3)."""

    a: BinaryShares
    b: BinaryShares
    c: BinaryShares


class SquarePair(NamedTuple):
    """``([a], [b])`` with ``b = a²`` (spec §3.4)."""

    a: ArithmeticShares
    b: ArithmeticShares


class DaBits(NamedTuple):
    """Random bits ``r`` shared both ways: ``[r]`` (integers) and ``⟨r⟩`` (bit 0) (spec §3.7)."""

    arithmetic: ArithmeticShares
    binary: BinaryShares


class WordMask(NamedTuple):
    """A random word ``r`` as ``⟨r⟩`` and as ``[r_b]`` for each bit (last axis, 64 daBits)."""

    binary: BinaryShares
    bits: ArithmeticShares


class WrapPair(NamedTuple):
    """``[r]``, its shares' wrap count ``[θ_r]`` and ``⟨r⟩`` (Alg. 3; ``⟨r⟩`` for the exact η)."""

    r: ArithmeticShares
    theta: ArithmeticShares
    binary: BinaryShares | None


class Dealer:
    """Produces correlated randomness for ``n_parties`` from generator ``rng``."""

    def __init__(self, n_parties: int, rng: np.random.Generator) -> None:
        if n_parties < 2:
            raise ValueError(f"the dealer serves n_parties >= 2, got {n_parties}")
        self.n_parties, self.rng = n_parties, rng
        self.issued: dict[str, int] = defaultdict(int)

    def _random(self, kind: str, shape: tuple[int, ...]) -> np.ndarray:
        """Uniform shares of a uniform secret (every share is drawn, none derived)."""
        shares = random_words(self.rng, (self.n_parties, *shape))
        self.issued[kind] += shares.nbytes
        return shares

    def _share(self, kind: str, secret: np.ndarray) -> np.ndarray:
        shares = share(secret, self.n_parties, self.rng)
        self.issued[kind] += shares.nbytes
        return shares

    def _share_xor(self, kind: str, secret: np.ndarray) -> np.ndarray:
        shares = share_xor(secret, self.n_parties, self.rng)
        self.issued[kind] += shares.nbytes
        return shares

    def triple(self, shape: tuple[int, ...]) -> Triple:
        """Elementwise Beaver triple of ``shape`` (integers; scale set by the caller)."""
        words = self._random("triple", (3, *shape))  # one draw: a, b and the others' shares of c
        a, b, c = words[:, 0], words[:, 1], words[:, 2]
        c[0] = reconstruct(a) * reconstruct(b) - reconstruct(c[1:])
        return Triple(ArithmeticShares(a, 0), ArithmeticShares(b, 0), ArithmeticShares(c, 0))

    def matrix_triple(self, shape_a: tuple[int, ...], shape_b: tuple[int, ...]) -> Triple:
        """Matrix Beaver triple with ``c = a @ b`` (spec §3.4, CrypTen's matmul triples)."""
        a, b = self._random("matrix_triple", shape_a), self._random("matrix_triple", shape_b)
        c = self._share("matrix_triple", np.matmul(reconstruct(a), reconstruct(b)))
        return Triple(ArithmeticShares(a, 0), ArithmeticShares(b, 0), ArithmeticShares(c, 0))

    def square_pair(self, shape: tuple[int, ...]) -> SquarePair:
        """``([a], [a²])`` of ``shape``."""
        a = self._random("square_pair", shape)
        secret = reconstruct(a)
        return SquarePair(ArithmeticShares(a, 0), ArithmeticShares(self._share("square_pair", secret * secret), 0))

    def binary_triple(self, shape: tuple[int, ...]) -> BinaryTriple:
        """XOR/AND triple of 64-bit words of ``shape``."""
        a, b = self._random("binary_triple", shape), self._random("binary_triple", shape)
        c = self._share_xor("binary_triple", np.bitwise_xor.reduce(a, axis=0) & np.bitwise_xor.reduce(b, axis=0))
        return BinaryTriple(BinaryShares(a), BinaryShares(b), BinaryShares(c))

    def dabits(self, shape: tuple[int, ...]) -> DaBits:
        """Random bits of ``shape`` shared arithmetically and in bit 0 of XOR words."""
        bits = self.rng.integers(0, 2, size=shape, dtype=WORD)
        return DaBits(ArithmeticShares(self._share("dabits", bits), 0), BinaryShares(self._share_xor("dabits", bits)))

    def word_mask(self, shape: tuple[int, ...]) -> WordMask:
        """A random word per element, XOR-shared and bit-decomposed into 64 arithmetic bits."""
        words = random_words(self.rng, shape)
        bits = (words[..., None] >> np.arange(64, dtype=WORD)) & WORD(1)
        return WordMask(
            BinaryShares(self._share_xor("word_mask", words)), ArithmeticShares(self._share("word_mask", bits), 0)
        )

    def wrap_pair(self, shape: tuple[int, ...], *, signed: bool, binary: bool) -> WrapPair:
        """``[r]`` with ``[θ_r]`` for Alg. 3, and ``⟨r⟩`` when ``binary`` (for the exact η)."""
        r = self._random("wrap_pair", shape)
        theta = self._share("wrap_pair", count_wraps(r, signed=signed).view(WORD))
        words = BinaryShares(self._share_xor("wrap_pair", reconstruct(r))) if binary else None
        return WrapPair(ArithmeticShares(r, 0), ArithmeticShares(theta, 0), words)

    def zero_xor(self, shape: tuple[int, ...]) -> BinaryShares:
        """XOR sharing of zero words: each party's input to A2B (CrypTen's PRZS, spec §3.2)."""
        return BinaryShares(self._share_xor("zero_xor", np.zeros(shape, dtype=WORD)))

    def deal(self, kind: str, words: np.ndarray, scale: int) -> ArithmeticShares:
        """Shares of secrets the dealer drew elsewhere, counted under ``kind`` (e.g. Alg. 1's
        exploration samples from a seeded stream that a plaintext twin replays)."""
        return ArithmeticShares(self._share(kind, np.asarray(words, dtype=WORD)), scale)

    def bernoulli(self, p: float, shape: tuple[int, ...]) -> ArithmeticShares:
        """Private Bernoulli(p) bits (integers, scale 0): the coin ``[y_t]`` of Alg. 1."""
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"Bernoulli probability must be in [0, 1], got {p}")
        bits = (self.rng.random(shape) < p).astype(WORD)
        return ArithmeticShares(self._share("bernoulli", bits), 0)

    def uniform(self, shape: tuple[int, ...], precision: int) -> ArithmeticShares:
        """Private Uniform[0, 1) samples on the grid ``k·2^-precision`` (the ``[v_a]`` of Alg. 1)."""
        words = self.rng.integers(0, 2**precision, size=shape, dtype=WORD)
        return ArithmeticShares(self._share("uniform", words), precision)

    def permutation(self, size: int, batch: tuple[int, ...] = ()) -> ArithmeticShares:
        """Secret random permutations of ``1..size`` along the last axis (tie-breaking γ, Alg. 2)."""
        if size < 1:
            raise ValueError(f"permutation size must be >= 1, got {size}")
        values = np.broadcast_to(np.arange(1, size + 1, dtype=WORD), (*batch, size))
        return ArithmeticShares(self._share("permutation", self.rng.permuted(values, axis=-1)), 0)
