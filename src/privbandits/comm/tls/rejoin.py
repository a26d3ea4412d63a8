"""Links that survive a peer's restart (:class:`RejoinNetwork`): a lost peer may come back within a budget.

A party of a :class:`RejoinNetwork` that finds a link ended (the peer's process died: end of stream,
reset, a failed write) does not give up at once: it dials the peer again if it dialed it at set-up
(pausing between tries, doubling from :data:`~privbandits.comm.tls.network.RETRY_S`\\[0] up to
``backoff_s``), or waits for the peer's new connection on its listener, kept open for this, for at
most ``rejoin_s`` seconds; past that the peer is lost (:class:`~privbandits.comm.PeerLost`, naming
it, as without rejoining). The peer must present the same certificate name and the same session digest
(mutual TLS, checked as at set-up); a connection from anyone else is refused and stops no one.

What was in flight is recovered by replay, not by acknowledgements. Each side keeps, per peer, every
data message it sent (a :class:`Journal`) and a digest of every one it received. On a new link each side
sends its whole journal again and skips, from the peer, as many data messages as it has already
received, checking each skipped one against its digest. A peer restarted from scratch (``--resume``)
replays its part deterministically (its randomness from its kept seed) and so sends those same messages
again; one that survived a dropped connection sends its journal. Either way each message is taken once,
in order, and a replay that differs from what was received is a :class:`~privbandits.comm.frames.FrameError`
(the peer is not deterministic), never a silent difference. A stall (no data within the deadline) is not
a death: it is reported as before.

The journals grow with the session (every message sent): meant for sessions of few, large messages
(P2B's batches and models), not for round-by-round protocols.
"""

from __future__ import annotations

import hashlib
import logging
import select
import ssl
import time
from collections import deque
from collections.abc import Callable, Collection, Sequence
from typing import cast

from privbandits.comm.codec import MessageDecodeError, decode
from privbandits.comm.frames import Frame, FrameError, FrameType
from privbandits.comm.tls.context import HandshakeError, PeerLost, transient
from privbandits.comm.tls.gate import Arrival, Gate, Watched, listening
from privbandits.comm.tls.link import Link
from privbandits.comm.tls.network import RETRY_S, TlsNetwork

log = logging.getLogger(__name__)


class Journal:
    """What one party sent to one peer (data frames: depth and codec bytes) and received from it (digests)."""

    __slots__ = ("sent", "received")

    def __init__(self) -> None:
        self.sent: list[tuple[int, bytes]] = []
        self.received: list[bytes] = []


def _digest(payload: bytes | bytearray | memoryview) -> bytes:
    return hashlib.blake2b(payload, digest_size=16).digest()


