"""The TLS transport: refusals before any protocol message, frame checks, deadlines, real round trips.

Every network here lives on 127.0.0.1 with ephemeral ports; parties run in threads of the
test process (the transport does not care), every wait has a deadline of a few seconds,
and every thread is joined with a timeout.
"""

from __future__ import annotations

import socket
import ssl
import time

import numpy as np
import pytest
from tls_links import DEADLINE, Background, addresses, assert_same_message, close_all, linked, network, raw_link

from privbandits.comm import ROUND, SETUP, InMemoryNetwork, Party, PeerLost, TlsCredentials, TlsNetwork, encode
from privbandits.comm.codec import Envelope
from privbandits.comm.frames import FrameError, FrameType, pack, pack_header
from privbandits.comm.tls import READ_AHEAD, HandshakeError, bind_listener
from privbandits.deploy.certs import write_development_pki
from privbandits.protocols.vertical.core import AggregationShare, MaskBlock, MaskedContexts, RoundRequest


@pytest.fixture(scope="module")
def rogue(tmp_path_factory) -> dict[str, TlsCredentials]:
    """Certificates for the same names a, b, c from another CA."""
    out = tmp_path_factory.mktemp("rogue")
    ca, files = write_development_pki(out, ["a", "b", "c"], ca_name="another CA")
    return {name: TlsCredentials(ca, f.certificate, f.key) for name, f in files.items()}


def sample_messages():
    rng = np.random.default_rng(3)
    return [
        MaskBlock(rng.standard_normal((7, 3))),
        RoundRequest(5, 11, np.arange(4, dtype=np.int64)),
        MaskedContexts(rng.standard_normal((4, 7))),
        AggregationShare(rng.integers(0, 2**63, size=(4, 7), dtype=np.uint64)),
    ]


# ---------------------------------------------------------------- refusals at connection time


def accepting_a(pki, addrs, listeners) -> tuple[TlsNetwork, Background]:
    """Party a (first in order: it accepts b) connecting in the background."""
    net_a = network("a", addrs, listeners, pki["a"])
    return net_a, Background(net_a.connect)


def first_message_is_from_b(pki, net_a, job_a, addrs, listeners) -> None:
    """After the refusals, the real b still links, and a's first message is b's."""
    net_b = network("b", addrs, listeners, pki["b"]).connect()
    job_a.result()
    a, b = Party("a", net_a), Party("b", net_b)
    sent = RoundRequest(1, 2, np.arange(3, dtype=np.int64))
    with net_b.phase(ROUND):
        b.send("a", sent)
    with net_a.phase(ROUND):
        assert_same_message(a.receive(RoundRequest.kind, "b"), sent)
    assert net_a.received.total().messages == 1
    close_all({"a": net_a, "b": net_b})


def assert_closed_without_data(sock: ssl.SSLSocket | socket.socket) -> None:
    """The refused side reads nothing but the end of the connection (or a TLS alert)."""
    sock.settimeout(DEADLINE)
    try:
        assert sock.recv(4096) == b""
    except (ssl.SSLError, ConnectionError):
        pass


def test_a_client_without_certificate_is_refused_before_any_frame(pki):
    addrs, listeners = addresses(["a", "b"])
    net_a, job_a = accepting_a(pki, addrs, listeners)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.load_verify_locations(cafile=str(pki["a"].ca))  # trusts the CA, but presents no certificate
    with socket.create_connection(addrs["a"], timeout=DEADLINE) as raw:
        with context.wrap_socket(raw) as intruder:
            hello = Envelope("b", "a", ROUND, RoundRequest(9, 9, np.arange(3, dtype=np.int64)))
            try:
                intruder.sendall(pack(FrameType.HELLO, 0, 0, b"{}") + pack(FrameType.DATA, 1, 1, encode(hello)))
            except (ssl.SSLError, OSError):
                pass
            assert_closed_without_data(intruder)
    first_message_is_from_b(pki, net_a, job_a, addrs, listeners)
    assert len(net_a.refusals) == 1
    assert "TLS handshake" in net_a.refusals[0] and "certificate" in net_a.refusals[0]


