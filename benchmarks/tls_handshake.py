"""CPU per mutual-TLS 1.3 handshake, both sides in one process: what one P2B report's connection costs at least.

Issue 34 asks for 2,000 accepted reports/s through the shuffler on a 2-core machine with one connection per
report, i.e. at most 1,000 µs of CPU per report for the shuffler and the devices together. This measures the
handshake alone (no report, no storage, no network), over socket pairs, with the deployment's own credentials
(``deploy.certs``: Ed25519) and contexts (``comm.tls``: TLS 1.3, client certificate required):

* full handshakes with the standard library's ``ssl`` (the system OpenSSL), as the deployment does them;
* resumed ones (the client offers the ticket of its previous session; the server issues one ticket), as a device
  that reports again would;
* resumed ones over memory buffers, each side's CPU apart (the floor: no sockets, threads or system calls), and
  what setting the session to resume costs a device in the standard library;
* resumed ones over loopback TCP between two processes, each connection carrying one 100-byte message and a
  1-byte answer, the server issuing no new ticket to a resuming client (as the deployment's gate): each side's CPU
  per connection, i.e. what one report costs with the standard library and nothing else (no framing, storage or
  concurrency), and the rate that puts out of reach of 2 cores that do nothing else;
* full handshakes through pyOpenSSL, i.e. the OpenSSL bundled with ``cryptography`` (usually newer), where
  pyOpenSSL is installed (it is not a dependency: ``pip install pyOpenSSL``).

Each line gives CPU per handshake (both sides; ``time.process_time``) and the ceiling it puts on reports per second
per core. Run ``python benchmarks/tls_handshake.py [--handshakes 400]``.
"""

from __future__ import annotations

import argparse
import socket
import ssl
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from _smoke import parse_args

from privbandits.comm.tls import TlsCredentials, client_context, server_context
from privbandits.deploy.certs import write_bundles

WARM_UP = 10


def _pair(server: Callable[[socket.socket], object], client: Callable[[socket.socket], object]) -> tuple:
    """Run one handshake: the server side in a thread, the client here; both results."""
    left, right = socket.socketpair()
    out: dict[str, object] = {}
    thread = threading.Thread(target=lambda: out.setdefault("server", server(left)))
    thread.start()
    mine = client(right)
    thread.join()
    return out["server"], mine


def stdlib_full(credentials: dict[str, TlsCredentials]) -> Callable[[], bool]:
    serving, dialing = server_context(credentials["shuffler"]), client_context(credentials["device"])
    serving.num_tickets = 0

    def one() -> bool:
        server, client = _pair(lambda s: serving.wrap_socket(s, server_side=True), dialing.wrap_socket)
        client.close()
        server.close()
        return False

    return one


def stdlib_resumed(credentials: dict[str, TlsCredentials]) -> Callable[[], bool]:
    serving, dialing = server_context(credentials["shuffler"]), client_context(credentials["device"])
    serving.num_tickets = 1
    previous: dict[str, ssl.SSLSession | None] = {"session": None}

    def serve(sock: socket.socket) -> ssl.SSLSocket:
        wrapped = serving.wrap_socket(sock, server_side=True)
        wrapped.sendall(b"k")  # the client reads its ticket with this byte
        return wrapped

    def one() -> bool:
        server, client = _pair(serve, lambda s: dialing.wrap_socket(s, session=previous["session"]))
        client.recv(1)
        reused = client.session_reused
        previous["session"] = previous["session"] or client.session
        client.close()
        server.close()
        return reused

    return one


