"""One message on a connection of its own (``privbandits.comm.oneshot``): a device of a party sends one report.

As in ``tests/comm/test_transport.py``: 127.0.0.1, ephemeral ports, parties in threads, a deadline of a few seconds
on every wait, every thread joined with a timeout. ``a`` keeps its listener open (the shuffler); ``b`` and ``c``
host devices.
"""

from __future__ import annotations

import socket

import pytest
from tls_links import Background, close_all, linked

from privbandits.comm import ROUND, Party, PeerLost, ProtocolError, TlsCredentials, frames
from privbandits.comm.codec import Envelope, encode
from privbandits.comm.frames import FrameType
from privbandits.comm.oneshot import accept_own, device_waiting, send_own
from privbandits.comm.tls import client_context
from privbandits.deploy.certs import write_development_pki
from privbandits.protocols.p2b.core import CloseBatch, EncodedReport


@pytest.fixture(scope="module")
def pki(tmp_path_factory) -> dict[str, TlsCredentials]:
    out = tmp_path_factory.mktemp("pki")
    ca, files = write_development_pki(out, ["a", "b", "c"])
    return {name: TlsCredentials(ca, f.certificate, f.key) for name, f in files.items()}


@pytest.fixture
def nets(pki):
    nets = linked(pki, ["a", "b", "c"], keep_listening=True, deadline=3.0)
    yield nets
    for net in nets.values():
        net.abort("test over")


def rogue(nets, pki, party: str, data: bytes) -> None:
    """A connection to ``a`` with ``party``'s certificate that writes ``data`` and goes."""
    host, port = nets["a"].addresses["a"]
    sock = client_context(pki[party]).wrap_socket(socket.create_connection((host, port), timeout=3.0))
    sock.sendall(data)
    sock.close()


def test_a_device_sends_one_report_on_its_own_connection_and_is_acknowledged_once_it_is_stored(nets):
    with nets["b"].phase(ROUND):
        job = Background(lambda: send_own(nets["b"], "b-device7", "a", EncodedReport(3, 1, 0)))
        assert device_waiting(nets["a"], "b", 3.0)
        delivery = accept_own(nets["a"], ["b"])
        assert (delivery.party, delivery.envelope.sender, delivery.envelope.message.code) == ("b", "b-device7", 3)
        assert job.thread.is_alive()  # the device waits for its acknowledgement
        delivery.ack()
        job.result()
    sent = nets["b"].traffic.links[(ROUND, "b devices", "a")]  # b's devices are counted together, both sides
    heard = nets["a"].received.links[(ROUND, "b devices", "a")]
    assert (sent.messages, sent.bytes) == (heard.messages, heard.bytes) == (1, EncodedReport(3, 1, 0).payload_bytes())
    assert [key for key in nets["a"].wire.links if "device" in key[1] or "device" in key[2]] == [
        (ROUND, "b devices", "a"), ("control", "a", "b devices")]
    # a message on the party link is seen first, as such
    with nets["b"].phase(ROUND):
        Party("b", nets["b"]).send("a", CloseBatch())
    assert not device_waiting(nets["a"], "b", 3.0)
    assert nets["a"].dropped == []


@pytest.mark.parametrize(
    ("party", "data", "reason"),
    [
        ("b", frames.pack_header(FrameType.DATA, 0, 1, 100) + b"x" * 10,
         "a device of 'b' disconnected or sent a bad frame: truncated frame from 'b': the connection closed after "
         "10 of 100 payload bytes"),
        ("b", b"", "a device of 'b' disconnected before its message"),
        ("c", b"", "presented ['c']; expected one of ['b']"),
        ("b", frames.pack(FrameType.DATA, 0, 1, encode(Envelope("c-device1", "a", ROUND, EncodedReport(1, 0, 0)))),
         "a device of 'b' sent a message from 'c-device1' to 'a'"),
        ("b", frames.pack(FrameType.CLOSE, 0, 0, b""), "a device of 'b' sent a control frame"),
    ],
)  # fmt: skip
def test_a_device_connection_that_fails_is_dropped_naming_why_and_the_next_one_is_taken(nets, pki, party, data, reason):
    job = Background(lambda: rogue(nets, pki, party, data))
    assert accept_own(nets["a"], ["b"]) is None
    job.result()
    assert len(nets["a"].dropped) == 1 and reason in nets["a"].dropped[0], nets["a"].dropped
    with nets["b"].phase(ROUND):  # the next device is served as usual
        job = Background(lambda: send_own(nets["b"], "b-device8", "a", EncodedReport(2, 0, 1)))
        delivery = accept_own(nets["a"], ["b"])
        delivery.ack()
        job.result()
    assert delivery.envelope.sender == "b-device8"


def test_a_party_sends_only_as_its_own_devices_and_learns_when_the_receiver_is_gone(nets):
    with nets["b"].phase(ROUND), pytest.raises(ProtocolError, match="'b' hosts devices named b-...; it cannot send"):
        send_own(nets["b"], "c-device1", "a", EncodedReport(1, 0, 0))
    with pytest.raises(ProtocolError, match="outside any phase"):
        send_own(nets["b"], "b-device1", "a", EncodedReport(1, 0, 0))
    nets["a"].close_sockets()  # the receiver is gone: its listener with it
    with nets["b"].phase(ROUND), pytest.raises(PeerLost, match=r"^lost peer 'a' in round \d+: 'b-device1' could not"):
        send_own(nets["b"], "b-device1", "a", EncodedReport(1, 0, 0))


def test_the_wait_names_the_peer_when_neither_a_device_nor_the_peer_comes(pki):
    nets = linked(pki, ["a", "b"], keep_listening=True, deadline=0.3)
    with pytest.raises(PeerLost, match="neither a message nor a device's connection within the 0.3 s deadline"):
        device_waiting(nets["a"], "b", 0.3)
    close_all(nets)


def test_a_refused_message_is_answered_and_the_device_learns_it_was_not_taken(nets):
    with nets["b"].phase(ROUND):
        job = Background(lambda: send_own(nets["b"], "b-device3", "a", EncodedReport(1, 0, 0)))
        delivery = accept_own(nets["a"], ["b"])
        delivery.refuse("the batch is full (1 reports)")
        assert job.result() is False
        job = Background(lambda: send_own(nets["b"], "b-device4", "a", EncodedReport(1, 0, 0)))
        accept_own(nets["a"], ["b"]).ack()
        assert job.result() is True
    assert nets["a"].dropped == []  # a refusal is an answer, not a dropped connection
