"""One authenticated connection to a peer: framing, sequence numbers, read-ahead, held (batched) writes."""

from __future__ import annotations

import selectors
import ssl
import time
from collections import deque
from collections.abc import Sequence

from privbandits.comm import frames
from privbandits.comm.codec import Envelope
from privbandits.comm.frames import HEADER_BYTES, FrameError, FrameType
from privbandits.comm.network import LinkCounts

BATCH_BYTES = 256 * 1024
"""Inside :meth:`TlsNetwork.batch`, a link whose held frames reach this many bytes writes them at once."""
READ_AHEAD = 64 * 1024
"""Bytes a link asks its socket for in one read: whatever has arrived, up to this (a TLS read returns at most one
record, 16 KiB), so several small frames cost one read instead of two each."""
FIRST_READ = 4 * 1024
"""Bytes a new link asks for until a read fills that much (then :data:`READ_AHEAD`): a device's connection, one small
report, then needs no buffer of :data:`READ_AHEAD` bytes (zeroing it was a visible part of a shuffler's CPU per
report)."""
_new_tuple = tuple.__new__
"""Builds a frame (a named tuple) from its fields without the Python-level ``__new__``."""
DEADLINE_SLACK = 0.05
"""Seconds a receive may run past its deadline: the socket's timeout is re-set only when it would pass
the deadline by more (each ``settimeout`` is an ``ioctl``; resetting it per read cost 6% of a message)."""


class Link:
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
        "ahead",
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
        self.ahead = FIRST_READ
        """Bytes the next read asks for (:data:`FIRST_READ`, then :data:`READ_AHEAD` once a read filled that)."""
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

    def _room(self) -> memoryview:
        """Where the next read goes: :attr:`ahead` free bytes after what is buffered."""
        buffer, ahead = self.inbuf, self.ahead
        if self.lo:  # what is left (part of a frame) moves to the front; the buffer keeps its size
            left = self.hi - self.lo
            buffer[:left] = buffer[self.lo : self.hi]
            self.lo, self.hi = 0, left
        if len(buffer) < self.hi + ahead:
            buffer.extend(bytes(self.hi + ahead - len(buffer)))
        return memoryview(buffer)[self.hi : self.hi + ahead]

    def _took(self, count: int) -> None:
        """``count`` bytes were read into the room: buffered; a read that filled the room makes the next ones larger."""
        self.hi += count
        if count == self.ahead:
            self.ahead = READ_AHEAD

    def _fill(self, size: int, deadline: float | None) -> None:
        """Read until ``size`` bytes are buffered from ``lo`` (EOFError if the stream ends first): each read takes
        what has arrived, up to :attr:`ahead` bytes."""
        while self.hi - self.lo < size:
            count = self._recv(self._room(), deadline)
            if not count:
                raise EOFError
            self._took(count)

    def read_ready(self) -> frames.Frame | None:
        """On a non-blocking socket: read what has arrived; the next frame once all of it is here, else None.

        EOFError if the stream ends first (or :class:`~privbandits.comm.frames.FrameError`, truncated or bad);
        the socket's own errors as they come."""
        while True:
            buffered = self.hi - self.lo
            if buffered >= HEADER_BYTES:
                length = frames.unpack_header_from(self.inbuf, self.lo, self.max_payload)[3]
                if buffered >= HEADER_BYTES + length:
                    return self.read(None)  # all buffered: reads nothing more
            try:
                count = self.sock.recv_into(self._room())
            except ssl.SSLWantReadError:
                return None
            except (ssl.SSLZeroReturnError, ssl.SSLEOFError, ConnectionError):
                count = 0
            if not count:
                if buffered >= HEADER_BYTES:
                    raise self._truncated(buffered - HEADER_BYTES, length, "payload")
                if buffered:
                    raise self._truncated(buffered, HEADER_BYTES, "header")
                raise EOFError
            self._took(count)

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

    def blocking(self) -> None:
        """Back to blocking reads and writes (a link the :class:`~privbandits.comm.tls.gate.Gate` made)."""
        self.sock.setblocking(True)
        self.timeout = None

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


class LinkSelector:
    """One selector over a party's links, kept across its waits for any peer: building one per wait, with a
    registration per link, was a visible share of a free-running FCLUB global server's CPU."""

    def __init__(self) -> None:
        self._selector: selectors.BaseSelector | None = None
        self._registered: dict[ssl.SSLSocket, Link] = {}

    def ready(self, links: Sequence[Link], timeout: float) -> list[Link]:
        """The ``links`` with data to read within ``timeout`` seconds (empty if none)."""
        if self._selector is None:
            self._selector = selectors.DefaultSelector()
        current = {link.sock: link for link in links}
        if current.keys() != self._registered.keys():
            for sock in [sock for sock in self._registered if sock not in current]:
                self._selector.unregister(sock)  # its link ended or was replaced (a closed socket is found by identity)
                del self._registered[sock]
            for sock, link in current.items():
                if sock not in self._registered:
                    self._selector.register(sock, selectors.EVENT_READ, link)
                    self._registered[sock] = link
        return [key.data for key, _ in self._selector.select(timeout)]

    def close(self) -> None:
        if self._selector is not None:
            self._selector.close()
        self._selector, self._registered = None, {}
