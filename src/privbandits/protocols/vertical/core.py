"""Vertical federated LinUCB / LinTS with orthogonal masks (O3M): VFUCB and VFTS.

Spec ``vertical-o3m.md`` (Cao, Liang et al., KDD '23). Parties:

* :class:`MaskGenerator` (the PMG): draws a Haar orthogonal ``Q`` once and
  sends column block ``Q^j`` (d×d_j) to party j (setup, spec §3.1).
* :class:`PassiveParty` (PP j ≥ 2): on each round request, masks its K
  feature blocks, ``Q^j x^j_{t,a}``, and sends them to the active party
  (Alg. 1 line 5). A user it does not know is sent as zeros (§8.4.11).
* :class:`ActiveParty` (AP, participant 1): asks the PPs for the round (a
  control message the paper leaves implicit, §8.4.10), adds its own masked
  block, and runs plain LinUCB or LinTS on ``x̃ = Σ_j Q^j x^j = Q x``; the
  reward never leaves it. Because ``Q^T Q = I`` its scores equal the
  centralized ones (Thm 4.1, Eq. 3–4).

:class:`VerticalFederatedBandit` wires them on one network and behaves like a
policy (``select`` / ``update``) for the experiment runner. With
``secure_aggregation=True`` the PPs add pairwise masks that cancel in the sum
(Bonawitz et al. 2017, semi-honest, no dropouts), so the AP sees only
``Σ_{j≥2} Q^j x^j`` instead of each party's masked vectors — an extension
beyond the paper (spec §8.4.9); values travel as 64-bit fixed point.
"""

from __future__ import annotations

import hashlib
import secrets
import time
import warnings
from collections import deque
from collections.abc import Callable, Sequence

import numpy as np

from privbandits.comm import ROUND, SETUP, InMemoryNetwork, Message, Network, Party, ProtocolError, message
from privbandits.linear.policies import Layout, LinearBandit
from privbandits.options import Option, declare
from privbandits.privacy.masks import MaskSource, block_slices, check_mask, check_partition, draw_mask
from privbandits.validation import (
    Boolean,
    CallOrderError,
    Choice,
    Instance,
    Integer,
    IntegerSequence,
    InvalidInputError,
    NoneOr,
    check,
    check_arm,
    check_finite_array,
    check_integer_sequence,
    check_reward,
    describe,
)

FRACTION_BITS = 40
"""Fixed-point fraction bits of secure aggregation: 2^-40 ≈ 9e-13 resolution, |sum| < 2^23."""


class SingleFeaturePartyWarning(UserWarning):
    """A passive party holds one feature: the active party learns it up to sign from ``Q^j x^j`` (‖Q^j x^j‖ = |x^j|)."""


@message("o3m.mask_block")
class MaskBlock(Message):
    """PMG → party j: the column block ``Q^j`` (d×d_j), once, over a secure channel."""

    block: np.ndarray


@message("o3m.round_request")
class RoundRequest(Message):
    """AP → PP: which aligned user and which K candidate items this round serves."""

    round: int
    user: int
    items: np.ndarray


@message("o3m.masked_contexts")
class MaskedContexts(Message):
    """PP → AP: ``Q^j x^j_{t,a}`` for the K arms, shape (K, d) float64.

    No round number: links deliver in order, so the payload is exactly the
    8·K·d bytes of the paper's count (spec §3.2).
    """

    blocks: np.ndarray


@message("o3m.pair_seed")
class PairSeed(Message):
    """PP i → PP j (i < j), setup: 256-bit seed of their pairwise aggregation mask."""

    seed: np.ndarray


@message("o3m.aggregation_share")
class AggregationShare(Message):
    """PP → AP under secure aggregation: fixed-point masked blocks plus pairwise masks, uint64 (K, d)."""

    share: np.ndarray


@message("o3m.round_requests")
class RoundRequests(Message):
    """AP → PP: the requests of several rounds in one message (a deployment's ``chunk_requests``).

    Row i is one :class:`RoundRequest`; the payload is exactly the sum of theirs (8 + 8 + 8·K bytes a round).
    """

    rounds: np.ndarray
    users: np.ndarray
    items: np.ndarray

    @classmethod
    def of(cls, requests: Sequence[RoundRequest]) -> RoundRequests:
        if not requests:
            raise ValueError("a chunk of round requests needs at least one request")
        return cls(
            np.array([request.round for request in requests], dtype=np.int64),
            np.array([request.user for request in requests], dtype=np.int64),
            np.stack([np.asarray(request.items, dtype=np.int64) for request in requests]),
        )

    def requests(self) -> list[RoundRequest]:
        return [
            RoundRequest(round_index, user, items)
            for round_index, user, items in zip(self.rounds.tolist(), self.users.tolist(), self.items, strict=True)
        ]