def pyopenssl_full(credentials: dict[str, TlsCredentials]) -> Callable[[], bool]:
    from OpenSSL import SSL  # optional: not a dependency

    def context(party: TlsCredentials, server: bool) -> SSL.Context:
        made = SSL.Context(SSL.TLS_METHOD)
        made.set_min_proto_version(SSL.TLS1_3_VERSION)
        made.use_certificate_chain_file(str(party.certificate))
        made.use_privatekey_file(str(party.key))
        made.load_verify_locations(str(party.ca))
        made.set_verify(SSL.VERIFY_PEER | SSL.VERIFY_FAIL_IF_NO_PEER_CERT, lambda *args: bool(args[-1]))
        if server:
            made.set_options(SSL.OP_NO_TICKET)
        return made

    serving, dialing = context(credentials["shuffler"], True), context(credentials["device"], False)

    def side(ctx: SSL.Context, accept: bool) -> Callable[[socket.socket], object]:
        def run(sock: socket.socket) -> object:
            connection = SSL.Connection(ctx, sock)
            connection.set_accept_state() if accept else connection.set_connect_state()
            connection.do_handshake()
            return connection

        return run

    def one() -> bool:
        server, client = _pair(side(serving, True), side(dialing, False))
        for connection in (client, server):
            connection.sock_shutdown(socket.SHUT_RDWR)  # type: ignore[attr-defined]
        return False

    return one


def _pump(source: ssl.MemoryBIO, sink: ssl.MemoryBIO) -> None:
    data = source.read()
    if data:
        sink.write(data)


def in_memory(credentials: dict[str, TlsCredentials], count: int) -> dict[str, float]:
    """Resumed handshakes over memory buffers (no sockets, no threads, no system calls): CPU µs per handshake of
    each side, and of setting the session to resume on the device's side (the standard library copies it, which
    decodes the certificate it holds)."""
    serving, dialing = server_context(credentials["shuffler"]), client_context(credentials["device"])
    spent = {"device": 0.0, "shuffler": 0.0, "setting the session": 0.0}

    def timed(side: str, call: Callable[[], object]) -> bool:
        start = time.process_time()
        try:
            call()
            return True
        except ssl.SSLWantReadError:
            return False
        finally:
            spent[side] += time.process_time() - start

    def one(session: ssl.SSLSession | None) -> ssl.SSLObject:
        bios = [ssl.MemoryBIO() for _ in range(4)]  # device in, device out, shuffler in, shuffler out
        start = time.process_time()
        device = dialing.wrap_bio(bios[0], bios[1], session=session)
        spent["setting the session"] += time.process_time() - start
        shuffler = serving.wrap_bio(bios[2], bios[3], server_side=True)
        done = {"device": False, "shuffler": False}
        while not all(done.values()):
            done["device"] = done["device"] or timed("device", device.do_handshake)
            _pump(bios[1], bios[2])
            done["shuffler"] = done["shuffler"] or timed("shuffler", shuffler.do_handshake)
            _pump(bios[3], bios[0])
        shuffler.write(b"k")  # the device reads its ticket with this byte
        _pump(bios[3], bios[0])
        device.read(1)
        return device

    serving.num_tickets = 1
    session = one(None).session
    serving.num_tickets = 0
    for _ in range(WARM_UP):
        one(session)
    spent = dict.fromkeys(spent, 0.0)
    reused = sum(one(session).session_reused for _ in range(count))
    if reused != count:
        raise SystemExit(f"only {reused} of {count} in-memory handshakes resumed the session")
    spent["setting the session"] -= _bare_wrap(dialing, count)
    return {side: 1e6 * seconds / count for side, seconds in spent.items()}


def _bare_wrap(context: ssl.SSLContext, count: int) -> float:
    """CPU seconds of ``count`` client TLS objects made without a session (subtracted from the cost of setting one)."""
    start = time.process_time()
    for _ in range(count):
        context.wrap_bio(ssl.MemoryBIO(), ssl.MemoryBIO())
    return time.process_time() - start


MESSAGE = b"r" * 100
"""What a device sends on its loopback connection (an encoded report's frame is about this size)."""


def _loopback_server(credentials: TlsCredentials, count: int, pipe) -> None:
    """Take ``WARM_UP + count`` connections on a listener of its own (its port sent first): the first is a full
    handshake that issues a ticket, the rest resume it and get none; sends its CPU seconds over the last ``count``."""
    serving = server_context(credentials)
    with socket.create_server(("127.0.0.1", 0)) as listener:
        pipe.send(listener.getsockname()[1])
        start = time.process_time()
        for index in range(WARM_UP + count):
            if index == WARM_UP:
                start = time.process_time()
            serving.num_tickets = 0 if index else 1
            raw, _ = listener.accept()
            raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with serving.wrap_socket(raw, server_side=True) as sock:
                got = b""
                while len(got) < len(MESSAGE):
                    got += sock.recv(len(MESSAGE) - len(got))
                sock.sendall(b"k")
        pipe.send(time.process_time() - start)


