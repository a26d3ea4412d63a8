"""A party's listener: connections are accepted and authenticated side by side, each within its own timeout.

Anyone can open a TCP connection to a party's address. So the :class:`Gate` never waits on one
connection: it accepts every connection at once, runs all the TLS handshakes (non-blocking, driven by
one selector) and, for a connection whose certificate names a party it expects, reads its first frame
(the hello of a peer, or a device's one message), each within ``timeout`` seconds of its arrival. An idle,
plaintext or garbage connection costs a handshake attempt and one slot until its timeout; at most
``max_pending`` are pending, and a new connection past that drops the oldest pending one (a real peer
completes its handshake within a round trip, so it is never the oldest for long). The rest — linking a
peer, taking a device's message — is the caller's: :meth:`Gate.wait` hands it each connection that
got that far (:class:`Arrival`), and each one refused on the way, with why.

Session tickets: a TLS 1.3 client that resumes a session (its ClientHello offers a pre-shared key, read
with ``MSG_PEEK`` before the handshake starts) is given no new ticket, since the one it used stays good
until it expires, and making a ticket (the session with its client certificate, encoded and encrypted)
costs the server about a third of a resumed handshake. A full handshake gets the context's
``num_tickets`` as before. Either way the handshake and its checks are OpenSSL's, unchanged.
"""

from __future__ import annotations

import os
import selectors
import socket
import ssl
import time
from collections import deque
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from privbandits.comm.frames import Frame, FrameError
from privbandits.comm.tls.context import certificate_names
from privbandits.comm.tls.link import Link

MAX_PENDING = 64
"""Connections a gate authenticates at once; one more drops the oldest pending one."""
HELLO_BYTES = 4096
"""How much of a new connection's first bytes is peeked at for its ClientHello (ours fit well within it)."""
_PRE_SHARED_KEY = 41
"""The TLS 1.3 ClientHello extension that offers a session to resume (RFC 8446, 4.2.11)."""
LINGER_S = 1.0
"""Seconds a connection refused at its TLS handshake is kept half-closed, its input read and discarded, so the
peer reads the alert rather than a reset (closing with its unread bytes would reset the connection)."""


class Watched(Protocol):
    """What a gate watches beside its connections (a :class:`Link`, or a worker's pipe): its ``sock`` to select
    on, and whether it has data to read."""

    sock: Any

    def has_data(self) -> bool: ...


@dataclass
class Arrival:
    """A connection that completed its handshake and sent its first frame, or one refused on the way.

    ``failure`` is None for a whole arrival (``link`` and ``frame`` set); else the stage it failed at:
    ``"handshake"`` (``detail`` the TLS error), ``"certificate"`` (``names``: the DNS names it presented, none
    of the expected ones; ``link`` set and open, for the caller to answer and close) or ``"frame"`` (``link``
    set: the authenticated peer; ``detail``: "eof", "timeout", or the frame error)."""

    where: str
    link: Link | None = None
    frame: Frame | None = None
    failure: str | None = None
    detail: str = ""
    names: Sequence[str] = ()

    @property
    def peer_link(self) -> Link:
        """``link``, set for every arrival but one whose handshake failed."""
        if self.link is None:
            raise ValueError(f"the connection from {self.where} has no link: its handshake failed")
        return self.link

    @property
    def first_frame(self) -> Frame:
        """``frame``, set for a whole arrival (``failure`` None)."""
        if self.frame is None:
            raise ValueError(f"the connection from {self.where} sent no frame: it failed at its {self.failure}")
        return self.frame


def offers_resumption(data: bytes) -> bool | None:
    """Whether ``data``, the first bytes of a connection, hold a TLS ClientHello that offers a session to resume
    (a pre-shared key extension); None if they are not all of one ClientHello record (incomplete, or not TLS)."""
    if len(data) < 9 or data[0] != 0x16 or data[5] != 0x01 or len(data) < 5 + int.from_bytes(data[3:5], "big"):
        return None
    try:
        at = 9 + 2 + 32  # record and handshake headers, legacy version, random
        at += 1 + data[at]  # legacy session id
        at += 2 + int.from_bytes(data[at : at + 2], "big")  # cipher suites
        at += 1 + data[at]  # compression methods
        end = at + 2 + int.from_bytes(data[at : at + 2], "big")
        at += 2
        while at + 4 <= end:
            if int.from_bytes(data[at : at + 2], "big") == _PRE_SHARED_KEY:
                return True
            at += 4 + int.from_bytes(data[at + 2 : at + 4], "big")
    except IndexError:
        return None
    return False


class _Pending:
    __slots__ = ("sock", "fd", "where", "stop", "link", "events")

    def __init__(self, sock: socket.socket, where: str, stop: float) -> None:
        self.sock: socket.socket | ssl.SSLSocket = sock
        """The accepted socket, until its first bytes arrive; then its TLS socket (same descriptor)."""
        self.fd = sock.fileno()
        self.where, self.stop = where, stop
        self.link: Link | None = None
        self.events = selectors.EVENT_READ


