"""Every value that leaves a party goes through :mod:`privbandits.comm` (spec §8 point 9).

One message per sending party and receiver carries a whole array, so the traffic
ledger counts rounds (Lamport depth inside a ``network.phase`` block) and payload
bytes exactly, with a few Python calls per opening rather than per element.

Every message leaves through the :class:`~privbandits.comm.Party` of its sender: the
stacked :class:`Channel` holds the computing parties' objects (it simulates all of them),
a party outside the computation (the environment) inputs through its own ``Party``, and
a :class:`PartyChannel` holds only its own.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from privbandits.comm import Message, Network, Party, message
from privbandits.comm.messages import M
from privbandits.comm.network import Endpoint
from privbandits.mpc.ring import WORD
from privbandits.mpc.sharing import share

if TYPE_CHECKING:
    from privbandits.mpc.overlap import Rider


@message("mpc.words")
class Words(Message):
    """A party's shares of a flat array of ring words (an opening or an input)."""

    words: np.ndarray


@message("mpc.bits")
class PackedBits(Message):
    """A party's XOR shares of single bits, packed eight to a byte (B2A openings)."""

    bits: np.ndarray


Owner = str | Party
"""Who inputs a value: a computing party's name, or the :class:`Party` of a party outside the computation."""


def _unknown_owner(owner: object, network: Network) -> ValueError:
    return ValueError(f"unknown input owner {owner!r}; parties on the network: {sorted(network.parties)}")