def loopback(credentials: dict[str, TlsCredentials], count: int) -> dict[str, float]:
    """Resumed connections over loopback TCP, the shuffler in a process of its own: CPU µs per connection of each
    side, and how many of the timed ones resumed."""
    import multiprocessing

    here, there = multiprocessing.Pipe()
    server = multiprocessing.get_context("spawn").Process(
        target=_loopback_server, args=(credentials["shuffler"], count, there), daemon=True
    )
    server.start()
    port = here.recv()
    dialing = client_context(credentials["device"])
    session, reused, start = None, 0, time.process_time()
    for index in range(WARM_UP + count):
        if index == WARM_UP:
            start = time.process_time()
        raw = socket.create_connection(("127.0.0.1", port))
        raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with dialing.wrap_socket(raw, session=session) as sock:
            sock.sendall(MESSAGE)
            sock.recv(1)
            reused += index >= WARM_UP and sock.session_reused
            session = session or sock.session
    device = time.process_time() - start
    shuffler = here.recv()
    server.join()
    return {"device": 1e6 * device / count, "shuffler": 1e6 * shuffler / count, "reused": reused}


def measure(one: Callable[[], bool], count: int) -> tuple[float, int]:
    """(CPU µs per handshake, how many were resumed) over ``count`` handshakes after a warm-up."""
    for _ in range(WARM_UP):
        one()
    start = time.process_time()
    reused = sum(one() for _ in range(count))
    return 1e6 * (time.process_time() - start) / count, reused


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--handshakes", type=int, default=400, help="timed handshakes per kind")
    args = parse_args(parser, handshakes=5)
    with tempfile.TemporaryDirectory() as folder:
        bundles = write_bundles(Path(folder), ["shuffler", "device"])
        credentials = {name: TlsCredentials(**files) for name, files in bundles.parties.items()}
        kinds = [(f"full, stdlib ssl ({ssl.OPENSSL_VERSION})", stdlib_full), ("resumed, stdlib ssl", stdlib_resumed)]
        try:
            from OpenSSL import SSL

            version = SSL.OpenSSL_version(SSL.OPENSSL_VERSION).decode()
            kinds.append((f"full, pyOpenSSL ({version})", pyopenssl_full))
        except ImportError:
            print("pyOpenSSL is not installed: its row is left out (pip install pyOpenSSL)")
        costs = in_memory(credentials, args.handshakes)
        print(f"resumed, stdlib ssl, in memory (no sockets, threads or system calls): device {costs['device']:,.0f} "
              f"µs + shuffler {costs['shuffler']:,.0f} µs CPU per handshake; setting the session to resume costs the "
              f"device {costs['setting the session']:,.0f} µs more (the standard library copies it, decoding its "
              f"certificate)")  # fmt: skip
        floor = loopback(credentials, args.handshakes)
        both = floor["device"] + floor["shuffler"]
        print(f"resumed, stdlib ssl, over loopback TCP (two processes; one {len(MESSAGE)}-byte message and a 1-byte "
              f"answer per connection, no new ticket; {floor['reused']:.0f}/{args.handshakes} resumed): device "
              f"{floor['device']:,.0f} µs + shuffler {floor['shuffler']:,.0f} µs CPU per connection; 2 cores doing "
              f"nothing else take at most {2e6 / both:,.0f} such connections per second")  # fmt: skip
        for name, make in kinds:
            micros, reused = measure(make(credentials), args.handshakes)
            resumed = f", {reused}/{args.handshakes} resumed" if make is stdlib_resumed else ""
            print(f"{name}: {micros:,.0f} µs CPU per handshake (both sides){resumed}; "
                  f"at most {1e6 / micros:,.0f} per second per core")  # fmt: skip


if __name__ == "__main__":
    main()
