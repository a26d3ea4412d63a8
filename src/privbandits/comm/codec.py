"""Bytes on the wire: encode an :class:`Envelope` and decode it back, checked.

Layout: the header's length as a big-endian u32; a UTF-8 JSON header (sender, receiver, phase,
message kind, the name and type of each number field, the dtype and shape of each array
field, then the other scalar fields' values), padded with spaces to a multiple of ``_ALIGN``
bytes with the length; the numbers as little-endian 64-bit words (``<i8`` for an int in the int64
range, ``<f8`` for a float, bit for bit); then the raw C-order bytes of the arrays in header
order. Strings, booleans, None and larger ints travel as JSON in the header.

Messages of one kind on one route differ in their numbers and arrays only, so their headers
are the same bytes: encoded once and parsed and checked once (cached). Any network transport
can ship these bytes; the in-memory network can round-trip every message through them to
prove a protocol uses nothing but what is sent.
"""

from __future__ import annotations

import functools
import json
import json.scanner
import math
import struct
from typing import NamedTuple

import numpy as np

from privbandits.comm.messages import Message, field_bytes, message_class

_LENGTH = struct.Struct(">I")
_ALIGN = 8
"""The header is padded so that the words and arrays begin at a multiple of this (a receiver can use them in place)."""
_ALLOWED_DTYPES = {"<f8", "<i8", "<u8", "|b1", "<f4", "<i4", "|u1"}
_LITTLE_ENDIAN = {np.dtype(name): name for name in _ALLOWED_DTYPES}
"""The allowed dtypes as arrays carry them on a little-endian machine (an array of one goes out as it is)."""
_WORD = {"<i8": "q", "<f8": "d"}
"""The number fields' types and their struct codes (64-bit words)."""
_INT64 = (-(2**63), 2**63)


class MessageDecodeError(ValueError):
    """Bytes that do not decode to a valid message."""


class Envelope(NamedTuple):
    """A message in transit: who sent it, to whom, in which protocol phase."""

    sender: str
    receiver: str
    phase: str
    message: Message


def encode(envelope: Envelope) -> bytes:
    """Serialise an envelope (numbers and arrays as little-endian raw bytes)."""
    parts, _ = encode_parts(envelope)
    return b"".join(parts)


def encode_parts(envelope: Envelope) -> tuple[list, int]:
    """:func:`encode`'s bytes as buffers not yet joined (the length prefix and header, the words, then each array),
    and their total length: a transport joins them with its own frame header in one copy."""
    number_fields: list[tuple[str, str]] = []
    array_fields: list[tuple[str, str, tuple[int, ...]]] = []
    values: list[int | float] = []
    scalars: dict[str, object] = {}
    buffers: list[np.ndarray] = []
    message = envelope.message
    length = 0
    for name in message.field_names:
        value = getattr(message, name)
        if isinstance(value, np.ndarray):
            dtype = _LITTLE_ENDIAN.get(value.dtype)
            if dtype is not None and value.flags.c_contiguous:
                data = value  # joined as it is: no conversion, no intermediate copy
            else:
                data = np.ascontiguousarray(value, dtype=value.dtype.newbyteorder("<"))
                dtype = data.dtype.str
                if dtype not in _ALLOWED_DTYPES:
                    raise TypeError(f"field {name!r} has unsupported dtype {value.dtype}")
            array_fields.append((name, dtype, data.shape))
            buffers.append(data)
            length += data.nbytes
            continue
        if isinstance(value, np.generic):
            value = value.item()
        kind = type(value)
        if kind is float or (kind is int and _INT64[0] <= value < _INT64[1]):
            number_fields.append((name, "<f8" if kind is float else "<i8"))
            values.append(value)
        else:  # strings, booleans, None, ints beyond int64: JSON in the header
            scalars[name] = value
    route, numbers, arrays = (
        (envelope.sender, envelope.receiver, envelope.phase, message.kind),
        tuple(number_fields),
        tuple(array_fields),
    )
    if scalars:  # the scalars' JSON ends the header, after the cached rest
        head = _padded(_before_scalars(route, numbers, arrays) + _scalars_json(scalars).encode() + b"}")
        prefix, words = _LENGTH.pack(len(head)) + head, _words(tuple(code for _, code in numbers))
    else:  # the whole header repeats
        prefix, words = _framing(route, numbers, arrays)
    parts = [prefix, words.pack(*values), *buffers] if values else [prefix, *buffers]
    return parts, len(prefix) + 8 * len(values) + length


_JSON = json.JSONEncoder(separators=(",", ":"))
"""Compact JSON, one encoder (``json.dumps`` with separators builds a new one per call)."""