@message("o3m.masked_contexts_chunk")
class MaskedContextsChunk(Message):
    """PP → AP: the :class:`MaskedContexts` of a :class:`RoundRequests`' rounds, shape (rounds, K, d)."""

    blocks: np.ndarray


@message("o3m.aggregation_share_chunk")
class AggregationShareChunk(Message):
    """PP → AP under secure aggregation: the :class:`AggregationShare` of a chunk's rounds, uint64 (rounds, K, d)."""

    share: np.ndarray


FeatureSource = Callable[[RoundRequest], np.ndarray | None]
"""A party's local data: its (K, d_j) block for a request, or None for an unknown user."""


class MaskGenerator(Party):
    """The private mask generator (PMG); must not be, or collude with, the active party."""

    def __init__(self, name: str, network: Network, partition: Sequence[int], mask: np.ndarray) -> None:
        super().__init__(name, network)
        check_mask(mask, partition)
        self.partition = check_partition(partition, len(mask))
        self._mask = mask

    def distribute(self, parties: Sequence[str]) -> None:
        """Send block j of the mask to ``parties[j]`` (spec §2.3, steps 2–3)."""
        for party, block in zip(parties, block_slices(self.partition), strict=True):
            self.send(party, MaskBlock(np.ascontiguousarray(self._mask[:, block])))


def _pair_mask(seed: np.ndarray, round_index: int, shape: tuple[int, int]) -> np.ndarray:
    """The pairwise mask of one round: uniform uint64 words from SHAKE-256(seed ‖ round).

    An extendable-output hash keyed by the 256-bit pair seed is a
    cryptographic PRG, so the mask is indistinguishable from uniform to the
    active party (numpy's generators are not built for that).
    """
    stream = hashlib.shake_256(seed.tobytes() + round_index.to_bytes(8, "little"))
    return np.frombuffer(stream.digest(8 * shape[0] * shape[1]), dtype="<u8").reshape(shape)


def to_fixed_point(values: np.ndarray, fraction_bits: int = FRACTION_BITS) -> np.ndarray:
    """Round to multiples of 2^-f and wrap into uint64 (two's complement).

    Refuses (naming the size and the limit) values that are NaN, infinite or
    of magnitude ``>= 2^(62 - f)``: they have no fixed-point word.
    """
    scaled = np.rint(values * 2.0**fraction_bits)
    if scaled.size and not np.max(np.abs(scaled)) < 2.0**62:  # also true for NaN
        finite = np.isfinite(values)
        size = "NaN or inf" if not finite.all() else f"|x| up to {np.max(np.abs(values)):.3g}"
        raise InvalidInputError(
            f"values ({size}) cannot be represented in {fraction_bits}-bit fixed point: "
            f"they must be finite with |x| < 2^{62 - fraction_bits} = {2.0 ** (62 - fraction_bits):g}"
        )
    return scaled.astype(np.int64).view(np.uint64)


def check_aggregable(contexts: np.ndarray, passive_blocks: Sequence[slice], fraction_bits: int = FRACTION_BITS) -> None:
    """Refuse contexts whose passive blocks (``passive_blocks``: their columns) could leave the fixed-point range
    once masked, before any party acts.

    Q is orthogonal, so each masked entry of party j is at most ``‖x^j‖`` of its item, and the passive parties'
    sum at most ``Σ_j ‖x^j‖``: below ``2^(62 - f)`` (with a margin for round-off) every share and their sum have
    a word, so no party can refuse the round half-way (which would leave messages in flight).
    """
    limit = 2.0 ** (62 - fraction_bits)
    norms = sum(np.linalg.norm(contexts[:, block], axis=1) for block in passive_blocks)
    worst = int(np.argmax(norms))
    if norms[worst] * (1 + 1e-9) >= limit:
        raise InvalidInputError(
            f"contexts: under secure aggregation the passive parties' features of an item must have "
            f"Σ_j ‖x^j‖ < 2^{62 - fraction_bits} = {limit:g} (their masked values travel as {fraction_bits}-bit "
            f"fixed point), got {norms[worst]:.6g} for item {worst}"
        )


