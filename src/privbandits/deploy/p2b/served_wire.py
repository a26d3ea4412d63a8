"""One message and its answer on a mutual-TLS connection of its own: how the served P2B parties and the device agents
talk (:mod:`~privbandits.deploy.p2b.serving`, :mod:`~privbandits.deploy.p2b.agent`).

Under ``privbandits serve`` no party keeps a link open to another: the shuffler and the server each keep their
listener open (as the deployment's shuffler does for its devices), and every exchange is one connection, one message,
one answer, as a device's report is in ``deploy`` (:mod:`privbandits.comm.oneshot`): a device agent's report to the
shuffler (answered CLOSE once stored, ABORT with the reason if refused), its fetch of the model from the server
(answered with the model, a DATA frame), and the shuffler's released batch to the server (answered CLOSE once stored).
A connection presents its party's certificate (a device, its host's) and the sender names itself ``PARTY-...``, so the
receiver checks both as the device front end does (:func:`~privbandits.comm.oneshot.screen`). So the parties may
start, stop and restart in any order: a sender tries again until its receiver is back.
"""

from __future__ import annotations

import time
from collections.abc import Collection
from dataclasses import dataclass

from privbandits.comm import Message, TlsCredentials, TlsNetwork, frames
from privbandits.comm.codec import Envelope, MessageDecodeError, decode, encode
from privbandits.comm.frames import FrameError, FrameType
from privbandits.comm.oneshot import count_delivered, screen
from privbandits.comm.tls.context import HandshakeError
from privbandits.comm.tls.link import Link
from privbandits.deploy.deployment import Deployment
from privbandits.deploy.p2b.session import SHARE_ENCODED

PHASE = SHARE_ENCODED
"""The phase every served exchange is counted under (the deployment's phase of the encoded reports)."""


class Refusal(RuntimeError):
    """The receiver answered with a refusal; ``reason`` is its own words."""

    def __init__(self, receiver: str, reason: str) -> None:
        super().__init__(f"{receiver!r} refused: {reason}")
        self.receiver, self.reason = receiver, reason


class Unreachable(ConnectionError):
    """No answer from the receiver within the time allowed (it is down, or the connection broke)."""


def party_network(deployment: Deployment, name: str, *, listen: bool) -> TlsNetwork:
    """Party ``name``'s network under serving: no party links; its listener kept open when ``listen`` (the shuffler,
    the server); none for a device host's agents, which only dial."""
    entry = deployment.parties[name]
    return TlsNetwork(
        name,
        deployment.addresses(),
        TlsCredentials(entry.ca, entry.certificate, entry.key),
        peers=[],
        deadline=deployment.deadline_s,
        connect_deadline=deployment.connect_deadline_s,
        keep_listening=listen,
    )


def exchange(network: TlsNetwork, sender: str, receiver: str, message: Message, timeout: float) -> Envelope | None:
    """Send ``message`` from ``sender`` (``LOCAL-...``) to ``receiver`` on a connection of its own and return its
    answer: the receiver's message (DATA), or None (CLOSE: stored). :class:`Refusal` (ABORT) with the receiver's
    reason; :class:`Unreachable` if no answer came within ``timeout`` seconds (nothing is known to be stored)."""
    stop = time.monotonic() + timeout
    link = _connect(network, receiver, stop)
    try:
        link.send(FrameType.DATA, 1, encode(Envelope(sender, receiver, PHASE, message)))
        reply = link.read(stop)
    except (OSError, EOFError, FrameError, TimeoutError) as exc:
        raise Unreachable(
            f"{receiver!r} did not answer {sender!r}'s {message.kind!r}: {exc or type(exc).__name__}"
        ) from None
    finally:
        link.shut()
    if reply.type is FrameType.ABORT:
        raise Refusal(receiver, str(frames.read_json_payload(reply.payload, "refusal").get("reason", "")))
    if reply.type is FrameType.CLOSE:
        return None
    try:
        envelope = decode(reply.payload)
    except MessageDecodeError as exc:
        raise Unreachable(f"{receiver!r} answered with a bad frame: {exc}") from None
    if envelope.sender != receiver:
        raise Unreachable(f"{receiver!r} answered as {envelope.sender!r}")
    return envelope


def _connect(network: TlsNetwork, receiver: str, stop: float) -> Link:
    pause = 0.05
    while True:
        try:
            return network.open_link(receiver, max(min(stop - time.monotonic(), network.handshake_timeout), 0.001))
        except (OSError, HandshakeError) as exc:
            if time.monotonic() + pause >= stop:
                raise Unreachable(f"{receiver!r} could not be reached: {exc}") from None
        time.sleep(pause)
        pause = min(2 * pause, 1.0)


@dataclass
class Incoming:
    """A message taken from a connection of its own (the sender waits for the answer)."""

    envelope: Envelope
    party: str
    """The party whose certificate the connection presented (a device's host, or the party itself)."""
    link: Link
    network: TlsNetwork

    @property
    def message(self) -> Message:
        return self.envelope.message

    def ack(self) -> None:
        """Stored: end the connection with CLOSE."""
        self._answer(FrameType.CLOSE, b"")

    def refuse(self, reason: str) -> None:
        """Not taken: ABORT with ``reason``."""
        self._answer(FrameType.ABORT, frames.json_payload(reason=reason))

    def reply(self, message: Message) -> None:
        """Answer with ``message`` (a DATA frame)."""
        local = self.network.local
        self._answer(FrameType.DATA, encode(Envelope(local, self.envelope.sender, PHASE, message)))

    def _answer(self, frame_type: FrameType, payload: bytes) -> None:
        try:
            self.link.set_timeout(self.network.handshake_timeout)
            self.link.send(frame_type, 0, payload)
        except OSError:
            pass  # it went away after sending: what was stored stays stored
        self.link.shut()


def next_incoming(network: TlsNetwork, parties: Collection[str], timeout: float) -> Incoming | None:
    """The next message on a connection of its own from a sender of one of ``parties`` (``PARTY-...``, presenting
    that party's certificate), or None within ``timeout`` seconds (a connection that fails on the way is dropped and
    noted in ``network.dropped``)."""
    gate = network.gate
    assert gate is not None, "a served party keeps its listener open"
    try:
        arrival = gate.arrived.popleft() if gate.arrived else gate.wait(parties, time.monotonic() + timeout)
    except TimeoutError:
        return None
    if arrival is None:
        return None
    got = screen(arrival, parties, network.local, network.handshake_timeout)
    if isinstance(got, str):
        network.note_dropped(got)
        if arrival.link is not None:
            arrival.link.shut()
        return None
    count_delivered(network, got, arrival.peer_link.peer, frames.HEADER_BYTES + len(arrival.first_frame.payload))
    return Incoming(got, arrival.peer_link.peer, arrival.peer_link, network)