class Channel:
    """The computing parties of one engine on a :class:`~privbandits.comm.Network`."""

    def __init__(self, network: Network, names: Sequence[str]) -> None:
        if len(names) < 2:
            raise ValueError(f"MPC needs at least 2 computing parties, got {len(names)}")
        if len(set(names)) != len(names):
            raise ValueError(f"party names must be distinct, got {list(names)}")
        self.network = network
        self.parties = [Party(name, network) for name in names]
        self.names = tuple(names)
        self._endpoints: dict[str, Endpoint] = {party.name: party.endpoint for party in self.parties}
        # (sender index, sender's send, receiver) of every link; (sender, receiver), links into party 0 first
        links = [(i, s, r) for i, s in enumerate(self.names) for r in self.names if r != s]
        self._links = [(i, self._endpoints[s].send, r) for i, s, r in links]
        self._inbound = sorted(((s, r) for _, s, r in links), key=lambda link: link[1] != self.names[0])
        self._first = len(self.names) - 1
        self.rider: Rider | None = None
        """Steps riding on this channel's openings (set by ``Engine.alongside``)."""

    def _owner(self, owner: Owner) -> tuple[str, Endpoint]:
        """Name and endpoint of an input's owner: a computing party this channel holds, or a party's own object."""
        if isinstance(owner, Party):
            if owner.network is not self.network:
                raise ValueError(f"input owner {owner.name!r} is a party of another network")
            return owner.name, owner.endpoint
        endpoint = self._endpoints.get(owner)
        if endpoint is not None:
            return owner, endpoint
        if owner not in self.network.parties:
            raise _unknown_owner(owner, self.network)
        raise ValueError(
            f"input owner {owner!r} is not a computing party: a party outside the computation inputs through "
            f"its own Party (pass that object as the owner, not its name)"
        )

    def _all_to_all(self, payloads: Sequence[M], kind: type[M]) -> list[M]:
        """Each party sends its payload to every other; returns what party 0 received.

        Every party receives (so the queues drain and the Lamport clocks advance);
        all of them get the same messages, so one list stands for everyone's view.
        """
        receive = self.network.receive
        for index, send, receiver in self._links:
            send(receiver, payloads[index])
        received = [receive(receiver, kind, sender) for sender, receiver in self._inbound]
        return received[: self._first]

    def _broadcast(self, shares: np.ndarray) -> list[np.ndarray]:
        """Every party sends its share (party axis 0) to all others in 1 round; the others' shares as received."""
        payloads = [Words(np.ascontiguousarray(row)) for row in shares]
        shape = shares.shape[1:]  # ascontiguousarray makes 0-d rows 1-d
        return [msg.words.reshape(shape) for msg in self._all_to_all(payloads, Words)]

    def gather(self, shares: np.ndarray) -> np.ndarray:
        """All parties' shares, opened to every party in 1 round (Alg. 3 needs them one by one)."""
        return np.stack([shares[0], *self._broadcast(shares)])

    def open(self, shares: np.ndarray, *, xor: bool = False) -> np.ndarray:
        """Public value of ``shares`` opened to all parties in 1 round (Σ in Z_2^64, or ⊕ when ``xor``).

        Steps riding alongside (:mod:`~privbandits.mpc.overlap`) add their next request's words.
        """
        rider = self.rider
        if rider is not None and not rider.done:
            return rider.ride(shares, xor, self._broadcast)
        value = shares[0].copy()
        for words in self._broadcast(shares):
            if xor:
                value ^= words
            else:
                value += words
        return value

    def open_many(self, arrays: Sequence[np.ndarray], *, xor: bool = False) -> list[np.ndarray]:
        """Open several share arrays in one round: one message per link carries them all."""
        n = len(self.parties)
        value = self.open(np.concatenate([a.reshape(n, -1) for a in arrays], axis=1), xor=xor)
        parts, start = [], 0
        for a in arrays:
            size = a[0].size
            parts.append(value[start : start + size].reshape(a.shape[1:]))
            start += size
        return parts

    def open_bits(self, shares: np.ndarray) -> np.ndarray:
        """Public bits of XOR-shared bits (bit 0 of each word), packed on the wire; 1 round."""
        shape = shares.shape[1:]
        packed = [np.packbits((row & WORD(1)).astype(np.uint8).ravel()) for row in shares]
        received = self._all_to_all([PackedBits(bits) for bits in packed], PackedBits)
        value = packed[0]
        for msg in received:
            value = value ^ msg.bits
        count = int(np.prod(shape, dtype=np.int64))
        return np.unpackbits(value, count=count).astype(WORD).reshape(shape)

    def reveal_to(self, shares: np.ndarray, receiver: str, shape: tuple[int, ...] = ()) -> np.ndarray:
        """Open ``shares`` to ``receiver`` only (a computing party or another party on the network);
        ``shape`` is for :class:`PartyChannel`'s signature (the shares give it here)."""
        if receiver not in self.network.parties:
            raise ValueError(f"unknown receiver {receiver!r}; parties on the network: {sorted(self.network.parties)}")
        value = np.zeros(shares.shape[1:], dtype=WORD)
        for sender, row in zip(self.parties, shares, strict=True):
            if sender.name == receiver:
                value += row
            else:
                sender.send(receiver, Words(np.ascontiguousarray(row)))
        for name in self.names:
            if name != receiver:
                value += self.network.receive(receiver, Words, name).words.reshape(value.shape)
        return value

    def distribute(
        self, secrets: Sequence[tuple[np.ndarray, Owner]], rng: Callable[[str], np.random.Generator]
    ) -> list[np.ndarray]:
        """Each ``(words, owner)``: the owner secret-shares ``words`` to the computing parties.

        Owners may be computing parties, by name (they keep one share), or any other party
        on the network, as its own :class:`~privbandits.comm.Party` (it sends all of them);
        ``rng(name)`` is the generator the owner draws the shares from. All inputs are sent
        before any is received, so independent inputs share one round. Returns the share
        arrays (party axis 0) as received.
        """
        n = len(self.parties)
        dealt = []
        for words, who in secrets:
            owner, endpoint = self._owner(who)
            keeper = self.names.index(owner) if owner in self.names else 0
            shares = share(words, n, rng(owner), owner=keeper)
            for name, row in zip(self.names, shares, strict=True):
                if name != owner:
                    endpoint.send(name, Words(np.ascontiguousarray(row)))
            dealt.append((shares, owner))
        return [
            np.stack(
                [
                    shares[index]
                    if name == owner
                    else self.network.receive(name, Words, owner).words.reshape(shares.shape[1:])
                    for index, name in enumerate(self.names)
                ]
            )
            for shares, owner in dealt
        ]


