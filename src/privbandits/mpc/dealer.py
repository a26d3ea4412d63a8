"""The trusted dealer of offline correlated randomness (spec §3.5, paper footnote 1).

A third party outside the computing parties draws every secret below from its own
generator and hands each party its share before the online phase, so nothing here
crosses the online network. :attr:`Dealer.issued` counts, per kind, the bytes the
dealer sends (all parties' shares, each word a full element of Z_2^64): the offline cost.

With parties in separate processes the dealer is a process too. What a round asks of the
dealer does not depend on any data (the protocol's control flow is oblivious), so the
dealer's process records the calls of one round once (:class:`RecordingDealer`) and then,
every round, replays them on its :class:`Dealer` (:func:`replay`): the same calls on the
same generator draw exactly the simulator's material. Each computing party gets its own
rows of it in one :class:`Material` message per round, and its :class:`RemoteDealer`
answers the protocol's calls from it, in order.
"""

from __future__ import annotations

import math
from collections import defaultdict, deque
from collections.abc import Callable, Sequence
from functools import cache
from typing import Any, NamedTuple, TypeAlias, TypeVar, cast

import numpy as np

from privbandits.comm import Message, Network, ProtocolError, message
from privbandits.mpc import lookup
from privbandits.mpc.ring import WORD, count_wraps, random_words
from privbandits.mpc.sharing import ArithmeticShares, BinaryShares, reconstruct, share, share_xor

Material_T = TypeVar("Material_T", bound=tuple)
"""One kind of dealer material (a named tuple of shares)."""


class Triple(NamedTuple):
    """Beaver triple ``([a], [b], [c])`` with ``c = a·b`` (elementwise or matrix product)."""

    a: ArithmeticShares
    b: ArithmeticShares
    c: ArithmeticShares


class InputTriple(NamedTuple):
    """A matrix triple whose ``b`` masks inputs, and ``revealed``: row p holds B where party p owns the input
    (in the clear; 0 elsewhere), so that the owner can open its input minus B itself."""

    a: ArithmeticShares
    b: ArithmeticShares
    c: ArithmeticShares
    revealed: ArithmeticShares


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


class RotatedOneHot(NamedTuple):
    """A random ``r`` in Z_m (``[r]``) and the one-hot of r over the last axis (``[e_r]``, length m): a
    masked lookup of a small count (:func:`~privbandits.mpc.comparison.allmax` with ``lookup``)."""

    r: ArithmeticShares
    onehot: ArithmeticShares


class LookupMaterial(NamedTuple):
    """A masked lookup (:func:`~privbandits.mpc.lookup.lookup`): ``⟨R⟩``, the 8-bit masks packed eight to a word,
    and each index's share of the rotated table i ↦ f(i ⊕ R), packed (:func:`~privbandits.mpc.lookup.pack`)."""

    mask: BinaryShares
    table: BinaryShares


class WrapPair(NamedTuple):
    """``[r]``, its shares' wrap count ``[θ_r]`` and ``⟨r⟩`` (Alg. 3; ``⟨r⟩`` for the exact η)."""

    r: ArithmeticShares
    theta: ArithmeticShares
    binary: BinaryShares | None


POOL_ELEMENTS = 1 << 14
"""Elements drawn at once per kind and shape: the dealer works in batches of up to
:data:`POOL_ITEMS` items of this many elements in all, as an offline phase would, so the
per-call numpy overhead is paid once per batch rather than once per operation."""

POOL_ITEMS = 64


def _split(material: Material_T, batch: int) -> list[Material_T]:
    """``batch`` materials from one whose share arrays have a batch axis after the party axis."""
    fields: list[list] = []
    for item in material:
        if item is None:
            fields.append([None] * batch)
            continue
        stacked = np.ascontiguousarray(np.moveaxis(item.shares, 1, 0))  # item-major, so each slice is contiguous
        if isinstance(item, ArithmeticShares):
            fields.append([ArithmeticShares(stacked[i], item.scale) for i in range(batch)])
        else:
            fields.append([BinaryShares(stacked[i]) for i in range(batch)])
    kind = type(material)
    made = [kind(*parts) if kind is not tuple else parts for parts in zip(*fields, strict=True)]
    return cast("list[Material_T]", made)  # each a ``kind``, as ``material`` is


