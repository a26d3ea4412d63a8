"""Parties as separate processes: a :class:`~privbandits.comm.Network` over mutually authenticated TCP.

Each process runs one party and holds a :class:`TlsNetwork`: one TCP connection per
peer, blocking sockets wrapped by the standard :mod:`ssl` module (measured on loopback:
about 30 µs per round trip, an order of magnitude below asyncio streams or gRPC; bandit
rounds are many small messages, so latency decides).

Security of a link:

* TLS 1.3 only, both ways authenticated: every party presents a certificate signed by
  the deployment's CA (and only that CA is trusted); the certificate's DNS subject
  alternative name must be exactly the party name the deployment file gives that
  address. No certificate, another CA, another name or a plaintext client is refused
  during the handshake, before any frame is read; the refusal is kept in
  :attr:`TlsNetwork.refusals` and the listener goes on waiting for the real peer.
* Frames (:mod:`~privbandits.comm.frames`) carry the codec's bytes, never pickle, with
  per-link sequence numbers (replay, reordering or loss is an error) and a bounded length.
  A decoded envelope must name the authenticated peer as sender and this party as receiver.
* Every receive has a deadline. A peer that dies, stalls past the deadline, sends a
  malformed frame or aborts raises :class:`PeerLost` (or :class:`~privbandits.comm.frames.FrameError`)
  naming the peer and the protocol round; :meth:`TlsNetwork.abort` then tells the remaining
  peers which peer was lost, so every party can exit with one line naming it.

Who dials whom: parties are ordered as in the deployment file; each party dials the
parties before it and accepts the ones after it (no cycles, so no deadlock).

The ledger: :attr:`Network.traffic` counts, as in :class:`~privbandits.comm.InMemoryNetwork`,
the payload bytes, messages and rounds of the messages *this* party sends (the union of
all parties' ledgers is the in-memory ledger); :attr:`TlsNetwork.received` counts what it
received; :attr:`TlsNetwork.wire` counts frame bytes (header + codec bytes) both ways.
"""

from __future__ import annotations

import logging
import selectors
import socket
import ssl
import time
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from privbandits.comm import frames
from privbandits.comm.codec import Envelope, MessageDecodeError, decode_counted, encode_parts
from privbandits.comm.frames import DEFAULT_MAX_FRAME_BYTES, HEADER_BYTES, FrameError, FrameType
from privbandits.comm.network import Endpoint, LinkCounts, Network, ProtocolError, Traffic

log = logging.getLogger(__name__)

WIRE_VERSION = 2
"""Frames and codec layout; parties of another version are refused at the hello (2: numbers as words)."""
CONTROL = "control"
"""Phase under which :attr:`TlsNetwork.wire` counts HELLO, CLOSE and ABORT frames."""
BATCH_BYTES = 256 * 1024
"""Inside :meth:`TlsNetwork.batch`, a link whose held frames reach this many bytes writes them at once."""
READ_AHEAD = 64 * 1024
"""Bytes a link asks its socket for in one read: whatever has arrived, up to this (a TLS read returns at most one
record, 16 KiB), so several small frames cost one read instead of two each."""
_new_tuple = tuple.__new__
"""Builds a frame (a named tuple) from its fields without the Python-level ``__new__``."""
DEADLINE_SLACK = 0.05
"""Seconds a receive may run past its deadline: the socket's timeout is re-set only when it would pass
the deadline by more (each ``settimeout`` is an ``ioctl``; resetting it per read cost 6% of a message)."""


class TransportError(RuntimeError):
    """A link could not be set up or used."""


class HandshakeError(TransportError):
    """A peer could not be connected and authenticated (or refused us)."""


class PeerLost(TransportError):
    """A peer died, stalled past the deadline, closed early or aborted the session.

    ``peer`` is the party that was lost (for an abort relayed by another party, the one
    that party lost) and ``round`` the protocol round it was lost in, when known.
    """

    def __init__(self, message: str, *, peer: str, round: str | None = None) -> None:
        super().__init__(message)
        self.peer, self.round = peer, round


@dataclass(frozen=True)
class TlsCredentials:
    """PEM files of one party: the deployment CA's certificate, its own certificate and private key."""

    ca: Path
    certificate: Path
    key: Path


