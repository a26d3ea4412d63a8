"""The network of one party process (:class:`TlsNetwork`): setting up its links, messages on them, the end.

See :mod:`privbandits.comm.tls` for what a link guarantees.
"""

from __future__ import annotations

import logging
import selectors
import socket
import ssl
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager

from privbandits.comm import frames
from privbandits.comm.codec import Envelope, MessageDecodeError, decode_counted, encode_parts
from privbandits.comm.frames import DEFAULT_MAX_FRAME_BYTES, HEADER_BYTES, FrameError, FrameType
from privbandits.comm.network import Endpoint, Network, ProtocolError, Traffic, named_kinds
from privbandits.comm.tls.context import (
    HandshakeError,
    PeerLost,
    TlsCredentials,
    bind_listener,
    certificate_names,
    client_context,
    server_context,
    transient,
)
from privbandits.comm.tls.gate import Arrival, Gate, listening
from privbandits.comm.tls.link import Link, LinkSelector

log = logging.getLogger(__name__)

WIRE_VERSION = 2
"""Frames and codec layout; parties of another version are refused at the hello (2: numbers as words)."""
CONTROL = "control"
"""Phase under which :attr:`TlsNetwork.wire` counts HELLO, CLOSE and ABORT frames."""
MAX_REASONS = 200
"""Refusals (and dropped device connections) a network keeps the reason of; it counts the rest."""
READ_GRACE_S = 1.0
"""Seconds a wait on several peers gives a peer whose data arrived to complete its frame, even past the deadline
(the deadline passing while one peer's frame arrives is no fault of that peer)."""
RETRY_S = (0.05, 0.5)
"""First and longest pause between a dialer's tries (doubling), until its connect deadline."""


class _Batch:
    """Context manager of :meth:`TlsNetwork.batch`."""

    __slots__ = ("network",)

    def __init__(self, network: TlsNetwork) -> None:
        self.network = network

    def __enter__(self) -> None:
        self.network._hold(True)

    def __exit__(self, *exc: object) -> None:
        if exc[0] is None:
            self.network._hold(False)
        # else the session is failing: held frames stay, and an abort writes them before its ABORT frame
        # (sequence order), so peers read the abort rather than a gap


