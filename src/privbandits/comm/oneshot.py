"""One message on a connection of its own: the devices a party hosts, each with its own transport identity.

A P2B device host simulates many devices. Over :class:`~privbandits.comm.TlsNetwork` each
device's report leaves on a connection of its own (:func:`send_own`), so the shuffler sees one
client per device, as a real shuffler does, and is the only party that sees that identity next to
a report. The device presents its host's certificate (the host vouches for its devices: the CA
issues no certificate per simulated device) and names itself as the envelope's sender,
``HOST-...``. The receiving party takes such connections on its party listener, kept open after
set-up (``TlsNetwork(keep_listening=True)``), where its :class:`~privbandits.comm.tls.gate.Gate`
authenticates them side by side, each within the handshake timeout (:func:`device_waiting`), hands
them over one at a time (:func:`accept_own`), and acknowledges each message after it has stored it
(:meth:`Delivery.ack`). A connection that fails its handshake, ends before its frame is complete, or
sends anything but one message from one of the expected parties' devices is dropped
(:attr:`TlsNetwork.dropped` says why): only its own message is lost, and the session goes on; idle or
garbage connections hold up no device and no message of the party link. A device whose connection
fails before its message left (the receiver busy or dropping it) tries again until the deadline.

Part of the TLS transport: these functions use its internal API, listed in :mod:`privbandits.comm.tls`
(:meth:`~privbandits.comm.TlsNetwork.open_link`, ``gate``, ``lost_peer``, ``count_wire``, ``link``, ``Link``), and
no private member of another class.
"""

from __future__ import annotations

import select
import time
import weakref
from collections.abc import Collection
from dataclasses import dataclass

from privbandits.comm import frames
from privbandits.comm.codec import Envelope, MessageDecodeError, decode, encode
from privbandits.comm.frames import HEADER_BYTES, FrameError, FrameType
from privbandits.comm.messages import Message
from privbandits.comm.network import ProtocolError
from privbandits.comm.tls import TlsNetwork
from privbandits.comm.tls.context import HandshakeError, TransportError, transient
from privbandits.comm.tls.gate import Arrival, listening
from privbandits.comm.tls.link import Link
from privbandits.comm.tls.network import RETRY_S


def send_own(network: TlsNetwork, sender: str, receiver: str, message: Message, *, resume: bool = True) -> bool:
    """Send ``message`` from ``sender``, a device of this party (named ``LOCAL-...``), to ``receiver`` on a new
    connection, and wait for the answer: True once stored, False if refused (:meth:`Delivery.refuse`);
    :class:`~privbandits.comm.PeerLost` if no answer comes.

    With ``resume`` the connection resumes the TLS 1.3 session of this party's previous device connection to
    ``receiver`` (a ticket, no certificates sent or checked again: about half the handshake's work). The devices
    of a party present its certificate anyway, so a resumed session tells the receiver nothing more."""
    phase = network.current_phase
    if phase is None:
        raise ProtocolError(f"{sender!r} sent a {message.kind!r} message outside any phase")
    if not sender.startswith(f"{network.local}-"):
        raise ProtocolError(f"{network.local!r} hosts devices named {network.local}-...; it cannot send as {sender!r}")
    stop = time.monotonic() + network.deadline
    sessions = _SESSIONS.setdefault(network, {}) if resume else {}
    link = _connect(network, sender, receiver, stop, sessions.get(receiver))
    try:
        size = link.send(FrameType.DATA, 1, encode(Envelope(sender, receiver, phase, message)))
        reply = link.read(stop)
    except (OSError, EOFError, FrameError) as exc:
        link.shut()
        what = f"{sender!r}'s {message.kind!r} message was not acknowledged: {exc or type(exc).__name__}"
        raise network.lost_peer(receiver, what) from None
    if resume and not link.sock.session_reused:  # its ticket came before the answer
        sessions[receiver] = link.sock.session
    link.shut()
    if reply.type not in (FrameType.CLOSE, FrameType.ABORT):
        raise FrameError(f"{receiver!r} answered {sender!r}'s message with a {reply.type.name} frame")
    counts = network.traffic.links[(phase, devices_of(network.local), receiver)]
    counts.messages += 1
    counts.bytes += message.payload_bytes()
    counts.rounds = 1  # the devices send side by side: one round however many send
    network.count_wire(phase, devices_of(network.local), receiver, size)
    return reply.type is FrameType.CLOSE