def from_fixed_point(words: np.ndarray, fraction_bits: int = FRACTION_BITS) -> np.ndarray:
    """Inverse of :func:`to_fixed_point` for a (wrapped) sum of fixed-point words."""
    return words.view(np.int64) * 2.0**-fraction_bits


class PassiveParty(Party):
    """A passive participant: holds features of the aligned users, never sees rewards."""

    def __init__(self, name: str, network: Network, features: FeatureSource, *, active: str, generator: str) -> None:
        super().__init__(name, network)
        self.features, self.active, self.generator = features, active, generator
        self._block_t: np.ndarray  # Q^jᵀ, set by receive_mask()
        self._pair_seeds: dict[str, tuple[int, np.ndarray]] = {}

    def receive_mask(self) -> None:
        block = self.receive(MaskBlock, self.generator).block
        self._block_t = np.ascontiguousarray(block.T)

    @property
    def dim(self) -> int:
        return self._block_t.shape[0]

    def offer_pair_seeds(self, later_parties: Sequence[str]) -> None:
        """Secure aggregation setup: draw a seed with each later party and send it to it."""
        for other in later_parties:
            seed = np.frombuffer(secrets.token_bytes(32), dtype=np.uint64).copy()
            self._pair_seeds[other] = (+1, seed)
            self.send(other, PairSeed(seed))

    def accept_pair_seeds(self, earlier_parties: Sequence[str]) -> None:
        for other in earlier_parties:
            self._pair_seeds[other] = (-1, self.receive(PairSeed, other).seed)

    def serve_round(self) -> int:
        """Answer the AP's round request with this party's masked blocks (Alg. 1 line 5); returns 1, the rounds
        served (as :meth:`serve_chunk`)."""
        answer = self._answer(self.receive(RoundRequest, self.active))
        self.send(self.active, AggregationShare(answer) if self._pair_seeds else MaskedContexts(answer))
        return 1

    def serve_chunk(self) -> int:
        """Answer a :class:`RoundRequests` with one message holding each round's answer (as :meth:`serve_round`
        would send it); returns the number of rounds served."""
        answers = np.stack(
            [self._answer(request) for request in self.receive(RoundRequests, self.active).requests()]
        )
        self.send(self.active, AggregationShareChunk(answers) if self._pair_seeds else MaskedContextsChunk(answers))
        return len(answers)

    def _answer(self, request: RoundRequest) -> np.ndarray:
        """This party's masked blocks for ``request``, as fixed-point shares under secure aggregation."""
        raw = self.features(request)
        n_items = len(request.items)
        if raw is None:  # unknown user: the dummy value is zero features (spec §8.4.11)
            masked = np.zeros((n_items, self._block_t.shape[1]))
        else:
            if raw.shape != (n_items, self.dim):
                raise ValueError(f"{self.name}: features have shape {raw.shape}, expected {(n_items, self.dim)}")
            masked = raw.dot(self._block_t)  # ndarray.dot: half the call overhead of @ at small sizes
        if not self._pair_seeds:
            return masked
        share = to_fixed_point(masked)
        for sign, seed in self._pair_seeds.values():
            pad = _pair_mask(seed, request.round, share.shape)
            share = share + pad if sign > 0 else share - pad  # uint64 arithmetic wraps mod 2^64
        return share


