"""Declarative checks for every public boundary of the library (issue 14).

In the spirit of scikit-learn's ``_parameter_constraints``: an object states
what each of its parameters may be, as a dict of constraints, and one call
checks them all at construction::

    validate("LinUCB", {"n_arms": Integer(low=1), "alpha": Real(low=0)},
             {"n_arms": n_arms, "alpha": alpha})

Rules, the same everywhere:

* integers are integers: Python ``int`` or numpy integers; ``bool`` is not a
  number, and ``4.5`` or ``10.0`` are not integers;
* reals are ``int``/``float`` or numpy numbers (not ``bool``, not strings)
  and must be finite unless a constraint says otherwise;
* ranges and choices are checked when an object is built, not mid-run;
* a message names the parameter, the allowed values and the value given:
  ``"LinUCB: alpha must be a finite real number >= 0, got nan"``.

Per-round checks (arms, rewards, contexts) are separate small functions
tuned for hot paths: a type test and two comparisons for an arm, one
``math.isfinite`` for a reward, a shape compare and one dot product for a
context row. They run before an object touches its state, so a rejected call
leaves it exactly as it was.

Every failure raises :class:`InvalidInputError`, a subclass of both
``ValueError`` and ``TypeError`` (as scikit-learn's ``InvalidParameterError``),
so existing ``except ValueError`` code keeps working. Calls in the wrong order
(``update`` before ``select``) raise :class:`CallOrderError`.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any, Generic, Literal, TypeGuard, TypeVar, cast

import numpy as np
from numpy.typing import DTypeLike

__all__ = [
    "Boolean",
    "CallOrderError",
    "Choice",
    "Constraint",
    "Instance",
    "Integer",
    "IntegerSequence",
    "InvalidInputError",
    "NoneOr",
    "Real",
    "Text",
    "check",
    "check_arm",
    "check_context_row",
    "check_finite_array",
    "check_index",
    "check_integer_sequence",
    "check_reward",
    "check_shape",
    "describe",
    "read_only",
    "validate",
]


class InvalidInputError(ValueError, TypeError):
    """A parameter or an argument outside what the callee accepts (names both, and the value given)."""


class CallOrderError(RuntimeError):
    """A method called out of the protocol's order (e.g. ``update`` before ``select``)."""


def describe(value: object) -> str:
    """A short repr of a value for an error message (arrays by shape and dtype)."""
    if isinstance(value, np.ndarray) and value.size > 8:
        return f"array of shape {value.shape} and dtype {value.dtype}"
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _is_integer(value: object) -> TypeGuard[int | np.integer]:
    return (type(value) is int) or (isinstance(value, numbers.Integral | np.integer) and not _is_bool(value))


def _is_bool(value: object) -> bool:
    return isinstance(value, bool | np.bool_)


def _is_real(value: object) -> TypeGuard[int | float | np.integer | np.floating]:
    if type(value) is float or type(value) is int:
        return True
    return isinstance(value, numbers.Real | np.integer | np.floating) and not _is_bool(value)


# -- declarative constraints -------------------------------------------------------------------
T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)


class Constraint(Generic[T_co]):
    """One allowed kind of value; :meth:`accepts` says whether ``value`` is one, :meth:`normalise` converts it
    (to a ``T_co``: what :func:`check` returns)."""

    def accepts(self, value: object) -> bool:
        raise NotImplementedError

    def normalise(self, value: object) -> T_co:
        return cast(T_co, value)  # accepted: one already

    def expected(self, value: object) -> str:
        """What the value must be, phrased for ``value``: its range alone when only the range is wrong."""
        return str(self)

    def __str__(self) -> str:
        raise NotImplementedError


def _number(value) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def _bounds(low, high, low_open: bool, high_open: bool) -> str:
    """``">= 0"``, ``"< 1"`` or ``"in (0, 1]"``."""
    if low is not None and high is not None:
        left, right = "(" if low_open else "[", ")" if high_open else "]"
        return f"in {left}{_number(low)}, {_number(high)}{right}"
    if low is not None:
        return f"{'>' if low_open else '>='} {_number(low)}"
    if high is not None:
        return f"{'<' if high_open else '<='} {_number(high)}"
    return ""


