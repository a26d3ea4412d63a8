"""Arithmetic and binary (XOR) secret sharing over Z_2^64 (spec §3.2–3.3, paper App. A).

A shared array is one uint64 numpy array whose axis 0 is the party. In the stacked
simulator row ``p`` is party ``p``'s share, so every local operation is one vectorised
numpy call over all parties at once. A computing party running alone (its own process,
:class:`~privbandits.mpc.Engine` with ``local=``) holds arrays with one row, its own
share, and ``lead`` says whether it is party 0, the party that applies public constants
(spec §3.2: "exactly one party adds it"). The same protocol code runs on both.
:class:`ArithmeticShares` also carries the fixed-point ``scale`` (fractional bits) of the
secret: ``L`` for encoded reals, 0 for integers and bits.
Only the linear operations that need no communication live here (spec §3.2:
addition, public constants, public integer factors, concatenation, sums).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from privbandits.mpc.fixed_point import encode
from privbandits.mpc.ring import WORD, random_words


def share(secret: np.ndarray, n_parties: int, rng: np.random.Generator, owner: int = 0) -> np.ndarray:
    """Additive shares ``(n_parties, *secret.shape)`` of ring words ``secret``.

    The owner keeps ``secret − Σ_{q≠owner} s_q``; the others' shares are uniform.
    """
    _check_parties(n_parties)
    secret = np.asarray(secret, dtype=WORD)
    shares = random_words(rng, (n_parties, *secret.shape))
    shares[owner] = 0
    shares[owner] = secret - shares.sum(axis=0, dtype=WORD)
    return shares


def reconstruct(shares: np.ndarray) -> np.ndarray:
    """The ring words ``Σ_p s_p mod 2^64`` shared by ``shares``."""
    shares = np.asarray(shares, dtype=WORD)
    return shares[0] + shares[1] if len(shares) == 2 else shares.sum(axis=0, dtype=WORD)


def share_xor(secret: np.ndarray, n_parties: int, rng: np.random.Generator, owner: int = 0) -> np.ndarray:
    """XOR shares ``(n_parties, *secret.shape)`` of ring words ``secret``."""
    _check_parties(n_parties)
    secret = np.asarray(secret, dtype=WORD)
    shares = random_words(rng, (n_parties, *secret.shape))
    shares[owner] = 0
    shares[owner] = secret ^ np.bitwise_xor.reduce(shares, axis=0)
    return shares


def reconstruct_xor(shares: np.ndarray) -> np.ndarray:
    """The words ``⊕_p s_p`` shared by XOR ``shares``."""
    return np.bitwise_xor.reduce(np.asarray(shares, dtype=WORD), axis=0)


def _check_parties(n_parties: int) -> None:
    if n_parties < 2:
        raise ValueError(f"secret sharing needs n_parties >= 2, got {n_parties}")


def common_shape(first: tuple[int, ...], second: tuple[int, ...]) -> tuple[int, ...]:
    """The broadcast shape of two secret shapes (fast when they are equal)."""
    return first if first == second else np.broadcast_shapes(first, second)


def expand(shares: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Broadcast share array ``shares`` (party axis 0) to secret shape ``shape`` (read-only view)."""
    if shares.shape[1:] == shape:
        return shares
    missing = len(shape) - (shares.ndim - 1)
    aligned = shares.reshape(shares.shape[:1] + (1,) * missing + shares.shape[1:])
    return np.broadcast_to(aligned, (shares.shape[0], *shape))


def _value_axis(axis: int) -> int:
    """Axis of the share array for value axis ``axis`` (axis 0 is the party)."""
    return axis + 1 if axis >= 0 else axis