def test_a_certificate_from_another_ca_is_refused_both_ways(pki, rogue):
    addrs, listeners = addresses(["a", "b"])
    net_a, job_a = accepting_a(pki, addrs, listeners)
    # it trusts the deployment CA (so it would accept a), but its certificate for b is another CA's
    forged = TlsCredentials(pki["a"].ca, rogue["b"].certificate, rogue["b"].key)
    impostor = TlsNetwork("b", addrs, forged, deadline=DEADLINE, connect_deadline=DEADLINE)
    with pytest.raises(HandshakeError, match="'a' refused the connection from 'b'"):
        impostor.connect()
    first_message_is_from_b(pki, net_a, job_a, addrs, listeners)  # a has recorded the refusal by now
    assert len(net_a.refusals) == 1
    assert "TLS handshake" in net_a.refusals[0] and "certificate verify failed" in net_a.refusals[0]

    # the other way round: a server whose certificate another CA signed is refused by the dialer
    addrs, listeners = addresses(["a", "b"])
    rogue_a = network("a", addrs, listeners, rogue["a"], connect_deadline=1.0)
    job = Background(rogue_a.connect)
    with pytest.raises(
        HandshakeError, match=r"TLS handshake with 'a' at 127\.0\.0\.1:\d+ failed: .*certificate verify"
    ):
        network("b", addrs, listeners, pki["b"]).connect()
    with pytest.raises(HandshakeError, match="no connection from 'b' in time"):
        job.result()


def test_a_valid_certificate_for_another_party_name_is_refused(pki):
    addrs, listeners = addresses(["a", "b"])
    net_a, job_a = accepting_a(pki, addrs, listeners)
    # c's genuine certificate from the deployment CA, presented where a expects b
    posing = TlsNetwork("b", addrs, pki["c"], deadline=DEADLINE, connect_deadline=DEADLINE)
    with pytest.raises(HandshakeError, match="'a' refused the connection from 'b'"):
        posing.connect()
    first_message_is_from_b(pki, net_a, job_a, addrs, listeners)
    assert len(net_a.refusals) == 1
    assert net_a.refusals[0].endswith("presented a certificate for ['c']; expected one of 'b'")

    # the dialer checks the listener's name too: b dials a's address and finds c's certificate
    addrs, listeners = addresses(["a", "b"])
    fake_a = TlsNetwork("a", addrs, pki["c"], listener=listeners.pop("a"), deadline=DEADLINE, connect_deadline=1.0)
    job = Background(fake_a.connect)
    with pytest.raises(HandshakeError, match=r"presented a certificate for \['c'\], expected 'a'"):
        network("b", addrs, listeners, pki["b"]).connect()
    with pytest.raises(HandshakeError, match="no connection from 'b' in time"):
        job.result()


def test_a_plaintext_connection_is_refused_before_any_frame(pki):
    addrs, listeners = addresses(["a", "b"])
    net_a, job_a = accepting_a(pki, addrs, listeners)
    envelope = Envelope("b", "a", ROUND, RoundRequest(9, 9, np.arange(3, dtype=np.int64)))
    with socket.create_connection(addrs["a"], timeout=DEADLINE) as plain:
        plain.sendall(pack(FrameType.HELLO, 0, 0, b"{}") + pack(FrameType.DATA, 1, 1, encode(envelope)))
        assert_closed_without_data(plain)
    first_message_is_from_b(pki, net_a, job_a, addrs, listeners)
    assert len(net_a.refusals) == 1 and "TLS handshake" in net_a.refusals[0]

    # and a dialer finding a plaintext listener gives up at the handshake
    listener = bind_listener()
    plain_addrs = {"a": listener.getsockname()[:2], "b": ("127.0.0.1", 9)}

    def plaintext_server() -> bytes:
        listener.settimeout(DEADLINE)
        conn, _ = listener.accept()
        with conn:
            conn.sendall(b"HTTP/1.0 200 OK\r\n\r\n")
            conn.settimeout(DEADLINE)
            return conn.recv(4096)

    job = Background(plaintext_server)
    with pytest.raises(HandshakeError, match="TLS handshake with 'a'"):
        TlsNetwork("b", plain_addrs, pki["b"], deadline=DEADLINE, connect_deadline=DEADLINE).connect()
    job.result()
    listener.close()


