"""``TlsNetwork.batch``: outgoing messages held and written together when the party is about to wait.

As in ``tests/comm/test_transport.py``: 127.0.0.1, ephemeral ports, parties in threads, a deadline of a
few seconds on every wait, every thread joined with a timeout.
"""

from __future__ import annotations

import select

import numpy as np
import pytest
from tls_links import Background, close_all, linked, raw_link

from privbandits.comm import ROUND, InMemoryNetwork, Party, PeerLost, TlsCredentials
from privbandits.deploy.certs import write_development_pki
from privbandits.protocols.vertical.core import MaskedContexts, RoundRequest


@pytest.fixture(scope="module")
def pki(tmp_path_factory) -> dict[str, TlsCredentials]:
    out = tmp_path_factory.mktemp("pki")
    ca, files = write_development_pki(out, ["a", "b", "c"])
    return {name: TlsCredentials(ca, f.certificate, f.key) for name, f in files.items()}


def readable(net, peer: str, wait: float = 0.2) -> bool:
    """Whether bytes from ``peer`` reached ``net``'s socket within ``wait`` seconds."""
    sock = raw_link(net, peer).sock
    return sock.pending() > 0 or bool(select.select([sock], [], [], wait)[0])


def request(t: int) -> RoundRequest:
    return RoundRequest(t, 100 + t, np.arange(3, dtype=np.int64))


def test_held_messages_leave_together_when_the_party_waits_and_arrive_in_order(pki):
    nets = linked(pki, ["a", "b"])
    a, b = Party("a", nets["a"]), Party("b", nets["b"])
    with nets["a"].batch():
        for t in range(1, 6):
            with nets["a"].phase(ROUND):
                a.send("b", request(t))
        assert not readable(nets["b"], "a")  # held: nothing on the wire yet
        answer = Background(lambda: [b.receive(RoundRequest.kind, "a").round for _ in range(5)])
        with nets["a"].phase(ROUND):
            job = Background(lambda: a.receive(MaskedContexts.kind, "b"))  # a waits: its held requests leave
            assert answer.result() == [1, 2, 3, 4, 5]
            with nets["b"].phase(ROUND):
                b.send("a", MaskedContexts(np.ones((2, 2))))
            np.testing.assert_array_equal(job.result().blocks, np.ones((2, 2)))
    close_all(nets)


def test_the_end_of_a_batch_writes_what_it_held(pki):
    nets = linked(pki, ["a", "b"])
    a, b = Party("a", nets["a"]), Party("b", nets["b"])
    with nets["a"].batch(), nets["a"].phase(ROUND):
        a.send("b", request(1))
        assert not readable(nets["b"], "a")
    assert readable(nets["b"], "a", wait=2.0)
    with nets["b"].phase(ROUND):
        assert b.receive(RoundRequest.kind, "a").round == 1
    close_all(nets)


def test_flush_writes_what_a_batch_holds_without_waiting(pki):
    """The active party's prefetch: requests made ahead leave at once, inside the batch, before it waits."""
    nets = linked(pki, ["a", "b"])
    a, b = Party("a", nets["a"]), Party("b", nets["b"])
    with nets["a"].batch():
        with nets["a"].phase(ROUND):
            a.send("b", request(1))
            a.send("b", request(2))
        assert not readable(nets["b"], "a")
        nets["a"].flush()
        assert readable(nets["b"], "a", wait=2.0)
        with nets["b"].phase(ROUND):
            assert [b.receive(RoundRequest.kind, "a").round for _ in range(2)] == [1, 2]
        with nets["a"].phase(ROUND):
            a.send("b", request(3))
        assert not readable(nets["b"], "a")  # still a batch: the next send is held again
    with nets["b"].phase(ROUND):
        assert b.receive(RoundRequest.kind, "a").round == 3
    memory = InMemoryNetwork()
    memory.flush()  # nothing is held in memory: a no-op
    close_all(nets)


