"""Bytes on the wire: encode an :class:`Envelope` and decode it back, checked.

Layout: a 4-byte big-endian header length, a UTF-8 JSON header (sender,
receiver, phase, message kind, scalar fields, and dtype/shape of each array
field; padded with spaces to a multiple of 8 bytes with the length), then the
raw C-order bytes of the arrays in header order. Any network
transport can ship these bytes; the in-memory network can round-trip every
message through them to prove a protocol uses nothing but what is sent.
"""

from __future__ import annotations

import functools
import json
import json.scanner
import math
import struct
from typing import NamedTuple

import numpy as np

from privbandits.comm.messages import Message, message_class

_LENGTH = struct.Struct(">I")
_ALIGN = 8
"""The header is padded so that the arrays begin at a multiple of this (a receiver can use them in place)."""
_ALLOWED_DTYPES = {"<f8", "<i8", "<u8", "|b1", "<f4", "<i4", "|u1"}
_LITTLE_ENDIAN = {np.dtype(name): name for name in _ALLOWED_DTYPES}
"""The allowed dtypes as arrays carry them on a little-endian machine (an array of one goes out as it is)."""


class MessageDecodeError(ValueError):
    """Bytes that do not decode to a valid message."""


class Envelope(NamedTuple):
    """A message in transit: who sent it, to whom, in which protocol phase."""

    sender: str
    receiver: str
    phase: str
    message: Message


def encode(envelope: Envelope) -> bytes:
    """Serialise an envelope (arrays as little-endian raw bytes)."""
    parts, _ = encode_parts(envelope)
    return b"".join(parts)


def encode_parts(envelope: Envelope) -> tuple[list, int]:
    """:func:`encode`'s bytes as buffers not yet joined (the length prefix and header, then each array), and
    their total length: a transport joins them with its own frame header in one copy."""
    scalars, arrays, buffers = {}, [], []
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
            arrays.append((name, dtype, data.shape))
            buffers.append(data)
            length += data.nbytes
        else:
            scalars[name] = value.item() if isinstance(value, np.generic) else value
    route, arrays = (envelope.sender, envelope.receiver, envelope.phase, message.kind), tuple(arrays)
    if scalars:  # only the scalars' JSON changes between messages of one kind on one route
        before, after = _around_scalars(route, arrays)
        head = _padded(before + _scalars_json(scalars).encode() + after)
    else:  # the whole header repeats (an MPC opening's differs only in its arrays' bytes)
        head = _array_header(route, arrays)
    return [_LENGTH.pack(len(head)) + head, *buffers], _LENGTH.size + len(head) + length


_JSON = json.JSONEncoder(separators=(",", ":"))
"""Compact JSON, one encoder (``json.dumps`` with separators builds a new one per call)."""
_MARK = "\x00scalars\x00"


def _scalars_json(scalars: dict) -> str:
    """``_JSON.encode(scalars)``, with ints and finite floats written directly (their JSON is their repr)."""
    parts = []
    for name, value in scalars.items():
        kind = type(value)
        if kind is int or (kind is float and math.isfinite(value)):
            text = repr(value)
        else:  # strings (escaped), booleans, None, non-finite floats
            text = _JSON.encode(value)
        parts.append(f'"{name}":{text}' if name.isascii() and name.isidentifier() else f"{_JSON.encode(name)}:{text}")
    return "{" + ",".join(parts) + "}"


def _header(route: tuple[str, str, str, str], scalars: object, arrays: tuple) -> bytes:
    sender, receiver, phase, kind = route
    header = {
        "sender": sender,
        "receiver": receiver,
        "phase": phase,
        "kind": kind,
        "scalars": scalars,
        "arrays": [{"name": name, "dtype": dtype, "shape": list(shape)} for name, dtype, shape in arrays],
    }
    return _JSON.encode(header).encode()


def _padded(head: bytes) -> bytes:
    return head + b" " * (-(_LENGTH.size + len(head)) % _ALIGN)  # the arrays start 8-aligned (JSON allows spaces)


@functools.lru_cache(maxsize=4096)
def _array_header(route: tuple[str, str, str, str], arrays: tuple) -> bytes:
    return _padded(_header(route, {}, arrays))


@functools.lru_cache(maxsize=4096)
def _around_scalars(route: tuple[str, str, str, str], arrays: tuple) -> tuple[bytes, bytes]:
    """The header's bytes before and after its scalars object: ``json.dumps`` writes a nested object as it
    writes it alone, so a header is these around its scalars' own JSON (one small dump per message)."""
    before, after = _header(route, _MARK, arrays).split(_JSON.encode(_MARK).encode())
    return before, after