class ReplayLink(Link):
    """A link whose socket may be replaced by the peer's next connection (:meth:`RejoinNetwork.rejoin`)."""

    __slots__ = ("network", "journal", "skip", "replayed", "eof", "early", "in_recv")
    network: RejoinNetwork
    journal: Journal
    skip: int
    replayed: int
    eof: bool
    early: Frame | None
    in_recv: bool

    @classmethod
    def adopt(cls, link: Link, network: RejoinNetwork, journal: Journal) -> ReplayLink:
        """The same connection (its buffers, sequence numbers, read-ahead queue), journaled."""
        new = cls(link.peer, link.sock, link.max_payload)
        new.queue, new.ended, new.held = link.queue, link.ended, link.held
        new._take_socket(link)
        new.network, new.journal, new.skip, new.replayed, new.eof, new.early = network, journal, 0, 0, False, None
        new.in_recv = False
        return new

    def _take_socket(self, link: Link) -> None:
        self.sock, self.timeout = link.sock, link.timeout
        self.send_seq, self.recv_seq = link.send_seq, link.recv_seq
        self.inbuf, self.lo, self.hi = link.inbuf, link.lo, link.hi

    def replace(self, link: Link) -> None:
        """Carry on over ``link``, the peer's new connection: the peer's first data messages up to those already
        received are skipped (checked), read-ahead messages stay queued."""
        old = self.sock
        self._take_socket(link)
        self.held = [] if self.held is not None else None  # inside a batch still (what it held is journaled)
        self.held_bytes, self.eof, self.early = 0, False, None
        self.skip, self.replayed = len(self.journal.received), 0
        try:
            old.close()
        except OSError:
            pass

    # -- writing
    def send_parts(self, frame_type: FrameType, depth: int, parts: Sequence, length: int) -> int:
        if frame_type is not FrameType.DATA:
            return super().send_parts(frame_type, depth, parts, length)
        payload = b"".join(parts)
        self.journal.sent.append((depth, payload))  # before it leaves: a rejoin sends it (again)
        try:
            return super().send_parts(frame_type, depth, (payload,), length)
        except OSError as exc:
            if self.network.aborting or isinstance(exc, TimeoutError):  # a peer that stopped reading: a stall
                raise
            self.network.rejoin(self, f"sending failed: {exc}")
            return length

    def resend(self) -> None:
        """Send the whole journal on a new connection (held frames of the old one are in it), now: the peer may be
        waiting for it while this party does something else."""
        held, self.held = self.held, None
        try:
            for depth, payload in self.journal.sent:
                Link.send_parts(self, FrameType.DATA, depth, (payload,), len(payload))
        finally:
            self.held = held

    def flush(self) -> None:
        try:
            super().flush()
        except OSError as exc:
            if self.network.aborting or isinstance(exc, TimeoutError):
                raise
            self.held = [] if self.held is not None else None
            self.held_bytes = 0
            self.network.rejoin(self, f"sending held messages failed: {exc}")

    # -- reading
    def _complete(self) -> bool:
        """A whole frame is buffered."""
        from privbandits.comm.frames import HEADER_BYTES, unpack_header_from

        buffered = self.hi - self.lo
        if buffered < HEADER_BYTES:
            return False
        return buffered >= HEADER_BYTES + unpack_header_from(self.inbuf, self.lo, self.max_payload)[3]

    def pump(self) -> None:
        """Take what has arrived without waiting (noting an end of stream in ``eof``), and skip the replayed
        data messages that are buffered whole."""
        if not self.eof:
            self.sock.setblocking(False)
            try:
                while True:
                    try:
                        count = self.sock.recv_into(self._room())
                    except (ssl.SSLWantReadError, BlockingIOError):
                        break
                    except (ssl.SSLError, ConnectionError, OSError):
                        count = 0
                    if not count:
                        self.eof = True
                        break
                    self.hi += count
            finally:
                self.sock.settimeout(self.timeout)
        while self.skip and self.early is None and self._complete():
            frame = Link.read(self, None)
            if frame.type is FrameType.DATA:
                self._skipped(frame)
            else:
                self.early = frame

    def _skipped(self, frame: Frame) -> None:
        expected = self.journal.received[self.replayed]
        if _digest(frame.payload) != expected:
            raise FrameError(
                f"{self.peer!r} came back and replayed data message {self.replayed + 1} differently from the first "
                "time (its run is not deterministic: was it restarted with another seed file or deployment?)"
            )
        self.skip -= 1
        self.replayed += 1

    def has_data(self) -> bool:
        if self.skip and self.early is None and not self.in_recv:  # (inside a read, its buffer is being filled)
            self.pump()
        return self.early is not None or super().has_data()

    def _recv(self, view: memoryview, deadline: float | None) -> int:
        if self.sock.pending() == 0:
            deadline = self.network.await_readable(self, deadline)
        return super()._recv(view, deadline)

    def read(self, deadline: float | None) -> Frame:
        """The next frame that is not a replay of one already received; a lost connection is rejoined (then the
        deadline starts again: the peer is back)."""
        while True:
            if self.early is not None:
                frame, self.early = self.early, None
                return frame
            try:
                if self.eof and not self._complete():
                    raise EOFError
                frame = super().read(deadline)
            except TimeoutError:
                raise
            except (EOFError, OSError, FrameError) as exc:
                if isinstance(exc, FrameError) and not str(exc).startswith("truncated frame"):
                    raise
                self.network.rejoin(self, "connection closed" if isinstance(exc, EOFError) else str(exc))
                deadline = None if deadline is None else time.monotonic() + self.network.deadline
                continue
            if frame.type is not FrameType.DATA:
                return frame
            if self.skip:
                self._skipped(frame)
                continue
            self.journal.received.append(_digest(frame.payload))
            return frame