def _with_note(text: str, note: str) -> str:
    return f"{text} ({note})" if note else text


@dataclass(frozen=True)
class Integer(Constraint[int]):
    """An integer (not a bool, not a float) in ``[low, high]`` (either bound optional); ``note`` says what
    special values mean (``"0 = never"``)."""

    low: int | None = None
    high: int | None = None
    note: str = ""

    def accepts(self, value: object) -> bool:
        if not _is_integer(value):
            return False
        return bool((self.low is None or value >= self.low) and (self.high is None or value <= self.high))

    def normalise(self, value: object) -> int:
        return int(cast("int | np.integer", value))  # accepted: an integer

    @property
    def bounds(self) -> str:
        """The range alone: ``">= 1"``, ``"in [1, 26]"`` (empty when unbounded)."""
        return _bounds(self.low, self.high, False, False)

    def expected(self, value: object) -> str:
        bounds = self.bounds
        if _is_integer(value) and bounds:
            return _with_note(bounds, self.note)
        return str(self)

    def __str__(self) -> str:
        return _with_note(f"an integer {_bounds(self.low, self.high, False, False)}".rstrip(), self.note)


@dataclass(frozen=True)
class Real(Constraint[float]):
    """A real number (int, float or numpy number, not a bool) in a range; finite unless ``finite=False``."""

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    finite: bool = True
    note: str = ""

    def accepts(self, value: object) -> bool:
        if not _is_real(value):
            return False
        x = float(value)
        if x != x or (self.finite and not math.isfinite(x)):
            return False
        if self.low is not None and not (x > self.low if self.low_open else x >= self.low):
            return False
        return self.high is None or (x < self.high if self.high_open else x <= self.high)

    @property
    def bounds(self) -> str:
        """The range alone: ``">= 0"``, ``"in (0, 1]"`` (empty when unbounded)."""
        return _bounds(self.low, self.high, self.low_open, self.high_open)

    def expected(self, value: object) -> str:
        bounds = self.bounds
        if _is_real(value) and bounds and (math.isfinite(value) or not self.finite and value == value):
            return _with_note(bounds, self.note)
        return str(self)

    def __str__(self) -> str:
        kind = "a finite real number" if self.finite else "a real number (not NaN)"
        return _with_note(f"{kind} {_bounds(self.low, self.high, self.low_open, self.high_open)}".rstrip(), self.note)


@dataclass(frozen=True)
class Choice(Constraint[T_co]):
    """One of a fixed set of values, or a member (or value) of an Enum; normalised to the Enum member."""

    options: type[T_co] | tuple[T_co, ...]

    def _values(self) -> tuple:
        if isinstance(self.options, type) and issubclass(self.options, Enum):
            return tuple(member.value for member in self.options)
        return tuple(cast("Iterable[T_co]", self.options))

    def accepts(self, value: object) -> bool:
        if _is_bool(value) and not any(_is_bool(v) for v in self._values()):
            return False
        try:
            return value in self._values() or (
                isinstance(self.options, type) and issubclass(self.options, Enum) and isinstance(value, self.options)
            )
        except TypeError:  # unhashable or incomparable
            return False

    def normalise(self, value: object) -> T_co:
        if isinstance(self.options, type) and issubclass(self.options, Enum):
            return self.options(value)
        return cast(T_co, value)  # one of the options

    def __str__(self) -> str:
        return "one of " + ", ".join(repr(v) for v in self._values())


@dataclass(frozen=True)
class Boolean(Constraint[bool]):
    """``True`` or ``False`` (a Python or numpy bool; not 0, 1 or a string)."""

    def accepts(self, value: object) -> bool:
        return _is_bool(value)

    def normalise(self, value: object) -> bool:
        return bool(value)

    def __str__(self) -> str:
        return "a bool (True or False)"


