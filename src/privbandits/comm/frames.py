"""Frames on a stream link: a fixed header, then the codec's bytes (never pickle).

Header (:data:`HEADER`, big-endian): magic ``PBF1``, frame type, 3 reserved zero bytes,
the per-link sequence number (u64), the sender's Lamport depth (u32) and the
payload length (u32). Each direction of a link numbers its frames 0, 1, 2, ...;
the receiver expects exactly the next number, so a replayed, reordered or dropped
frame is detected even though TLS already orders the bytes (a buggy or malicious
peer with a valid certificate can still resend). The length is bounded before
anything is allocated.

Frame types: ``HELLO`` (the first frame each way: version and session digest),
``DATA`` (one encoded :class:`~privbandits.comm.codec.Envelope`), ``CLOSE`` (the
peer ends the session cleanly) and ``ABORT`` (the peer ends it on an error; the
payload names the lost peer and the round).
"""

from __future__ import annotations

import enum
import json
import struct
from typing import NamedTuple

MAGIC = b"PBF1"
HEADER = struct.Struct(">4sB3xQII")
HEADER_BYTES = HEADER.size
DEFAULT_MAX_FRAME_BYTES = 64 << 20
"""Largest payload a link accepts by default (a d = 1000 mask block, d² float64 words, fits)."""


class FrameType(enum.IntEnum):
    HELLO = 1
    DATA = 2
    CLOSE = 3
    ABORT = 4


_TYPES = {member.value: member for member in FrameType}
"""Frame types by their byte (a dict lookup: calling the enum costs a microsecond a frame)."""


class FrameError(RuntimeError):
    """Bytes on a link that are not the next valid frame (bad header, length, sequence or truncation)."""


class Frame(NamedTuple):
    type: FrameType
    seq: int
    depth: int
    payload: bytes | bytearray


def pack_header(frame_type: FrameType, seq: int, depth: int, length: int) -> bytes:
    return HEADER.pack(MAGIC, frame_type, seq, depth, length)


def pack(frame_type: FrameType, seq: int, depth: int, payload: bytes) -> bytes:
    """Header and payload as one buffer (one ``sendall``, one TLS record for small frames)."""
    return HEADER.pack(MAGIC, frame_type, seq, depth, len(payload)) + payload


def unpack_header_from(buffer: bytes | bytearray, offset: int, max_payload: int) -> tuple[FrameType, int, int, int]:
    """``(type, seq, depth, length)`` of the header at ``buffer[offset:]`` (a link's read-ahead buffer);
    :class:`FrameError` if it is not one."""
    magic, raw_type, seq, depth, length = HEADER.unpack_from(buffer, offset)
    if magic != MAGIC:
        raise FrameError(f"not a privbandits frame (magic {magic!r}, expected {MAGIC!r})")
    frame_type = _TYPES.get(raw_type)
    if frame_type is None:
        raise FrameError(f"unknown frame type {raw_type}")
    if length > max_payload:
        raise FrameError(f"frame of {length} bytes exceeds the limit of {max_payload} bytes")
    return frame_type, seq, depth, length


def json_payload(**fields: object) -> bytes:
    return json.dumps(fields, separators=(",", ":"), sort_keys=True).encode()


def read_json_payload(payload: bytes | bytearray, what: str) -> dict:
    try:
        value = json.loads(payload)
    except ValueError as exc:
        raise FrameError(f"bad {what} frame: {exc}") from None
    if not isinstance(value, dict):
        raise FrameError(f"bad {what} frame: expected a JSON object")
    return value