class _Shared:
    """Shares of a secret array on axis 0 (uint64 words): every party's (stacked), or one party's own.

    ``lead``: row 0 is party 0's share, so public constants are applied to it. Stacked
    arrays (>= 2 rows) always lead; a single party's array (1 row) must say it.
    """

    __slots__ = ("shares", "lead")
    __array_ufunc__ = None  # numpy operands defer to our reflected operators

    def __init__(self, shares: np.ndarray, lead: bool | None = None) -> None:
        if shares.dtype != WORD or shares.ndim < 1 or not shares.shape[0]:
            raise ValueError(f"shares must be uint64 with a party axis, got {shares.dtype} {shares.shape}")
        if lead is None:
            if shares.shape[0] < 2:
                raise ValueError(
                    "one party's shares (a party axis of length 1) must say whether that party is party 0 (lead=)"
                )
            lead = True
        self.shares, self.lead = shares, lead

    @property
    def n_parties(self) -> int:
        """Rows held: the number of parties when stacked, 1 for a single party's own shares."""
        return self.shares.shape[0]

    @property
    def shape(self) -> tuple[int, ...]:
        """Shape of the secret (without the party axis)."""
        return self.shares.shape[1:]


class ArithmeticShares(_Shared):
    """``[x]``: additive shares of a fixed-point array with ``scale`` fractional bits."""

    __slots__ = ("scale",)

    def __init__(self, shares: np.ndarray, scale: int, lead: bool | None = None) -> None:
        super().__init__(shares, lead)
        self.scale = scale

    def __repr__(self) -> str:
        return f"ArithmeticShares(parties={self.n_parties}, shape={self.shape}, scale={self.scale})"

    def _like(self, shares: np.ndarray) -> ArithmeticShares:
        return ArithmeticShares(shares, self.scale, self.lead)

    def _public(self, value: np.typing.ArrayLike) -> ArithmeticShares:
        """Shares of a public value at this scale: party 0 holds it, the others 0."""
        words = encode(value, self.scale)
        shares = np.zeros((self.n_parties, *words.shape), dtype=WORD)
        if self.lead:
            shares[0] = words
        return self._like(shares)

    def _pair(self, other: ArithmeticShares | np.typing.ArrayLike) -> tuple[np.ndarray, np.ndarray]:
        """Both operands' shares broadcast to their common secret shape."""
        operand = self._operand(other)
        shape = common_shape(self.shape, operand.shape)
        return expand(self.shares, shape), expand(operand.shares, shape)

    def _operand(self, other: ArithmeticShares | np.typing.ArrayLike) -> ArithmeticShares:
        if isinstance(other, ArithmeticShares):
            if other.scale != self.scale or other.n_parties != self.n_parties or other.lead != self.lead:
                raise ValueError(
                    f"cannot combine shares of scale {self.scale} over {self.n_parties} parties "
                    f"with shares of scale {other.scale} over {other.n_parties} parties"
                )
            return other
        if isinstance(other, BinaryShares):
            raise TypeError("cannot mix arithmetic and binary shares; convert with a2b or b2a")
        return self._public(other)

    def _shifted(self, constant: float, negate: bool = False) -> ArithmeticShares:
        """``±[x] + c`` for a public scalar c: party 0 adds it (fast path of the operators)."""
        shares = np.negative(self.shares) if negate else self.shares.copy()
        if self.lead:
            shares[0] += encode(constant, self.scale)
        return self._like(shares)

    def __add__(self, other: ArithmeticShares | np.typing.ArrayLike) -> ArithmeticShares:
        if type(other) is float or type(other) is int:
            return self._shifted(other)
        mine, theirs = self._pair(other)
        return self._like(mine + theirs)

    __radd__ = __add__

    def __sub__(self, other: ArithmeticShares | np.typing.ArrayLike) -> ArithmeticShares:
        if type(other) is float or type(other) is int:
            return self._shifted(-other)
        mine, theirs = self._pair(other)
        return self._like(mine - theirs)

    def __rsub__(self, other: ArithmeticShares | np.typing.ArrayLike) -> ArithmeticShares:
        if type(other) is float or type(other) is int:
            return self._shifted(other, negate=True)
        mine, theirs = self._pair(other)
        return self._like(theirs - mine)

    def __neg__(self) -> ArithmeticShares:
        return self._like(np.negative(self.shares))

    def __mul__(self, factor: object) -> ArithmeticShares:
        """Product with a public *integer* (local, spec §3.2); use ``Engine.mul`` for shares."""
        value = None if isinstance(factor, ArithmeticShares | BinaryShares) else np.asarray(factor)
        if value is None or value.dtype.kind not in "iub":
            raise TypeError(
                "shares can be multiplied locally only by public integers; "
                "use Engine.mul for shares and Engine.mul_public for real factors"
            )
        factor = value.astype(np.int64).view(WORD)
        return self._like(expand(self.shares, common_shape(self.shape, factor.shape)) * factor)

    __rmul__ = __mul__

    def __getitem__(self, key: object) -> ArithmeticShares:
        key = key if isinstance(key, tuple) else (key,)
        return self._like(self.shares[(slice(None), *key)])

    def reshape(self, *shape: int) -> ArithmeticShares:
        return self._like(self.shares.reshape(self.n_parties, *shape))

    def swapaxes(self, a: int, b: int) -> ArithmeticShares:
        return self._like(self.shares.swapaxes(_value_axis(a), _value_axis(b)))

    @property
    def mT(self) -> ArithmeticShares:
        """Transpose of the last two axes."""
        return self.swapaxes(-1, -2)

    def sum(self, axis: int | None = None) -> ArithmeticShares:
        """Sum over a value axis (all of them if ``None``); local."""
        if axis is None:
            return self._like(self.shares.reshape(self.n_parties, -1).sum(axis=1, dtype=WORD))
        return self._like(self.shares.sum(axis=_value_axis(axis), dtype=WORD))