@dataclass(frozen=True)
class Instance(Constraint[object]):
    """An instance of one of ``types``."""

    types: tuple[type, ...]
    label: str = ""

    def accepts(self, value: object) -> bool:
        return isinstance(value, self.types)

    def __str__(self) -> str:
        return self.label or "an instance of " + " or ".join(t.__name__ for t in self.types)


@dataclass(frozen=True)
class Text(Constraint[str]):
    """A string of at least ``min_length`` characters; ``label`` says what it names (``"a non-empty party name"``)."""

    min_length: int = 0
    label: str = ""

    def accepts(self, value: object) -> bool:
        return isinstance(value, str) and len(value) >= self.min_length

    def __str__(self) -> str:
        return self.label or (f"a string of at least {self.min_length} characters" if self.min_length else "a string")


@dataclass(frozen=True)
class IntegerSequence(Constraint[tuple[int, ...]]):
    """A sequence of at least ``min_length`` integers each ``>= low``, summing to ``>= min_sum``; normalised to a
    tuple of ints (as :func:`check_integer_sequence`)."""

    low: int | None = None
    min_length: int = 0
    min_sum: int | None = None

    def accepts(self, value: object) -> bool:
        try:
            items = check_integer_sequence(value, "", low=self.low, min_length=self.min_length)
        except InvalidInputError:
            return False
        return self.min_sum is None or sum(items) >= self.min_sum

    def normalise(self, value: object) -> tuple[int, ...]:
        return check_integer_sequence(value, "", low=self.low, min_length=self.min_length)

    def __str__(self) -> str:
        each = f"integers {_bounds(self.low, None, False, False)}".rstrip()
        total = f" summing to >= {self.min_sum}" if self.min_sum is not None else ""
        return f"a sequence of at least {self.min_length} {each}{total}"


@dataclass(frozen=True)
class NoneOr(Constraint[T_co | None]):
    """``None`` or a value ``inner`` accepts."""

    inner: Constraint[T_co]
    meaning: str = ""

    def accepts(self, value: object) -> bool:
        return value is None or self.inner.accepts(value)

    def normalise(self, value: object) -> T_co | None:
        return None if value is None else self.inner.normalise(value)

    def expected(self, value: object) -> str:
        return str(self) if self.meaning else self.inner.expected(value)

    def __str__(self) -> str:
        none = f"None ({self.meaning})" if self.meaning else "None"
        return f"{self.inner} or {none}"


def _where(owner: str | None) -> str:
    return f"{owner}: " if owner else ""


def check(value: object, name: str, constraint: Constraint[T], owner: str | None = None) -> T:
    """``value`` normalised by ``constraint``; else :class:`InvalidInputError` naming ``name``, the allowed values
    and ``value``."""
    if not constraint.accepts(value):
        raise InvalidInputError(f"{_where(owner)}{name} must be {constraint.expected(value)}, got {describe(value)}")
    return constraint.normalise(value)


def validate(
    owner: str | None, constraints: Mapping[str, Constraint[Any]], values: Mapping[str, object]
) -> dict[str, Any]:
    """Check every ``values[name]`` against ``constraints[name]``; the normalised values, or the first error."""
    return {name: check(values[name], name, constraint, owner) for name, constraint in constraints.items()}


def check_integer_sequence(
    values: object, name: str, *, low: int | None = None, min_length: int = 0, owner: str | None = None
) -> tuple[int, ...]:
    """A sequence of integers (no bools, no floats, even integral ones) each ``>= low``, as a tuple of ints."""
    if isinstance(values, str | bytes) or not isinstance(values, Iterable):
        raise InvalidInputError(f"{_where(owner)}{name} must be a sequence of integers, got {describe(values)}")
    items = tuple(values.tolist() if isinstance(values, np.ndarray) and values.dtype.kind in "iu" else values)
    constraint = Integer(low=low)
    for index, item in enumerate(items):
        if not constraint.accepts(item):
            raise InvalidInputError(
                f"{_where(owner)}{name} must hold {constraint}s, got {describe(item)} at position {index} "
                f"of {describe(values)}"
            )
    if len(items) < min_length:
        raise InvalidInputError(
            f"{_where(owner)}{name} must have at least {min_length} entries, got {describe(values)}"
        )
    return tuple(int(item) for item in items)