class ActiveParty(Party):
    """The active participant: serves users, owns rewards and the (masked) bandit state."""

    def __init__(
        self,
        name: str,
        network: Network,
        learner: LinearBandit,
        features: FeatureSource,
        *,
        passive: Sequence[str],
        generator: str,
        secure_aggregation: bool = False,
    ) -> None:
        super().__init__(name, network)
        if learner.layout is not Layout.SHARED:
            raise ValueError("the active party's learner must use the shared layout (one θ over masked contexts)")
        self.learner, self.features = learner, features
        self.passive, self.generator = tuple(passive), generator
        self.secure_aggregation = secure_aggregation
        self.masked_contexts: np.ndarray | None = None
        self._block_t: np.ndarray  # set by receive_mask()
        self._request: RoundRequest | None = None
        self._total: np.ndarray  # set by begin_round()
        self._words: np.ndarray | None = None
        self._chunked = False
        self._held: dict[str, deque[np.ndarray]] = {party: deque() for party in self.passive}
        """Per PP, the answers of a chunk received but not yet absorbed (rounds ahead of this one)."""
        self._asked: dict[str, deque[int]] = {party: deque() for party in self.passive}
        """Per PP, the sizes of the chunks sent and not yet answered."""

    def receive_mask(self) -> None:
        self._block_t = np.ascontiguousarray(self.receive(MaskBlock, self.generator).block.T)

    def request_round(self, round_index: int, user: int, items: np.ndarray) -> None:
        """Tell every PP which user and items to mask for this round, and mask the AP's own block."""
        request = RoundRequest(round_index, user, items)
        self.send_request(request)
        self.begin_round(request)

    def send_request(self, request: RoundRequest) -> None:
        """Tell every PP which user and items to mask for ``request.round``: when that round starts, or ahead of
        it (a request depends on no decision, so a deployment may keep several in flight)."""
        for party in self.passive:
            self.send(party, request)

    def send_requests(self, requests: Sequence[RoundRequest]) -> None:
        """Send several rounds' requests to every PP in one message each (ahead of their rounds); from then on each
        PP answers a chunk in one message, which :meth:`absorb` takes apart round by round."""
        chunk = RoundRequests.of(requests)
        self._chunked = True
        for party in self.passive:
            self.send(party, chunk)
            self._asked[party].append(len(requests))

    def begin_round(self, request: RoundRequest) -> None:
        """Start the round of ``request`` (already sent): mask the AP's own block."""
        own = self.features(request)
        if own is None:  # a passive party answers zeros for a user it lacks; the active party serves its own users
            raise InvalidInputError(f"{self.name}: its feature source has no row for user {request.user} of round "
                             f"{request.round}; the active party serves only users it holds")  # fmt: skip
        self._request = request
        self._total = own.dot(self._block_t)
        self._words = np.zeros(self._total.shape, dtype=np.uint64) if self.secure_aggregation else None

    def absorb(self, party: str) -> None:
        """Add one PP's answer to the running sum ``Σ_j Q^j x^j`` (in arrival order)."""
        if self._words is not None:
            self._words += self._answer(party, secure=True)  # wraps mod 2^64
        else:
            self._total += self._answer(party, secure=False)

    def _answer(self, party: str, *, secure: bool) -> np.ndarray:
        """``party``'s answer for this round: its own message, or the next row of the chunk it answered."""
        if not self._chunked:
            if secure:
                return self.receive(AggregationShare, party).share
            return self.receive(MaskedContexts, party).blocks
        held = self._held[party]
        if not held:
            if secure:
                rows = self.receive(AggregationShareChunk, party).share
            else:
                rows = self.receive(MaskedContextsChunk, party).blocks
            asked = self._asked[party].popleft()
            if len(rows) != asked:
                raise ProtocolError(f"{party!r} answered {len(rows)} rounds of a chunk of {asked} requests")
            held.extend(rows)
        return held.popleft()

    def choose(self) -> int:
        """Pick an arm with the learner on ``x̃ = Σ_j Q^j x^j = Q x`` (Eq. 2), once every PP is absorbed."""
        if self._words is not None:
            self._total += from_fixed_point(self._words)
        self.masked_contexts = self._total
        return self.learner.select(self._total)

    def learn(self, arm: int, reward: float) -> None:
        """Update Λ̃, ũ, θ̃ with the chosen arm's masked context (Alg. 1 lines 8–10), once per chosen round."""
        if self.masked_contexts is None:
            raise CallOrderError("the active party learns only after choosing an arm for a round (choose() first)")
        self.learner.update(self.masked_contexts, arm, reward)
        self.masked_contexts = None


class _RoundFeed:
    """Simulation glue: each party's view of the environment's contexts this round."""

    def __init__(self, block: slice) -> None:
        self.block = block
        self.contexts: np.ndarray  # set by the simulation before each round
        self.present = True

    def __call__(self, request: RoundRequest) -> np.ndarray | None:
        return np.ascontiguousarray(self.contexts[:, self.block]) if self.present else None