def _context(credentials: TlsCredentials, *, server: bool) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER if server else ssl.PROTOCOL_TLS_CLIENT)
    context.minimum_version = context.maximum_version = ssl.TLSVersion.TLSv1_3
    context.check_hostname = False  # the peer's name is checked against the deployment file instead
    context.verify_mode = ssl.CERT_REQUIRED  # on the server side this demands a client certificate
    context.load_verify_locations(cafile=str(credentials.ca))  # only the deployment CA, no system roots
    context.load_cert_chain(str(credentials.certificate), str(credentials.key))
    return context


def server_context(credentials: TlsCredentials) -> ssl.SSLContext:
    """TLS 1.3 server context that requires a client certificate from the deployment CA."""
    return _context(credentials, server=True)


def client_context(credentials: TlsCredentials) -> ssl.SSLContext:
    """TLS 1.3 client context that presents this party's certificate and trusts only the deployment CA."""
    return _context(credentials, server=False)


def certificate_names(sock: ssl.SSLSocket) -> list[str]:
    """DNS subject alternative names of the peer's (already verified) certificate."""
    cert = sock.getpeercert() or {}
    return [value for kind, value in cert.get("subjectAltName", ()) if kind == "DNS"]


def bind_listener(host: str = "127.0.0.1", port: int = 0, backlog: int = 16) -> socket.socket:
    """A listening TCP socket (port 0: an ephemeral port; read it with ``getsockname()``)."""
    listener = socket.create_server((host, port), backlog=backlog)
    return listener