class PartyChannel:
    """One party's end of the channel, in its own process: it holds (and sends) only its own shares.

    ``local`` is a computing party (its arrays have one row, its share) or another party on
    the network (the arm puller, the reward holder), which only inputs values and receives
    reveals. The methods are :class:`Channel`'s and send the same messages on the same links,
    so the traffic ledger of all parties' processes together is the simulator's.
    """

    def __init__(self, network: Network, names: Sequence[str], local: str) -> None:
        if len(names) < 2:
            raise ValueError(f"MPC needs at least 2 computing parties, got {len(names)}")
        if len(set(names)) != len(names):
            raise ValueError(f"party names must be distinct, got {list(names)}")
        self.network, self.names, self.local = network, tuple(names), local
        self.party = Party(local, network)
        """This party's own object (its process sends only through it; e.g. a resume offer)."""
        self._endpoint = self.party.endpoint
        self.index = self.names.index(local) if local in self.names else None
        self._others = [name for name in self.names if name != local]
        self.rider: Rider | None = None
        """Steps riding on this party's openings (set by ``Engine.alongside``)."""

    def _exchange(self, payload: M, kind: type[M]) -> list[M]:
        """Send ``payload`` to every other computing party; their messages, in party order."""
        send, receive, local = self._endpoint.send, self.network.receive, self.local
        for receiver in self._others:
            send(receiver, payload)
        return [receive(local, kind, sender) for sender in self._others]

    def _broadcast(self, shares: np.ndarray) -> list[np.ndarray]:
        shape = shares.shape[1:]
        return [msg.words.reshape(shape) for msg in self._exchange(Words(np.ascontiguousarray(shares[0])), Words)]

    def gather(self, shares: np.ndarray) -> np.ndarray:
        """All parties' shares in party order, opened to every party in 1 round."""
        rows = self._broadcast(shares)
        assert self.index is not None, "only a computing party gathers"
        rows.insert(self.index, shares[0])
        return np.stack(rows)

    def open(self, shares: np.ndarray, *, xor: bool = False) -> np.ndarray:
        rider = self.rider
        if rider is not None and not rider.done:
            return rider.ride(shares, xor, self._broadcast)
        value = shares[0].copy()
        for words in self._broadcast(shares):
            if xor:
                value ^= words
            else:
                value += words
        return value

    def open_many(self, arrays: Sequence[np.ndarray], *, xor: bool = False) -> list[np.ndarray]:
        value = self.open(np.concatenate([a.reshape(1, -1) for a in arrays], axis=1), xor=xor)
        parts, start = [], 0
        for a in arrays:
            size = a[0].size
            parts.append(value[start : start + size].reshape(a.shape[1:]))
            start += size
        return parts

    def open_bits(self, shares: np.ndarray) -> np.ndarray:
        shape = shares.shape[1:]
        value = np.packbits((shares[0] & WORD(1)).astype(np.uint8).ravel())
        for msg in self._exchange(PackedBits(value), PackedBits):
            value = value ^ msg.bits
        count = int(np.prod(shape, dtype=np.int64))
        return np.unpackbits(value, count=count).astype(WORD).reshape(shape)

    def reveal_to(self, shares: np.ndarray | None, receiver: str, shape: tuple[int, ...] = ()) -> np.ndarray | None:
        """The value at ``receiver`` (``shares`` is None there unless it computes; ``shape`` is the
        value's); a computing party that is not the receiver sends its share and gets None."""
        if receiver not in self.network.parties:
            raise ValueError(f"unknown receiver {receiver!r}; parties on the network: {sorted(self.network.parties)}")
        if self.local != receiver:
            if self.index is not None:
                assert shares is not None, "a computing party reveals its shares"
                self._endpoint.send(receiver, Words(np.ascontiguousarray(shares[0])))
            return None
        value = shares[0].copy() if shares is not None else np.zeros(shape, dtype=WORD)
        for sender in self.names:
            if sender != receiver:
                value += self.network.receive(receiver, Words, sender).words.reshape(value.shape)
        return value

    def distribute(
        self, secrets: Sequence[tuple[np.ndarray, Owner]], rng: Callable[[str], np.random.Generator]
    ) -> list[np.ndarray | None]:
        """:meth:`Channel.distribute` from this party's side: it shares the inputs it owns (the words
        of the others' are placeholders, only their shape is read) and receives its share of the
        others'. Returns its share arrays (one row), or None for every input if it does not compute."""
        n = len(self.names)
        held: list[np.ndarray | None] = []
        owners: list[str] = []
        for words, who in secrets:
            owner = who.name if isinstance(who, Party) else who
            if owner not in self.network.parties:
                raise _unknown_owner(owner, self.network)
            owners.append(owner)
            if owner != self.local:
                held.append(None)
                continue
            keeper = self.names.index(owner) if owner in self.names else 0
            shares = share(words, n, rng(owner), owner=keeper)
            for name, row in zip(self.names, shares, strict=True):
                if name != owner:
                    self._endpoint.send(name, Words(np.ascontiguousarray(row)))
            held.append(shares[self.index : self.index + 1] if self.index is not None else None)
        if self.index is None:
            return [None] * len(secrets)
        receive = self.network.receive
        return [
            row if row is not None else receive(self.local, Words, owner).words.reshape(1, *np.shape(words))
            for row, owner, (words, _) in zip(held, owners, secrets, strict=True)
        ]
