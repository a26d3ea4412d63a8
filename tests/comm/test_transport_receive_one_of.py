"""``TlsNetwork.receive_one_of``: wait for any of several kinds from any linked peer (issue 17, step 2 groundwork).

The shuffler of P2B waits for either a device's report or the end of the batch, from
whichever device host sends first. These tests run the TLS transport as
``tests/comm/test_transport.py`` does: 127.0.0.1, ephemeral ports, parties in threads, a deadline of
at most a few seconds on every wait, every thread joined with a timeout. Where an in-memory run
can say the same thing, the TLS run is compared with it.
"""

from __future__ import annotations

import time

import numpy as np
import pytest
from tls_links import Background, close_all, linked

from privbandits.comm import ROUND, InMemoryNetwork, Party, PeerLost, ProtocolError, TlsCredentials
from privbandits.deploy.certs import write_development_pki
from privbandits.protocols.p2b.core import CloseBatch, EncodedReport
from privbandits.protocols.vertical.core import MaskedContexts

WANTED = (EncodedReport.kind, CloseBatch.kind)


@pytest.fixture(scope="module")
def pki(tmp_path_factory) -> dict[str, TlsCredentials]:
    """Certificates of parties a, b, c from one development CA."""
    out = tmp_path_factory.mktemp("pki")
    ca, files = write_development_pki(out, ["a", "b", "c"])
    return {name: TlsCredentials(ca, f.certificate, f.key) for name, f in files.items()}


def parties(nets) -> dict[str, Party]:
    return {name: Party(name, net) for name, net in nets.items()}


def test_it_returns_whichever_kind_arrives_from_whichever_peer(pki):
    nets = linked(pki, ["a", "b", "c"])
    a, b, c = (Party(name, nets[name]) for name in "abc")
    with nets["c"].phase(ROUND):
        c.send("a", CloseBatch())  # only c has sent: a close, no report
    with nets["a"].phase(ROUND):
        got = a.receive_one_of(WANTED)
        assert got.kind == CloseBatch.kind

    def later_report() -> None:
        time.sleep(0.2)  # a is already waiting on both links
        with nets["b"].phase(ROUND):
            b.send("a", EncodedReport(3, 1, 1))

    job = Background(later_report)
    with nets["a"].phase(ROUND):
        started = time.monotonic()
        got = a.receive_one_of(WANTED)
        assert time.monotonic() - started < 5.0  # loose: process tests load the machine alongside
    job.result()
    assert (got.kind, got.code, got.action, got.reward) == (EncodedReport.kind, 3, 1, 1)
    assert nets["a"].received.total(sender="b").messages == 1
    assert nets["a"].received.total(sender="c").messages == 1
    close_all(nets)


def test_it_takes_a_named_sender_only(pki):
    nets = linked(pki, ["a", "b", "c"])
    a, b, c = (Party(name, nets[name]) for name in "abc")
    with nets["c"].phase(ROUND):
        c.send("a", EncodedReport(1, 0, 1))
    with nets["b"].phase(ROUND):
        b.send("a", CloseBatch())
    with nets["a"].phase(ROUND):
        assert a.receive_one_of(WANTED, "b").kind == CloseBatch.kind
        got = a.receive_one_of(WANTED, "c")
        assert (got.kind, got.code) == (EncodedReport.kind, 1)
    close_all(nets)


def script(make_network) -> tuple[list[tuple[str, object]], object]:
    """The same exchange on any network: b sends another kind first, then a report and a close;
    a takes the report and the close with ``receive_one_of``, the other kind afterwards, then replies.
    Returns what a received, in order, and a's network (for its ledger)."""
    nets = make_network()
    a, b = Party("a", nets["a"]), Party("b", nets["b"])
    other = MaskedContexts(np.arange(6.0).reshape(2, 3))
    with nets["b"].phase(ROUND):
        b.send("a", other)
        b.send("a", EncodedReport(7, 2, 0))
        b.send("a", CloseBatch())
    got = []
    with nets["a"].phase(ROUND):
        first = a.receive_one_of(WANTED)
        got.append((first.kind, first.code))
        got.append((a.receive_one_of(WANTED).kind, None))
        queued = a.receive(MaskedContexts.kind, "b")  # read ahead past it, still waiting for a later receive
        np.testing.assert_array_equal(queued.blocks, other.blocks)
        got.append((queued.kind, None))
        a.send("b", CloseBatch())  # depth 2: a's clock moved to the depth of what it received
    with nets["b"].phase(ROUND):
        b.receive(CloseBatch.kind, "a")
    return got, nets


def test_other_kinds_stay_queued_and_the_ledger_matches_in_memory(pki):
    tls_got, nets = script(lambda: linked(pki, ["a", "b"]))
    memory = InMemoryNetwork(serialize=True)
    memory_got, _ = script(lambda: {"a": memory, "b": memory})
    assert tls_got == memory_got == [(EncodedReport.kind, 7), (CloseBatch.kind, None), (MaskedContexts.kind, None)]
    assert memory.pending() == []
    # Lamport depths: a's reply is in the second round of its segment, on both networks
    # (in memory: b's sending segment costs 1 round, a's 2, b's receiving segment none)
    assert nets["a"].traffic.rounds[ROUND] == 2 and memory.traffic.rounds[ROUND] == 1 + 2 + 0
    assert nets["a"].traffic.total(sender="a").rounds == memory.traffic.total(sender="a").rounds == 1
    assert nets["a"].received.total(sender="b").messages == 3
    assert nets["a"].traffic.total() == memory.traffic.total(sender="a")
    close_all(nets)