def test_a_party_answering_requests_it_read_together_writes_its_answers_together(pki):
    """The passive party's pattern: b reads a's five requests from one record and holds its five answers
    until it would wait; the messages, their order and both ledgers are the unbatched ones."""
    ledgers, writes_total = {}, {}
    for batched in (False, True):
        nets = linked(pki, ["a", "b"])
        a, b = Party("a", nets["a"]), Party("b", nets["b"])

        def serve(b=b, net=nets["b"], batched=batched):
            with net.batch() if batched else _nothing():
                for _ in range(5):
                    with net.phase(ROUND):
                        got = b.receive(RoundRequest.kind, "a")
                        b.send("a", MaskedContexts(np.full((2, 2), float(got.round))))

        sock, writes = raw_link(nets["b"], "a").sock, []
        sock.sendall = lambda data, send=sock.sendall, writes=writes: writes.append(len(data)) or send(data)
        with nets["a"].batch(), nets["a"].phase(ROUND):
            for t in range(1, 6):
                a.send("b", request(t))
        server = Background(serve)
        with nets["a"].phase(ROUND):
            rounds = [float(a.receive(MaskedContexts.kind, "b").blocks[0, 0]) for _ in range(5)]
        server.result()
        assert rounds == [1.0, 2.0, 3.0, 4.0, 5.0]
        assert len(writes) == (1 if batched else 5) and sum(writes) == writes_total.setdefault("bytes", sum(writes))
        ledgers[batched] = (nets["a"].traffic.rows(), nets["b"].traffic.rows(), nets["a"].received.rows())
        close_all(nets)
    assert ledgers[True] == ledgers[False]


def test_an_abort_inside_a_batch_writes_the_held_messages_first_so_peers_read_the_abort(pki):
    nets = linked(pki, ["a", "b", "c"])
    a, b = Party("a", nets["a"]), Party("b", nets["b"])
    with pytest.raises(RuntimeError, match="c stalled"), nets["a"].batch():
        with nets["a"].phase(ROUND):
            a.send("b", request(1))
            a.send("b", request(2))
            raise RuntimeError("c stalled")
    nets["a"].abort("c stalled", lost="c", round="round 1")
    with nets["b"].phase(ROUND):
        assert [b.receive(RoundRequest.kind, "a").round for _ in range(2)] == [1, 2]
        with pytest.raises(PeerLost, match=r"^lost peer 'c' in round 1 \(session aborted by 'a'"):
            b.receive(RoundRequest.kind, "a")
    for net in (nets["b"], nets["c"]):
        net.abort("test over")


def test_in_memory_a_batch_changes_nothing():
    network = InMemoryNetwork()
    a, _ = Party("a", network), Party("b", network)
    with network.batch(), network.phase(ROUND):
        a.send("b", request(1))
        assert network.pending("b") == [("a", "b", RoundRequest.kind)]


class _nothing:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


def test_a_wait_past_messages_of_other_kinds_still_writes_what_is_held(pki):
    """b's two requests arrive in one record; a reads the first, so the second is decrypted and waiting. a then
    holds a request of its own and waits for b's answer: reading past b's second request, a must still write
    what it holds before it would block, or each would wait for the other until the deadline."""
    nets = linked(pki, ["a", "b"])
    a, b = Party("a", nets["a"]), Party("b", nets["b"])
    with nets["b"].batch(), nets["b"].phase(ROUND):
        b.send("a", request(9))
        b.send("a", request(10))
    with nets["a"].phase(ROUND):
        assert a.receive(RoundRequest.kind, "b").round == 9
    assert raw_link(nets["a"], "b").has_data()  # request 10, decrypted with 9
    with nets["a"].batch(), nets["a"].phase(ROUND):
        a.send("b", request(1))
        job = Background(lambda: a.receive(MaskedContexts.kind, "b"))
        with nets["b"].phase(ROUND):
            assert b.receive(RoundRequest.kind, "a").round == 1
            b.send("a", MaskedContexts(np.zeros((1, 1))))
        assert job.result().blocks.shape == (1, 1)
        assert a.receive(RoundRequest.kind, "b").round == 10  # read on the way, queued
    close_all(nets)