@cache
def _matmul_shapes(shape_a: tuple[int, ...], shape_b: tuple[int, ...]) -> tuple[tuple[int, ...], ...]:
    """Operand shapes of equal rank >= 2 (vectors as 1×k and k×1) that batch under ``np.matmul``,
    and the shape of ``a @ b`` for the original ones."""
    a = (1, *shape_a) if len(shape_a) == 1 else shape_a
    b = (*shape_b, 1) if len(shape_b) == 1 else shape_b
    rank = max(len(a), len(b))
    product = np.matmul(np.zeros(shape_a, dtype=np.int8), np.zeros(shape_b, dtype=np.int8))
    return (1,) * (rank - len(a)) + a, (1,) * (rank - len(b)) + b, product.shape


class Dealer:
    """Produces correlated randomness for ``n_parties`` from generator ``rng``.

    Material of each kind and shape is drawn in batches (:data:`POOL_ELEMENTS`) and
    handed out one item per call; :attr:`issued` counts the bytes handed out.
    """

    def __init__(self, n_parties: int, rng: np.random.Generator) -> None:
        if n_parties < 2:
            raise ValueError(f"the dealer serves n_parties >= 2, got {n_parties}")
        self.n_parties, self.rng = n_parties, rng
        self.issued: dict[str, int] = defaultdict(int)
        self._pools: dict[tuple, deque] = {}

    def _pooled(self, kind: str, key: tuple, elements: int, make: Callable[[int], Material_T]) -> Material_T:
        """The next item of ``kind`` (pool ``key``); ``make(batch)`` draws ``batch`` of them at once."""
        pool = self._pools.get(key)
        if not pool:
            batch = max(1, min(POOL_ITEMS, POOL_ELEMENTS // max(1, elements)))
            items = _split(make(batch), batch)
            nbytes = sum(item.shares.nbytes for item in items[0] if item is not None)
            pool = self._pools[key] = deque((material, nbytes) for material in items)
        material, nbytes = pool.popleft()
        self.issued[kind] += nbytes
        return material

    def _random(self, shape: tuple[int, ...]) -> np.ndarray:
        """Uniform shares of a uniform secret (every share is drawn, none derived)."""
        return random_words(self.rng, (self.n_parties, *shape))

    def triple(self, shape: tuple[int, ...]) -> Triple:
        """Elementwise Beaver triple of ``shape`` (integers; scale set by the caller)."""

        def make(batch: int) -> Triple:
            words = self._random((3, batch, *shape))  # one draw: a, b and the others' shares of c
            a, b, c = words[:, 0], words[:, 1], words[:, 2]
            c[0] = reconstruct(a) * reconstruct(b) - reconstruct(c[1:])
            return Triple(ArithmeticShares(a, 0), ArithmeticShares(b, 0), ArithmeticShares(c, 0))

        return self._pooled("triple", ("triple", shape), 3 * math.prod(shape), make)

    def matrix_triple(self, shape_a: tuple[int, ...], shape_b: tuple[int, ...]) -> Triple:
        """Matrix Beaver triple with ``c = a @ b`` (spec §3.4, CrypTen's matmul triples)."""
        padded_a, padded_b, shape_c = _matmul_shapes(tuple(shape_a), tuple(shape_b))

        def make(batch: int) -> Triple:
            a, b = self._random((batch, *padded_a)), self._random((batch, *padded_b))
            c = share(np.matmul(reconstruct(a), reconstruct(b)), self.n_parties, self.rng)
            return Triple(ArithmeticShares(a, 0), ArithmeticShares(b, 0), ArithmeticShares(c, 0))

        size = math.prod(shape_a) + math.prod(shape_b)
        a, b, c = self._pooled("matrix_triple", ("matrix_triple", shape_a, shape_b), size, make)
        return Triple(a.reshape(*shape_a), b.reshape(*shape_b), c.reshape(*shape_c))

    def input_triple(self, shape_a: tuple[int, ...], shape_b: tuple[int, ...], owners: tuple[int, ...]) -> InputTriple:
        """A matrix triple (:meth:`matrix_triple`) whose B (of ``shape_b`` = (..., k, 1)) masks k inputs, with
        each element's owner (a party's row, ``owners``) told its elements of B in the clear: row p of the
        second field holds B where p owns it and 0 elsewhere (not shares; only the owner's row reaches it)
        (:func:`~privbandits.mpc.arithmetic.matmul_inputs`)."""
        triple = self.matrix_triple(shape_a, shape_b)
        rows = np.asarray(owners).reshape(shape_b)[None] == np.arange(self.n_parties).reshape(-1, *(1,) * len(shape_b))
        revealed = np.where(rows, reconstruct(triple.b.shares)[None], WORD(0))
        self.issued["input_triple"] += revealed.nbytes
        return InputTriple(*triple, ArithmeticShares(revealed, 0))

    def square_pair(self, shape: tuple[int, ...]) -> SquarePair:
        """``([a], [a²])`` of ``shape``."""

        def make(batch: int) -> SquarePair:
            a = self._random((batch, *shape))
            secret = reconstruct(a)
            return SquarePair(ArithmeticShares(a, 0), ArithmeticShares(self._share(secret * secret), 0))

        return self._pooled("square_pair", ("square_pair", shape), 2 * math.prod(shape), make)

    def binary_triple(self, shape: tuple[int, ...]) -> BinaryTriple:
        """XOR/AND triple of 64-bit words of ``shape``."""

        def make(batch: int) -> BinaryTriple:
            a, b = self._random((batch, *shape)), self._random((batch, *shape))
            c = self._share_xor(np.bitwise_xor.reduce(a, axis=0) & np.bitwise_xor.reduce(b, axis=0))
            return BinaryTriple(BinaryShares(a), BinaryShares(b), BinaryShares(c))

        return self._pooled("binary_triple", ("binary_triple", shape), 3 * math.prod(shape), make)

    def dabits(self, shape: tuple[int, ...]) -> DaBits:
        """Random bits of ``shape`` shared arithmetically and in bit 0 of XOR words."""

        def make(batch: int) -> DaBits:
            bits = self.rng.integers(0, 2, size=(batch, *shape), dtype=WORD)
            return DaBits(ArithmeticShares(self._share(bits), 0), BinaryShares(self._share_xor(bits)))

        return self._pooled("dabits", ("dabits", shape), 2 * math.prod(shape), make)

    def word_mask(self, shape: tuple[int, ...]) -> WordMask:
        """A random word per element, XOR-shared and bit-decomposed into 64 arithmetic bits."""

        def make(batch: int) -> WordMask:
            words = random_words(self.rng, (batch, *shape))
            bits = (words[..., None] >> np.arange(64, dtype=WORD)) & WORD(1)
            return WordMask(BinaryShares(self._share_xor(words)), ArithmeticShares(self._share(bits), 0))

        return self._pooled("word_mask", ("word_mask", shape), 65 * math.prod(shape), make)

    def wrap_pair(self, shape: tuple[int, ...], *, signed: bool, binary: bool) -> WrapPair:
        """``[r]`` with ``[θ_r]`` for Alg. 3, and ``⟨r⟩`` when ``binary`` (for the exact η)."""

        def make(batch: int) -> WrapPair:
            r = self._random((batch, *shape))
            theta = self._share(count_wraps(r, signed=signed).view(WORD))
            words = BinaryShares(self._share_xor(reconstruct(r))) if binary else None
            return WrapPair(ArithmeticShares(r, 0), ArithmeticShares(theta, 0), words)

        key = ("wrap_pair", shape, signed, binary)
        return self._pooled("wrap_pair", key, (2 + binary) * math.prod(shape), make)

    def zero_xor(self, shape: tuple[int, ...]) -> BinaryShares:
        """XOR sharing of zero words: each party's input to A2B (CrypTen's PRZS, spec §3.2)."""

        def make(batch: int) -> tuple[BinaryShares]:
            return (BinaryShares(self._share_xor(np.zeros((batch, *shape), dtype=WORD))),)

        return self._pooled("zero_xor", ("zero_xor", shape), math.prod(shape), make)[0]

    def deal(self, kind: str, words: np.typing.ArrayLike, scale: int) -> ArithmeticShares:
        """Shares of secrets the dealer drew elsewhere, counted under ``kind`` (e.g. Alg. 1's
        exploration samples from a seeded stream that a plaintext twin replays)."""
        shares = self._share(np.asarray(words, dtype=WORD))
        self.issued[kind] += shares.nbytes
        return ArithmeticShares(shares, scale)

    def bernoulli(self, p: float, shape: tuple[int, ...]) -> ArithmeticShares:
        """Private Bernoulli(p) bits (integers, scale 0): the coin ``[y_t]`` of Alg. 1."""
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"Bernoulli probability must be in [0, 1], got {p}")

        def make(batch: int) -> tuple[ArithmeticShares]:
            bits = (self.rng.random((batch, *shape)) < p).astype(WORD)
            return (ArithmeticShares(self._share(bits), 0),)

        return self._pooled("bernoulli", ("bernoulli", p, shape), math.prod(shape), make)[0]

    def uniform(self, shape: tuple[int, ...], precision: int) -> ArithmeticShares:
        """Private Uniform[0, 1) samples on the grid ``k·2^-precision`` (the ``[v_a]`` of Alg. 1)."""

        def make(batch: int) -> tuple[ArithmeticShares]:
            words = self.rng.integers(0, 2**precision, size=(batch, *shape), dtype=WORD)
            return (ArithmeticShares(self._share(words), precision),)

        return self._pooled("uniform", ("uniform", shape, precision), math.prod(shape), make)[0]

    def permutation(self, size: int, batch: tuple[int, ...] = ()) -> ArithmeticShares:
        """Secret random permutations of ``1..size`` along the last axis (tie-breaking γ, Alg. 2)."""
        if size < 1:
            raise ValueError(f"permutation size must be >= 1, got {size}")

        def make(items: int) -> tuple[ArithmeticShares]:
            values = np.broadcast_to(np.arange(1, size + 1, dtype=WORD), (items, *batch, size))
            return (ArithmeticShares(self._share(self.rng.permuted(values, axis=-1)), 0),)

        key = ("permutation", size, tuple(batch))
        return self._pooled("permutation", key, size * math.prod(batch), make)[0]

    def rotated_onehot(
        self,
        shape: tuple[int, ...],
        size: int,
        factor: np.typing.ArrayLike | None = None,
        factor_kind: str | None = None,
    ) -> RotatedOneHot:
        """Per element of ``shape``, ``[r]`` with r uniform in 0..size−1 and ``[e_r]`` (integers); with a secret
        ``factor`` (integers broadcast to ``shape``, the dealer's own, e.g. 1 − y_t), ``[factor·e_r]`` instead,
        so that the lookup's result comes out multiplied by it. ``factor_kind`` names the factor for :func:`replay`."""
        if factor is not None:
            mask = self.rotated_onehot(shape, size)
            scaled = reconstruct(mask.onehot.shares) * np.asarray(factor, dtype=WORD)[..., None]
            return RotatedOneHot(mask.r, ArithmeticShares(self._share(scaled), 0))

        def make(batch: int) -> RotatedOneHot:
            r = self.rng.integers(0, size, size=(batch, *shape), dtype=WORD)
            onehot = (r[..., None] == np.arange(size, dtype=WORD)).astype(WORD)
            return RotatedOneHot(ArithmeticShares(self._share(r), 0), ArithmeticShares(self._share(onehot), 0))

        key = ("rotated_onehot", shape, size)
        return self._pooled("rotated_onehot", key, (1 + size) * math.prod(shape), make)

    def lookup_table(self, name: str, shape: tuple[int, ...]) -> LookupMaterial:
        """Per element of ``shape``, a uniform 8-bit mask R and the table ``name`` rotated by it
        (:data:`~privbandits.mpc.lookup.TABLES`; 2 parties): XOR shares, or shares adding up modulo 2^width."""
        if self.n_parties != 2:
            raise ValueError(f"lookup tables are dealt to 2 computing parties, got {self.n_parties}")
        table, shape = lookup.TABLES[name], tuple(shape)
        tail = table.values.shape[:-1]
        if shape[len(shape) - len(tail) :] != tail:
            raise ValueError(f"table {name!r} is for indices of shape (..., {', '.join(map(str, tail))}), got {shape}")

        def make(batch: int) -> LookupMaterial:
            masks = self.rng.integers(0, lookup.ENTRIES, size=(batch, *shape), dtype=np.uint8)
            axes = tuple(np.arange(size).reshape(size, *(1,) * (len(tail) - 1 - k)) for k, size in enumerate(tail))
            if table.additive:  # entry by entry: the second share is the table minus the first, modulo 2^width
                rotated = lookup.rotations(name, packed=False)[(*axes, masks)]  # (batch, *shape, 256)
                low = np.uint8((1 << table.width) - 1)
                first = random_words(self.rng, (*rotated.shape[:-1], lookup.ENTRIES // 8)).view(np.uint8) & low
                shares = [lookup.pack(first, table.width), lookup.pack((rotated - first) & low, table.width)]
            else:
                rotated = lookup.rotations(name)[(*axes, masks)]  # (batch, *shape, words)
                first = random_words(self.rng, rotated.shape)
                shares = [first, rotated ^ first]
            mask_first = self.rng.integers(0, lookup.ENTRIES, size=masks.shape, dtype=np.uint8)
            mask_words = np.stack([lookup.bytes_to_words(mask_first), lookup.bytes_to_words(mask_first ^ masks)])
            return LookupMaterial(BinaryShares(mask_words), BinaryShares(np.stack(shares)))

        elements = math.prod(shape) * (1 + lookup.table_words(name))
        return self._pooled("lookup_table", ("lookup_table", name, shape), elements, make)

    def _share(self, secret: np.ndarray) -> np.ndarray:
        return share(secret, self.n_parties, self.rng)

    def _share_xor(self, secret: np.ndarray) -> np.ndarray:
        return share_xor(secret, self.n_parties, self.rng)


# ------------------------------------------------------------------ the dealer as a process

OFFLINE = "offline"
"""Phase of the dealer's messages to the computing parties (its offline material, not online rounds)."""

MATERIAL_METHODS = (
    "triple",
    "matrix_triple",
    "square_pair",
    "binary_triple",
    "dabits",
    "word_mask",
    "wrap_pair",
    "zero_xor",
    "deal",
    "bernoulli",
    "uniform",
    "permutation",
    "rotated_onehot",
    "lookup_table",
    "input_triple",
)
"""The :class:`Dealer` methods a protocol calls; :class:`RemoteDealer` answers each of them."""


@message("mpc.material")
class Material(Message):
    """Dealer → computing party: its shares of one round's correlated randomness, in call order."""

    round: int
    words: np.ndarray


class Call(NamedTuple):
    """One recorded dealer call."""

    method: str
    args: tuple
    kwargs: dict


class RecordingDealer:
    """A :class:`Dealer` that records every call made on it (the schedule :func:`replay` repeats)."""

    def __init__(self, dealer: AnyDealer) -> None:
        self.dealer = dealer
        self.calls: list[Call] = []

    @property
    def n_parties(self) -> int:
        return self.dealer.n_parties

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.dealer, name)
        if name not in MATERIAL_METHODS:
            return method

        def recorded(*args: Any, **kwargs: Any) -> Any:
            self.calls.append(Call(name, args, kwargs))
            return method(*args, **kwargs)

        return recorded


def replay(dealer: Dealer, calls: Sequence[Call], words_for: Callable[[str], np.typing.ArrayLike]) -> list[Any]:
    """The material of ``calls`` made again on ``dealer``; a ``deal`` call takes its secrets from
    ``words_for(kind)`` (e.g. this round's exploration samples) instead of the recorded ones, and a call
    with a ``factor_kind`` its factor from ``words_for(factor_kind)``."""
    made = []
    for method, args, kwargs in calls:
        if method == "deal":
            kind, _, scale = args
            made.append(dealer.deal(kind, words_for(kind), scale))
        elif kwargs.get("factor_kind") is not None:  # a secret factor of this round
            made.append(getattr(dealer, method)(*args, **{**kwargs, "factor": words_for(kwargs["factor_kind"])}))
        else:
            made.append(getattr(dealer, method)(*args, **kwargs))
    return made


def _fields(material: Any) -> list:
    return [material] if isinstance(material, ArithmeticShares | BinaryShares) else list(material)


def party_words(materials: Sequence[Any], row: int) -> np.ndarray:
    """Party ``row``'s shares of every field of ``materials``, flattened in order (one Material payload)."""
    parts = [field.shares[row].ravel() for material in materials for field in _fields(material) if field is not None]
    return np.concatenate(parts) if parts else np.zeros(0, dtype=WORD)


class RemoteDealer:
    """A computing party's dealer in its own process: answers the :class:`Dealer` calls, in order,
    from the :class:`Material` the dealer's process sends it (one message per round).

    Shapes follow from the calls' arguments exactly as in :class:`Dealer`; every share array
    has one row (this party's) and ``lead`` as the party's engine.
    """

    def __init__(self, network: Network, local: str, source: str, n_parties: int, *, lead: bool) -> None:
        self.network, self.local, self.source = network, local, source
        self.n_parties, self.lead = n_parties, lead
        self.issued: dict[str, int] = defaultdict(int)
        self.round = 0
        """Material messages received so far (the dealer numbers them from 1)."""
        self._words = np.zeros(0, dtype=WORD)
        self._at = 0

    def skip_to(self, rounds: int) -> None:
        """Expect the material of round ``rounds + 1`` next (a resumed session)."""
        self.round = rounds

    def _take(self, kind: str, count: int) -> np.ndarray:
        if self._at == len(self._words):
            self._fetch()
        if self._at + count > len(self._words):
            raise ProtocolError(
                f"{self.source!r} sent {len(self._words)} words of material for round {self.round}; "
                f"the protocol asks for more ({kind})"
            )
        words = self._words[self._at : self._at + count]
        self._at += count
        self.issued[kind] += 8 * count
        return words

    def _fetch(self) -> None:
        material = self.network.receive(self.local, Material, self.source)
        if material.round != self.round + 1:
            raise ProtocolError(
                f"{self.source!r} sent the material of round {material.round}, expected round {self.round + 1}"
            )
        self.round, self._words, self._at = material.round, material.words, 0

    def _arithmetic(self, kind: str, shape: tuple[int, ...], scale: int = 0) -> ArithmeticShares:
        shape = tuple(shape)
        return ArithmeticShares(self._take(kind, math.prod(shape)).reshape(1, *shape), scale, self.lead)

    def _binary(self, kind: str, shape: tuple[int, ...]) -> BinaryShares:
        shape = tuple(shape)
        return BinaryShares(self._take(kind, math.prod(shape)).reshape(1, *shape), self.lead)

    def triple(self, shape: tuple[int, ...]) -> Triple:
        return Triple(*(self._arithmetic("triple", shape) for _ in range(3)))

    def matrix_triple(self, shape_a: tuple[int, ...], shape_b: tuple[int, ...]) -> Triple:
        shape_c = _matmul_shapes(tuple(shape_a), tuple(shape_b))[2]
        kind = "matrix_triple"
        return Triple(self._arithmetic(kind, shape_a), self._arithmetic(kind, shape_b), self._arithmetic(kind, shape_c))

    def input_triple(self, shape_a: tuple[int, ...], shape_b: tuple[int, ...], owners: tuple[int, ...]) -> InputTriple:
        return InputTriple(*self.matrix_triple(shape_a, shape_b), self._arithmetic("input_triple", shape_b))

    def square_pair(self, shape: tuple[int, ...]) -> SquarePair:
        return SquarePair(self._arithmetic("square_pair", shape), self._arithmetic("square_pair", shape))

    def binary_triple(self, shape: tuple[int, ...]) -> BinaryTriple:
        return BinaryTriple(*(self._binary("binary_triple", shape) for _ in range(3)))

    def dabits(self, shape: tuple[int, ...]) -> DaBits:
        return DaBits(self._arithmetic("dabits", shape), self._binary("dabits", shape))

    def word_mask(self, shape: tuple[int, ...]) -> WordMask:
        return WordMask(self._binary("word_mask", shape), self._arithmetic("word_mask", (*shape, 64)))

    def wrap_pair(self, shape: tuple[int, ...], *, signed: bool, binary: bool) -> WrapPair:
        r, theta = self._arithmetic("wrap_pair", shape), self._arithmetic("wrap_pair", shape)
        return WrapPair(r, theta, self._binary("wrap_pair", shape) if binary else None)

    def zero_xor(self, shape: tuple[int, ...]) -> BinaryShares:
        return self._binary("zero_xor", shape)

    def deal(self, kind: str, words: np.typing.ArrayLike, scale: int) -> ArithmeticShares:
        """This party's share of secrets the dealer drew (``words`` is a placeholder: only its shape is read)."""
        return self._arithmetic(kind, np.shape(words), scale)

    def bernoulli(self, p: float, shape: tuple[int, ...]) -> ArithmeticShares:
        return self._arithmetic("bernoulli", shape)

    def uniform(self, shape: tuple[int, ...], precision: int) -> ArithmeticShares:
        return self._arithmetic("uniform", shape, precision)

    def permutation(self, size: int, batch: tuple[int, ...] = ()) -> ArithmeticShares:
        return self._arithmetic("permutation", (*batch, size))

    def rotated_onehot(
        self,
        shape: tuple[int, ...],
        size: int,
        factor: np.typing.ArrayLike | None = None,
        factor_kind: str | None = None,
    ) -> RotatedOneHot:
        kind = "rotated_onehot"
        return RotatedOneHot(self._arithmetic(kind, shape), self._arithmetic(kind, (*shape, size)))

    def lookup_table(self, name: str, shape: tuple[int, ...]) -> LookupMaterial:
        shape = tuple(shape)
        count = math.prod(shape)
        mask = BinaryShares(self._take("lookup_table", lookup.mask_words(count)).reshape(1, -1), self.lead)
        words = lookup.table_words(name)
        table = BinaryShares(self._take("lookup_table", count * words).reshape(1, *shape, words), self.lead)
        return LookupMaterial(mask, table)


AnyDealer: TypeAlias = Dealer | RemoteDealer | RecordingDealer
"""What an :class:`~privbandits.mpc.Engine` draws its correlated randomness from: the dealer itself, its answers
in a computing party's own process, or a recording of its calls."""