def devices_of(party: str) -> str:
    """The name under which ``party``'s devices are counted (``PARTY devices``), in :attr:`TlsNetwork.traffic`,
    ``received`` and ``wire`` on both sides: one row per (phase, host, peer) however many devices there are (per
    device, a million devices' rows would outweigh the session's result)."""
    return f"{party} devices"


_SESSIONS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
"""Per network, the TLS session its devices resume, per receiver."""


def _connect(network: TlsNetwork, sender: str, receiver: str, stop: float, session=None) -> Link:
    """A device's connection to ``receiver``, tried again after a transient failure until ``stop`` (before its
    message leaves: a message is sent at most once), unless ``receiver``'s party link has ended meanwhile."""
    pause = RETRY_S[0]
    while True:
        remaining = stop - time.monotonic()
        try:
            return network.open_link(receiver, max(min(remaining, network.handshake_timeout), 0.001), session)
        except (OSError, HandshakeError) as exc:
            if not transient(exc) or time.monotonic() + pause >= stop or _link_ended(network, receiver):
                raise network.lost_peer(receiver, f"{sender!r} could not connect: {exc}") from None
        network.check_links()  # a receiver that died: its party link says so (rejoin)
        time.sleep(pause)
        pause = min(2 * pause, RETRY_S[1])


def _link_ended(network: TlsNetwork, peer: str) -> bool:
    """Whether this party's link to ``peer`` has something to read while ``peer`` refuses its devices: its end (a
    dead party, whose device workers are gone too) or its abort. False without a party link (a devices' network)."""
    try:
        link = network.link(peer)
    except (ProtocolError, TransportError):
        return False
    return link.has_data() or bool(select.select([link.sock], [], [], 0)[0])


@dataclass
class Delivery:
    """A message taken from a device's connection, not yet acknowledged."""

    envelope: Envelope
    party: str
    """The party whose certificate the device presented (its host)."""
    _link: Link
    _network: TlsNetwork

    def ack(self) -> None:
        """Tell the device its message is stored, and end its connection."""
        self._answer(FrameType.CLOSE, b"")

    def refuse(self, reason: str) -> None:
        """Tell the device its message is not taken (``reason``, e.g. its batch has closed), and end its connection."""
        self._answer(FrameType.ABORT, frames.json_payload(reason=reason))

    def _answer(self, frame_type: FrameType, payload: bytes) -> None:
        try:
            self._link.set_timeout(self._network.handshake_timeout)
            size = self._link.send(frame_type, 0, payload)
            self._network.count_wire("control", self._network.local, devices_of(self.party), size)
        except OSError:
            pass  # it went away after sending: a stored message stays stored
        self._link.shut()


def device_waiting(network: TlsNetwork, peer: str, timeout: float, parties: Collection[str] | None = None) -> bool:
    """Wait until a device of one of ``parties`` (default: ``peer``) has sent its message, or ``peer`` sends; True
    for a device (a message of ``peer`` is read first). Connections that fail on the way are dropped (noted in
    ``network.dropped``) and do not end the wait: ``peer`` is named lost if neither comes within ``timeout``."""
    link = network.link(peer)
    expect = [peer] if parties is None else parties
    gate, until = listening(network.gate), time.monotonic() + timeout
    while True:
        if link.queue or link.has_data():
            return False
        try:
            arrival = gate.arrived.popleft() if gate.arrived else gate.wait(expect, until, [link])
        except TimeoutError:
            raise network.lost_peer(
                peer, f"neither a message nor a device's connection within the {timeout:g} s deadline"
            ) from None
        if arrival is None:
            return False
        if arrival.failure is None:
            gate.arrived.appendleft(arrival)
            return True
        _take(network, arrival, expect)


