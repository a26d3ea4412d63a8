"""Links that survive a peer's restart (``privbandits.comm.tls.rejoin``): a lost peer may come back within a budget.

As in ``tests/comm/test_transport.py``: 127.0.0.1, ephemeral ports, parties in threads, every thread joined with a
timeout. ``a`` accepts ``b``; ``b`` dies (its sockets closed with no CLOSE, as a killed process's are) and a new
``b`` comes back, replaying its part from the start.
"""

from __future__ import annotations

import socket

import numpy as np
import pytest
from tls_links import Background, addresses, assert_same_message

from privbandits.comm import ROUND, Party, PeerLost, TlsCredentials
from privbandits.comm.frames import FrameError
from privbandits.comm.tls import client_context
from privbandits.comm.tls.rejoin import RejoinNetwork
from privbandits.deploy.certs import write_development_pki
from privbandits.protocols.vertical.core import RoundRequest

REJOIN_S = 5.0


@pytest.fixture(scope="module")
def pki(tmp_path_factory) -> dict[str, TlsCredentials]:
    out = tmp_path_factory.mktemp("pki")
    ca, files = write_development_pki(out, ["a", "b", "c"])
    return {name: TlsCredentials(ca, f.certificate, f.key) for name, f in files.items()}


@pytest.fixture(scope="module")
def rogue(tmp_path_factory) -> dict[str, TlsCredentials]:
    out = tmp_path_factory.mktemp("rogue")
    ca, files = write_development_pki(out, ["b"], ca_name="another CA")
    return {name: TlsCredentials(ca, f.certificate, f.key) for name, f in files.items()}


def request(index: int) -> RoundRequest:
    return RoundRequest(index, 2, np.arange(3, dtype=np.int64) + index)


class Session:
    """``a`` (accepting) and ``b`` linked; ``restart_b`` makes a new ``b`` that links with ``a`` again."""

    def __init__(self, pki, rejoin_s: float = REJOIN_S) -> None:
        self.pki, self.rejoin_s = pki, rejoin_s
        self.addrs, listeners = addresses(["a", "b"])
        self.a = self._network("a", listeners.pop("a"))
        listeners["b"].close()
        job = Background(self.a.connect)
        self.b = self._network("b").connect()
        job.result()
        self.pa, self.pb = Party("a", self.a), Party("b", self.b)

    def _network(self, name: str, listener=None) -> RejoinNetwork:
        return RejoinNetwork(name, self.addrs, self.pki[name], listener=listener, deadline=5.0, connect_deadline=5.0,
                             handshake_timeout=2.0, rejoin_s=self.rejoin_s, backoff_s=0.2)  # fmt: skip

    def kill_b(self) -> None:
        self.b.close_sockets()  # no CLOSE: as the kernel ends a killed process's connections

    def restart_b(self) -> RejoinNetwork:
        self.b = self._network("b").connect()
        self.pb = Party("b", self.b)
        return self.b

    def end(self) -> None:
        for net in (self.a, self.b):
            net.abort("test over")


def first_exchange(session: Session) -> None:
    """a sends b request 1; b answers with request 10."""
    a, b = session.pa, session.pb
    with session.a.phase(ROUND):
        a.send("b", request(1))
    with session.b.phase(ROUND):
        assert_same_message(b.receive(RoundRequest.kind, "a"), request(1))
        b.send("a", request(10))
    with session.a.phase(ROUND):
        assert_same_message(a.receive(RoundRequest.kind, "b"), request(10))


def test_a_peer_that_comes_back_replays_and_each_message_is_taken_once(pki):
    """b dies after one exchange; a, waiting for b's next message, links with the new b, sends it its journal (request
    1 again); the new b replays (request 10 again: skipped by a, checked against what a received) and goes on."""
    session = Session(pki)
    try:
        first_exchange(session)
        session.kill_b()
        a = session.pa
        with session.a.phase(ROUND):
            waiting = Background(lambda: a.receive(RoundRequest.kind, "b"))
            b_net = session.restart_b()
            b = session.pb
            with b_net.phase(ROUND):
                assert_same_message(b.receive(RoundRequest.kind, "a"), request(1))  # from a's journal
                b.send("a", request(10))  # the replay: skipped by a
                b.send("a", request(11))
            assert_same_message(waiting.result(), request(11))
        assert len(session.a.rejoins) == 1 and session.a.rejoins[0].startswith("b (")
        assert session.a.received.total().messages == 2  # request 10 once, request 11
    finally:
        session.end()


