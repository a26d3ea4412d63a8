"""Networks that carry messages between named parties and count what they carry.

Protocol code talks only to :class:`Party` (``send`` / ``receive``), so the
in-memory network used for simulation can be replaced by a real transport
without touching it. Every network keeps a :class:`Traffic` ledger:
messages, payload bytes and communication rounds per link and per phase.

The sender of a message is tied to the party object, not to a string the caller
passes: :meth:`Network.register` hands the registering party an :class:`Endpoint`,
and :meth:`Network.send` names the sender from the endpoint it is given (as in
Flower, where the framework, not the caller, sets a message's source). A name, or an
endpoint the network did not issue, is refused with :class:`ForgedSender`, so code
that does not hold a party's object cannot send as that party.

Rounds are counted with Lamport depths: inside one phase segment (one
``with network.phase(...)`` block, e.g. one bandit round) a message sent by a
party that has received messages of depth ``k`` gets depth ``k + 1``; the
segment costs as many rounds as its deepest message. Messages that could be
sent in parallel share a round.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import defaultdict, deque
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from functools import partial
from typing import Any, ClassVar, overload

from privbandits.comm.codec import Envelope, decode, encode
from privbandits.comm.messages import M, Message

SETUP = "setup"
ROUND = "round"


class ProtocolError(RuntimeError):
    """A party expected a message that was not sent (a protocol bug)."""


class ForgedSender(ProtocolError):
    """A send through something other than an endpoint this network issued (a name, another network's endpoint)."""


class Endpoint:
    """A party's capability on one network: what :meth:`Network.register` returns, once per name.

    Whoever holds it sends as that party (normally only its :class:`Party` object):
    ``endpoint.send(receiver, message)``, or ``network.send(endpoint, receiver, message)``;
    the network names the sender from the endpoint itself, so passing another party's
    name cannot forge a message. Endpoints are made only by the network.
    """

    __slots__ = ("name", "network", "send")
    name: str
    network: Network
    send: Callable[[str, Message], None]

    def __init__(self, *args: object, **kwargs: object) -> None:
        raise TypeError("endpoints are issued by Network.register(name), to the party that registers")

    def __repr__(self) -> str:
        return f"<Endpoint of {self.name!r}>"


@dataclass(slots=True)
class LinkCounts:
    """Totals for one (phase, sender, receiver) link or any aggregate of links."""

    messages: int = 0
    bytes: int = 0
    rounds: int = 0

    def __iadd__(self, other: LinkCounts) -> LinkCounts:
        self.messages += other.messages
        self.bytes += other.bytes
        self.rounds += other.rounds
        return self


@dataclass
class Traffic:
    """What crossed the network, per ``(phase, sender, receiver)`` link.

    ``segments[phase]`` counts the phase blocks entered (e.g. bandit rounds),
    ``rounds[phase]`` the communication rounds they took in total.
    """

    links: dict[tuple[str, str, str], LinkCounts] = field(default_factory=lambda: defaultdict(LinkCounts))
    segments: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    rounds: dict[str, int] = field(default_factory=lambda: defaultdict(int))

    def total(self, phase: str | None = None, sender: str | None = None, receiver: str | None = None) -> LinkCounts:
        """Sum over the links matching every given filter (``rounds`` summed per link)."""
        counts = LinkCounts()
        for (p, s, r), link in self.links.items():
            wanted = (phase, sender, receiver)
            if all(want is None or want == have for want, have in zip(wanted, (p, s, r), strict=True)):
                counts += link
        return counts

    def per_segment(self, phase: str, sender: str | None = None, receiver: str | None = None) -> float:
        """Mean payload bytes per segment of ``phase`` on the matching links."""
        segments = self.segments.get(phase, 0)
        return self.total(phase, sender, receiver).bytes / segments if segments else 0.0

    def rows(self) -> list[tuple[str, str, str, int, int, int]]:
        """``(phase, sender, receiver, messages, bytes, rounds)`` for every link, sorted."""
        return [(p, s, r, c.messages, c.bytes, c.rounds) for (p, s, r), c in sorted(self.links.items())]


class _PhaseBlock:
    """Context manager of :meth:`Network.phase` (a class: cheaper than a generator per bandit round)."""

    __slots__ = ("network", "name")

    def __init__(self, network: Network, name: str) -> None:
        self.network, self.name = network, name

    def __enter__(self) -> None:
        self.network._open_phase(self.name)

    def __exit__(self, *exc: object) -> None:
        self.network._close_phase(self.name)


class Network(ABC):
    """Delivers envelopes between registered parties and keeps the traffic ledger.

    What a transport offers beyond ``send`` / ``receive`` is declared here, so a party asks the network rather
    than its class: :attr:`connection_per_sender`, :attr:`rejoin_s` and :meth:`check_links`.
    """

    connection_per_sender: ClassVar[bool] = False
    """Whether a party may send as one of the senders it hosts (a P2B device) on a connection of its own, one per
    sender (:mod:`~privbandits.comm.oneshot`): True for the TLS transport; False in memory, where every sender of a
    party shares the party's queue."""
    rejoin_s: float = 0.0
    """Seconds this network waits for a lost peer to come back before it counts as lost: 0 (lost at once) but on
    the rejoining TLS network (:class:`~privbandits.comm.tls.rejoin.RejoinNetwork`)."""
    rejoins: Sequence[str] = ()
    """The peers that came back after their link was lost, each with where this party was: only a network with
    ``rejoin_s > 0`` ever has any."""
    on_stray: Callable[[Any], bool] | None = None
    """Called with a connection of a sender a party hosts (a P2B device) that arrives while the party waits for
    something else; True if it took it. Only the rejoining TLS network calls it (it is set there by the P2B
    shuffler); elsewhere it is never called."""

    def __init__(self) -> None:
        self.traffic = Traffic()
        self.parties: set[str] = set()
        self._endpoints: dict[Endpoint, str] = {}
        self._phase: str | None = None
        self._clock: dict[str, int] = {}
        self._link_depth: dict[tuple[str, str], int] = {}
        self._max_depth = 0
        self.round_label: str | None = None
        """The protocol round a party is in, as errors name it (e.g. "round 57"; set by a deployment's party)."""

    def register(self, name: str) -> Endpoint:
        """Put party ``name`` on the network; its endpoint, the only way to send as it (keep it private)."""
        if name in self.parties:
            raise ValueError(f"a party named {name!r} is already on this network")
        self.parties.add(name)
        endpoint = object.__new__(Endpoint)
        endpoint.name, endpoint.network = name, self
        endpoint.send = partial(self._send, name)  # bound once: no per-message check on a party's own path
        self._endpoints[endpoint] = name
        return endpoint

    def _forged(self, sender: object, message: Message) -> ForgedSender:
        kind = getattr(message, "kind", type(message).__name__)
        if isinstance(sender, str):
            return ForgedSender(
                f"a {kind!r} message was sent as {sender!r} by name: a party sends only through its own Party "
                "(the endpoint Network.register returned to it); the network, not the caller, names the sender"
            )
        if isinstance(sender, Endpoint):
            return ForgedSender(
                f"a {kind!r} message was sent through an endpoint of {sender.name!r} that this network did not "
                "issue (another network's party?); a party sends only on the network it registered on"
            )
        return ForgedSender(
            f"a {kind!r} message was sent with sender {sender!r}: send needs the sender's endpoint "
            "(what Network.register returned to its Party)"
        )

    def phase(self, name: str) -> _PhaseBlock:
        """``with network.phase(name):`` counts the messages sent inside as one segment of ``name``."""
        return _PhaseBlock(self, name)

    def batch(self) -> AbstractContextManager[None]:
        """``with network.batch():`` lets a transport hold outgoing messages and write them together when the
        party is about to wait (see :meth:`TlsNetwork.batch`); messages, order and ledger are unchanged.
        In memory there is nothing to hold."""
        return nullcontext()

    def patience(self, seconds: float) -> AbstractContextManager[None]:
        """``with network.patience(seconds):`` receives inside wait up to ``seconds`` before the peer counts as lost
        (a transport with deadlines: a party idle until whoever keeps the clock goes on). In memory nothing waits."""
        return nullcontext()

    def flush(self) -> None:
        """Write what :meth:`batch` holds now, rather than when the party next waits (e.g. requests sent ahead,
        so that their receivers start on them while this party works). In memory nothing is held."""
        return None

    def check_links(self) -> None:
        """Look after this party's links now (it is about to do something that is no wait on them): a network whose
        lost peers may come back links again with one whose link ended. Here (and in memory) nothing to do."""
        return None

    def _open_phase(self, name: str) -> None:
        if self._phase is not None:
            raise ProtocolError(f"phase {name!r} opened inside phase {self._phase!r}")
        self._phase, self._max_depth = name, 0
        self._clock.clear()
        self._link_depth.clear()

    def _close_phase(self, name: str) -> None:
        self.traffic.segments[name] += 1
        self.traffic.rounds[name] += self._max_depth
        self._phase = None

    def send(self, sender: Endpoint, receiver: str, message: Message) -> None:
        """Send ``message`` from the party whose endpoint is ``sender`` (see :class:`Endpoint`) to ``receiver``."""
        try:
            name = self._endpoints.get(sender)  # the network names the sender, from its own records
        except TypeError:  # unhashable: certainly not an endpoint
            name = None
        if name is None:
            raise self._forged(sender, message)
        self._send(name, receiver, message)

    def _send(self, name: str, receiver: str, message: Message) -> None:
        """Deliver ``message`` from party ``name``, which an endpoint of this network vouches for."""
        phase = self._phase
        if phase is None:
            raise ProtocolError(f"{name!r} sent a {message.kind!r} message outside any phase")
        if receiver not in self.parties:
            raise ProtocolError(f"{name!r} sent a {message.kind!r} message to unknown party {receiver!r}")
        depth = self._clock.get(name, 0) + 1
        link = self.traffic.links[(phase, name, receiver)]
        link.messages += 1
        link.bytes += message.payload_bytes()
        # A sender's depths never decrease within a segment, so a new depth on a link is a new round on it.
        pair = (name, receiver)
        if self._link_depth.get(pair) != depth:
            self._link_depth[pair] = depth
            link.rounds += 1
        if depth > self._max_depth:
            self._max_depth = depth
        self._deliver(Envelope(name, receiver, phase, message), depth)

    @overload
    def receive(self, receiver: str, kind: type[M], sender: str | None = None) -> M: ...
    @overload
    def receive(self, receiver: str, kind: str, sender: str | None = None) -> Message: ...
    def receive(self, receiver: str, kind: str | type[Message], sender: str | None = None) -> Message:
        """The oldest waiting message for ``receiver`` of ``kind`` (a kind name, or a message class: then typed as
        that class), from ``sender`` if given."""
        envelope, depth = self._take(receiver, kind if isinstance(kind, str) else kind.kind, sender)
        # only messages of the open phase advance the receiver's clock: material sent ahead in
        # another phase (e.g. a dealer's offline phase) costs this segment no round
        if depth > self._clock.get(receiver, 0) and envelope.phase == self._phase:
            self._clock[receiver] = depth
        return envelope.message

    def receive_one_of(self, receiver: str, kinds: tuple[str, ...], sender: str | None = None) -> Message:
        """The oldest waiting message for ``receiver`` of any of ``kinds`` (e.g. reports, or the end of a batch)."""
        envelope, depth = self._take_one_of(receiver, tuple(kinds), sender)
        if depth > self._clock.get(receiver, 0) and envelope.phase == self._phase:
            self._clock[receiver] = depth
        return envelope.message

    def peek(self, receiver: str, kinds: tuple[str, ...], sender: str | None = None) -> tuple[str, str]:
        """``(sender, kind)`` of the oldest waiting message for ``receiver`` of any of ``kinds`` (from ``sender``),
        left waiting: a party that serves several peers learns whose message is next, then receives it with the
        protocol's own handler. A transport waits for one within its deadline; in memory one must be waiting."""
        envelope = self._find(receiver, tuple(kinds), sender)
        return envelope.sender, envelope.message.kind

    def _take_one_of(self, receiver: str, kinds: tuple[str, ...], sender: str | None) -> tuple[Envelope, int]:
        """The oldest waiting envelope for ``receiver`` whose kind is one of ``kinds`` (from ``sender``)."""
        raise NotImplementedError(f"{type(self).__name__} cannot yet wait for one of several message kinds")

    def _find(self, receiver: str, kinds: tuple[str, ...], sender: str | None) -> Envelope:
        """The envelope :meth:`peek` names, not taken."""
        raise NotImplementedError(f"{type(self).__name__} cannot peek at waiting messages")

    @abstractmethod
    def _deliver(self, envelope: Envelope, depth: int) -> None:
        """Hand the envelope to the transport."""

    @abstractmethod
    def _take(self, receiver: str, kind: str, sender: str | None) -> tuple[Envelope, int]:
        """The oldest waiting envelope for ``receiver`` of ``kind`` (from ``sender``)."""


class InMemoryNetwork(Network):
    """All parties in one process; messages wait in per-receiver queues.

    Parameters
    ----------
    serialize : bool
        Round-trip every message through :mod:`~privbandits.comm.codec` bytes,
        as a real transport would (slower; proves nothing else is shared).
    record : bool
        Keep every envelope in :attr:`transcript` (for tests and audits).
    """

    def __init__(self, *, serialize: bool = False, record: bool = False) -> None:
        super().__init__()
        self.serialize, self.record = serialize, record
        self.transcript: list[Envelope] = []
        self._queues: dict[str, deque[tuple[Envelope, int]]] = defaultdict(deque)

    def _deliver(self, envelope: Envelope, depth: int) -> None:
        if self.serialize:
            envelope = decode(encode(envelope))
        if self.record:
            self.transcript.append(envelope)
        self._queues[envelope.receiver].append((envelope, depth))

    def _take(self, receiver: str, kind: str, sender: str | None) -> tuple[Envelope, int]:
        queue = self._queues[receiver]
        if queue:  # fast path: protocols mostly read messages in the order they were sent
            envelope = queue[0][0]
            if envelope.message.kind == kind and (sender is None or envelope.sender == sender):
                return queue.popleft()
        for index, (envelope, depth) in enumerate(queue):
            if envelope.message.kind == kind and (sender is None or envelope.sender == sender):
                del queue[index]
                return envelope, depth
        source = f" from {sender!r}" if sender else ""
        raise ProtocolError(f"{receiver!r} expected a {kind!r} message{source}, but none is waiting")

    def _take_one_of(self, receiver: str, kinds: tuple[str, ...], sender: str | None) -> tuple[Envelope, int]:
        queue = self._queues[receiver]
        index = self._index(receiver, kinds, sender)
        item = queue[index]
        del queue[index]
        return item

    def _find(self, receiver: str, kinds: tuple[str, ...], sender: str | None) -> Envelope:
        return self._queues[receiver][self._index(receiver, kinds, sender)][0]

    def _index(self, receiver: str, kinds: tuple[str, ...], sender: str | None) -> int:
        for index, (envelope, _) in enumerate(self._queues[receiver]):
            if envelope.message.kind in kinds and (sender is None or envelope.sender == sender):
                return index
        source = f" from {sender!r}" if sender else ""
        wanted = " or ".join(repr(kind) for kind in kinds)
        raise ProtocolError(f"{receiver!r} expected a {wanted} message{source}, but none is waiting")

    def pending(self, receiver: str | None = None) -> list[tuple[str, str, str]]:
        """``(sender, receiver, kind)`` of every message still waiting (for ``receiver``), oldest first.

        Empty at the end of a run whose parties read everything sent to them: a message
        nobody received is a protocol step that did not happen.
        """
        names = sorted(self._queues) if receiver is None else [receiver]
        return [
            (envelope.sender, envelope.receiver, envelope.message.kind)
            for name in names
            for envelope, _ in self._queues.get(name, ())
        ]


class Party:
    """A named participant; its only view of the others is the messages it receives.

    It holds the :class:`Endpoint` its registration returned, so only this object (and
    whoever it hands the endpoint to) can send as ``name``.
    """

    def __init__(self, name: str, network: Network) -> None:
        self.name, self.network = name, network
        self.endpoint = network.register(name)
        self._sender = self.endpoint.name  # what the network issued; changing ``name`` later changes nothing

    def send(self, receiver: str, message: Message) -> None:
        self.network._send(self._sender, receiver, message)  # its own endpoint's name: no per-message check

    @overload
    def receive(self, kind: type[M], sender: str | None = None) -> M: ...
    @overload
    def receive(self, kind: str, sender: str | None = None) -> Message: ...
    def receive(self, kind: str | type[Message], sender: str | None = None) -> Message:
        """The oldest waiting message of ``kind`` (a name, or a message class: typed as it), from ``sender`` if
        given (see :meth:`Network.receive`)."""
        return self.network.receive(self.name, kind, sender)

    def receive_one_of(self, kinds: tuple[str, ...], sender: str | None = None) -> Message:
        """The oldest waiting message of any of ``kinds`` (see :meth:`Network.receive_one_of`)."""
        return self.network.receive_one_of(self.name, kinds, sender)

    def peek(self, kinds: tuple[str, ...], sender: str | None = None) -> tuple[str, str]:
        """``(sender, kind)`` of the next message of any of ``kinds``, left waiting (see :meth:`Network.peek`)."""
        return self.network.peek(self.name, kinds, sender)


def named_kinds(kinds: str | tuple[str, ...]) -> str:
    """``'a'`` for one kind, ``'a' or 'b'`` for several (how a wait names what it waits for)."""
    return repr(kinds) if isinstance(kinds, str) else " or ".join(repr(kind) for kind in kinds)
