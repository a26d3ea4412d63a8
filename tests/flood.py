"""Unauthenticated traffic at a deployment's listeners: idle and garbage connections, bounded in count and time.

:class:`Flood` opens, to each address (127.0.0.1 only), ``idle`` connections that send nothing and ``garbage``
connections that each send one of :data:`GARBAGE` (random bytes, a plaintext HTTP request line, a TLS
ClientHello from a client without a certificate), and holds them all open until :meth:`Flood.stop` or
``hold_s``. Connections a party's listener no longer takes (refused) are counted, not raised.
"""

from __future__ import annotations

import random
import socket
import ssl
import threading
import time
from collections.abc import Iterable

GARBAGE = ("random", "http", "client_hello")


def client_hello() -> bytes:
    """The first flight of a TLS 1.3 client that trusts anything and has no certificate to present."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = context.wrap_bio(incoming, outgoing)
    try:
        tls.do_handshake()
    except ssl.SSLWantReadError:
        pass
    return outgoing.read()


def _send(sock: socket.socket, kind: str, index: int) -> None:
    if kind == "random":  # seeded: about 1 in 700 draws of os.urandom(4096) reads as the start of an SSLv2 hello
        sock.sendall(random.Random(index).randbytes(4096))  # and is held to its handshake timeout, not refused
    elif kind == "http":
        sock.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    else:
        sock.sendall(client_hello())  # then silence: the party's answer is never read


class Flood:
    """Idle and garbage connections to ``addresses``, opened in a thread of their own (:meth:`start`)."""

    def __init__(self, addresses: Iterable[tuple[str, int]], *, idle: int = 20, garbage: int = 20,
                 hold_s: float = 20.0) -> None:  # fmt: skip
        self.addresses = [(host, int(port)) for host, port in addresses]
        assert all(host == "127.0.0.1" for host, _ in self.addresses), self.addresses
        self.idle, self.garbage, self.hold_s = idle, garbage, hold_s
        self.opened = self.refused = 0
        self._sockets: list[socket.socket] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> Flood:
        self._thread.start()
        return self

    def _open(self, address: tuple[str, int], kind: str | None, index: int = 0) -> None:
        try:
            sock = socket.create_connection(address, timeout=2.0)
        except OSError:
            self.refused += 1
            return
        self._sockets.append(sock)
        if kind is not None:
            try:
                _send(sock, kind, index)
            except OSError:
                pass
        self.opened += 1  # after its bytes left: wait_opened then means every garbage connection has sent them

    def _run(self) -> None:
        for address in self.addresses:
            for _ in range(self.idle):
                self._open(address, None)
            for index in range(self.garbage):
                self._open(address, GARBAGE[index % len(GARBAGE)], index)
        self._stop.wait(self.hold_s)
        self._close()

    def _close(self) -> None:
        for sock in self._sockets:
            try:
                sock.close()
            except OSError:
                pass
        self._sockets.clear()

    def stop(self) -> None:
        """Close every connection (and wait for the thread)."""
        self._stop.set()
        self._thread.join(30.0)

    def wait_opened(self, timeout: float = 10.0) -> None:
        """Until every connection was tried (opened, its garbage sent, or refused)."""
        total = len(self.addresses) * (self.idle + self.garbage)
        stop = time.monotonic() + timeout
        while self.opened + self.refused < total and time.monotonic() < stop:
            time.sleep(0.01)