# -- per-call checks for hot paths -------------------------------------------------------------
def check_arm(arm: object, n_arms: int, name: str = "arm") -> int:
    """An arm index: an integer in ``[0, n_arms)``; a bool, a float, -1 or ``n_arms`` are refused."""
    if type(arm) is int or (isinstance(arm, np.integer)):
        if 0 <= arm < n_arms:
            return cast(int, arm)  # a numpy integer is returned as given: it indexes and computes as an int
        raise InvalidInputError(f"{name} must be an integer in [0, n_arms) = [0, {n_arms}), got {arm!r}")
    raise InvalidInputError(f"{name} must be an integer in [0, n_arms) = [0, {n_arms}), got {describe(arm)}")


def check_index(value: object, upper: int, name: str, upper_name: str) -> int:
    """An integer in ``[0, upper)`` (a user id, a model index), as :func:`check_arm` for another range."""
    if type(value) is int or (isinstance(value, np.integer)):
        if 0 <= value < upper:
            return cast(int, value)  # as in check_arm
    raise InvalidInputError(f"{name} must be an integer in [0, {upper_name}) = [0, {upper}), got {describe(value)}")


def check_reward(reward: object, name: str = "reward") -> float:
    """A finite real reward as a float (an int, a float or a numpy number; not a bool or a string)."""
    if type(reward) is float:
        if reward - reward == 0.0:  # finite: inf - inf and nan - nan are NaN
            return reward
    elif _is_real(reward) and math.isfinite(reward):
        return float(reward)
    raise InvalidInputError(f"{name} must be a finite real number, got {describe(reward)}")


def check_shape(array: object, shape: tuple[int, ...], name: str, what: str = "") -> np.ndarray:
    """``array`` (an ndarray, or anything ``np.asarray`` takes) if its shape is ``shape``."""
    got = getattr(array, "shape", None)
    if got is None or not isinstance(array, np.ndarray):
        array = np.asarray(array)
        got = array.shape
    if got != shape:
        need = f" ({what})" if what else ""
        raise InvalidInputError(f"{name} has shape {got}; expected {shape}{need}")
    return array


def check_finite_array(array: np.ndarray, name: str) -> None:
    """Refuse NaN or infinite entries (and non-numeric dtypes), naming the first bad position."""
    if array.dtype.kind not in "fiub":
        raise InvalidInputError(f"{name} must be a real-valued array, got dtype {array.dtype}")
    if array.dtype.kind == "f" and not np.isfinite(array).all():
        bad = tuple(int(i) for i in np.argwhere(~np.isfinite(array))[0])
        raise InvalidInputError(
            f"{name} must be finite (no NaN or inf), got {float(array[bad])!r} "
            f"at index {bad if len(bad) != 1 else bad[0]}"
        )


def check_context_row(x: np.ndarray, name: str) -> None:
    """Refuse a context row whose entries are not finite or whose squared norm overflows (one dot product)."""
    with np.errstate(over="ignore", invalid="ignore"):
        squared = x.dot(x)
    if not squared < math.inf:  # False for NaN and inf: a NaN or infinite entry, or |x|^2 > 1.8e308
        check_finite_array(x, name)
        raise InvalidInputError(
            f"{name} is too large: its squared norm overflows float64 (max |x_i| = {np.abs(x).max():g})"
        )


# -- arrays ------------------------------------------------------------------------------------
def read_only(
    value: object, dtype: DTypeLike | None = None, *, copy: bool = True, order: Literal["K", "A", "C", "F"] = "K"
) -> np.ndarray:
    """A read-only array of ``value``: a copy (``copy=True``, in ``dtype`` and ``order``) or a read-only view.

    Data classes that hand out arrays (loaded logs, server models shared by every
    user) freeze them so a caller cannot change them by accident.
    """
    if copy:
        array = np.array(value, dtype=dtype, order=order, copy=True)
    else:
        array = np.asarray(value).view()
    array.flags.writeable = False
    return array
