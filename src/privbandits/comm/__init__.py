"""The message layer: parties exchange typed messages over a network that counts them.

messages
    :func:`message` declares a typed message (numpy arrays and scalars).
codec
    Bytes on the wire, with checked decoding.
network
    :class:`Party`, :class:`Network`, the :class:`InMemoryNetwork` used in
    simulation, and the :class:`Traffic` ledger (messages, bytes, rounds). A party
    sends through the :class:`Endpoint` its registration returned, never by name.
frames
    The transport's frames: header, sequence number, bounded length, codec bytes.
tls
    :class:`TlsNetwork`: one party per OS process, mutual TLS 1.3 links to its peers.
oneshot
    One message on a connection of its own: the devices a party hosts, each with its own transport identity.
"""

from privbandits.comm.codec import Envelope, MessageDecodeError, decode, encode
from privbandits.comm.messages import Message, message, message_class
from privbandits.comm.network import (
    ROUND,
    SETUP,
    Endpoint,
    ForgedSender,
    InMemoryNetwork,
    LinkCounts,
    Network,
    Party,
    ProtocolError,
    Traffic,
)
from privbandits.comm.tls import HandshakeError, PeerLost, TlsCredentials, TlsNetwork, TransportError

__all__ = [
    "ROUND",
    "SETUP",
    "Endpoint",
    "Envelope",
    "ForgedSender",
    "HandshakeError",
    "InMemoryNetwork",
    "LinkCounts",
    "Message",
    "MessageDecodeError",
    "Network",
    "Party",
    "PeerLost",
    "ProtocolError",
    "TlsCredentials",
    "TlsNetwork",
    "Traffic",
    "TransportError",
    "decode",
    "encode",
    "message",
    "message_class",
]
