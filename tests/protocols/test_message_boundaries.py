"""Contract: every protocol's parties learn only from messages, and a party refuses a message it does not take
(issue 17's message boundary, issue 45's contract suites), for every registered protocol and the test suite's toy.

Each protocol's in-memory run (its party code's ``run_in_memory``, on a quick deployment: ``protocol_harness``) runs on
a network that records every message delivered and every message taken, with how its receiver asked for it:

* every message crosses the network and is read by its addressee, once; none is left unread; the traffic ledger
  counts exactly what crossed, per link;
* the run with every message round-tripped through codec bytes is the plain run: the same messages, in the same
  order, of the same sizes, and the same decisions;
* a message replaced in flight by one of a kind no party takes, or relabelled as sent by a party that never sends that
  kind to its receiver, is refused where its receiver asks for it: a :class:`ProtocolError` naming the receiver, the
  kind it expected and the sender it expected it from; the refused message is left unread, and the receiver took
  nothing in its place (exactly the messages of the honest run before it).

The protocol-specific boundaries (what a message may carry, whose model a new agent rebuilds, the ledgers each party
keeps) are in each protocol's folder (``tests/protocols/<p>/test_message_boundary_<p>.py``).
"""

from __future__ import annotations

from collections import Counter, defaultdict

import pytest
from protocol_harness import ALL_VARIANTS, NAMES, OUTCOMES, SMALL, Recording, Stray, honest_run, run_in_memory

from privbandits.comm import Envelope, ProtocolError

pytestmark = pytest.mark.filterwarnings("ignore:FCLUB. privatizer noise exceeded")

RUNS = [pytest.param(name, variant, id=f"{name}-{variant}") for name, variant in ALL_VARIANTS]


def _what(envelope: Envelope) -> tuple[str, str, str, str, int]:
    return envelope.sender, envelope.receiver, envelope.phase, envelope.message.kind, envelope.message.payload_bytes()


@pytest.mark.parametrize(("name", "variant"), RUNS)
def test_every_message_crosses_the_network_and_is_read_once_by_its_receiver(name, variant):
    _, network = honest_run(name, variant)
    assert len(network.transcript) > 2, "the run sent messages"
    assert network.pending() == []  # nothing left unread
    assert all(receiver == envelope.receiver for receiver, envelope, *_ in network.takes)
    assert sorted(id(envelope) for _, envelope, *_ in network.takes) == sorted(map(id, network.transcript))
    crossed: dict[tuple[str, str, str], list[int]] = defaultdict(lambda: [0, 0])
    for envelope in network.transcript:
        link = crossed[(envelope.phase, envelope.sender, envelope.receiver)]
        link[0] += 1
        link[1] += envelope.message.payload_bytes()
    counted = {key: [link.messages, link.bytes] for key, link in network.traffic.links.items() if link.messages}
    assert counted == dict(crossed)


@pytest.mark.parametrize(("name", "variant"), RUNS)
def test_the_run_through_codec_bytes_is_the_plain_run(name, variant):
    serialized, network = honest_run(name, variant)
    plain = Recording()
    outcome = run_in_memory(name, variant, plain)
    assert [_what(e) for e in plain.transcript] == [_what(e) for e in network.transcript]
    assert plain.traffic.rows() == network.traffic.rows()
    if name in OUTCOMES:
        assert OUTCOMES[name](outcome) == OUTCOMES[name](serialized)