class BinaryShares(_Shared):
    """``⟨x⟩``: XOR shares of 64-bit words (spec §3.3)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"BinaryShares(parties={self.n_parties}, shape={self.shape})"

    def _like(self, shares: np.ndarray) -> BinaryShares:
        return BinaryShares(shares, self.lead)

    def __xor__(self, other: object) -> BinaryShares:
        """XOR with shares (local) or with public words (party 0 applies it)."""
        if isinstance(other, BinaryShares):
            shape = common_shape(self.shape, other.shape)
            return self._like(expand(self.shares, shape) ^ expand(other.shares, shape))
        public = np.asarray(other, dtype=WORD)
        if public.ndim > len(self.shape) or public.shape != self.shape[len(self.shape) - public.ndim :]:
            raise ValueError(f"public operand of shape {public.shape} does not fit shares of shape {self.shape}")
        shares = self.shares.copy()
        if self.lead:
            shares[0] ^= public
        return self._like(shares)

    __rxor__ = __xor__

    def __and__(self, mask: object) -> BinaryShares:
        """AND with public words (local); use ``Engine.and_`` for two shared operands."""
        if isinstance(mask, BinaryShares | ArithmeticShares):
            raise TypeError("AND of two shared values needs a protocol: use Engine.and_")
        return self._like(self.shares & np.asarray(mask, dtype=WORD))

    __rand__ = __and__

    def __lshift__(self, bits: int) -> BinaryShares:
        return self._like(self.shares << WORD(bits))

    def __rshift__(self, bits: int) -> BinaryShares:
        """Logical right shift of every share (linear over XOR)."""
        return self._like(self.shares >> WORD(bits))

    def __getitem__(self, key: object) -> BinaryShares:
        key = key if isinstance(key, tuple) else (key,)
        return self._like(self.shares[(slice(None), *key)])


def _common_scale(parts: Sequence[ArithmeticShares], verb: str) -> int:
    """The one scale of ``parts`` (ValueError if there are none or several)."""
    if not parts:
        raise ValueError(f"{verb} needs at least one shared array")
    scales = {part.scale for part in parts}
    if len(scales) != 1:
        raise ValueError(f"cannot {verb} shares of different scales {sorted(scales)}")
    return parts[0].scale


def concatenate(parts: Sequence[ArithmeticShares], axis: int = -1) -> ArithmeticShares:
    """Concatenate shared arrays of one scale along a value axis (local, spec §3.2)."""
    scale = _common_scale(parts, "concatenate")
    return ArithmeticShares(np.concatenate([p.shares for p in parts], axis=_value_axis(axis)), scale, parts[0].lead)


def stack(parts: Sequence[ArithmeticShares], axis: int = 0) -> ArithmeticShares:
    """Stack shared arrays of one scale along a new value axis (local)."""
    scale = _common_scale(parts, "stack")
    return ArithmeticShares(np.stack([p.shares for p in parts], axis=_value_axis(axis)), scale, parts[0].lead)
