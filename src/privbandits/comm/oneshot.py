"""One message on a connection of its own: the devices a party hosts, each with its own transport identity.

A P2B device host simulates many devices. Over :class:`~privbandits.comm.TlsNetwork` each
device's report leaves on a connection of its own (:func:`send_own`), so the shuffler sees one
client per device, as a real shuffler does, and is the only party that sees that identity next to
a report. The device presents its host's certificate (the host vouches for its devices: the CA
issues no certificate per simulated device) and names itself as the envelope's sender,
``HOST-...``. The receiving party takes such connections on its party listener, kept open after
set-up (``TlsNetwork(keep_listening=True)``), one at a time (:func:`accept_own`), and
acknowledges each message after it has stored it (:meth:`Delivery.ack`). A connection that
fails its handshake, ends before its frame is complete, or sends anything but one message from
one of the expected parties' devices is dropped (:attr:`TlsNetwork.dropped` says why): only its
own message is lost, and the session goes on.

Part of the TLS transport: these functions use :class:`~privbandits.comm.TlsNetwork`'s contexts,
listener and ledgers.
"""

from __future__ import annotations

import selectors
import socket
import ssl
import time
from collections.abc import Collection
from dataclasses import dataclass

from privbandits.comm import frames
from privbandits.comm.codec import Envelope, MessageDecodeError, decode, encode
from privbandits.comm.frames import HEADER_BYTES, FrameError, FrameType
from privbandits.comm.messages import Message
from privbandits.comm.network import ProtocolError
from privbandits.comm.tls import TlsNetwork, _Link, certificate_names


def send_own(network: TlsNetwork, sender: str, receiver: str, message: Message) -> bool:
    """Send ``message`` from ``sender``, a device of this party (named ``LOCAL-...``), to ``receiver`` on a new
    connection, and wait for the answer: True once stored, False if refused (:meth:`Delivery.refuse`);
    :class:`~privbandits.comm.PeerLost` if no answer comes."""
    phase = network._phase
    if phase is None:
        raise ProtocolError(f"{sender!r} sent a {message.kind!r} message outside any phase")
    if not sender.startswith(f"{network.local}-"):
        raise ProtocolError(f"{network.local!r} hosts devices named {network.local}-...; it cannot send as {sender!r}")
    host, port = network.addresses[receiver]
    try:
        raw = socket.create_connection((host, port), timeout=network.deadline)
    except OSError as exc:
        raise network._lost(receiver, f"{sender!r} could not connect: {exc}") from None
    raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        sock = network._client_context.wrap_socket(raw, do_handshake_on_connect=False)
        sock.settimeout(network.handshake_timeout)
        sock.do_handshake()
        if certificate_names(sock) != [receiver]:
            raise ssl.SSLError(f"{host}:{port} presented a certificate for {certificate_names(sock)}")
        link = _Link(receiver, sock, network.max_frame_bytes)
        size = link.send(FrameType.DATA, 1, encode(Envelope(sender, receiver, phase, message)))
        reply = link.read(time.monotonic() + network.deadline)
    except (OSError, EOFError, FrameError) as exc:
        raw.close()
        raise network._lost(receiver, f"{sender!r}'s {message.kind!r} message was not acknowledged: {exc}") from None
    link.shut()
    if reply.type not in (FrameType.CLOSE, FrameType.ABORT):
        raise FrameError(f"{receiver!r} answered {sender!r}'s message with a {reply.type.name} frame")
    counts = network.traffic.links[(phase, sender, receiver)]
    counts.messages += 1
    counts.bytes += message.payload_bytes()
    counts.rounds += 1
    network._count_wire(phase, sender, receiver, size)
    return reply.type is FrameType.CLOSE


@dataclass
class Delivery:
    """A message taken from a device's connection, not yet acknowledged."""

    envelope: Envelope
    party: str
    """The party whose certificate the device presented (its host)."""
    _link: _Link
    _network: TlsNetwork

    def ack(self) -> None:
        """Tell the device its message is stored, and end its connection."""
        self._answer(FrameType.CLOSE, b"")

    def refuse(self, reason: str) -> None:
        """Tell the device its message is not taken (``reason``, e.g. its batch has closed), and end its connection."""
        self._answer(FrameType.ABORT, frames.json_payload(reason=reason))

    def _answer(self, frame_type: FrameType, payload: bytes) -> None:
        try:
            size = self._link.send(frame_type, 0, payload)
            self._network._count_wire("control", self._network.local, self.envelope.sender, size)
        except OSError:
            pass  # it went away after sending: a stored message stays stored
        self._link.shut()


def device_waiting(network: TlsNetwork, peer: str, timeout: float) -> bool:
    """Wait until a device connects or ``peer`` sends; True for a device (a message of ``peer`` is read first)."""
    link = network._links[peer]
    if link.queue or link.has_data():
        return False
    with selectors.DefaultSelector() as selector:
        selector.register(network._listener, selectors.EVENT_READ, True)
        selector.register(link.sock, selectors.EVENT_READ, False)
        events = selector.select(timeout)
    if not events:
        raise network._lost(peer, f"neither a message nor a device's connection within the {timeout:g} s deadline")
    return not any(key.data is False for key, _ in events)


def accept_own(network: TlsNetwork, parties: Collection[str]) -> Delivery | None:
    """The next device connection on this party's listener: its message if it is one message from a device of
    one of ``parties`` (then :meth:`Delivery.ack` it once stored), else None, the reason in ``network.dropped``."""
    raw, address = network._listener.accept()
    where = f"{address[0]}:{address[1]}"
    raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    raw.settimeout(network.handshake_timeout)
    try:
        sock = network._server_context.wrap_socket(raw, server_side=True, do_handshake_on_connect=False)
        sock.do_handshake()
    except (ssl.SSLError, OSError) as exc:
        return _drop(network, raw, f"a device connection from {where} failed its handshake: {exc}")
    names = certificate_names(sock)
    if len(names) != 1 or names[0] not in parties:
        expected = sorted(parties)
        return _drop(network, sock, f"a device connection from {where} presented {names}; expected one of {expected}")
    party = names[0]
    link = _Link(party, sock, network.max_frame_bytes)
    try:
        frame = link.read(time.monotonic() + network.deadline)
        envelope = decode(frame.payload) if frame.type is FrameType.DATA else None
    except TimeoutError:
        return _drop(network, sock, f"a device of {party!r} sent nothing within the {network.deadline:g} s deadline")
    except EOFError:
        return _drop(network, sock, f"a device of {party!r} disconnected before its message")
    except (FrameError, MessageDecodeError, OSError) as exc:
        return _drop(network, sock, f"a device of {party!r} disconnected or sent a bad frame: {exc}")
    if envelope is None or not envelope.sender.startswith(f"{party}-") or envelope.receiver != network.local:
        what = "a control frame" if envelope is None else f"a message from {envelope.sender!r} to {envelope.receiver!r}"
        return _drop(network, sock, f"a device of {party!r} sent {what}")
    counts = network.received.links[(envelope.phase, envelope.sender, network.local)]
    counts.messages += 1
    counts.bytes += envelope.message.payload_bytes()
    network._count_wire(envelope.phase, envelope.sender, network.local, HEADER_BYTES + len(frame.payload))
    return Delivery(envelope, party, link, network)


def _drop(network: TlsNetwork, sock: socket.socket, reason: str) -> None:
    network.dropped.append(reason)
    try:
        sock.close()
    except OSError:
        pass
    return None
