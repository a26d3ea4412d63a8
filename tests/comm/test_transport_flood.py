"""Unauthenticated connections at a party's listener (``privbandits.comm.tls.gate``), in one process.

As in ``tests/comm/test_transport.py``: 127.0.0.1, ephemeral ports, parties in threads, every wait bounded. Idle and
garbage connections (:mod:`flood`) arrive before the real peer; the real peer still links (or a device's message
is still taken) at once, each bogus connection is refused at its own handshake timeout, and a dialer whose first
tries fail (the listener not yet taking connections) tries again until it links.
"""

from __future__ import annotations

import time

import pytest
from flood import Flood
from tls_links import Background, addresses, close_all, linked, network

from privbandits.comm import ROUND, HandshakeError, Party, PeerLost
from privbandits.comm.oneshot import accept_own, device_waiting, send_own
from privbandits.comm.tls.gate import MAX_PENDING
from privbandits.protocols.p2b.core import CloseBatch, EncodedReport


def test_idle_and_garbage_connections_do_not_hold_up_the_real_peer(pki):
    addrs, listeners = addresses(["a", "b"])
    flood = Flood([addrs["a"]], hold_s=10.0).start()  # queued before a accepts anything
    flood.wait_opened()
    net_a = network("a", addrs, listeners, pki["a"], handshake_timeout=1.0)
    net_b = network("b", addrs, listeners, pki["b"], handshake_timeout=1.0)
    start = time.monotonic()
    job = Background(net_a.connect)
    net_b.connect()
    job.result()
    linked_in = time.monotonic() - start
    flood.stop()
    assert linked_in < 0.9, linked_in  # not after the bogus connections' handshake timeout
    # the random bytes and the HTTP request are refused at once, each TLS client without a certificate too
    assert 14 <= len(net_a.refusals) <= 40 and all("TLS handshake with 127.0.0.1:" in r for r in net_a.refusals)
    with net_b.phase(ROUND):
        Party("b", net_b).send("a", CloseBatch())
    with net_a.phase(ROUND):
        assert Party("a", net_a).receive(CloseBatch.kind, "b").kind == CloseBatch.kind
    close_all({"a": net_a, "b": net_b})


def test_idle_connections_do_not_hold_up_a_device_nor_make_the_shuffler_blame_its_host(pki):
    nets = linked(pki, ["a", "b"], keep_listening=True, deadline=3.0, handshake_timeout=0.5)
    flood = Flood([nets["a"].listen_address], hold_s=10.0).start()
    flood.wait_opened()
    with nets["b"].phase(ROUND):
        job = Background(lambda: send_own(nets["b"], "b-device1", "a", EncodedReport(3, 1, 0)))
        start = time.monotonic()
        assert device_waiting(nets["a"], "b", 3.0)
        delivery = accept_own(nets["a"], ["b"])
        assert time.monotonic() - start < 0.4  # before the idle connections' handshake timeout
        delivery.ack()
        assert job.result() is True
    assert delivery.envelope.sender == "b-device1"
    # the host then stays silent: it is named after the wait, whatever the idle connections did meanwhile
    start = time.monotonic()
    try:
        device_waiting(nets["a"], "b", 1.5)
    except PeerLost as lost:
        assert lost.peer == "b" and "neither a message nor a device's connection within the 1.5 s" in str(lost)
    else:
        raise AssertionError("the silent host was not named")
    assert 1.5 <= time.monotonic() - start < 2.5
    flood.stop()
    assert len(nets["a"].dropped) == 40  # every bogus connection dropped (14 at once, the rest at 0.5 s)
    for net in nets.values():
        net.abort("test over")


def test_past_the_cap_the_oldest_pending_connection_is_dropped(pki):
    nets = linked(pki, ["a", "b"], keep_listening=True, deadline=3.0, handshake_timeout=5.0)
    flood = Flood([nets["a"].listen_address], idle=MAX_PENDING + 6, garbage=0, hold_s=10.0).start()
    flood.wait_opened()
    with nets["b"].phase(ROUND):  # a device after them still gets through
        job = Background(lambda: send_own(nets["b"], "b-device1", "a", EncodedReport(1, 0, 0)))
        assert device_waiting(nets["a"], "b", 3.0)
        accept_own(nets["a"], ["b"]).ack()
        assert job.result() is True
    flood.stop()
    gate = nets["a"].gate
    assert len(gate.pending) <= MAX_PENDING
    assert sum(f"dropped: {MAX_PENDING} connections were pending" in r for r in nets["a"].dropped) >= 6
    for net in nets.values():
        net.abort("test over")


def test_a_dialer_tries_again_until_the_listening_party_takes_connections(pki):
    addrs, listeners = addresses(["a", "b"])  # a's listener is bound, but a starts taking connections late
    net_b = network("b", addrs, listeners, pki["b"], handshake_timeout=0.5, connect_deadline=10.0)
    job = Background(net_b.connect)
    time.sleep(1.5)  # b's first tries time out in their handshake
    net_a = network("a", addrs, listeners, pki["a"], handshake_timeout=0.5).connect()
    job.result()
    assert net_a.refusals == [] or all("closed the connection" in r or "TLS" in r for r in net_a.refusals)
    close_all({"a": net_a, "b": net_b})


def test_a_refusal_by_an_authenticated_peer_ends_the_dialers_tries_at_once_with_its_reason(pki):
    addrs, listeners = addresses(["a", "b"])
    net_a = network("a", addrs, listeners, pki["a"], session="one", connect_deadline=2.0)
    job = Background(net_a.connect)
    start = time.monotonic()
    try:
        network("b", addrs, listeners, pki["b"], session="two", connect_deadline=10.0).connect()
    except HandshakeError as exc:
        assert str(exc) == (
            "'a' refused the connection from 'b': the two parties run different deployments (their session digests "
            "differ)"
        )
    else:
        raise AssertionError("b linked with a party of another deployment")
    assert time.monotonic() - start < 1.0  # not retried until b's connect deadline
    with pytest.raises(
        HandshakeError, match=r"no connection from 'b' in time; 1 connection\(s\) refused, the last: 'b' at"
    ):
        job.result()
    assert len(net_a.refusals) == 1 and net_a.refusals[0].endswith("their session digests differ)")