def accept_own(network: TlsNetwork, parties: Collection[str]) -> Delivery | None:
    """The next device connection on this party's listener: its message if it is one message from a device of
    one of ``parties`` (then :meth:`Delivery.ack` it once stored), else None, the reason in ``network.dropped``."""
    gate = listening(network.gate)
    return _take(network, gate.arrived.popleft() if gate.arrived else gate.next_arrival(parties, None), parties)


def _take(network: TlsNetwork, arrival: Arrival, parties: Collection[str]) -> Delivery | None:
    got = screen(arrival, parties, network.local, network.handshake_timeout)
    if isinstance(got, str):
        _drop(network, arrival.link, got)
        return None
    count_delivered(network, got, arrival.peer_link.peer, HEADER_BYTES + len(arrival.first_frame.payload))
    return Delivery(got, arrival.peer_link.peer, arrival.peer_link, network)


def screen(arrival: Arrival, parties: Collection[str], local: str, timeout: float) -> Envelope | str:
    """The message of ``arrival`` if it is one message from a device of one of ``parties`` to ``local``, else why
    the connection is dropped."""
    problem = screen_connection(arrival, parties, timeout)
    return problem if problem is not None else screen_message(arrival.first_frame, arrival.peer_link.peer, local)


def screen_connection(arrival: Arrival, parties: Collection[str], timeout: float) -> str | None:
    """Why ``arrival`` is dropped before its message is read (its handshake, certificate or frame failed), or None
    (it needs no protocol's messages: a device front end's worker process runs it)."""
    where = arrival.where
    if arrival.failure == "handshake":
        return f"a device connection from {where} failed its handshake: {arrival.detail}"
    link = arrival.peer_link
    if arrival.failure == "certificate" or link.peer not in parties:
        names = list(arrival.names) if arrival.failure else [link.peer]
        return f"a device connection from {where} presented {names}; expected one of {sorted(parties)}"
    if arrival.failure is not None:
        return _frame_failure(arrival, link.peer, timeout)
    return None


def screen_message(frame: frames.Frame, party: str, local: str) -> Envelope | str:
    """The message in a device's ``frame`` (its connection presented ``party``'s certificate), or why it is
    dropped: not one message from a device of ``party`` (named ``PARTY-...``) to ``local``."""
    try:
        envelope = decode(frame.payload) if frame.type is FrameType.DATA else None
    except MessageDecodeError as exc:
        return f"a device of {party!r} disconnected or sent a bad frame: {exc}"
    if envelope is None or not envelope.sender.startswith(f"{party}-") or envelope.receiver != local:
        what = "a control frame" if envelope is None else f"a message from {envelope.sender!r} to {envelope.receiver!r}"
        return f"a device of {party!r} sent {what}"
    return envelope


def count_delivered(network: TlsNetwork, envelope: Envelope, party: str, frame_bytes: int) -> None:
    """Count a message of one of ``party``'s devices (its payload, and its frame of ``frame_bytes`` on the wire) as
    received, under :func:`devices_of` ``party``."""
    counts = network.received.links[(envelope.phase, devices_of(party), network.local)]
    counts.messages += 1
    counts.bytes += envelope.message.payload_bytes()
    network.count_wire(envelope.phase, devices_of(party), network.local, frame_bytes)


def _frame_failure(arrival: Arrival, party: str, timeout: float) -> str:
    if arrival.detail == "timeout":
        return f"a device of {party!r} sent nothing within the {timeout:g} s handshake timeout"
    if arrival.detail == "eof":
        return f"a device of {party!r} disconnected before its message"
    return f"a device of {party!r} disconnected or sent a bad frame: {arrival.detail}"


def _drop(network: TlsNetwork, link: Link | None, reason: str) -> None:
    network.note_dropped(reason)
    if link is not None:
        link.shut()
    return None