class _Layout(NamedTuple):
    """A checked header: the route, the message class, its scalar fields and each array's place."""

    sender: str
    receiver: str
    phase: str
    cls: type[Message]
    scalars: dict
    arrays: tuple[tuple[str, np.dtype, tuple[int, ...], int], ...]
    """``(name, dtype, shape, element count)`` per array, in payload order."""


@functools.lru_cache(maxsize=4096)
def _layout(head: bytes, scalar_names: tuple[str, ...] = ()) -> _Layout:
    """Parse and check a header once (bytes seen before come from the cache; errors are not cached).

    ``scalar_names``: the scalars of a header whose scalars object was cut out (:func:`_split`)."""
    try:
        header = json.loads(head)
        kind = header["kind"]
        cls = message_class(kind)
        scalars, specs = dict(header["scalars"]), list(header["arrays"])
        scalars.update(dict.fromkeys(scalar_names))
        route = (str(header["sender"]), str(header["receiver"]), str(header["phase"]))
        arrays = []
        for spec in specs:
            name, dtype, shape = spec["name"], spec["dtype"], spec["shape"]
            if dtype not in _ALLOWED_DTYPES:
                raise MessageDecodeError(f"field {name!r} has unsupported dtype {dtype!r}")
            if not isinstance(shape, list) or not all(type(n) is int and n >= 0 for n in shape):
                raise MessageDecodeError(f"array {name!r} has an invalid shape {shape}")
            arrays.append((name, np.dtype(dtype), tuple(shape), math.prod(shape)))
    except MessageDecodeError:
        raise
    except (ValueError, KeyError, TypeError) as exc:
        raise MessageDecodeError(f"bad message header: {exc}") from None
    names = [*scalars, *(name for name, *_ in arrays)]
    expected = set(cls.field_names)
    if len(names) != len(expected) or set(names) != expected:
        missing, extra = sorted(expected - set(names)), sorted(set(names) - expected)
        raise MessageDecodeError(f"{kind!r} message fields do not match: missing {missing}, unexpected {extra}")
    return _Layout(*route, cls, {} if scalar_names else scalars, tuple(arrays))


_SCALARS, _ARRAYS, _NO_SCALARS = b',"scalars":', b',"arrays":[', b',"scalars":{}'
_SCAN = json.scanner.make_scanner(json.JSONDecoder())
"""The JSON decoder's scanner: ``(value, end)`` of the JSON value at an index of a str (StopIteration if none)."""


def _split(head: bytes) -> tuple[_Layout, dict]:
    """The layout and scalars of ``head``. Headers of one kind on one route differ in their scalars only,
    so the rest (the structure) is checked once and cached; the scalars object is parsed per message.
    A quote inside a JSON string is escaped, so the markers are found only where they structure the
    header; anything unusual takes the whole header through :func:`_layout`."""
    if _NO_SCALARS not in head:
        start, stop = head.find(_SCALARS), head.rfind(_ARRAYS)
        if 0 < start < stop:
            try:
                text = head[start + len(_SCALARS) : stop].decode()
                scalars, end = _SCAN(text, 0)  # json.loads without its Python layers (1.6 of its 2 us)
                if type(scalars) is dict and scalars and end == len(text):
                    structure = head[:start] + _NO_SCALARS + head[stop:].rstrip(b" ")
                    return _layout(structure, tuple(scalars)), scalars
            except (ValueError, StopIteration, MessageDecodeError):
                pass
    layout = _layout(head)
    return layout, layout.scalars


def decode(data: bytes | bytearray) -> Envelope:
    """Rebuild an envelope; :class:`MessageDecodeError` says what is wrong.

    The arrays are copies of ``bytes``; from a ``bytearray`` (a transport's fresh buffer per
    frame, handed over) they are views of it, writable and aligned as numpy allocates them.
    """
    if len(data) < _LENGTH.size:
        raise MessageDecodeError(f"message too short: {len(data)} bytes, need at least {_LENGTH.size}")
    (head_length,) = _LENGTH.unpack_from(data)
    end = _LENGTH.size + head_length
    if len(data) < end:
        raise MessageDecodeError(f"truncated header: need {end} bytes, got {len(data)}")
    layout, scalars = _split(bytes(data[_LENGTH.size : end]))
    fields, offset, owned = dict(scalars), end, isinstance(data, bytearray)
    for name, dtype, shape, count in layout.arrays:
        size = dtype.itemsize * count
        if offset + size > len(data):
            raise MessageDecodeError(f"truncated array {name!r}: need {size} bytes at offset {offset}")
        array = np.frombuffer(data, dtype, count, offset).reshape(shape)
        fields[name] = array if owned and array.flags.aligned else array.copy()
        offset += size
    if offset != len(data):
        raise MessageDecodeError(f"{len(data) - offset} unexpected trailing bytes after the arrays")
    return Envelope(layout.sender, layout.receiver, layout.phase, layout.cls(**fields))