class RejoinGate(Gate):
    """The listener of a :class:`RejoinNetwork`: while a party waits for a device's connection
    (:mod:`~privbandits.comm.oneshot`), its peers' new connections and its other links are looked after too."""

    network: RejoinNetwork

    def wait(self, expect: Collection[str], until: float | None, watch: Sequence[Watched] = ()) -> Arrival | None:
        network = self.network
        if network.linked:
            return network.wait_any(cast(list[Link], list(watch)), expect, until)  # a RejoinNetwork watches its links
        while True:  # setting up: a device that connects already (its host's link is not back yet) is dropped
            arrival = Gate.wait(self, expect, until, watch)  # unanswered, so it sends again once its host is linked
            if arrival is None or arrival.failure is not None or arrival.first_frame.type is FrameType.HELLO:
                return arrival
            network.note_dropped(f"a device of {arrival.peer_link.peer!r} connected before its host linked again")
            arrival.peer_link.shut()


class RejoinNetwork(TlsNetwork):
    """A :class:`~privbandits.comm.TlsNetwork` whose peers may come back: see the module docstring.

    ``rejoin_s``: seconds to wait for a lost peer; ``backoff_s``: the longest pause between two tries to dial it.
    ``on_stray(arrival)``: called with a device's connection (:mod:`~privbandits.comm.oneshot`) that arrives while
    this party waits for something else; True if it took it (else it is kept for the next wait for devices).
    """

    def __init__(self, *args, rejoin_s: float, backoff_s: float, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.rejoin_s, self.backoff_s = rejoin_s, backoff_s
        self.keep_listening = self.keep_listening or bool(self._accept)
        if self.gate is not None:
            self.gate.__class__ = RejoinGate
            assert isinstance(self.gate, RejoinGate)  # for the checker: the line above made it one
            self.gate.network = self
        self.journals = {peer: Journal() for peer in [*self._dial, *self._accept]}
        self.linked = self.closing = self.aborting = False
        self.rejoins: list[str] = []
        """Each peer that came back, and when (its round)."""
        self.on_stray: Callable[[Arrival], bool] | None = None
        self.kept: deque[Arrival] = deque()
        self.waited_until: float | None = None

    def connect(self) -> RejoinNetwork:
        super().connect()
        self._links = {peer: ReplayLink.adopt(link, self, self.journals[peer]) for peer, link in self._links.items()}
        self.linked = True
        return self

    def close(self, timeout: float | None = -1.0) -> None:
        self.closing = True
        super().close(timeout)

    def close_sockets(self) -> None:
        while self.kept:
            self.kept.popleft().peer_link.shut()
        super().close_sockets()

    def abort(self, reason: str, *, lost: str | None = None, round: str | None = None) -> None:
        self.aborting = True  # best effort: no peer is waited for
        super().abort(reason, lost=lost, round=round)

    # ----------------------------------------------------------------- a peer comes back

    def rejoin(self, link: ReplayLink, why: str) -> None:
        """Link with ``link.peer`` again (dial it, or wait for its connection), within ``rejoin_s``; then send it
        the journal (and CLOSE, if this party is closing). :class:`PeerLost` if it does not come back."""
        if link.ended == "close":  # it had finished: nothing to come back for
            raise EOFError
        peer, stop = link.peer, time.monotonic() + self.rejoin_s
        log.warning("%s lost its link with %s (%s); waiting %g s for it to come back", self.local, peer, why,
                    self.rejoin_s)  # fmt: skip
        try:
            new = self._redial(peer, stop) if peer in self._dial else self._readmit(peer, stop)
        except (TimeoutError, HandshakeError) as exc:
            detail = f": {exc}" if isinstance(exc, HandshakeError) else ""
            raise self.lost_peer(peer, f"{why}; it did not come back within {self.rejoin_s:g} s{detail}") from None
        self._resume(link, new)

    def _replay_link(self, peer: str) -> ReplayLink:
        """``peer``'s link, a :class:`ReplayLink` once connected (:meth:`connect`)."""
        link = self._links[peer]
        assert isinstance(link, ReplayLink), "peers come back only once linked"
        return link

    def _resume(self, link: ReplayLink, new: Link) -> None:
        link.replace(new)
        self.rejoins.append(f"{link.peer} ({self.where()})")
        try:
            link.set_timeout(self.deadline)
            link.resend()
            if self.closing:
                link.send(FrameType.CLOSE, 0, b"")
        except OSError as exc:
            raise self.lost_peer(link.peer, f"it came back and went again: {exc}") from None

    def _redial(self, peer: str, stop: float) -> Link:
        pause = RETRY_S[0]
        while True:
            remaining = stop - time.monotonic()
            if remaining <= 0:
                raise TimeoutError
            try:
                return self._try_dial(peer, min(remaining, self.handshake_timeout))
            except HandshakeError:
                raise
            except (OSError, EOFError, FrameError) as exc:
                if not transient(exc):
                    raise HandshakeError(str(exc)) from None
            time.sleep(max(min(pause, stop - time.monotonic()), 0))
            pause = min(2 * pause, self.backoff_s)

    def _readmit(self, peer: str, stop: float) -> Link:
        while True:
            arrival = Gate.wait(listening(self.gate), self._accept, stop)  # the gate's own wait, watching no link
            assert arrival is not None, "None only for a watched link's data"
            new = self._sort(arrival, ())
            if isinstance(new, tuple):
                if new[0] == peer:
                    return new[1]
                self._resume(self._replay_link(new[0]), new[1])

    def _sort(self, arrival: Arrival, expect: Collection[str]) -> Arrival | tuple[str, Link] | None:
        """A peer's new connection: (peer, link), its hello answered; a device's connection for one of ``expect``:
        the arrival; anything else is handled here (refused, given to ``on_stray`` or kept): None."""
        if arrival.failure is None and arrival.first_frame.type is FrameType.HELLO:
            if (peer := arrival.peer_link.peer) in self._accept:
                admitted = self._admit(arrival, [peer])
                return None if admitted is None else (admitted.peer, admitted)
        if arrival.failure is None and arrival.first_frame.type is FrameType.DATA:
            if arrival.peer_link.peer in expect and self._phase_of(arrival) in (self.current_phase, None):
                return arrival
            if self.on_stray is not None and self.on_stray(arrival):
                return None
            self.kept.append(arrival)
            return None
        if expect:
            return arrival  # a failed device connection: the caller says why it drops it
        self._admit(arrival, [])  # refused, noted
        return None

    @staticmethod
    def _phase_of(arrival: Arrival) -> str | None:
        """The phase a device's message was sent in (None if it does not decode: the caller drops it, saying why);
        one of another phase (sent again by a restarted host, or early) is not the current wait's."""
        try:
            return decode(arrival.first_frame.payload).phase
        except MessageDecodeError:
            return None

    # ----------------------------------------------------------------- waiting

    def wait_any(self, watch: list[Link], expect: Collection[str], until: float | None) -> Arrival | None:
        """Until a link in ``watch`` has data (None) or a device of one of ``expect`` has sent its message (the
        arrival); meanwhile peers that come back are linked again and links that end are rejoined (then ``until``
        is at least the deadline from then: the time spent waiting for a peer is no one else's delay)."""
        rejoins = len(self.rejoins)
        while True:
            if len(self.rejoins) != rejoins and until is not None:
                rejoins, until = len(self.rejoins), max(until, time.monotonic() + self.deadline)
            self.waited_until = until
            for index, kept in enumerate(self.kept):
                if kept.peer_link.peer in expect and self._phase_of(kept) in (self.current_phase, None):
                    del self.kept[index]
                    return kept
            if any(link.has_data() for link in watch):
                return None
            others = [link for link in self._links.values() if link not in watch and not link.ended]
            quiet = [link for link in others if not link.has_data()]
            gate = listening(self.gate)
            arrival = Gate.wait(gate, {*self._accept, *expect}, until, [*watch, *quiet])
            handed = []  # the others handed over in the same pass: sorted here too, kept in order; a device's
            while gate.arrived:  # for this wait (or a failed one, dropped by the taker) is the next taken
                later = self._sort(gate.arrived.popleft(), expect)
                if isinstance(later, tuple):
                    self._resume(self._replay_link(later[0]), later[1])
                elif later is not None:
                    handed.append(later)
            gate.arrived.extend(handed)
            if arrival is None:
                if self._look_after([*watch, *quiet], watch):
                    return None
                continue
            got = self._sort(arrival, expect)
            if isinstance(got, tuple):
                self._resume(self._replay_link(got[0]), got[1])
            elif got is not None:
                return got

    def await_readable(self, link: ReplayLink, deadline: float | None) -> float | None:
        """Before ``link`` blocks on its socket: wait until it has data, looking after the rest meanwhile
        (TimeoutError at ``deadline``); the deadline for the read, later if a peer came back meanwhile."""
        link.in_recv = True
        rejoins = len(self.rejoins)
        try:
            if self.gate is None:
                self._look_after_until(link, deadline)
            else:
                self.wait_any([link], (), deadline)  # with no device expected, it returns only for the link
                deadline = self.waited_until
        finally:
            link.in_recv = False
        if len(self.rejoins) != rejoins and deadline is not None:
            deadline = max(deadline, time.monotonic() + self.deadline)
        return deadline

    def _look_after_until(self, link: ReplayLink, deadline: float | None) -> None:
        """A party with no listener: wait for ``link``'s data, rejoining any other link that ends."""
        while not link.has_data():
            others = [other for other in self._links.values() if other is not link and not other.ended]
            timeout = None if deadline is None else deadline - time.monotonic()
            if timeout is not None and timeout <= 0:
                raise TimeoutError
            ready, _, _ = select.select([link.sock, *[o.sock for o in others if not o.has_data()]], [], [], timeout)
            if not ready:
                raise TimeoutError
            if link.sock in ready:
                return
            self._look_after(others)

    def _look_after(self, links: list[Link], targets: Sequence[Link] = ()) -> bool:
        """Take what has arrived on ``links`` without waiting; a link whose peer went away is rejoined (or, if the
        peer had closed the session, left ended). True if one of ``targets`` has data (one inside a read: is
        readable, its bytes left for that read)."""
        socks = [link.sock for link in links]
        ready = set(select.select(socks, [], [], 0)[0]) if socks else set()
        found = False
        for link in links:
            if link.sock not in ready or not isinstance(link, ReplayLink):
                continue
            if link.in_recv:
                found = True
                continue
            link.pump()
            if link in targets and link.has_data():
                found = True
                continue
            if link.eof and not link.has_data():
                self.rejoin(link, "connection closed")
            elif link.eof:
                self._drain(link)
        return found or any(link.has_data() for link in targets if not getattr(link, "in_recv", False))

    def _drain(self, link: ReplayLink) -> None:
        """A link that ended with whole frames buffered: read them ahead (a CLOSE ends it), then rejoin."""
        while link.has_data() and link._complete() or link.early is not None:
            try:
                link.queue.append(self._next_envelope(link, None, "any"))
            except PeerLost:
                if link.ended == "close":
                    return
                raise
        if link.eof:
            self.rejoin(link, "connection closed")

    def check_links(self) -> None:
        """Look after every link now (a party about to do something that is no wait on its links)."""
        self._look_after([link for link in self._links.values() if not link.ended])

    def _await_closes(self, pending: list[Link], deadline: float | None) -> None:
        """Each pending peer's CLOSE in turn (a peer that comes back meanwhile is linked again)."""
        from privbandits.comm.network import ProtocolError
        from privbandits.comm.tls.network import READ_GRACE_S

        for link in pending:
            while link.ended is None:
                late = None if deadline is None else max(deadline, time.monotonic() + READ_GRACE_S)
                try:
                    envelope, _ = self._next_envelope(link, late, "close")
                except PeerLost as lost:
                    if link.ended != "close":
                        raise self._told_round(lost) from None
                    break
                raise ProtocolError(
                    f"{link.peer!r} sent a {envelope.message.kind!r} message after {self.local!r} closed the session"
                )
