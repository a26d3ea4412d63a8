"""The message layer: parties exchange typed messages over a network that counts them.

messages
    :func:`message` declares a typed message (numpy arrays and scalars).
codec
    Bytes on the wire, with checked decoding.
network
    :class:`Party`, :class:`Network`, the :class:`InMemoryNetwork` used in
    simulation, and the :class:`Traffic` ledger (messages, bytes, rounds).
"""

from privbandits.comm.codec import Envelope, MessageDecodeError, decode, encode
from privbandits.comm.messages import Message, message, message_class
from privbandits.comm.network import (
    ROUND,
    SETUP,
    InMemoryNetwork,
    LinkCounts,
    Network,
    Party,
    ProtocolError,
    Traffic,
)

__all__ = [
    "ROUND",
    "SETUP",
    "Envelope",
    "InMemoryNetwork",
    "LinkCounts",
    "Message",
    "MessageDecodeError",
    "Network",
    "Party",
    "ProtocolError",
    "Traffic",
    "decode",
    "encode",
    "message",
    "message_class",
]