def test_the_deadline_names_the_peers_and_both_kinds(pki):
    nets = linked(pki, ["a", "b", "c"], deadline=0.4)
    a, b = Party("a", nets["a"]), Party("b", nets["b"])
    with nets["b"].phase(ROUND):
        b.send("a", MaskedContexts(np.ones((1, 2))))  # another kind waiting does not count
    wanted = r"no 'p2b\.encoded_report' or 'p2b\.close_batch' message"
    with nets["a"].phase(ROUND):
        started = time.monotonic()
        with pytest.raises(
            PeerLost, match=rf"^{wanted} from any of 'b', 'c' within the 0\.4 s deadline in round 1$"
        ) as lost:
            a.receive_one_of(WANTED)
        assert 0.35 < time.monotonic() - started < 5.0  # loose: process tests load the machine alongside
        assert lost.value.peer == "any" and lost.value.round == "round 1"
        with pytest.raises(PeerLost, match=rf"^lost peer 'c' in round 1: {wanted} within the 0\.4 s deadline$") as one:
            a.receive_one_of(WANTED, "c")
        assert one.value.peer == "c"
        assert a.receive(MaskedContexts.kind, "b").blocks.shape == (1, 2)  # still queued
    with pytest.raises(ProtocolError, match="^this process runs 'a'; it cannot receive for 'b'$"):
        nets["a"].receive_one_of("b", WANTED)
    for net in nets.values():
        net.abort("test over")


def test_a_peer_that_vanishes_while_a_waits_is_named(pki):
    nets = linked(pki, ["a", "b"], deadline=2.0)
    a = Party("a", nets["a"])

    def vanish() -> None:
        time.sleep(0.2)
        nets["b"].close_sockets()  # the process died: no CLOSE frame

    job = Background(vanish)
    with (
        nets["a"].phase(ROUND),
        pytest.raises(
            PeerLost,
            match=r"^lost peer 'b' in round 1: connection closed while waiting for a 'p2b\.encoded_report' or",
        ),
    ):
        a.receive_one_of(WANTED)
    job.result()
    nets["a"].abort("test over")


def test_with_every_peer_gone_it_says_so_at_once_instead_of_waiting_out_the_deadline(pki):
    nets = linked(pki, ["a", "b"], deadline=3.0)
    a = Party("a", nets["a"])
    nets["b"].abort("done here")
    with nets["a"].phase(ROUND):
        with pytest.raises(PeerLost, match=r"session aborted by 'b': done here"):
            a.receive_one_of(WANTED)
        started = time.monotonic()
        with pytest.raises(
            PeerLost,
            match=r"^no 'p2b\.encoded_report' or 'p2b\.close_batch' message can come in round 1: every peer has "
            r"ended the session$",
        ) as gone:
            a.receive_one_of(WANTED)
        assert time.monotonic() - started < 0.5 and gone.value.peer == "any"
    nets["a"].abort("test over")


# -- peek and drop (issue 17, step 3: FCLUB's global server serves several local servers) ---------------------------


@pytest.mark.parametrize("transport", ["memory", "tls"])
def test_peek_names_the_next_sender_and_kind_and_leaves_the_message_waiting_in_order(pki, transport):
    nets = linked(pki, ["a", "b", "c"]) if transport == "tls" else dict.fromkeys("abc", InMemoryNetwork())
    a, b, c = (Party(name, nets[name]) for name in "abc")
    with nets["b"].phase(ROUND):
        b.send("a", MaskedContexts(np.ones((1, 1))))  # another kind first: peek looks past it
        b.send("a", EncodedReport(1, 0, 1))
        b.send("a", EncodedReport(2, 0, 0))
    assert a.peek(WANTED) == ("b", EncodedReport.kind)
    assert a.peek(WANTED, "b") == ("b", EncodedReport.kind)  # peeking twice takes nothing
    assert a.receive(EncodedReport.kind, "b").code == 1
    assert a.receive_one_of((MaskedContexts.kind, EncodedReport.kind), "b").kind == MaskedContexts.kind  # order kept
    assert a.receive(EncodedReport.kind, "b").code == 2
    with nets["c"].phase(ROUND):
        c.send("a", CloseBatch())
    assert a.peek(WANTED) == ("c", CloseBatch.kind)
    a.receive(CloseBatch.kind, "c")
    if transport == "tls":
        close_all(nets)
    else:
        with pytest.raises(ProtocolError, match=r"'a' expected a 'p2b\.encoded_report' or 'p2b\.close_batch'"):
            a.peek(WANTED)


def test_a_dropped_peer_is_skipped_by_waits_refused_on_send_and_not_awaited_at_close(pki):
    nets = linked(pki, ["a", "b", "c"], deadline=10.0)
    a, c = Party("a", nets["a"]), Party("c", nets["c"])
    nets["b"].close_sockets()  # b is gone without a word (as a killed process: its connections just end)
    with pytest.raises(PeerLost) as lost:
        a.peek(WANTED)
    assert lost.value.peer == "b"
    nets["a"].drop("b")
    with nets["a"].phase(ROUND), pytest.raises(PeerLost, match="'b' was lost earlier in the session"):
        a.send("b", CloseBatch())
    with nets["c"].phase(ROUND):
        c.send("a", CloseBatch())
    assert a.peek(WANTED) == ("c", CloseBatch.kind)  # b's link is no longer read
    a.receive(CloseBatch.kind, "c")
    nets["c"].drop("b")  # c goes on without b too
    started = time.monotonic()
    jobs = [Background(nets[name].close) for name in "ac"]
    for job in jobs:
        job.result()
    assert time.monotonic() - started < 5.0  # a does not wait for b's CLOSE (it would wait out the 10 s deadline)
    with pytest.raises(ProtocolError, match="no link to 'd' to drop"):
        nets["a"].drop("d")