class Gate:
    """Accepts on ``listener`` and authenticates with ``context`` (a server context demanding client certificates)."""

    def __init__(self, listener: socket.socket, context: ssl.SSLContext, *, timeout: float, max_payload: int,
                 max_pending: int = MAX_PENDING) -> None:  # fmt: skip
        listener.setblocking(False)
        self.listener, self.context = listener, context
        self.timeout, self.max_payload, self.max_pending = timeout, max_payload, max_pending
        self.tickets = context.num_tickets
        """Session tickets a full handshake gets (a resumed one gets none)."""
        self.pending: dict[int, _Pending] = {}
        """Connections accepted and not yet through (by descriptor), oldest first."""
        self.arrived: deque[Arrival] = deque()
        self.closing: dict[int, float] = {}
        """Descriptors of refused connections, half-closed, with when they are closed at the latest (oldest first)."""
        self._selector: selectors.BaseSelector | None = None
        """Kept from one wait to the next (made at the first, so a process forked before it makes its own)."""

    def next_arrival(self, expect: Collection[str], until: float | None) -> Arrival:
        """:meth:`wait` with no links to watch: the next arrival."""
        arrival = self.wait(expect, until)
        assert arrival is not None, "wait gives None only for a watched link's data"
        return arrival

    def wait(self, expect: Collection[str], until: float | None, watch: Sequence[Watched] = ()) -> Arrival | None:
        """The next arrival (whole or refused) of a connection presenting one of the names in ``expect``; None as
        soon as a link in ``watch`` has data to read; TimeoutError at ``until`` (monotonic; None: no limit)."""
        selector = self._select_on()
        watched = []
        try:
            for link in watch:
                selector.register(link.sock, selectors.EVENT_READ, link)
                watched.append(link.sock)
            while not self.arrived:
                if any(link.has_data() for link in watch):
                    return None
                now = time.monotonic()
                self._expire(now)
                if self.arrived:
                    break
                if until is not None and now >= until:
                    raise TimeoutError
                stops = [until] if until is not None else []
                if self.pending:  # the oldest is the first to time out
                    stops.append(next(iter(self.pending.values())).stop)
                if self.closing:
                    stops.append(next(iter(self.closing.values())))
                events = selector.select(max(min(stops) - now, 0.0) if stops else None)
                for key, _ in events:
                    if key.data is None:
                        self._accept(expect)
                    elif isinstance(key.data, int):
                        self._drain(key.data)
                    elif isinstance(key.data, _Pending):
                        if self.pending.get(key.data.fd) is key.data:  # not dropped earlier in this same pass
                            self._advance(key.data, expect)
                    else:
                        return None
        finally:
            for sock in watched:
                selector.unregister(sock)
        return self.arrived.popleft()

    def take_arrived(self) -> list[Arrival]:
        """The arrivals already here (none waited for), taken: those the last :meth:`wait`'s pass brought beside the
        one it gave."""
        arrived = list(self.arrived)
        self.arrived.clear()
        return arrived

    def _select_on(self) -> selectors.BaseSelector:
        if self._selector is None:
            self._selector = selectors.DefaultSelector()
            self._selector.register(self.listener, selectors.EVENT_READ, None)
        return self._selector

    def _watch(self, pending: _Pending, events: int) -> None:
        """Wait for ``events`` on ``pending``'s socket next."""
        if events != pending.events:
            pending.events = events
            self._select_on().modify(pending.fd, events, pending)

    def _forget(self, pending: _Pending) -> None:
        """``pending`` is through (handed over or failed): no longer waited on."""
        del self.pending[pending.fd]
        self._select_on().unregister(pending.fd)

    def _accept(self, expect: Collection[str]) -> None:
        """Take the connections waiting (at most ``max_pending`` a pass, so a flood cannot keep this loop going),
        and start each one's handshake (its ClientHello is usually there already)."""
        for _ in range(self.max_pending):
            try:
                raw, address = self.listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError:  # e.g. out of file descriptors: what is pending still times out and frees them
                return
            if len(self.pending) >= self.max_pending:
                oldest = next(iter(self.pending.values()))
                self._fail(oldest, "handshake", f"dropped: {self.max_pending} connections were pending")
            raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            raw.setblocking(False)
            where = f"{address[0]}:{address[1]}"
            pending = self.pending[raw.fileno()] = _Pending(raw, where, time.monotonic() + self.timeout)
            self._select_on().register(raw, selectors.EVENT_READ, pending)
            self._advance(pending, expect)

    def _wrap(self, pending: _Pending) -> ssl.SSLSocket | None:
        """Start TLS on ``pending`` once its first bytes are here (None while none are), with no new session
        ticket for a client that resumes a session (see the module doc); its TLS socket."""
        raw = pending.sock
        try:
            hello = raw.recv(HELLO_BYTES, socket.MSG_PEEK)
        except (BlockingIOError, InterruptedError):
            return None
        except OSError:
            hello = b""  # the handshake reports the socket's error
        self.context.num_tickets = 0 if offers_resumption(hello) else self.tickets
        selector = self._select_on()
        selector.unregister(pending.fd)
        pending.sock = sock = self.context.wrap_socket(raw, server_side=True, do_handshake_on_connect=False)
        selector.register(sock, pending.events, pending)
        return sock

    def _advance(self, pending: _Pending, expect: Collection[str]) -> None:
        """Drive one connection's handshake, then its first frame, as far as what has arrived allows."""
        sock = pending.sock if isinstance(pending.sock, ssl.SSLSocket) else self._wrap(pending)
        if sock is None:
            return
        if pending.link is None:
            try:
                sock.do_handshake()
            except ssl.SSLWantReadError:
                self._watch(pending, selectors.EVENT_READ)
                return
            except ssl.SSLWantWriteError:
                self._watch(pending, selectors.EVENT_WRITE)
                return
            except (ssl.SSLError, OSError) as exc:
                self._fail(pending, "handshake", str(exc) or type(exc).__name__)
                return
            names = certificate_names(sock)
            pending.link = Link(names[0] if len(names) == 1 else repr(names), sock, self.max_payload)
            if len(names) != 1 or names[0] not in expect:  # a party of the deployment: the caller may say why
                self._hand_over(pending, Arrival(pending.where, pending.link, None, "certificate", names=names))
                return
            self._watch(pending, selectors.EVENT_READ)
        try:
            frame = pending.link.read_ready()
        except ssl.SSLWantWriteError:
            self._watch(pending, selectors.EVENT_WRITE)
            return
        except EOFError:
            self._fail(pending, "frame", "eof")
            return
        except (FrameError, OSError) as exc:
            self._fail(pending, "frame", str(exc))
            return
        if frame is not None:
            self._hand_over(pending, Arrival(pending.where, pending.link, frame))

    def _hand_over(self, pending: _Pending, arrival: Arrival) -> None:
        self._forget(pending)
        arrival.peer_link.blocking()  # pending.link, authenticated
        self.arrived.append(arrival)

    def _drain(self, descriptor: int) -> None:
        if descriptor not in self.closing:
            return
        try:
            if os.read(descriptor, 65536):
                return
        except BlockingIOError:
            return
        except OSError:
            pass
        self._close(descriptor)

    def _close(self, descriptor: int) -> None:
        del self.closing[descriptor]
        self._select_on().unregister(descriptor)
        os.close(descriptor)

    def _expire(self, now: float) -> None:
        """Close the lingering connections and fail the pending ones whose time is up (both oldest first)."""
        while self.closing and next(iter(self.closing.values())) <= now:
            self._close(next(iter(self.closing)))
        while self.pending and (pending := next(iter(self.pending.values()))).stop <= now:
            stage = "handshake" if pending.link is None else "frame"
            self._fail(pending, stage, f"nothing within the {self.timeout:g} s handshake timeout", timed_out=True)

    def _fail(self, pending: _Pending, stage: str, detail: str = "", *, names: Sequence[str] = (),
              timed_out: bool = False) -> None:  # fmt: skip
        self._forget(pending)
        if stage == "handshake" and not timed_out and len(self.closing) < self.max_pending:
            self._linger(pending.sock)
        else:
            try:
                pending.sock.close()
            except OSError:
                pass
        detail = "timeout" if timed_out and stage == "frame" else detail
        self.arrived.append(Arrival(pending.where, pending.link, None, stage, detail, names))

    def _linger(self, sock: socket.socket) -> None:
        try:
            sock.shutdown(socket.SHUT_WR)
            descriptor = sock.detach()
        except OSError:
            sock.close()
            return
        self.closing[descriptor] = time.monotonic() + LINGER_S
        self._select_on().register(descriptor, selectors.EVENT_READ, descriptor)

    def close(self) -> None:
        """Close the listener and every connection still pending."""
        for pending in list(self.pending.values()):
            try:
                pending.sock.close()
            except OSError:
                pass
        self.pending.clear()
        for descriptor in self.closing:
            os.close(descriptor)
        self.closing.clear()
        if self._selector is not None:
            self._selector.close()
            self._selector = None
        self.listener.close()


def listening(gate: Gate | None) -> Gate:
    """A network's ``gate``, which is None where its party accepts no connections."""
    if gate is None:
        raise RuntimeError("this party accepts no connections: it has no listener")
    return gate