class _Link:
    """One authenticated connection to a peer: framing, sequence numbers, a queue of messages read ahead."""

    __slots__ = (
        "peer",
        "sock",
        "send_seq",
        "recv_seq",
        "queue",
        "ended",
        "max_payload",
        "held",
        "held_bytes",
        "timeout",
        "inbuf",
        "lo",
        "hi",
        "sent",
        "got",
    )

    def __init__(self, peer: str, sock: ssl.SSLSocket, max_payload: int) -> None:
        self.peer, self.sock, self.max_payload = peer, sock, max_payload
        self.timeout = sock.gettimeout()
        """The socket's timeout as last set (each ``settimeout`` is a system call: set only when it must change)."""
        self.send_seq = self.recv_seq = 0
        self.queue: deque[tuple[Envelope, int]] = deque()
        self.ended: str | None = None
        """None while open; "close" or "abort" once the peer sent that frame; "lost" once this party dropped it."""
        self.held: list[bytes] | None = None
        """Frames packed but not yet written, inside :meth:`TlsNetwork.batch` (None outside one)."""
        self.held_bytes = 0
        self.inbuf = bytearray()
        """Bytes read ahead from the socket; ``inbuf[lo:hi]`` are not yet taken as frames."""
        self.lo = self.hi = 0
        self.sent: dict[str, LinkCounts] = {}
        """Per phase, the network's wire counts of this link's outgoing frames (the ledger's own objects)."""
        self.got: dict[str, tuple[LinkCounts, LinkCounts]] = {}
        """Per phase, the network's received and wire counts of this link's incoming messages."""

    def send(self, frame_type: FrameType, depth: int, payload: bytes) -> int:
        return self.send_parts(frame_type, depth, (payload,), len(payload))

    def send_parts(self, frame_type: FrameType, depth: int, parts: Sequence, length: int) -> int:
        """Frame ``parts`` (buffers of ``length`` bytes in all: the codec's, unjoined) and send it, or hold it
        inside a batch: header and parts are copied into one buffer once, so a sender may reuse its arrays."""
        data = b"".join((frames.pack_header(frame_type, self.send_seq, depth, length), *parts))
        self.send_seq += 1
        if self.held is not None and frame_type is FrameType.DATA:
            self.held.append(data)
            self.held_bytes += len(data)
            if self.held_bytes >= BATCH_BYTES:
                self.flush()
            return len(data)
        self.flush()  # frames leave in sequence order: held data first
        self.sock.sendall(data)
        return len(data)

    def flush(self) -> None:
        """Write the frames held by a batch, in one call."""
        if self.held:
            data = b"".join(self.held)
            self.held.clear()
            self.held_bytes = 0
            self.sock.sendall(data)

    def set_timeout(self, timeout: float | None) -> None:
        """The socket's timeout for the next blocking call (None: block)."""
        if timeout != self.timeout:
            self.sock.settimeout(timeout)
            self.timeout = timeout

    def _limit_wait(self, deadline: float | None) -> None:
        """Make the next read return by ``deadline`` (within :data:`DEADLINE_SLACK`).

        The timeout already set is kept while it neither passes the deadline by more than the
        slack nor falls far short of it (a read that times out short of the deadline is retried),
        so a party's sends and reads at the session's deadline set it once, not once per call.
        """
        if deadline is None:
            self.set_timeout(None)
            return
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError
        timeout = self.timeout
        if timeout is None or timeout > remaining + DEADLINE_SLACK or timeout < remaining / 4:
            self.sock.settimeout(remaining)
            self.timeout = remaining

    def has_data(self) -> bool:
        """Bytes of a frame are waiting: read ahead here, or decrypted inside the TLS object."""
        return self.hi > self.lo or self.sock.pending() > 0

    def _recv(self, view: memoryview, deadline: float | None) -> int:
        """One read into ``view`` within the deadline (0 at the end of the stream)."""
        while True:
            self._limit_wait(deadline)
            try:
                return self.sock.recv_into(view)
            except TimeoutError:
                if deadline is not None and time.monotonic() < deadline:
                    continue  # the timeout set was shorter than what is left
                raise
            except (ssl.SSLZeroReturnError, ssl.SSLEOFError, ConnectionError):
                return 0

    def _fill(self, size: int, deadline: float | None) -> None:
        """Read until ``size`` bytes are buffered from ``lo`` (EOFError if the stream ends first): each read takes
        what has arrived, up to :data:`READ_AHEAD` bytes."""
        buffer = self.inbuf
        while self.hi - self.lo < size:
            if self.lo:  # what is left (part of a frame) moves to the front; the buffer keeps its size
                left = self.hi - self.lo
                buffer[:left] = buffer[self.lo : self.hi]
                self.lo, self.hi = 0, left
            if len(buffer) < self.hi + READ_AHEAD:
                buffer.extend(bytes(self.hi + READ_AHEAD - len(buffer)))
            count = self._recv(memoryview(buffer)[self.hi : self.hi + READ_AHEAD], deadline)
            if not count:
                raise EOFError
            self.hi += count

    def _truncated(self, got: int, size: int, what: str) -> FrameError:
        return FrameError(
            f"truncated frame from {self.peer!r}: the connection closed after {got} of {size} {what} bytes"
        )

    def _payload(self, length: int, deadline: float | None) -> bytearray:
        """The payload after the header just taken: a buffer of its own (the codec decodes it in place)."""
        if length > READ_AHEAD:  # what is buffered of it, then the rest read straight into it
            payload = bytearray(length)
            got = min(self.hi - self.lo, length)
            payload[:got] = self.inbuf[self.lo : self.lo + got]
            self.lo += got
            view = memoryview(payload)
            while got < length:
                count = self._recv(view[got:], deadline)
                if not count:
                    raise self._truncated(got, length, "payload")
                got += count
            return payload
        try:
            self._fill(length, deadline)
        except EOFError:
            raise self._truncated(self.hi - self.lo, length, "payload") from None
        payload = self.inbuf[self.lo : self.lo + length]
        self.lo += length
        return payload

    def read(self, deadline: float | None) -> frames.Frame:
        """The next frame; TimeoutError past the deadline, EOFError on a clean end of stream."""
        if self.hi - self.lo < HEADER_BYTES:
            try:
                self._fill(HEADER_BYTES, deadline)
            except EOFError:
                if self.hi > self.lo:
                    raise self._truncated(self.hi - self.lo, HEADER_BYTES, "header") from None
                raise
        frame_type, seq, depth, length = frames.unpack_header_from(self.inbuf, self.lo, self.max_payload)
        self.lo += HEADER_BYTES
        payload = self._payload(length, deadline)
        if seq != self.recv_seq:
            if seq < self.recv_seq:
                raise FrameError(f"replayed frame from {self.peer!r}: sequence number {seq}, expected {self.recv_seq}")
            raise FrameError(
                f"frames from {self.peer!r} missing or reordered: sequence number {seq}, expected {self.recv_seq}"
            )
        self.recv_seq += 1
        return _new_tuple(frames.Frame, (frame_type, seq, depth, payload))

    def pop(self, kinds: tuple[str, ...]) -> tuple[Envelope, int] | None:
        """The oldest message read ahead whose kind is one of ``kinds`` (removed from the queue), or None."""
        queue = self.queue
        for index, item in enumerate(queue):
            if item[0].message.kind in kinds:
                del queue[index]
                return item
        return None

    def shut(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass


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


def _named(kinds: str | tuple[str, ...]) -> str:
    """``'a'`` for one kind, ``'a' or 'b'`` for several (how a wait names what it waits for)."""
    return repr(kinds) if isinstance(kinds, str) else " or ".join(repr(kind) for kind in kinds)


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
        self._server_context = server_context(credentials)
        self._client_context = client_context(credentials)
        self._listener, self.keep_listening = listener, keep_listening
        if listener is None and (self._accept or keep_listening):
            self._listener = bind_listener(*self.addresses[local])
        self._links: dict[str, _Link] = {}
        self.received = Traffic()
        """Messages, payload bytes this party received, per (phase, sender, receiver)."""
        self.wire = Traffic()
        """Frames and frame bytes (header + codec bytes) sent and received, per (phase, sender, receiver)."""
        self.refusals: list[str] = []
        """Why each refused connection attempt was refused (wrong CA, name, plaintext, ...)."""
        self.dropped: list[str] = []
        """Why each device connection (:mod:`~privbandits.comm.oneshot`) was dropped without its message."""
        self.parties.update(wanted)

    # ----------------------------------------------------------------- setup

    def register(self, name: str) -> Endpoint:
        if name != self.local:
            raise ValueError(f"this process runs party {self.local!r}; it cannot host {name!r}")
        return super().register(name)

    @property
    def listen_address(self) -> tuple[str, int] | None:
        return self._listener.getsockname()[:2] if self._listener is not None else None

    def connect(self) -> TlsNetwork:
        """Dial the earlier peers, accept the later ones; HandshakeError if not all are linked in time."""
        stop = time.monotonic() + self.connect_deadline
        try:
            for peer in self._dial:
                self._links[peer] = self._dial_peer(peer, stop)
            self._accept_peers(stop)
        except BaseException:
            self._close_sockets()
            raise
        finally:
            if self._listener is not None and not self.keep_listening:
                self._listener.close()
                self._listener = None
        return self

    def _hello(self) -> bytes:
        return frames.json_payload(version=WIRE_VERSION, session=self.session)

    def _check_hello(self, link: _Link, deadline: float) -> None:
        try:
            frame = link.read(deadline)
        except TimeoutError:
            raise HandshakeError(f"{link.peer!r} sent no hello within the handshake timeout") from None
        except (EOFError, OSError) as exc:
            reason = exc or "end of stream"
            raise HandshakeError(f"{link.peer!r} closed the connection during the hello ({reason})") from None
        if frame.type is not FrameType.HELLO:
            raise HandshakeError(f"{link.peer!r} sent a {frame.type.name} frame instead of a hello")
        hello = frames.read_json_payload(frame.payload, "hello")
        if hello.get("version") != WIRE_VERSION:
            raise HandshakeError(f"{link.peer!r} speaks wire version {hello.get('version')}, we speak {WIRE_VERSION}")
        if hello.get("session") != self.session:
            raise HandshakeError(f"{link.peer!r} runs another deployment (session digest differs)")
        self._count_wire(CONTROL, link.peer, self.local, HEADER_BYTES + len(frame.payload))

    def _dial_peer(self, peer: str, stop: float) -> _Link:
        host, port = self.addresses[peer]
        while True:
            remaining = stop - time.monotonic()
            if remaining <= 0:
                raise HandshakeError(f"{self.local!r} could not reach {peer!r} at {host}:{port} in time")
            try:
                raw = socket.create_connection((host, port), timeout=min(remaining, self.handshake_timeout))
                break
            except OSError:  # not listening yet
                time.sleep(min(0.05, max(remaining, 0)))
        raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            sock = self._client_context.wrap_socket(raw, do_handshake_on_connect=False)
            sock.settimeout(self.handshake_timeout)
            sock.do_handshake()
        except (ssl.SSLError, OSError) as exc:
            raw.close()
            raise HandshakeError(f"TLS handshake with {peer!r} at {host}:{port} failed: {exc}") from None
        names = certificate_names(sock)
        if names != [peer]:
            sock.close()
            raise HandshakeError(f"{host}:{port} presented a certificate for {names}, expected {peer!r}")
        link = _Link(peer, sock, self.max_frame_bytes)
        try:
            self._count_wire(CONTROL, self.local, peer, link.send(FrameType.HELLO, 0, self._hello()))
            self._check_hello(link, time.monotonic() + self.handshake_timeout)
        except (ssl.SSLError, OSError, FrameError, HandshakeError) as exc:  # TLS 1.3: a refused client certificate
            link.shut()  # shows up here, after our side of the handshake completed
            raise HandshakeError(f"{peer!r} refused the connection from {self.local!r}: {exc}") from None
        return link

    def _accept_peers(self, stop: float) -> None:
        waiting = [peer for peer in self._accept if peer not in self._links]
        while waiting:
            remaining = stop - time.monotonic()
            if remaining <= 0:
                refused = f"; refused: {'; '.join(self.refusals)}" if self.refusals else ""
                missing = ", ".join(map(repr, waiting))
                raise HandshakeError(f"{self.local!r}: no connection from {missing} in time{refused}")
            self._listener.settimeout(remaining)
            try:
                raw, address = self._listener.accept()
            except TimeoutError:
                continue
            link = self._authenticate(raw, address, waiting)
            if link is not None:
                self._links[link.peer] = link
                waiting.remove(link.peer)

    def _refuse(self, sock: socket.socket, reason: str) -> None:
        self.refusals.append(reason)
        log.warning("%s refused a connection: %s", self.local, reason)
        try:
            sock.close()
        except OSError:
            pass

    def _authenticate(self, raw: socket.socket, address: tuple, waiting: list[str]) -> _Link | None:
        """TLS handshake, certificate name and hello of an accepted connection; None if refused."""
        where = f"{address[0]}:{address[1]}"
        raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        raw.settimeout(self.handshake_timeout)
        try:
            sock = self._server_context.wrap_socket(raw, server_side=True, do_handshake_on_connect=False)
            sock.do_handshake()
        except (ssl.SSLError, OSError) as exc:
            self._refuse(raw, f"TLS handshake with {where} failed: {exc}")
            return None
        names = certificate_names(sock)
        if len(names) != 1 or names[0] not in waiting:
            expected = ", ".join(map(repr, waiting))
            self._refuse(sock, f"{where} presented a certificate for {names}; expected one of {expected}")
            return None
        link = _Link(names[0], sock, self.max_frame_bytes)
        try:
            self._check_hello(link, time.monotonic() + self.handshake_timeout)
            self._count_wire(CONTROL, self.local, link.peer, link.send(FrameType.HELLO, 0, self._hello()))
        except (HandshakeError, FrameError, ssl.SSLError, OSError) as exc:
            self._refuse(sock, f"{link.peer!r} at {where}: {exc}")
            return None
        return link

    # ----------------------------------------------------------------- messages

    def _where(self) -> str:
        phase = self._phase
        if phase is None:
            return "between phases"
        return f"{phase} {self.traffic.segments.get(phase, 0) + 1}"

    def _count_wire(self, phase: str, sender: str, receiver: str, size: int) -> None:
        counts = self.wire.links[(phase, sender, receiver)]
        counts.messages += 1
        counts.bytes += size

    def _link(self, peer: str) -> _Link:
        link = self._links.get(peer)
        if link is None:
            linked = sorted(self._links)
            raise ProtocolError(f"{self.local!r} has no link to {peer!r} (connect() first; linked: {linked})")
        if link.ended:
            what = "was lost earlier in the session" if link.ended == "lost" else "has already ended the session"
            raise PeerLost(f"{peer!r} {what} ({self._where()})", peer=peer, round=self._where())
        return link

    def _deliver(self, envelope: Envelope, depth: int) -> None:
        if envelope.sender != self.local:
            raise ProtocolError(f"this process runs {self.local!r}; it cannot send as {envelope.sender!r}")
        link = self._links.get(envelope.receiver)
        if link is None or link.ended:
            link = self._link(envelope.receiver)  # says why it cannot be sent to
        parts, length = encode_parts(envelope)
        try:
            # a send blocks at most the deadline too (a peer that stops reading fills the buffers;
            # the timeout the last read left could be far shorter)
            link.set_timeout(self.deadline)
            size = link.send_parts(FrameType.DATA, depth, parts, length)
        except OSError as exc:
            lost = self._lost(link.peer, f"sending {envelope.message.kind!r} failed: {exc}")
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

    def _flush(self, link: _Link) -> None:
        if not link.held:
            return
        try:
            link.set_timeout(self.deadline)
            link.flush()
        except OSError as exc:
            link.held = None
            raise self._told_by(link, self._lost(link.peer, f"sending held messages failed: {exc}")) from None

    def flush(self) -> None:
        """Write every link's held frames now (see :meth:`Network.flush`)."""
        self._flush_all()

    def _flush_all(self) -> None:
        """Before a wait that may block: every held frame goes out (a peer may need it to answer)."""
        for link in self._links.values():
            if link.held:
                self._flush(link)

    def _told_by(self, link: _Link, lost: PeerLost, grace: float = 1.0) -> PeerLost:
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

    def _lost(self, peer: str, what: str) -> PeerLost:
        where = self._where()
        return PeerLost(f"lost peer {peer!r} in {where}: {what}", peer=peer, round=where)

    def _next_envelope(self, link: _Link, deadline: float | None, kind: str | tuple[str, ...]) -> tuple[Envelope, int]:
        """Read the next data frame of ``link``; control frames and failures become exceptions.

        ``kind`` (one kind, or a tuple of the kinds waited for) only names the wait in errors
        (formatted there only: this is every message's path).
        """
        try:
            frame = link.read(deadline)
        except TimeoutError:
            raise self._lost(link.peer, f"no {_named(kind)} message within the {self.deadline:g} s deadline") from None
        except EOFError:
            raise self._lost(link.peer, f"connection closed while waiting for a {_named(kind)} message") from None
        except OSError as exc:
            raise self._lost(
                link.peer, f"connection failed while waiting for a {_named(kind)} message: {exc}"
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
        self._count_wire(CONTROL, link.peer, self.local, HEADER_BYTES + len(frame.payload))
        if frame.type is FrameType.CLOSE:
            link.ended = "close"
            raise self._lost(
                link.peer, f"it closed the session while {self.local!r} waited for a {_named(kind)} message"
            )
        if frame.type is FrameType.ABORT:
            link.ended = "abort"
            info = frames.read_json_payload(frame.payload, "abort")
            lost = str(info.get("lost") or link.peer)
            where = info.get("round") or self._where()
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
            link = self._link(sender)
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
            links = [self._link(sender)]
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
            where = self._where()
            raise PeerLost(
                f"no {_named(kinds)} message can come in {where}: every peer has ended the session",
                peer="any",
                round=where,
            )
        with selectors.DefaultSelector() as selector:
            for link in links:
                selector.register(link.sock, selectors.EVENT_READ, link)
            while True:
                ready = [link for link in links if link.has_data()]
                if not ready:
                    self._flush_all()
                    remaining = deadline - time.monotonic()
                    events = selector.select(remaining) if remaining > 0 else []
                    if not events:
                        peers = ", ".join(sorted(repr(link.peer) for link in links))  # links are in connection order
                        where = self._where()
                        raise PeerLost(
                            f"no {_named(kinds)} message from any of {peers} within the {self.deadline:g} s "
                            f"deadline in {where}",
                            peer=links[0].peer if len(links) == 1 else "any",
                            round=where,
                        )
                    ready = [key.data for key, _ in events]
                for link in ready:
                    item = self._next_envelope(link, deadline, kinds)
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
                        self._count_wire(CONTROL, self.local, link.peer, link.send(FrameType.CLOSE, 0, b""))
                    except OSError:
                        pass  # it may already have gone; reading below tells
            deadline = None if wait is None else time.monotonic() + wait
            self._await_closes([link for link in self._links.values() if link.ended is None], deadline)
        finally:
            self._close_sockets()

    def _await_closes(self, pending: list[_Link], deadline: float | None) -> None:
        """Wait for every pending peer's CLOSE at once: the first ABORT or lost link on any of them ends the wait."""
        with selectors.DefaultSelector() as selector:
            for link in pending:
                selector.register(link.sock, selectors.EVENT_READ, link)
            while pending:
                ready = [link for link in pending if link.has_data()]
                if not ready:
                    remaining = None if deadline is None else deadline - time.monotonic()
                    if remaining is not None and remaining <= 0:
                        raise self._lost(pending[0].peer, f"no 'close' message within the {self.deadline:g} s deadline")
                    ready = [key.data for key, _ in selector.select(remaining)]
                for link in ready:
                    try:
                        envelope, _ = self._next_envelope(link, deadline, "close")
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
        if self._phase is not None or lost.round not in (None, "between phases"):
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
        payload = frames.json_payload(reason=reason, lost=lost, round=round or self._where(), by=self.local)
        for link in self._links.values():
            if link.ended:
                continue
            try:
                link.set_timeout(1.0)  # held frames go first (sequence order), within this timeout too
                self._count_wire(CONTROL, self.local, link.peer, link.send(FrameType.ABORT, 0, payload))
            except OSError:
                pass
        self._close_sockets()

    def _close_sockets(self) -> None:
        for link in self._links.values():
            link.shut()
        if self._listener is not None:
            self._listener.close()
            self._listener = None

    def __enter__(self) -> TlsNetwork:
        return self

    def __exit__(self, *exc: object) -> None:
        self._close_sockets()