def _scalars_json(scalars: dict) -> str:
    """``_JSON.encode(scalars)``, with ints and finite floats written directly (their JSON is their repr)."""
    parts = []
    for name, value in scalars.items():
        kind = type(value)
        if kind is int or (kind is float and math.isfinite(value)):
            text = repr(value)
        else:  # strings (escaped), booleans, None, non-finite floats
            text = _JSON.encode(value)
        key = _KEYS.get(name)
        if key is None:
            key = _KEYS[name] = f'"{name}":' if name.isascii() and name.isidentifier() else f"{_JSON.encode(name)}:"
        parts.append(key + text)
    return "{" + ",".join(parts) + "}"


_KEYS: dict[str, str] = {}
"""Each field name's JSON key with its colon (message classes have few names)."""


def _header(route: tuple[str, str, str, str], numbers: tuple, arrays: tuple, scalars: dict) -> bytes:
    sender, receiver, phase, kind = route
    header = {
        "sender": sender,
        "receiver": receiver,
        "phase": phase,
        "kind": kind,
        "numbers": [list(number) for number in numbers],
        "arrays": [{"name": name, "dtype": dtype, "shape": list(shape)} for name, dtype, shape in arrays],
        "scalars": scalars,
    }
    return _JSON.encode(header).encode()


def _padded(head: bytes) -> bytes:
    return head + b" " * (-(_LENGTH.size + len(head)) % _ALIGN)  # the words start 8-aligned (JSON allows spaces)


@functools.lru_cache(maxsize=4096)
def _framing(route: tuple[str, str, str, str], numbers: tuple, arrays: tuple) -> tuple[bytes, struct.Struct]:
    """A header without scalars with its length prefix, and the struct of its words."""
    head = _padded(_header(route, numbers, arrays, {}))
    return _LENGTH.pack(len(head)) + head, _words(tuple(code for _, code in numbers))


@functools.lru_cache(maxsize=4096)
def _before_scalars(route: tuple[str, str, str, str], numbers: tuple, arrays: tuple) -> bytes:
    """The header's bytes before its scalars object, which ends it (``json.dumps`` writes a nested object as it
    writes it alone, so a header is these, the scalars' own JSON and ``}``)."""
    head = _header(route, numbers, arrays, {})
    return head[: -len(_NO_SCALARS) + len(_SCALARS)]


@functools.lru_cache(maxsize=256)
def _words(codes: tuple[str, ...]) -> struct.Struct:
    return struct.Struct("<" + "".join(_WORD[code] for code in codes))


class _Layout(NamedTuple):
    """A checked header: the route, the message class, its JSON scalars and the place of its words and arrays."""

    sender: str
    receiver: str
    phase: str
    cls: type[Message]
    scalars: dict
    numbers: tuple[str, ...]
    """The number fields, in word order."""
    words: struct.Struct | None
    arrays: tuple[tuple[str, np.dtype, tuple[int, ...], int], ...]
    """``(name, dtype, shape, bytes)`` per array, in payload order."""
    size: int
    """Bytes of the words and arrays: the message's payload bytes, less its JSON scalars'
    (:meth:`~privbandits.comm.messages.Message.payload_bytes` counts 8 a number, as a word takes)."""


@functools.lru_cache(maxsize=4096)
def _layout(head: bytes, scalar_names: tuple[str, ...] = ()) -> _Layout:
    """Parse and check a header once (bytes seen before come from the cache; errors are not cached).

    ``scalar_names``: the scalars of a header whose scalars object was cut out (:func:`_split`)."""
    try:
        header = json.loads(head)
        kind = header["kind"]
        cls = message_class(kind)
        scalars, numbers, specs = dict(header["scalars"]), list(header["numbers"]), list(header["arrays"])
        scalars.update(dict.fromkeys(scalar_names))
        route = (str(header["sender"]), str(header["receiver"]), str(header["phase"]))
        for number in numbers:
            if not (isinstance(number, list) and len(number) == 2 and type(number[0]) is str and number[1] in _WORD):
                raise MessageDecodeError(f"bad number field {number!r}: expected [name, '<i8' or '<f8']")
        arrays = []
        for spec in specs:
            name, dtype, shape = spec["name"], spec["dtype"], spec["shape"]
            if dtype not in _ALLOWED_DTYPES:
                raise MessageDecodeError(f"field {name!r} has unsupported dtype {dtype!r}")
            if not isinstance(shape, list) or not all(type(n) is int and n >= 0 for n in shape):
                raise MessageDecodeError(f"array {name!r} has an invalid shape {shape}")
            dtype = np.dtype(dtype)
            arrays.append((name, dtype, tuple(shape), dtype.itemsize * math.prod(shape)))
    except MessageDecodeError:
        raise
    except (ValueError, KeyError, TypeError) as exc:
        raise MessageDecodeError(f"bad message header: {exc}") from None
    names = [*scalars, *(name for name, _ in numbers), *(name for name, *_ in arrays)]
    expected = set(cls.field_names)
    if len(names) != len(expected) or set(names) != expected:
        missing, extra = sorted(expected - set(names)), sorted(set(names) - expected)
        raise MessageDecodeError(f"{kind!r} message fields do not match: missing {missing}, unexpected {extra}")
    words = _words(tuple(code for _, code in numbers)) if numbers else None
    size = 8 * len(numbers) + sum(array[3] for array in arrays)
    return _Layout(
        *route, cls, {} if scalar_names else scalars, tuple(n for n, _ in numbers), words, tuple(arrays), size
    )


