"""Bytes on the wire: encode an :class:`Envelope` and decode it back, checked.

Layout: a 4-byte big-endian header length, a UTF-8 JSON header (sender,
receiver, phase, message kind, scalar fields, and dtype/shape of each array
field), then the raw C-order bytes of the arrays in header order. Any network
transport can ship these bytes; the in-memory network can round-trip every
message through them to prove a protocol uses nothing but what is sent.
"""

from __future__ import annotations

import dataclasses
import json
import struct
from typing import NamedTuple

import numpy as np

from privbandits.comm.messages import Message, message_class

_LENGTH = struct.Struct(">I")
_ALLOWED_DTYPES = {"<f8", "<i8", "<u8", "|b1", "<f4", "<i4", "|u1"}


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
    scalars, arrays, buffers = {}, [], []
    for field in dataclasses.fields(envelope.message):
        value = getattr(envelope.message, field.name)
        if isinstance(value, np.ndarray):
            data = np.ascontiguousarray(value, dtype=value.dtype.newbyteorder("<"))
            if data.dtype.str not in _ALLOWED_DTYPES:
                raise TypeError(f"field {field.name!r} has unsupported dtype {value.dtype}")
            arrays.append({"name": field.name, "dtype": data.dtype.str, "shape": list(data.shape)})
            buffers.append(data.tobytes())
        else:
            scalars[field.name] = value.item() if isinstance(value, np.generic) else value
    header = {
        "sender": envelope.sender,
        "receiver": envelope.receiver,
        "phase": envelope.phase,
        "kind": envelope.message.kind,
        "scalars": scalars,
        "arrays": arrays,
    }
    head = json.dumps(header, separators=(",", ":")).encode()
    return _LENGTH.pack(len(head)) + head + b"".join(buffers)


def decode(data: bytes) -> Envelope:
    """Rebuild an envelope; :class:`MessageDecodeError` says what is wrong."""
    if len(data) < _LENGTH.size:
        raise MessageDecodeError(f"message too short: {len(data)} bytes, need at least {_LENGTH.size}")
    (head_length,) = _LENGTH.unpack_from(data)
    end = _LENGTH.size + head_length
    if len(data) < end:
        raise MessageDecodeError(f"truncated header: need {end} bytes, got {len(data)}")
    try:
        header = json.loads(data[_LENGTH.size : end])
        kind = header["kind"]
        cls = message_class(kind)
    except (ValueError, KeyError) as exc:
        raise MessageDecodeError(f"bad message header: {exc}") from None
    fields, offset = dict(header["scalars"]), end
    for spec in header["arrays"]:
        if spec["dtype"] not in _ALLOWED_DTYPES:
            raise MessageDecodeError(f"field {spec['name']!r} has unsupported dtype {spec['dtype']!r}")
        dtype, shape = np.dtype(spec["dtype"]), tuple(spec["shape"])
        size = dtype.itemsize * int(np.prod(shape, dtype=np.int64))
        if offset + size > len(data):
            raise MessageDecodeError(f"truncated array {spec['name']!r}: need {size} bytes at offset {offset}")
        fields[spec["name"]] = np.frombuffer(data, dtype, int(np.prod(shape)), offset).reshape(shape).copy()
        offset += size
    if offset != len(data):
        raise MessageDecodeError(f"{len(data) - offset} unexpected trailing bytes after the arrays")
    expected = {f.name for f in dataclasses.fields(cls)}
    if set(fields) != expected:
        missing, extra = sorted(expected - set(fields)), sorted(set(fields) - expected)
        raise MessageDecodeError(f"{kind!r} message fields do not match: missing {missing}, unexpected {extra}")
    return Envelope(header["sender"], header["receiver"], header["phase"], cls(**fields))
