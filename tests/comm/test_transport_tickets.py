"""TLS 1.3 session tickets at a party's listener (``privbandits.comm.tls.gate``): a full handshake gets a ticket,
a client that resumes its session gets none (the ticket it used stays good).

127.0.0.1, ephemeral ports, the client in a thread joined with a timeout, as ``tests/comm/test_transport.py``.
"""

from __future__ import annotations

import socket
import ssl
import time

import pytest
from tls_links import Background

from privbandits.comm import TlsCredentials
from privbandits.comm.frames import FrameType
from privbandits.comm.tls import bind_listener, client_context, server_context
from privbandits.comm.tls.gate import Gate, offers_resumption
from privbandits.comm.tls.link import Link
from privbandits.deploy.certs import write_development_pki


@pytest.fixture(scope="module")
def pki(tmp_path_factory) -> dict[str, TlsCredentials]:
    out = tmp_path_factory.mktemp("pki")
    ca, files = write_development_pki(out, ["a", "b"])
    return {name: TlsCredentials(ca, f.certificate, f.key) for name, f in files.items()}


def over_memory(server: ssl.SSLContext, client: ssl.SSLContext, session=None) -> tuple[ssl.SSLObject, bytes]:
    """A handshake of ``client`` (offering ``session``) with ``server`` in memory, the tickets read: the client's
    end, and the first bytes it sent (its ClientHello)."""
    to_server, to_client = ssl.MemoryBIO(), ssl.MemoryBIO()
    from_server, from_client = ssl.MemoryBIO(), ssl.MemoryBIO()
    ours = client.wrap_bio(to_client, from_client, session=session)
    theirs = server.wrap_bio(to_server, from_server, server_side=True)
    hello = b""
    for _ in range(4):
        for tls, out, into in ((ours, from_client, to_server), (theirs, from_server, to_client)):
            try:
                tls.do_handshake()
            except ssl.SSLWantReadError:
                pass
            data = out.read()
            hello = hello or data
            into.write(data)
    with pytest.raises(ssl.SSLWantReadError):
        ours.read(1)  # takes the tickets
    return ours, hello


def test_a_client_hello_offers_resumption_exactly_when_the_client_brings_a_session(pki):
    server, client = server_context(pki["a"]), client_context(pki["b"])
    first, fresh = over_memory(server, client)
    _, resuming = over_memory(server, client, first.session)
    assert offers_resumption(fresh) is False
    assert offers_resumption(resuming) is True
    assert offers_resumption(resuming[:-1]) is None  # the record is not all here
    assert offers_resumption(resuming[:8]) is None
    assert offers_resumption(b"GET / HTTP/1.1\r\n\r\n") is None
    assert offers_resumption(b"") is None


def test_openssl_alone_gives_a_resumed_client_a_new_ticket(pki):
    """The control for the next test: a new ticket shows as a new session id at the client."""
    server, client = server_context(pki["a"]), client_context(pki["b"])
    first, _ = over_memory(server, client)
    again, _ = over_memory(server, client, first.session)
    assert again.session_reused and again.session.id != first.session.id


def test_at_a_gate_a_full_handshake_gets_a_ticket_and_a_resumed_one_none(pki):
    client = client_context(pki["b"])
    listener = bind_listener()
    gate = Gate(listener, server_context(pki["a"]), timeout=5.0, max_payload=1 << 16)
    tickets = gate.context.num_tickets
    assert tickets > 0

    def device(session, seen: dict) -> None:
        sock = client.wrap_socket(socket.create_connection(listener.getsockname(), timeout=5.0), session=session)
        link = Link("a", sock, 1 << 16)
        link.send(FrameType.DATA, 0, b"report")
        seen["answer"] = link.read(time.monotonic() + 5.0).type  # the tickets come before it
        seen["reused"], seen["session"] = sock.session_reused, sock.session
        link.shut()

    seen: list[dict] = []
    try:
        for turn in range(3):
            seen.append({})
            job = Background(lambda s=seen[0]["session"] if turn else None, out=seen[-1]: device(s, out))
            arrival = gate.wait(["b"], time.monotonic() + 5.0)
            assert arrival.failure is None and arrival.link.peer == "b" and bytes(arrival.frame.payload) == b"report"
            arrival.link.send(FrameType.CLOSE, 0, b"")
            arrival.link.shut()
            job.result()
    finally:
        gate.close()
    assert [(s["answer"], s["reused"]) for s in seen] == [(FrameType.CLOSE, False), (FrameType.CLOSE, True),
                                                          (FrameType.CLOSE, True)]  # fmt: skip
    assert seen[0]["session"].has_ticket
    assert seen[1]["session"].id == seen[2]["session"].id == seen[0]["session"].id  # no new ticket
