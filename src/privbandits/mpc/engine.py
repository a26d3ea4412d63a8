"""The MPC engine: parties, dealer, message channel and every protocol as a method.

Example
-------
>>> engine = Engine(2, seed=0)
>>> with engine.phase("demo"):
...     x, y = engine.input_many([([1.5, -2.0], "p0"), ([2.0, 0.25], "p1")])
...     product = engine.open(engine.mul(x, y))
>>> product.round(4).tolist()
[3.0, -0.5]
>>> engine.traffic.rounds["demo"]
3
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from typing import cast

import numpy as np

from privbandits.comm import InMemoryNetwork, Network, Party, Traffic
from privbandits.mpc import approximations, arithmetic, binary, comparison, truncation
from privbandits.mpc.channel import Channel, Owner, PartyChannel
from privbandits.mpc.dealer import AnyDealer, Dealer
from privbandits.mpc.fixed_point import DEFAULT_PRECISION, decode, encode
from privbandits.mpc.overlap import Alongside, Steps
from privbandits.mpc.sharing import ArithmeticShares, BinaryShares
from privbandits.mpc.truncation import TRUNCATION_MODES

_MAX_PRECISION = 30


class Engine:
    """Secure computation among ``parties`` over Z_2^64 with a trusted dealer (spec §3).

    Parameters
    ----------
    parties : int or sequence of str
        Number of computing parties (≥ 2, named ``p0, p1, …``) or their names.
    precision : int
        Fixed-point fractional bits L (default 20, spec §6.3), 1 … 30.
    truncation : {"auto", "local", "wraps", "exact"}
        Division after products (:mod:`~privbandits.mpc.truncation`). ``"auto"``
        is the paper's choice: local for 2 parties, Alg. 3 with η_xr skipped for more.
    seed : int, SeedSequence or None
        Seeds the parties' and the dealer's generators; ``None`` draws OS entropy.
    network : Network or None
        Where the parties talk; a fresh :class:`~privbandits.comm.InMemoryNetwork`
        by default. Other parties (e.g. the arm puller) may live on it too.
    local : str or None
        ``None``: the stacked simulator, one process holds every party's shares.
        A name: this process runs that party alone (e.g. on a
        :class:`~privbandits.comm.TlsNetwork`): a computing party holds one row, its
        own shares, and gets its dealer material from ``dealer`` (a
        :class:`~privbandits.mpc.dealer.RemoteDealer`); any other party (the arm puller,
        the reward holder) only inputs values and receives reveals.
    dealer : Dealer, RemoteDealer or None
        The source of correlated randomness (default: a :class:`Dealer` seeded from ``seed``).
    input_seeds : mapping of owner name to seed, or None
        Each input owner's own generator for secret-sharing its inputs (what a party in its
        own process uses). ``None``: one generator seeded from ``seed`` for every owner (the
        simulator's default).

    Notes
    -----
    Protocol methods (all need an open :meth:`phase`) take and return
    :class:`~privbandits.mpc.sharing.ArithmeticShares` or ``BinaryShares``.
    """

    def __init__(
        self,
        parties: int | Sequence[str] = 2,
        *,
        precision: int = DEFAULT_PRECISION,
        truncation: str = "auto",
        seed: int | np.random.SeedSequence | None = None,
        network: Network | None = None,
        local: str | None = None,
        dealer: AnyDealer | None = None,
        input_seeds: Mapping[str, int | Sequence[int] | np.random.SeedSequence] | None = None,
    ) -> None:
        if isinstance(parties, int):
            if parties < 2:
                raise ValueError(f"MPC needs at least 2 computing parties, got {parties}")
            parties = [f"p{index}" for index in range(parties)]
        if not 1 <= precision <= _MAX_PRECISION:
            raise ValueError(f"precision must be in [1, {_MAX_PRECISION}] bits, got {precision}")
        modes = ("auto", *TRUNCATION_MODES)
        if truncation not in modes:
            raise ValueError(f"truncation must be one of {modes}, got {truncation!r}")
        if truncation == "auto":
            truncation = "local" if len(parties) == 2 else "wraps"
        if truncation == "local" and len(parties) != 2:
            raise ValueError(f"local truncation is for 2 parties, got {len(parties)}: use 'wraps' or 'exact'")
        self.network = network if network is not None else InMemoryNetwork()
        self.local = local
        self.channel: Channel | PartyChannel
        if local is None:
            self.channel = Channel(self.network, list(parties))
            self.rows: tuple[int, ...] = tuple(range(len(parties)))
        else:
            self.channel = PartyChannel(self.network, list(parties), local)
            self.rows = () if self.channel.index is None else (self.channel.index,)
        self.leads = local is None or local == parties[0]
        """Whether this holder's first row is party 0's share (it applies public constants)."""
        self.precision, self.truncation = precision, truncation
        sequence = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
        party_seed, dealer_seed = sequence.spawn(2)
        self.rng = np.random.default_rng(party_seed)
        self._input_rngs = (
            None
            if input_seeds is None
            else {owner: np.random.default_rng(owner_seed) for owner, owner_seed in input_seeds.items()}
        )
        self.dealer: AnyDealer = (
            dealer if dealer is not None else Dealer(len(parties), np.random.default_rng(dealer_seed))
        )

    def input_rng(self, owner: str) -> np.random.Generator:
        """The generator ``owner`` draws its input shares from."""
        if self._input_rngs is None:
            return self.rng
        try:
            return self._input_rngs[owner]
        except KeyError:
            raise ValueError(f"no input seed for {owner!r} (input_seeds has {sorted(self._input_rngs)})") from None

    @property
    def party(self) -> Party:
        """This holder's own :class:`~privbandits.comm.Party` (in its own process: ``local``); the simulator's
        engine plays every party and has none."""
        if not isinstance(self.channel, PartyChannel):
            raise ValueError("the simulator's engine plays every party: it has no Party of its own")
        return self.channel.party

    @property
    def n_parties(self) -> int:
        return len(self.channel.names)

    @property
    def names(self) -> tuple[str, ...]:
        """Names of the computing parties."""
        return self.channel.names

    @property
    def traffic(self) -> Traffic:
        """The network's ledger: messages, bytes and rounds per phase and link."""
        return self.network.traffic

    def phase(self, name: str) -> AbstractContextManager[None]:
        """``with engine.phase(name):`` counts the messages inside as one segment of ``name``."""
        return self.network.phase(name)

    # -- inputs and outputs --------------------------------------------------------

    def input(
        self, values: np.typing.ArrayLike, owner: Owner | None = None, *, scale: int | None = None
    ) -> ArithmeticShares:
        """``owner`` (default the first party) secret-shares its plaintext ``values``; 1 round.

        ``owner`` is a computing party's name, or the :class:`~privbandits.comm.Party` of a party
        outside the computation (it must send as itself).

        ``scale`` is the fixed-point precision (default L); 0 for integers and bits.
        """
        return self.input_many([(values, owner)], scale=scale)[0]

    def input_many(
        self, inputs: Sequence[tuple[np.typing.ArrayLike, Owner | None]], *, scale: int | None = None
    ) -> list[ArithmeticShares]:
        """Several ``(values, owner)`` inputs shared in parallel (one round in all), e.g. each
        party's features x_{t,p} (Alg. 1 step 1).

        In a party's own process (``local``), the values of inputs it does not own are
        placeholders of the right shape, and a party that does not compute gets None back.
        """
        scale = self.precision if scale is None else scale
        if not 0 <= scale <= self.precision:
            raise ValueError(f"input scale must be in [0, {self.precision}] fractional bits, got {scale}")
        secrets = [(encode(values, scale), owner or self.names[0]) for values, owner in inputs]
        shared = [
            None if shares is None else ArithmeticShares(shares, scale, self.leads)
            for shares in self.channel.distribute(secrets, self.input_rng)
        ]
        # None only at a holder that does not compute (the puller in its own process), which discards the result
        return cast(list[ArithmeticShares], shared)

    def open(self, x: ArithmeticShares) -> np.ndarray:
        """The plaintext (float64) of ``[x]``, revealed to every computing party; 1 round."""
        return decode(self.channel.open(x.shares), x.scale)

    def open_to(
        self, x: ArithmeticShares | None, receiver: str, *, scale: int = 0, shape: tuple[int, ...] = ()
    ) -> np.ndarray | None:
        """The plaintext of ``[x]`` revealed to ``receiver`` only (e.g. the arm puller p′); 1 round.

        In a party's own process: a computing party that is not ``receiver`` gets None; a
        receiver that holds no shares passes ``x=None`` with the value's ``scale`` and ``shape``.
        """
        if x is not None:
            words = self.channel.reveal_to(x.shares, receiver, shape)
        else:
            assert isinstance(self.channel, PartyChannel), "only a party in its own process receives without shares"
            words = self.channel.reveal_to(None, receiver, shape)
        return None if words is None else decode(words, scale if x is None else x.scale)

    def open_binary(self, x: BinaryShares) -> np.ndarray:
        """The words (uint64) of ``⟨x⟩``, revealed to every computing party; 1 round."""
        return self.channel.open(x.shares, xor=True)

    # -- private randomness from the dealer (no communication) ---------------------

    def bernoulli(self, p: float, shape: tuple[int, ...] = ()) -> ArithmeticShares:
        """Private Bernoulli(p) bits, integers (the exploration coin [y_t] of Alg. 1)."""
        return self.dealer.bernoulli(p, shape)

    def uniform(self, shape: tuple[int, ...] = ()) -> ArithmeticShares:
        """Private Uniform[0, 1) values at precision L (the [v_a] of Alg. 1)."""
        return self.dealer.uniform(shape, self.precision)

    def permutation(self, size: int, batch: tuple[int, ...] = ()) -> ArithmeticShares:
        """Secret random permutations of 1..size along the last axis, integers."""
        return self.dealer.permutation(size, batch)

    def alongside(self, steps: Steps) -> Alongside:
        """``with engine.alongside(steps) as rider:`` runs ``steps`` (:mod:`~privbandits.mpc.overlap`) on the
        openings the block makes, one request per opening; the requests left run on their own rounds at the
        block's end (or at ``rider.finish()``). ``rider.result`` is then the steps' result. Local truncation only.
        """
        return Alongside(self, steps)

    # -- protocols -----------------------------------------------------------------

    mul = arithmetic.mul
    mul_many = arithmetic.mul_many
    square = arithmetic.square
    matmul = arithmetic.matmul
    matmul_inputs = arithmetic.matmul_inputs
    mul_public = arithmetic.mul_public
    truncate = truncation.truncate
    and_ = binary.and_
    add_binary = binary.add
    a2b = binary.a2b
    b2a = binary.b2a
    ltz = comparison.ltz
    ge = comparison.ge
    lt = comparison.lt
    sign = comparison.sign
    allmax = comparison.allmax
    argmax = comparison.argmax
    exp = approximations.exp
    reciprocal = approximations.reciprocal
