"""Typed messages: dataclasses whose fields are numpy arrays or scalars.

A protocol declares each message it sends with :func:`message`, which makes
the class a slotted dataclass (not frozen: its arrays could be mutated anyway,
and frozen construction costs several times more per message in the hot loop) and registers it under a ``kind`` name
so that :mod:`privbandits.comm.codec` can rebuild it from bytes. The size a
message costs on the wire is :meth:`Message.payload_bytes`: the bytes of its
arrays plus one float64 word per number, the count every paper's cost model uses
(float64 elements); framing overhead is left to the transport.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import ClassVar, TypeVar, dataclass_transform

import numpy as np

_REGISTRY: dict[str, type[Message]] = {}

SCALAR_BYTES = 8
"""Wire size of one int or float field (int64 / float64)."""

_NUMBERS = (int, float, np.integer, np.floating)
_SIZE_OF_TYPE = {
    int: SCALAR_BYTES,
    float: SCALAR_BYTES,
    bool: 1,
    np.bool_: 1,
    np.int64: SCALAR_BYTES,
    np.float64: SCALAR_BYTES,
}
"""Payload sizes of the commonest scalar types, looked up before :func:`field_bytes`'s general checks."""


M = TypeVar("M", bound="Message")
"""A message class, as :func:`message` and a typed ``receive`` pass it through."""


class Message:
    """Base class of every message; subclasses are made with :func:`message`."""

    kind: ClassVar[str]
    field_names: ClassVar[tuple[str, ...]]
    _array_fields: ClassVar[tuple[str, ...]]
    _other_fields: ClassVar[tuple[str, ...]]
    __slots__ = ()

    def payload_bytes(self) -> int:
        """Bytes of payload: array data, 8 per number, 1 per boolean, UTF-8 length of strings."""
        total = 0
        for name in self._array_fields:
            total += getattr(self, name).nbytes
        for name in self._other_fields:
            value = getattr(self, name)
            size = _SIZE_OF_TYPE.get(type(value))
            total += field_bytes(value) if size is None else size
        return total


def field_bytes(value: object) -> int:
    """Payload size of one field value (see :class:`Message`)."""
    if isinstance(value, np.ndarray):
        return value.nbytes
    if isinstance(value, bool | np.bool_):
        return 1
    if isinstance(value, _NUMBERS):
        return SCALAR_BYTES
    if isinstance(value, str):
        return len(value.encode())
    if value is None:
        return 0
    raise TypeError(f"message fields must be numpy arrays, numbers, booleans or strings, got {type(value).__name__}")


@dataclass_transform(eq_default=False)
def message(kind: str) -> Callable[[type[M]], type[M]]:
    """Class decorator: a slotted dataclass registered as message ``kind``.

    Declared a dataclass transform (PEP 681), so a type checker sees each message's fields and constructor.
    """

    def register(cls: type[M]) -> type[M]:
        if kind in _REGISTRY:
            raise ValueError(f"message kind {kind!r} is already registered by {_REGISTRY[kind].__qualname__}")
        made = dataclasses.dataclass(slots=True, eq=False)(cls)
        made.kind = kind
        fields = dataclasses.fields(made)  # type: ignore[arg-type]  # a dataclass since the line above
        made.field_names = tuple(f.name for f in fields)
        made._array_fields = tuple(f.name for f in fields if "ndarray" in str(f.type))
        made._other_fields = tuple(f.name for f in fields if "ndarray" not in str(f.type))
        _REGISTRY[kind] = made
        return made

    return register


def message_class(kind: str) -> type[Message]:
    """The class registered under ``kind``; KeyError with the known kinds otherwise."""
    try:
        return _REGISTRY[kind]
    except KeyError:
        known = ", ".join(sorted(_REGISTRY)) or "none"
        raise KeyError(f"unknown message kind {kind!r}; known kinds: {known}") from None