_SCALARS, _NO_SCALARS = b',"scalars":', b',"scalars":{}}'
_SCAN = json.scanner.make_scanner(json.JSONDecoder())  # type: ignore[arg-type]  # typeshed: a context, not a scanner
"""The JSON decoder's scanner: ``(value, end)`` of the JSON value at an index of a str (StopIteration if none)."""


def _split(head: bytes) -> tuple[_Layout, dict]:
    """The layout and JSON scalars of ``head``. A header without scalars is the same bytes for every message of
    one kind on one route (cached whole); one with scalars ends with them, so the rest (the structure) is checked
    once and cached, and the scalars object is parsed per message. A quote inside a JSON string is escaped, so
    the marker is found only where it structures the header; anything unusual takes the whole header through
    :func:`_layout`."""
    body = head.rstrip(b" ")
    if not body.endswith(_NO_SCALARS):
        start = body.rfind(_SCALARS)
        if start > 0 and body.endswith(b"}}"):
            try:
                text = body[start + len(_SCALARS) : -1].decode()
                scalars, end = _SCAN(text, 0)  # json.loads without its Python layers (1.6 of its 2 us)
                if type(scalars) is dict and scalars and end == len(text):
                    return _layout(body[:start] + _NO_SCALARS, tuple(scalars)), scalars
            except (ValueError, StopIteration, MessageDecodeError):
                pass
    layout = _layout(head)
    return layout, layout.scalars


def decode(data: bytes | bytearray) -> Envelope:
    """Rebuild an envelope; :class:`MessageDecodeError` says what is wrong.

    The arrays are copies of ``bytes``; from a ``bytearray`` (a transport's fresh buffer per
    frame, handed over) they are views of it, writable and aligned as numpy allocates them.
    """
    return decode_counted(data)[0]


def decode_counted(data: bytes | bytearray) -> tuple[Envelope, int]:
    """:func:`decode`, and the message's payload bytes as :meth:`Message.payload_bytes` counts them."""
    if len(data) < _LENGTH.size:
        raise MessageDecodeError(f"message too short: {len(data)} bytes, need at least {_LENGTH.size}")
    (head_length,) = _LENGTH.unpack_from(data)
    offset = _LENGTH.size + head_length
    if len(data) < offset:
        raise MessageDecodeError(f"truncated header: need {offset} bytes, got {len(data)}")
    head = bytes(data[_LENGTH.size : offset])
    if head.rstrip(b" ").endswith(_NO_SCALARS):  # the header of every message of its kind on its route
        layout, fields, size = _layout(head), {}, 0
    else:
        layout, scalars = _split(head)
        fields, size = dict(scalars), sum(field_bytes(value) for value in scalars.values())
    if len(data) - offset != layout.size:
        _check_sizes(layout, data, offset)
    if layout.words is not None:
        fields.update(zip(layout.numbers, layout.words.unpack_from(data, offset), strict=True))
        offset += layout.words.size
    owned = isinstance(data, bytearray)
    for name, dtype, shape, nbytes in layout.arrays:
        array = np.ndarray(shape, dtype, data, offset)
        fields[name] = array if owned and array.flags.aligned else array.copy()
        offset += nbytes
    envelope = _new_tuple(Envelope, (layout.sender, layout.receiver, layout.phase, layout.cls(**fields)))
    return envelope, size + layout.size


_new_tuple = tuple.__new__
"""Builds a named tuple from its fields without the Python-level ``__new__`` (a third of an envelope's cost)."""


def _check_sizes(layout: _Layout, data: bytes | bytearray, offset: int) -> None:
    """Name what does not fit, or the trailing bytes (the words and arrays take ``layout.size`` bytes)."""
    if layout.words is not None:
        if offset + layout.words.size > len(data):
            raise MessageDecodeError(f"truncated numbers: need {layout.words.size} bytes at offset {offset}")
        offset += layout.words.size
    for name, _, _, size in layout.arrays:
        if offset + size > len(data):
            raise MessageDecodeError(f"truncated array {name!r}: need {size} bytes at offset {offset}")
        offset += size
    raise MessageDecodeError(f"{len(data) - offset} unexpected trailing bytes after the arrays")