class TlsNetwork(Network):
    """The network of one party process: mutual-TLS links to its peers.

    Parameters
    ----------
    local : str
        The party this process runs (the only one that may register here).
    addresses : mapping of name to (host, port)
        Every party of the deployment, in deployment order (earlier parties accept, later ones dial).
    credentials : TlsCredentials
        This party's certificate and key, and the deployment CA.
    peers : iterable of str, optional
        The parties to link with (default: all others).
    session : str
        A digest of the deployment; both ends of a link must agree on it.
    deadline : float
        Seconds any receive waits before the peer counts as lost.
    connect_deadline : float
        Seconds :meth:`connect` waits for all links.
    listener : socket, optional
        An already bound listening socket (else one is bound on this party's address when needed).
    keep_listening : bool
        Keep the listener open after :meth:`connect`, for devices' one-message connections
        (:mod:`privbandits.comm.oneshot`).
    """

    connection_per_sender = True  # devices send on connections of their own (comm.oneshot): Network's declaration

    def __init__(
        self,
        local: str,
        addresses: Mapping[str, tuple[str, int]],
        credentials: TlsCredentials,
        *,
        peers: Iterable[str] | None = None,
        session: str = "",
        deadline: float = 30.0,
        connect_deadline: float = 30.0,
        handshake_timeout: float = 5.0,
        max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
        listener: socket.socket | None = None,
        keep_listening: bool = False,
    ) -> None:
        super().__init__()
        if local not in addresses:
            raise ValueError(f"party {local!r} is not in the deployment (parties: {', '.join(addresses)})")
        self.local, self.session = local, session
        self.addresses = {name: (str(host), int(port)) for name, (host, port) in addresses.items()}
        order = list(self.addresses)
        wanted = [name for name in order if name != local] if peers is None else list(peers)
        unknown = sorted(set(wanted) - set(order))
        if unknown or local in wanted:
            raise ValueError(f"peers of {local!r} must be other parties of the deployment, got {unknown or [local]}")
        position = order.index(local)
        self._dial = [name for name in order[:position] if name in wanted]
        self._accept = [name for name in order[position + 1 :] if name in wanted]
        self.deadline, self.connect_deadline, self.handshake_timeout = deadline, connect_deadline, handshake_timeout
        self.max_frame_bytes = max_frame_bytes
        self.credentials = credentials
        self.client_context = client_context(credentials)
        """The context this party dials with (its devices too: :mod:`~privbandits.comm.oneshot`)."""
        self.keep_listening = keep_listening
        self.gate: Gate | None = None
        """This party's listener, authenticating connections side by side (None: it accepts no one)."""
        if listener is not None or self._accept or keep_listening:
            listener = listener if listener is not None else bind_listener(*self.addresses[local])
            self.gate = Gate(listener, server_context(credentials), timeout=handshake_timeout,
                             max_payload=max_frame_bytes)  # fmt: skip
        self._links: dict[str, Link] = {}
        self._any_peer = LinkSelector()
        self.received = Traffic()
        """Messages, payload bytes this party received, per (phase, sender, receiver)."""
        self.wire = Traffic()
        """Frames and frame bytes (header + codec bytes) sent and received, per (phase, sender, receiver)."""
        self.refusals: list[str] = []
        """Why each refused connection attempt was refused (wrong CA, name, plaintext, ...): the first
        :data:`MAX_REASONS`; :attr:`refused` counts them all."""
        self.dropped: list[str] = []
        """Why each device connection (:mod:`~privbandits.comm.oneshot`) was dropped without its message (the first
        :data:`MAX_REASONS`; :attr:`dropped_count` counts them all)."""
        self.refused = self.dropped_count = 0
        self.parties.update(wanted)

    # ----------------------------------------------------------------- setup

    def register(self, name: str) -> Endpoint:
        if name != self.local:
            raise ValueError(f"this process runs party {self.local!r}; it cannot host {name!r}")
        return super().register(name)

    @property
    def listen_address(self) -> tuple[str, int] | None:
        return self.gate.listener.getsockname()[:2] if self.gate is not None else None

    def connect(self) -> TlsNetwork:
        """Dial the earlier peers, accept the later ones; HandshakeError if not all are linked in time.

        A dialer tries again, until the connect deadline, while the peer is unreachable, busy or drops the
        half-made connection; a refusal by an authenticated peer (or of its certificate) ends it at once."""
        stop = time.monotonic() + self.connect_deadline
        try:
            for peer in self._dial:
                self._links[peer] = self._dial_peer(peer, stop)
            self._accept_peers(stop)
        except BaseException:
            self.close_sockets()
            raise
        finally:
            if self.gate is not None and not self.keep_listening:
                self.gate.close()
                self.gate = None
        return self

    def _hello(self) -> bytes:
        return frames.json_payload(version=WIRE_VERSION, session=self.session)

    def _hello_refusal(self, frame: frames.Frame) -> str | None:
        """Why a peer's first frame is not a hello this party can link with (None if it is)."""
        if frame.type is FrameType.ABORT:
            return str(frames.read_json_payload(frame.payload, "abort").get("reason", ""))
        if frame.type is not FrameType.HELLO:
            return f"a {frame.type.name} frame came instead of a hello"
        hello = frames.read_json_payload(frame.payload, "hello")
        if hello.get("version") != WIRE_VERSION:
            return f"wire version {hello.get('version')} met wire version {WIRE_VERSION}"
        if hello.get("session") != self.session:
            return "the two parties run different deployments (their session digests differ)"
        return None

    def open_link(self, peer: str, timeout: float, session: ssl.SSLSession | None = None) -> Link:
        """A TCP connection to ``peer``'s address, its TLS handshake (resuming ``session`` if given and still good)
        and its certificate's name checked, within ``timeout`` (the socket's error, or HandshakeError)."""
        host, port = self.addresses[peer]
        raw = socket.create_connection((host, port), timeout=timeout)
        raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            sock = self.client_context.wrap_socket(raw, do_handshake_on_connect=False, session=session)
            sock.do_handshake()
        except BaseException:
            raw.close()
            raise
        names = certificate_names(sock)
        if names != [peer]:
            sock.close()
            raise HandshakeError(f"{host}:{port} presented a certificate for {names}, expected {peer!r}")
        return Link(peer, sock, self.max_frame_bytes)

    def _dial_peer(self, peer: str, stop: float) -> Link:
        """Link with ``peer``: tried again after a transient failure (:func:`transient`) until ``stop``."""
        host, port = self.addresses[peer]
        pause, last = RETRY_S[0], "it was never reached"
        while True:
            remaining = stop - time.monotonic()
            if remaining <= 0:
                raise HandshakeError(f"{self.local!r} could not link with {peer!r} at {host}:{port} in time ({last})")
            try:
                return self._try_dial(peer, min(remaining, self.handshake_timeout))
            except HandshakeError:
                raise
            except (OSError, EOFError, FrameError) as exc:
                if not transient(exc):
                    raise HandshakeError(f"TLS handshake with {peer!r} at {host}:{port} failed: {exc}") from None
                last = f"last try: {str(exc) or type(exc).__name__}"
            time.sleep(min(pause, max(stop - time.monotonic(), 0)))
            pause = min(2 * pause, RETRY_S[1])

    def _try_dial(self, peer: str, timeout: float) -> Link:
        link = self.open_link(peer, timeout)
        try:
            size = link.send(FrameType.HELLO, 0, self._hello())
            frame = link.read(time.monotonic() + timeout)
            refusal = self._hello_refusal(frame)
        except BaseException as exc:
            link.shut()
            if isinstance(exc, ssl.SSLError) and not transient(exc):  # TLS 1.3: a refused client certificate
                raise HandshakeError(f"{peer!r} refused the connection from {self.local!r}: {exc}") from None
            raise  # shows up here, after our side of the handshake completed
        if refusal is not None:
            link.shut()
            who = f"{peer!r} refused the connection from {self.local!r}"
            if frame.type is not FrameType.ABORT:
                who = f"{self.local!r} refused the hello of {peer!r}"
            raise HandshakeError(f"{who}: {refusal}")
        self.count_wire(CONTROL, self.local, peer, size)
        self.count_wire(CONTROL, peer, self.local, HEADER_BYTES + len(frame.payload))
        return link

    def _accept_peers(self, stop: float) -> None:
        """Link with the later parties as their connections arrive; an idle or bogus connection is refused at its
        own timeout and holds up no one. A peer that dials again (its first try failed on its side) replaces
        its earlier link."""
        waiting = [peer for peer in self._accept if peer not in self._links]
        while waiting:
            try:
                arrival = listening(self.gate).next_arrival(self._accept, stop)  # made in __init__ as it accepts
            except TimeoutError:
                last = "; ".join(self.refusals[-3:])
                refused = f"; {self.refused} connection(s) refused, the last: {last}" if self.refused else ""
                missing = ", ".join(map(repr, waiting))
                raise HandshakeError(f"{self.local!r}: no connection from {missing} in time{refused}") from None
            link = self._admit(arrival, waiting)
            if link is not None:
                old = self._links.pop(link.peer, None)
                if old is not None:
                    old.shut()
                self._links[link.peer] = link
                if link.peer in waiting:
                    waiting.remove(link.peer)

    def _admit(self, arrival: Arrival, waiting: list[str]) -> Link | None:
        """The link of an arrival whose hello this party takes, answered with its own; else None, the refusal
        noted (and, to an authenticated peer, said in an ABORT frame)."""
        where = arrival.where
        if arrival.failure == "handshake":
            self._refuse(f"TLS handshake with {where} failed: {arrival.detail}")
            return None
        link = arrival.peer_link
        if arrival.failure == "certificate":
            expected = ", ".join(map(repr, waiting))
            presented = f"presented a certificate for {list(arrival.names)}; expected one of {expected}"
            self._refuse(f"{where} {presented}", link)
            return None
        if arrival.failure is not None:
            what = {"eof": "closed the connection during the hello", "timeout": "sent no hello in time"}
            self._refuse(f"{link.peer!r} at {where}: {what.get(arrival.detail, arrival.detail)}")
            return None
        frame = arrival.first_frame
        refusal = self._hello_refusal(frame)
        if refusal is not None:
            self._refuse(f"{link.peer!r} at {where}: {refusal}", link, refusal)
            return None
        self.count_wire(CONTROL, link.peer, self.local, HEADER_BYTES + len(frame.payload))
        try:
            link.set_timeout(self.handshake_timeout)
            self.count_wire(CONTROL, self.local, link.peer, link.send(FrameType.HELLO, 0, self._hello()))
        except OSError as exc:
            link.shut()
            self._refuse(f"{link.peer!r} at {where}: {exc}")
            return None
        return link

    def _refuse(self, reason: str, link: Link | None = None, told: str | None = None) -> None:
        """Note a refused connection; an authenticated one (``link``) is told why (``told``, else ``reason``) in an
        ABORT frame, then closed."""
        if link is not None:
            try:
                link.set_timeout(1.0)
                link.send(FrameType.ABORT, 0, frames.json_payload(reason=told or reason, by=self.local))
            except OSError:
                pass
            link.shut()
        self.refused += 1
        if len(self.refusals) < MAX_REASONS:
            self.refusals.append(reason)
            log.warning("%s refused a connection: %s", self.local, reason)
        return None

    def note_dropped(self, reason: str) -> None:
        """A device connection (:mod:`~privbandits.comm.oneshot`) dropped without its message, and why."""
        self.dropped_count += 1
        if len(self.dropped) < MAX_REASONS:
            self.dropped.append(reason)

    # ----------------------------------------------------------------- messages

    def where(self) -> str:
        """The round this party is in, for error messages: the protocol's round (:attr:`round_label`, when the party
        names it), the phase and its segment number."""
        phase = self._phase
        where = "between phases" if phase is None else f"{phase} {self.traffic.segments.get(phase, 0) + 1}"
        return where if self.round_label is None else f"{self.round_label} ({where})"

    @contextmanager
    def patience(self, seconds: float) -> Iterator[None]:
        saved, self.deadline = self.deadline, seconds
        try:
            yield
        finally:
            self.deadline = saved

    @property
    def current_phase(self) -> str | None:
        """The phase this party is in (None between phases)."""
        return self._phase

    def count_wire(self, phase: str, sender: str, receiver: str, size: int) -> None:
        """Count a frame of ``size`` bytes on the wire ledger."""
        counts = self.wire.links[(phase, sender, receiver)]
        counts.messages += 1
        counts.bytes += size

    def link(self, peer: str) -> Link:
        """The open link to ``peer`` (ProtocolError if none; PeerLost if it has ended)."""
        link = self._links.get(peer)
        if link is None:
            linked = sorted(self._links)
            raise ProtocolError(f"{self.local!r} has no link to {peer!r} (connect() first; linked: {linked})")
        if link.ended:
            what = "was lost earlier in the session" if link.ended == "lost" else "has already ended the session"
            raise PeerLost(f"{peer!r} {what} ({self.where()})", peer=peer, round=self.where())
        return link

    def _deliver(self, envelope: Envelope, depth: int) -> None:
        if envelope.sender != self.local:
            raise ProtocolError(f"this process runs {self.local!r}; it cannot send as {envelope.sender!r}")
        link = self._links.get(envelope.receiver)
        if link is None or link.ended:
            link = self.link(envelope.receiver)  # says why it cannot be sent to
        parts, length = encode_parts(envelope)
        try:
            # a send blocks at most the deadline too (a peer that stops reading fills the buffers;
            # the timeout the last read left could be far shorter)
            link.set_timeout(self.deadline)
            size = link.send_parts(FrameType.DATA, depth, parts, length)
        except OSError as exc:
            lost = self.lost_peer(link.peer, f"sending {envelope.message.kind!r} failed: {exc}")
            raise self._told_by(link, lost) from None
        counts = link.sent.get(envelope.phase)
        if counts is None:
            counts = link.sent[envelope.phase] = self.wire.links[(envelope.phase, self.local, link.peer)]
        counts.messages += 1
        counts.bytes += size

    def batch(self) -> _Batch:
        """``with network.batch():`` holds this party's outgoing data frames and writes each link's in one call
        when the party is about to wait for a message (nothing to read is buffered), when a held link reaches
        :data:`BATCH_BYTES`, and at the end of the block.

        For a party that answers a stream of requests (a passive party served several rounds' requests
        at once): its answers leave together instead of one write and one wake-up of the peer each.
        Messages, their order and the ledger are unchanged. Never for a party that only sends (a dealer):
        its frames would wait for the end of the block.
        """
        return _Batch(self)

    def _hold(self, on: bool) -> None:
        for link in self._links.values():
            if on:
                link.held = []
            else:
                self._flush(link)
                link.held = None

    def _flush(self, link: Link) -> None:
        if not link.held:
            return
        try:
            link.set_timeout(self.deadline)
            link.flush()
        except OSError as exc:
            link.held = None
            raise self._told_by(link, self.lost_peer(link.peer, f"sending held messages failed: {exc}")) from None

    def flush(self) -> None:
        """Write every link's held frames now (see :meth:`Network.flush`)."""
        self._flush_all()

    def _flush_all(self) -> None:
        """Before a wait that may block: every held frame goes out (a peer may need it to answer)."""
        for link in self._links.values():
            if link.held:
                self._flush(link)

    def _told_by(self, link: Link, lost: PeerLost, grace: float = 1.0) -> PeerLost:
        """After a failed send: a peer that aborted before closing has said which peer was lost.

        A party that only sends (a dealer running ahead) learns of a failure when the next
        send to a peer that aborted fails; the peer's ABORT frame, read here, names the
        party really lost, so every process names the same one.
        """
        stop = time.monotonic() + grace
        try:
            while True:
                item = self._next_envelope(link, stop, "abort")
                link.queue.append(item)
        except PeerLost as told:
            return told if link.ended == "abort" else lost
        except (FrameError, OSError, ssl.SSLError):
            return lost

    def lost_peer(self, peer: str, what: str) -> PeerLost:
        """``peer`` lost in this party's current round, because ``what``."""
        where = self.where()
        return PeerLost(f"lost peer {peer!r} in {where}: {what}", peer=peer, round=where)

    def _next_envelope(self, link: Link, deadline: float | None, kind: str | tuple[str, ...]) -> tuple[Envelope, int]:
        """Read the next data frame of ``link``; control frames and failures become exceptions.

        ``kind`` (one kind, or a tuple of the kinds waited for) only names the wait in errors
        (formatted there only: this is every message's path).
        """
        try:
            frame = link.read(deadline)
        except TimeoutError:
            raise self.lost_peer(
                link.peer, f"no {named_kinds(kind)} message within the {self.deadline:g} s deadline"
            ) from None
        except EOFError:
            what = f"connection closed while waiting for a {named_kinds(kind)} message"
            raise self.lost_peer(link.peer, what) from None
        except OSError as exc:
            raise self.lost_peer(
                link.peer, f"connection failed while waiting for a {named_kinds(kind)} message: {exc}"
            ) from None
        if frame.type is FrameType.DATA:
            try:
                envelope, payload_bytes = decode_counted(frame.payload)
            except MessageDecodeError as exc:
                raise FrameError(f"malformed message from {link.peer!r}: {exc}") from None
            if envelope.sender != link.peer or envelope.receiver != self.local:
                raise FrameError(
                    f"{link.peer!r} sent a message addressed from {envelope.sender!r} to {envelope.receiver!r} "
                    f"on its link to {self.local!r}"
                )
            tally = link.got.get(envelope.phase)
            if tally is None:
                key = (envelope.phase, link.peer, self.local)
                tally = link.got[envelope.phase] = (self.received.links[key], self.wire.links[key])
            counts, wire = tally
            counts.messages += 1
            counts.bytes += payload_bytes
            wire.messages += 1
            wire.bytes += HEADER_BYTES + len(frame.payload)
            return envelope, frame.depth
        self.count_wire(CONTROL, link.peer, self.local, HEADER_BYTES + len(frame.payload))
        if frame.type is FrameType.CLOSE:
            link.ended = "close"
            raise self.lost_peer(
                link.peer, f"it closed the session while {self.local!r} waited for a {named_kinds(kind)} message"
            )
        if frame.type is FrameType.ABORT:
            link.ended = "abort"
            info = frames.read_json_payload(frame.payload, "abort")
            lost = str(info.get("lost") or link.peer)
            where = info.get("round") or self.where()
            raise PeerLost(
                f"lost peer {lost!r} in {where} (session aborted by {link.peer!r}: {info.get('reason', '')})",
                peer=lost,
                round=where,
            )
        raise FrameError(f"unexpected {frame.type.name} frame from {link.peer!r} after the handshake")

    def _take(self, receiver: str, kind: str, sender: str | None) -> tuple[Envelope, int]:
        return self._take_one_of(receiver, (kind,), sender)

    def _take_one_of(self, receiver: str, kinds: tuple[str, ...], sender: str | None) -> tuple[Envelope, int]:
        """The oldest message for this party of any of ``kinds``: first from what was read ahead, then from
        the wire (from ``sender``, or from whichever linked peer has data), within the receive deadline.

        Messages of other kinds read on the way stay queued on their link for later receives.
        """
        if receiver != self.local:
            raise ProtocolError(f"this process runs {self.local!r}; it cannot receive for {receiver!r}")
        deadline = time.monotonic() + self.deadline
        if sender is not None:
            link = self.link(sender)
            if link.queue:
                hit = link.pop(kinds)
                if hit is not None:
                    return hit
            while True:
                if link.held is not None and not link.has_data():
                    self._flush_all()  # about to wait: a held message may be what the peer waits for
                item = self._next_envelope(link, deadline, kinds)
                if item[0].message.kind in kinds:
                    return item
                link.queue.append(item)
        return self._take_any(kinds, deadline)

    def _find(self, receiver: str, kinds: tuple[str, ...], sender: str | None) -> Envelope:
        """:meth:`peek`: the oldest message of ``kinds`` read ahead, else the next one off the wire, which is then
        queued last on its link (it is the newest there, so the link's order is kept)."""
        if sender is not None:
            links = [self.link(sender)]
        else:
            links = [link for link in self._links.values() if not link.ended]
        for link in links:
            for item in link.queue:
                if item[0].message.kind in kinds:
                    return item[0]
        item = self._take_one_of(receiver, kinds, sender)
        self._links[item[0].sender].queue.append(item)
        return item[0]

    def drop(self, peer: str) -> None:
        """Go on without ``peer``, found lost (a party that can finish without it, as FCLUB's global server without
        a local server): its link is closed, later sends to it raise :class:`PeerLost`, waits for any peer skip it
        and :meth:`close` does not wait for it."""
        link = self._links.get(peer)
        if link is None:
            raise ProtocolError(f"{self.local!r} has no link to {peer!r} to drop (linked: {sorted(self._links)})")
        if link.ended is None:
            link.ended = "lost"
        link.held = None
        link.shut()

    def _take_any(self, kinds: tuple[str, ...], deadline: float) -> tuple[Envelope, int]:
        """The first message of any of ``kinds`` from any peer still linked (read-ahead queues first)."""
        links = [link for link in self._links.values() if not link.ended]
        for link in links:
            hit = link.pop(kinds)
            if hit is not None:
                return hit
        if not links:  # nobody can send any more: say so now rather than at the deadline
            where = self.where()
            raise PeerLost(
                f"no {named_kinds(kinds)} message can come in {where}: every peer has ended the session",
                peer="any",
                round=where,
            )
        while True:
            ready = [link for link in links if link.has_data()]
            if not ready:
                self._flush_all()
                remaining = deadline - time.monotonic()
                ready = self._any_peer.ready(links, remaining) if remaining > 0 else []
                if not ready:
                    peers = ", ".join(sorted(repr(link.peer) for link in links))  # links are in connection order
                    where = self.where()
                    raise PeerLost(
                        f"no {named_kinds(kinds)} message from any of {peers} within the {self.deadline:g} s "
                        f"deadline in {where}",
                        peer=links[0].peer if len(links) == 1 else "any",
                        round=where,
                    )
            for link in ready:  # it has data: a deadline passed meanwhile does not blame it (READ_GRACE_S)
                item = self._next_envelope(link, max(deadline, time.monotonic() + READ_GRACE_S), kinds)
                if item[0].message.kind in kinds:
                    return item
                link.queue.append(item)

    # ----------------------------------------------------------------- ending

    def close(self, timeout: float | None = -1.0) -> None:
        """End the session cleanly: send CLOSE on every link, then wait for each peer's CLOSE.

        ``timeout`` bounds the wait (default: the receive deadline; None waits for as long as
        the peers run, e.g. a party whose part ended at setup). A peer that sends data or
        aborts instead raises; a peer that vanishes raises :class:`PeerLost`.
        """
        wait = self.deadline if timeout == -1.0 else timeout
        try:
            for link in self._links.values():
                if link.ended not in ("abort", "lost"):
                    try:
                        self.count_wire(CONTROL, self.local, link.peer, link.send(FrameType.CLOSE, 0, b""))
                    except OSError:
                        pass  # it may already have gone; reading below tells
            deadline = None if wait is None else time.monotonic() + wait
            self._await_closes([link for link in self._links.values() if link.ended is None], deadline)
        finally:
            self.close_sockets()

    def _await_closes(self, pending: list[Link], deadline: float | None) -> None:
        """Wait for every pending peer's CLOSE at once: the first ABORT or lost link on any of them ends the wait."""
        with selectors.DefaultSelector() as selector:
            for link in pending:
                selector.register(link.sock, selectors.EVENT_READ, link)
            while pending:
                ready = [link for link in pending if link.has_data()]
                if not ready:
                    remaining = None if deadline is None else deadline - time.monotonic()
                    if remaining is not None and remaining <= 0:
                        raise self.lost_peer(
                            pending[0].peer, f"no 'close' message within the {self.deadline:g} s deadline"
                        )
                    ready = [key.data for key, _ in selector.select(remaining)]
                for link in ready:
                    try:
                        late = None if deadline is None else max(deadline, time.monotonic() + READ_GRACE_S)
                        envelope, _ = self._next_envelope(link, late, "close")
                    except PeerLost as lost:
                        if link.ended != "close":
                            raise self._told_round(lost) from None
                        pending.remove(link)
                        selector.unregister(link.sock)
                        continue
                    raise ProtocolError(
                        f"{link.peer!r} sent a {envelope.message.kind!r} message after {self.local!r} "
                        "closed the session"
                    )

    def _told_round(self, lost: PeerLost, grace: float = 2.0) -> PeerLost:
        """A party idle between phases learns the round a peer was lost in from another peer's ABORT.

        Only the parties in the middle of a round see the round; one that waits at the end
        (the mask generator) gives them ``grace`` seconds to say it, so every process names
        the same lost peer and round.
        """
        if self._phase is not None or (lost.round is not None and "between phases" not in lost.round):
            return lost
        stop = time.monotonic() + grace
        for link in self._links.values():
            if link.ended or link.peer == lost.peer:
                continue
            try:
                self._next_envelope(link, stop, "close")
            except PeerLost as told:
                if link.ended == "abort" and told.peer == lost.peer:
                    return told
            except (FrameError, OSError):
                continue
        return lost

    def abort(self, reason: str, *, lost: str | None = None, round: str | None = None) -> None:
        """Tell every peer still linked that the session ends on an error (best effort), then close."""
        payload = frames.json_payload(reason=reason, lost=lost, round=round or self.where(), by=self.local)
        for link in self._links.values():
            if link.ended:
                continue
            try:
                link.set_timeout(1.0)  # held frames go first (sequence order), within this timeout too
                self.count_wire(CONTROL, self.local, link.peer, link.send(FrameType.ABORT, 0, payload))
            except OSError:
                pass
        self.close_sockets()

    def close_sockets(self) -> None:
        """Shut every link and the listener at once, sending nothing: what the kernel does to a killed process's
        connections (internal API: the end of close() and abort(); tests use it to play a dead peer)."""
        for link in self._links.values():
            link.shut()
        self._any_peer.close()
        if self.gate is not None:
            self.gate.close()
            self.gate = None

    def __enter__(self) -> TlsNetwork:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close_sockets()