def _target(network: Recording) -> tuple[int, str, str, str, list[tuple[str, str, str]]]:
    """A message mid-run that its receiver asked for by kind and sender while no other such message waited: its
    delivery index, receiver, kind and sender, and what the receiver took before it."""
    index = {id(envelope): i for i, envelope in enumerate(network.transcript)}
    eligible = [(index[id(envelope)], position) for position, (_, envelope, kinds, sender, others)
                in enumerate(network.takes) if sender is not None and len(kinds) == 1 and others == 0]  # fmt: skip
    assert eligible, "no receive names its message's kind and sender"
    delivered, position = sorted(eligible)[len(eligible) // 2]
    receiver, envelope, (kind,), sender, _ = network.takes[position]
    before = [(e.sender, e.phase, e.message.kind) for r, e, *_ in network.takes[:position] if r == receiver]
    return delivered, receiver, kind, sender, before


class Tampering(Recording):
    """Delivers the ``index``-th message changed by ``change``; records like :class:`Recording`."""

    def __init__(self, index: int, change) -> None:
        super().__init__()
        self.index, self.change, self.delivered = index, change, 0

    def _deliver(self, envelope: Envelope, depth: int) -> None:
        if self.delivered == self.index:
            envelope = self.change(envelope)
        self.delivered += 1
        super()._deliver(envelope, depth)


def _refused(name: str, variant: str, change) -> tuple[str, Tampering, tuple]:
    _, honest = honest_run(name, variant)
    delivered, receiver, kind, sender, before = target = _target(honest)
    network = Tampering(delivered, lambda envelope: change(envelope, honest))
    with pytest.raises(ProtocolError) as caught:
        run_in_memory(name, variant, network)
    took = [(e.sender, e.phase, e.message.kind) for r, e, *_ in network.takes if r == receiver]
    assert took == before  # the receiver took nothing in its place
    return str(caught.value), network, target


@pytest.mark.parametrize(("name", "variant"), RUNS)
def test_a_message_of_a_kind_no_party_takes_is_refused_and_left_unread(name, variant):
    message, network, (_, receiver, kind, sender, _) = _refused(
        name, variant, lambda envelope, _: envelope._replace(message=Stray(7))
    )
    assert message == f"{receiver!r} expected a {kind!r} message from {sender!r}, but none is waiting"
    assert (sender, receiver, Stray.kind) in network.pending(receiver)


def _impostor(envelope: Envelope, honest: Recording) -> str:
    """A party that never sends a message of ``envelope``'s kind to its receiver (another one if there is one)."""
    sent = (envelope.receiver, envelope.message.kind)
    allowed = {e.sender for e in honest.transcript if (e.receiver, e.message.kind) == sent}
    others = sorted(honest.parties - allowed - {envelope.receiver})
    return others[0] if others else envelope.receiver


@pytest.mark.parametrize(("name", "variant"), RUNS)
def test_a_message_from_a_sender_not_allowed_to_send_it_is_refused_and_left_unread(name, variant):
    impostors = []

    def relabel(envelope: Envelope, honest: Recording) -> Envelope:
        impostors.append(_impostor(envelope, honest))
        return envelope._replace(sender=impostors[-1])

    message, network, (_, receiver, kind, sender, _) = _refused(name, variant, relabel)
    assert message == f"{receiver!r} expected a {kind!r} message from {sender!r}, but none is waiting"
    (impostor,) = impostors
    assert impostor != sender and (impostor, receiver, kind) in network.pending(receiver)


def test_every_protocol_is_run_and_the_harness_names_no_other():
    """The suites run every registered protocol and the toy; a stale harness entry fails here."""
    assert {name for name, _ in ALL_VARIANTS} == set(NAMES)
    assert set(SMALL) <= set(NAMES) and set(OUTCOMES) <= set(NAMES)


def test_the_transcript_check_finds_a_message_its_receiver_never_took():
    """Not vacuous: a message sent to a party that never reads it is left over (and counted as crossed)."""
    from privbandits.comm import Party

    network = Recording(serialize=True)
    a, b = Party("a", network), Party("b", network)
    with network.phase("round"):
        a.send("b", Stray(1))
        a.send("b", Stray(2))
        b.receive(Stray, "a")
    assert network.pending() == [("a", "b", Stray.kind)]
    assert Counter(e.message.note for _, e, *_ in network.takes) == Counter([1])