# ---------------------------------------------------------------- frames on a linked session


def test_a_replayed_frame_is_refused(pki):
    nets = linked(pki, ["a", "b"])
    a, b = Party("a", nets["a"]), Party("b", nets["b"])
    sent = MaskedContexts(np.ones((2, 3)))
    with nets["b"].phase(ROUND):
        b.send("a", sent)
    data = pack(FrameType.DATA, 1, 1, encode(Envelope("b", "a", ROUND, sent)))
    raw_link(nets["b"], "a").sock.sendall(data)  # the same frame again: sequence number 1
    with nets["a"].phase(ROUND):
        assert_same_message(a.receive(MaskedContexts.kind, "b"), sent)
        with pytest.raises(FrameError, match=r"^replayed frame from 'b': sequence number 1, expected 2$"):
            a.receive(MaskedContexts.kind, "b")
    for net in nets.values():
        net.abort("test over")


def test_a_skipped_or_reordered_frame_is_refused(pki):
    nets = linked(pki, ["a", "b"])
    data = pack(FrameType.DATA, 5, 1, encode(Envelope("b", "a", ROUND, MaskedContexts(np.ones((2, 3))))))
    raw_link(nets["b"], "a").sock.sendall(data)
    with nets["a"].phase(ROUND), pytest.raises(FrameError, match="missing or reordered: sequence number 5, expected 1"):
        Party("a", nets["a"]).receive(MaskedContexts.kind, "b")
    for net in nets.values():
        net.abort("test over")


@pytest.mark.parametrize(
    ("cut", "error"),
    [
        (10, r"truncated frame from 'b': the connection closed after 10 of 24 header bytes$"),
        (24 + 50, r"truncated frame from 'b': the connection closed after 50 of \d+ payload bytes$"),
    ],
)
def test_a_truncated_frame_is_refused(pki, cut, error):
    nets = linked(pki, ["a", "b"])
    data = pack(FrameType.DATA, 1, 1, encode(Envelope("b", "a", ROUND, MaskedContexts(np.ones((4, 5))))))
    link = raw_link(nets["b"], "a")
    link.sock.sendall(data[:cut])
    link.sock.close()  # the sender dies mid-frame
    with nets["a"].phase(ROUND), pytest.raises(FrameError, match=error):
        Party("a", nets["a"]).receive(MaskedContexts.kind, "b")
    nets["a"].abort("test over")