class VerticalFederatedBandit:
    """VFUCB or VFTS among ``len(partition)`` parties, as one policy object.

    Parameters
    ----------
    partition : sequence of int
        Feature block sizes ``(d_1, ..., d_M)``; party 1 (the AP) holds the
        first block (spec §1.4).
    learner : LinearBandit
        The AP's shared-layout LinUCB (VFUCB) or LinTS (VFTS), in dimension d.
    mask_source : {"seeded", "os"}
        Where the PMG draws Q from; ``rng`` seeds it when "seeded".
    secure_aggregation : bool
        Hide each PP's masked vectors from the AP behind pairwise masks.
    network : Network, optional
        Defaults to an :class:`~privbandits.comm.InMemoryNetwork`.
    mask : ndarray, optional
        Use this Q instead of drawing one (checked; for tests and audits).
    """

    OPTIONS = declare(
        {
            "learner": Option(
                Instance((LinearBandit,), "a LinearBandit (LinUCB or LinTS)"),
                doc="the active party's shared-layout LinUCB (VFUCB) or LinTS (VFTS) in dimension d",
            ),
            "partition": Option(
                IntegerSequence(low=1, min_length=1), doc="feature block sizes; the active party holds the first"
            ),
            "secure_aggregation": Option(
                Boolean(), False, "hide each passive party's masked vectors from the active party (pairwise masks)"
            ),
            "allow_single_feature_parties": Option(
                Boolean(), False, "accept a passive party holding one feature (the active party recovers it up to sign)"
            ),
            "mask_source": Option(Choice(MaskSource), MaskSource.SEEDED, "where the mask generator draws Q from"),
            "rng": Option(
                NoneOr(Instance((np.random.Generator,), "a numpy Generator")), None, "the seeded mask's generator"
            ),
        }
    )
    """Checked in this order; ``partition`` by :func:`~privbandits.validation.check_integer_sequence`, whose
    message names the entry at fault."""

    def __init__(
        self,
        partition: Sequence[int],
        learner: LinearBandit,
        *,
        mask_source: MaskSource | str = MaskSource.SEEDED,
        rng: np.random.Generator | None = None,
        secure_aggregation: bool = False,
        network: Network | None = None,
        mask: np.ndarray | None = None,
        allow_single_feature_parties: bool = False,
    ) -> None:
        owner, declared = "VerticalFederatedBandit", self.OPTIONS
        declared["learner"].check(learner, "learner", owner)
        check_integer_sequence(partition, "partition", low=1, min_length=1, owner=owner)  # names the bad entry
        flags = {"secure_aggregation": secure_aggregation, "allow_single_feature_parties": allow_single_feature_parties}
        declared.check(owner, flags | {"mask_source": mask_source, "rng": rng})
        self.partition = check_partition(partition, learner.dim)
        single = [j + 1 for j, size in enumerate(self.partition) if size == 1 and j > 0]
        if single and not allow_single_feature_parties:
            warnings.warn(
                f"{owner}: passive part{'ies' if len(single) > 1 else 'y'} {single} "
                f"of partition {list(self.partition)} hold one feature, which the active party recovers up to sign "
                "(|Q^j x^j| = |x^j|); "
                "pass allow_single_feature_parties=True to accept this",
                SingleFeaturePartyWarning,
                stacklevel=2,
            )
        if secure_aggregation and len(self.partition) < 3:
            raise ValueError("secure aggregation needs at least 2 passive parties (a partition of 3 or more blocks)")
        self.network = network if network is not None else InMemoryNetwork()
        self.mask = draw_mask(self.partition, mask_source, rng) if mask is None else np.asarray(mask, dtype=float)
        names = ["active"] + [f"passive{j}" for j in range(2, len(self.partition) + 1)]
        self._feeds = [_RoundFeed(block) for block in block_slices(self.partition)]
        self.generator = MaskGenerator("mask_generator", self.network, self.partition, self.mask)
        self.active = ActiveParty(
            names[0],
            self.network,
            learner,
            self._feeds[0],
            passive=names[1:],
            generator=self.generator.name,
            secure_aggregation=secure_aggregation,
        )
        self.passive = [
            PassiveParty(name, self.network, feed, active=names[0], generator=self.generator.name)
            for name, feed in zip(names[1:], self._feeds[1:], strict=True)
        ]
        with self.network.phase(SETUP):
            self.generator.distribute(names)
            self.active.receive_mask()
            for party in self.passive:
                party.receive_mask()
            if secure_aggregation:
                for index, party in enumerate(self.passive):
                    party.offer_pair_seeds(names[index + 2 :])
                for index, party in enumerate(self.passive):
                    party.accept_pair_seeds(names[1 : index + 1])
        self.n_arms, self.dim = learner.n_arms, learner.dim
        self.compute_seconds = dict.fromkeys(names, 0.0)
        """Wall time each party spent computing in rounds (its steps of the protocol, messages included)."""
        self.critical_path_seconds = 0.0
        """Round time if parties ran in parallel: the AP's time plus the slowest passive party's, summed."""
        self._round = 0
        self._items = np.arange(self.n_arms, dtype=np.int64)
        self._selected: np.ndarray | None = None  # this round's contexts, until its update

    @property
    def traffic(self):
        return self.network.traffic

    @property
    def theta(self) -> np.ndarray:
        """The AP's masked estimate θ̃ = Q θ̂ (same norm as the central θ̂)."""
        return self.active.learner.theta

    def select(self, contexts: np.ndarray, *, user: int | None = None, present: Sequence[bool] | None = None) -> int:
        """Run one round of the protocol on the full (K, d) contexts; return the AP's arm.

        Party j only ever reads columns ``block_j`` of ``contexts``. ``present[j]``
        False means party j does not know this user and sends zeros.
        """
        contexts = self._check_contexts(contexts)
        if self.active.secure_aggregation:
            check_aggregable(contexts, [feed.block for feed in self._feeds[1:]])
        if user is not None:
            check(user, "user", Integer(low=0))
        if present is not None:
            self._check_present(present)
        for j, feed in enumerate(self._feeds):
            feed.contexts, feed.present = contexts, True if present is None else bool(present[j])
        self._round += 1
        seconds, clock = self.compute_seconds, time.perf_counter
        slowest_passive = 0.0
        with self.network.phase(ROUND):
            start = clock()
            self.active.request_round(self._round, self._round if user is None else user, self._items)
            active = clock() - start
            for party in self.passive:
                start = clock()
                party.serve_round()
                spent = clock() - start
                seconds[party.name] += spent
                slowest_passive = max(slowest_passive, spent)
                start = clock()
                self.active.absorb(party.name)  # at once, while the block is still in cache
                active += clock() - start
            start = clock()
            arm = self.active.choose()
            active += clock() - start
        seconds[self.active.name] += active
        self.critical_path_seconds += active + slowest_passive
        self._selected = contexts
        return arm

    def _check_contexts(self, contexts: np.ndarray) -> np.ndarray:
        contexts = np.asarray(contexts)
        if contexts.shape != (self.n_arms, self.dim):
            raise InvalidInputError(f"contexts have shape {contexts.shape}; expected {(self.n_arms, self.dim)}")
        check_finite_array(contexts, "contexts")
        return contexts

    def _check_present(self, present: Sequence[bool]) -> None:
        n_parties = len(self.partition)
        try:
            flags = list(present)
        except TypeError:
            raise InvalidInputError(
                f"present must be a sequence of {n_parties} bools, got {describe(present)}"
            ) from None
        if len(flags) != n_parties or not all(isinstance(flag, bool | np.bool_) for flag in flags):
            raise InvalidInputError(
                f"present must be a sequence of {n_parties} bools (one per party), got {describe(present)}"
            )
        if not flags[0]:
            raise InvalidInputError("the active party always knows the user it serves (present[0] must be True)")

    def update(self, contexts: np.ndarray, arm: int, reward: float) -> None:
        """The user's reward reaches the AP only; nothing is sent (Alg. 1 lines 7–10).

        Once per :meth:`select`, with the same ``contexts``; ``arm`` in ``[0, n_arms)``
        and a finite ``reward``. A refused call changes nothing.
        """
        if self._selected is None:
            raise CallOrderError("update needs a select first: one update per selected round")
        if contexts is not self._selected:
            contexts = self._check_contexts(contexts)
            if not np.array_equal(contexts, self._selected):
                raise InvalidInputError("contexts must be the ones this round was selected on (select(contexts))")
        arm = check_arm(arm, self.n_arms)
        reward = check_reward(reward)
        self._selected = None
        start = time.perf_counter()
        self.active.learn(arm, reward)
        spent = time.perf_counter() - start
        self.compute_seconds[self.active.name] += spent
        self.critical_path_seconds += spent