def test_a_peer_that_comes_back_with_another_replay_is_refused_naming_it(pki):
    session = Session(pki)
    try:
        first_exchange(session)
        session.kill_b()
        a = session.pa
        with session.a.phase(ROUND):
            waiting = Background(lambda: a.receive(RoundRequest.kind, "b"))
            b_net = session.restart_b()
            with b_net.phase(ROUND):
                session.pb.send("a", request(12))  # not what b sent first
            with pytest.raises(FrameError, match="'b' came back and replayed data message 1 differently"):
                waiting.result()
    finally:
        session.end()


def test_while_a_peer_is_away_connections_of_anyone_else_are_refused_and_stop_no_one(pki, rogue):
    """While a waits for b: b's name from another CA, the certificate of a party that is not a's peer, and a
    plaintext client are each refused (counted), and the real b then links again."""
    session = Session(pki)
    try:
        first_exchange(session)
        session.kill_b()
        a = session.pa
        with session.a.phase(ROUND):
            waiting = Background(lambda: a.receive(RoundRequest.kind, "b"))
            host, port = session.addrs["a"]
            for credentials in (rogue["b"], pki["c"]):
                try:
                    sock = client_context(credentials).wrap_socket(socket.create_connection((host, port), timeout=3))
                    sock.recv(1)
                    sock.close()
                except OSError:
                    pass  # refused during the handshake
            with socket.create_connection((host, port), timeout=3) as plain:
                plain.sendall(b"GET / HTTP/1.0\r\n\r\n")
            b_net = session.restart_b()
            with b_net.phase(ROUND):
                session.pb.receive(RoundRequest.kind, "a")
                session.pb.send("a", request(10))
                session.pb.send("a", request(13))
            assert_same_message(waiting.result(), request(13))
        assert session.a.refused >= 3, session.a.refusals
        assert len(session.a.rejoins) == 1
    finally:
        session.end()


def test_a_peer_away_past_the_budget_is_lost_naming_it(pki):
    session = Session(pki, rejoin_s=0.5)
    try:
        first_exchange(session)
        session.kill_b()
        with session.a.phase(ROUND), pytest.raises(PeerLost, match=r"lost peer 'b' in .*: .*it did not come back "
                                                                   r"within 0\.5 s") as lost:  # fmt: skip
            session.pa.receive(RoundRequest.kind, "b")
        assert lost.value.peer == "b"
    finally:
        session.end()


def test_each_network_declares_what_it_offers_beyond_send_and_receive(pki):
    """A party asks the network, not its class (``comm.Network``): whether its devices may connect on their own,
    how long a lost peer is waited for, and ``check_links`` (a no-op but where lost peers may come back)."""
    from privbandits.comm import InMemoryNetwork, TlsNetwork

    memory = InMemoryNetwork()
    assert (memory.connection_per_sender, memory.rejoin_s, memory.check_links()) == (False, 0.0, None)
    assert (tuple(memory.rejoins), memory.on_stray) == ((), None)
    addrs, listeners = addresses(["a", "b"])
    listeners["b"].close()
    plain = TlsNetwork("a", addrs, pki["a"], listener=listeners["a"])
    rejoining = RejoinNetwork("b", addrs, pki["b"], rejoin_s=2.5, backoff_s=0.2)
    try:
        assert (plain.connection_per_sender, plain.rejoin_s, plain.check_links()) == (True, 0.0, None)
        assert (rejoining.connection_per_sender, rejoining.rejoin_s) == (True, 2.5)
        assert (tuple(plain.rejoins), tuple(rejoining.rejoins)) == ((), ())
        assert (plain.on_stray, rejoining.on_stray) == (None, None)
        assert type(rejoining).check_links is not TlsNetwork.check_links  # it looks after its links
    finally:
        plain.close_sockets()
        rejoining.close_sockets()