def test_frames_around_the_read_ahead_size_arrive_whole_and_in_order(pki):
    """A link reads what has arrived, up to READ_AHEAD bytes at a time: frames smaller than it, straddling
    its boundary and several times larger, written back to back in one call, each arrive intact."""
    nets = linked(pki, ["a", "b"])
    a, b = Party("a", nets["a"]), Party("b", nets["b"])
    rng = np.random.default_rng(5)
    words = READ_AHEAD // 8
    sizes = [3, words - 40, words, words + 1, 3 * words + 7, 1, words // 2, words // 2]
    sent = [MaskedContexts(rng.standard_normal((1, n))) for n in sizes]
    with nets["b"].batch(), nets["b"].phase(ROUND):
        for message in sent:
            b.send("a", message)
    with nets["a"].phase(ROUND):
        for message in sent:
            assert_same_message(a.receive(MaskedContexts.kind, "b"), message)
    assert nets["a"].wire.links[(ROUND, "b", "a")].bytes == nets["b"].wire.links[(ROUND, "b", "a")].bytes
    close_all(nets)


def test_a_frame_larger_than_the_read_ahead_cut_short_is_refused(pki):
    nets = linked(pki, ["a", "b"])
    message = MaskedContexts(np.ones((3, READ_AHEAD // 8)))
    data = pack(FrameType.DATA, 1, 1, encode(Envelope("b", "a", ROUND, message)))
    link = raw_link(nets["b"], "a")
    link.sock.sendall(data[: 24 + READ_AHEAD + 100])
    link.sock.close()
    error = rf"the connection closed after {READ_AHEAD + 100} of {len(data) - 24} payload bytes$"
    with nets["a"].phase(ROUND), pytest.raises(FrameError, match=error):
        Party("a", nets["a"]).receive(MaskedContexts.kind, "b")
    nets["a"].abort("test over")


def test_an_oversized_or_foreign_frame_is_refused_before_reading_its_payload(pki):
    nets = linked(pki, ["a", "b"], max_frame_bytes=1000)
    raw_link(nets["b"], "a").sock.sendall(pack_header(FrameType.DATA, 1, 1, 10**9))
    with nets["a"].phase(ROUND), pytest.raises(FrameError, match="frame of 1000000000 bytes exceeds the limit of 1000"):
        Party("a", nets["a"]).receive(MaskedContexts.kind, "b")
    for net in nets.values():
        net.abort("test over")

    nets = linked(pki, ["a", "b"])
    forged = encode(Envelope("c", "a", ROUND, MaskedContexts(np.ones((2, 2)))))  # b writes in c's name
    raw_link(nets["b"], "a").sock.sendall(pack(FrameType.DATA, 1, 1, forged))
    with nets["a"].phase(ROUND), pytest.raises(FrameError, match="'b' sent a message addressed from 'c' to 'a'"):
        Party("a", nets["a"]).receive(MaskedContexts.kind, "b")
    for net in nets.values():
        net.abort("test over")


def test_a_malformed_message_is_refused_with_the_codec_error(pki):
    nets = linked(pki, ["a", "b"])
    data = encode(Envelope("b", "a", ROUND, MaskedContexts(np.ones((2, 2)))))[:-3]
    raw_link(nets["b"], "a").sock.sendall(pack(FrameType.DATA, 1, 1, data))
    with nets["a"].phase(ROUND), pytest.raises(FrameError, match="malformed message from 'b': truncated array"):
        Party("a", nets["a"]).receive(MaskedContexts.kind, "b")
    for net in nets.values():
        net.abort("test over")


# ---------------------------------------------------------------- deadlines, lost peers, aborts


def test_a_receive_past_its_deadline_names_the_peer_and_the_round(pki):
    nets = linked(pki, ["a", "b"], deadline=0.3)
    a = Party("a", nets["a"])
    with nets["a"].phase(ROUND):
        pass
    start = time.monotonic()
    with nets["a"].phase(ROUND), pytest.raises(PeerLost, match=r"^lost peer 'b' in round 2: no 'o3m.masked_contexts'"):
        a.receive(MaskedContexts.kind, "b")
    assert 0.3 <= time.monotonic() - start < 5.0  # bounded (loose: process tests load the machine alongside)
    for net in nets.values():
        net.abort("test over")


def test_a_receive_outlasts_a_shorter_socket_timeout_set_before_it(pki):
    """The socket's timeout is re-set only when it would pass a receive's deadline: one left shorter
    (here 0.3 s) makes the read retry until the message comes (0.8 s) within the deadline (3 s)."""
    nets = linked(pki, ["a", "b"])
    a, b = Party("a", nets["a"]), Party("b", nets["b"])
    nets["a"].link("b").set_timeout(0.3)

    def late() -> None:
        time.sleep(0.8)
        with nets["b"].phase(ROUND):
            b.send("a", RoundRequest(1, 2, np.arange(3, dtype=np.int64)))

    start = time.monotonic()  # before the sender's sleep starts, so the wait measured is at least its 0.8 s
    job = Background(late)
    with nets["a"].phase(ROUND):
        got = a.receive(RoundRequest.kind, "b")
    assert got.round == 1 and 0.8 <= time.monotonic() - start < DEADLINE
    job.result()
    close_all(nets)


def test_a_peer_that_vanishes_or_aborts_is_named(pki):
    nets = linked(pki, ["a", "b", "c"])
    raw_link(nets["b"], "a").sock.close()  # b's process dies: the kernel closes its sockets
    with nets["a"].phase(ROUND):
        with pytest.raises(PeerLost, match="^lost peer 'b' in round 1: connection closed") as lost:
            Party("a", nets["a"]).receive(MaskedContexts.kind, "b")
        nets["a"].abort(str(lost.value), lost=lost.value.peer, round=lost.value.round)
    assert lost.value.peer == "b" and lost.value.round == "round 1"
    with (
        nets["c"].phase(ROUND),
        pytest.raises(PeerLost, match=r"^lost peer 'b' in round 1 \(session aborted by 'a'") as told,
    ):
        Party("c", nets["c"]).receive(RoundRequest.kind, "a")
    assert told.value.peer == "b"
    for net in nets.values():
        net.abort("test over")


# ---------------------------------------------------------------- real messages and the ledger


def exchange(parties: dict[str, Party], networks: dict[str, object], role: str | None = None) -> list:
    """A small three-party script (setup and two rounds) run by one party or, in memory, by all."""
    messages = sample_messages()
    got = []

    def phase(name):
        return networks[role].phase(name) if role else networks["net"].phase(name)

    def act(who, action):
        if role is None or role == who:
            return action(parties[who])
        return None

    with phase(SETUP):
        act("a", lambda p: [p.send("b", messages[0]), p.send("c", messages[0])])
        got.append(act("b", lambda p: p.receive(MaskBlock.kind, "a")))
        got.append(act("c", lambda p: p.receive(MaskBlock.kind, "a")))
    for _ in range(2):
        with phase(ROUND):
            act("a", lambda p: [p.send("b", messages[1]), p.send("c", messages[1])])
            got.append(act("b", lambda p: p.receive(RoundRequest.kind, "a")))
            got.append(act("c", lambda p: p.receive(RoundRequest.kind, "a")))
            act("b", lambda p: p.send("a", messages[2]))
            act("c", lambda p: p.send("a", messages[3]))
            got.append(act("a", lambda p: p.receive(AggregationShare.kind)))  # any sender: c's share
            got.append(act("a", lambda p: p.receive(MaskedContexts.kind, "b")))
    return [item for item in got if item is not None]


def test_real_messages_round_trip_and_the_ledger_matches_in_memory(pki):
    memory = InMemoryNetwork(serialize=True)
    in_memory = exchange({name: Party(name, memory) for name in "abc"}, {"net": memory})

    nets = linked(pki, ["a", "b", "c"])
    parties = {name: Party(name, net) for name, net in nets.items()}
    jobs = {name: Background(lambda name=name: exchange(parties, nets, name)) for name in nets}
    results = {name: job.result() for name, job in jobs.items()}
    close_all(nets)

    assert len(results["a"]) == 4 and len(results["b"]) == len(results["c"]) == 3
    flat = [results["b"][0], results["c"][0]] + [
        m for r in range(2) for m in (results["b"][1 + r], results["c"][1 + r])
    ]
    expected = [in_memory[0], in_memory[1]] + [in_memory[2 + 4 * r + k] for r in range(2) for k in range(2)]
    for got, want in zip(flat, expected, strict=True):
        assert_same_message(got, want)
    for got, want in zip(results["a"], [m for r in range(2) for m in in_memory[4 + 4 * r : 6 + 4 * r]], strict=True):
        assert_same_message(got, want)

    # each process's ledger holds the links it sends on; together they are the in-memory ledger
    union = sorted(row for net in nets.values() for row in net.traffic.rows())
    assert union == memory.traffic.rows()
    received = sorted((p, s, r, m, b) for net in nets.values() for (p, s, r, m, b, _) in net.received.rows())
    assert received == [row[:5] for row in memory.traffic.rows()]
    for net in nets.values():
        assert dict(net.traffic.segments) == dict(memory.traffic.segments)
    # wire bytes: every data frame is its header plus the codec's bytes, the same at both ends
    for (phase, sender, receiver), counts in nets["a"].wire.links.items():
        if phase != "control" and sender == "a":
            assert counts.bytes == nets[receiver].wire.links[(phase, sender, receiver)].bytes
            assert counts.bytes > memory.traffic.links[(phase, sender, receiver)].bytes
