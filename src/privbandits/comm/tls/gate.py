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


class _Pending:
    __slots__ = ("sock", "where", "stop", "link", "events")

    def __init__(self, sock: ssl.SSLSocket, where: str, stop: float) -> None:
        self.sock, self.where, self.stop = sock, where, stop
        self.link: Link | None = None
        self.events = selectors.EVENT_READ


class Gate:
    """Accepts on ``listener`` and authenticates with ``context`` (a server context demanding client certificates)."""

    def __init__(self, listener: socket.socket, context: ssl.SSLContext, *, timeout: float, max_payload: int,
                 max_pending: int = MAX_PENDING) -> None:  # fmt: skip
        listener.setblocking(False)
        self.listener, self.context = listener, context
        self.timeout, self.max_payload, self.max_pending = timeout, max_payload, max_pending
        self.pending: dict[ssl.SSLSocket, _Pending] = {}
        """Connections accepted and not yet through, oldest first."""
        self.arrived: deque[Arrival] = deque()
        self.closing: dict[int, float] = {}
        """Descriptors of refused connections, half-closed, with when they are closed at the latest."""

    def next_arrival(self, expect: Collection[str], until: float | None) -> Arrival:
        """:meth:`wait` with no links to watch: the next arrival."""
        arrival = self.wait(expect, until)
        assert arrival is not None, "wait gives None only for a watched link's data"
        return arrival

    def wait(self, expect: Collection[str], until: float | None, watch: Sequence[Watched] = ()) -> Arrival | None:
        """The next arrival (whole or refused) of a connection presenting one of the names in ``expect``; None as
        soon as a link in ``watch`` has data to read; TimeoutError at ``until`` (monotonic; None: no limit)."""
        with selectors.DefaultSelector() as selector:
            while not self.arrived:
                if any(link.has_data() for link in watch):
                    return None
                now = time.monotonic()
                self._expire(now)
                if self.arrived:
                    break
                if until is not None and now >= until:
                    raise TimeoutError
                stops = [pending.stop for pending in self.pending.values()]
                if until is not None:
                    stops.append(until)
                stops += self.closing.values()
                events = self._select(selector, watch, min(stops) - now if stops else None)
                for key, _ in events:
                    if key.data is None:
                        self._accept(expect)
                    elif isinstance(key.data, int):
                        self._drain(key.data)
                    elif isinstance(key.data, _Pending):
                        if key.data.sock in self.pending:  # not dropped by an accept in this same pass
                            self._advance(key.data, expect)
                    else:
                        return None
        return self.arrived.popleft()

    def _select(self, selector: selectors.BaseSelector, watch: Sequence[Watched], timeout: float | None):
        for key in list(selector.get_map().values()):
            selector.unregister(key.fileobj)
        selector.register(self.listener, selectors.EVENT_READ, None)
        for pending in self.pending.values():
            selector.register(pending.sock, pending.events, pending)
        for descriptor in self.closing:
            selector.register(descriptor, selectors.EVENT_READ, descriptor)
        for link in watch:
            selector.register(link.sock, selectors.EVENT_READ, link)
        return selector.select(None if timeout is None else max(timeout, 0.0))

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
            sock = self.context.wrap_socket(raw, server_side=True, do_handshake_on_connect=False)
            where = f"{address[0]}:{address[1]}"
            pending = self.pending[sock] = _Pending(sock, where, time.monotonic() + self.timeout)
            self._advance(pending, expect)

    def _advance(self, pending: _Pending, expect: Collection[str]) -> None:
        """Drive one connection's handshake, then its first frame, as far as what has arrived allows."""
        if pending.link is None:
            try:
                pending.sock.do_handshake()
            except ssl.SSLWantReadError:
                pending.events = selectors.EVENT_READ
                return
            except ssl.SSLWantWriteError:
                pending.events = selectors.EVENT_WRITE
                return
            except (ssl.SSLError, OSError) as exc:
                self._fail(pending, "handshake", str(exc) or type(exc).__name__)
                return
            names = certificate_names(pending.sock)
            pending.link = Link(names[0] if len(names) == 1 else repr(names), pending.sock, self.max_payload)
            if len(names) != 1 or names[0] not in expect:  # a party of the deployment: the caller may say why
                self._hand_over(pending, Arrival(pending.where, pending.link, None, "certificate", names=names))
                return
            pending.events = selectors.EVENT_READ
        try:
            frame = pending.link.read_ready()
        except ssl.SSLWantWriteError:
            pending.events = selectors.EVENT_WRITE
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
        del self.pending[pending.sock]
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
        del self.closing[descriptor]
        os.close(descriptor)

    def _expire(self, now: float) -> None:
        for descriptor in [d for d, stop in self.closing.items() if stop <= now]:
            del self.closing[descriptor]
            os.close(descriptor)
        for pending in [pending for pending in self.pending.values() if pending.stop <= now]:
            stage = "handshake" if pending.link is None else "frame"
            self._fail(pending, stage, f"nothing within the {self.timeout:g} s handshake timeout", timed_out=True)

    def _fail(self, pending: _Pending, stage: str, detail: str = "", *, names: Sequence[str] = (),
              timed_out: bool = False) -> None:  # fmt: skip
        del self.pending[pending.sock]
        if stage == "handshake" and not timed_out and len(self.closing) < self.max_pending:
            self._linger(pending.sock)
        else:
            try:
                pending.sock.close()
            except OSError:
                pass
        detail = "timeout" if timed_out and stage == "frame" else detail
        self.arrived.append(Arrival(pending.where, pending.link, None, stage, detail, names))

    def _linger(self, sock: ssl.SSLSocket) -> None:
        try:
            sock.shutdown(socket.SHUT_WR)
            descriptor = sock.detach()
        except OSError:
            sock.close()
            return
        self.closing[descriptor] = time.monotonic() + LINGER_S

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
        self.listener.close()


def listening(gate: Gate | None) -> Gate:
    """A network's ``gate``, which is None where its party accepts no connections."""
    if gate is None:
        raise RuntimeError("this party accepts no connections: it has no listener")
    return gate
