"""Vertical O3M (VFUCB / VFTS) under ``privbandits serve DEPLOY.toml --as NAME``: each party as a service.

* The **active party** (:class:`ActiveRole`, a :class:`~privbandits.serve.decider.Decider`): its application sends
  ``decide`` with the user id and its own block of the candidate arms' features (K rows, d_1 wide), then the reward.
  Per decision it asks every passive party for the user's masked blocks (the deployment's
  :class:`~privbandits.protocols.vertical.core.RoundRequest` / ``MaskedContexts`` messages, through the unchanged
  :class:`~privbandits.protocols.vertical.core.ActiveParty`), adds its own, and chooses with the learner on
  ``x̃ = Σ_j Q^j x^j``. The event's state, kept in its own store until the reward comes, is the chosen arm's masked
  context ``x̃_{t,a_t}`` (d numbers, as float64 bytes in base64: all that absorbing the reward needs, Λ̃ += x̃x̃ᵀ,
  ũ += r x̃) and the fingerprint of the mask it is in; the reward never leaves the party.
* Each **passive party** (:class:`PassiveRole`, a :class:`~privbandits.serve.role.FeatureHolder`): its application
  puts and updates its rows per user (``POST /v1/features``, key = the user id, K rows of its block width); the
  service answers the active party's requests from them (a user it lacks is answered with zeros, as ``deploy`` and
  the spec do, §8.4.11). Its state is its rows alone: it learns nothing from rewards (it never sees one) and keeps
  nothing per request, so its store (the journalled puts) is all it needs after a crash.
* The **mask generator** (:class:`GeneratorRole`, a plain :class:`~privbandits.serve.role.ServedRole`): no
  application API; it sends each party its block of Q whenever the parties link up. Its one secret, the mask seed,
  is its data file's (as in ``deploy``) or, without one, drawn from OS entropy once and kept in its own checkpoint
  file (``OUTPUT/checkpoints/NAME.npz``, as ``deploy`` keeps it), so a restart sends the same Q.

Links are mutual TLS, made in link sessions that start again after any failure (:mod:`.links`). User ids are the
parties' shared user numbers, as in the deployment's data files: decimal integers in ``[0, 2^63)``.

Reproducible mode (``reproducible = true``): VFTS samples from ``[seed, 2]``, as ``deploy local`` and
:func:`~privbandits.deploy.vertical.party.run_in_memory` do, so a replay of the data file, one event at a time with its
reward right after, gets their decisions exactly; otherwise from OS entropy. The learner's generator is in the active
party's checkpoints, and a decision replayed on recovery draws what it drew (:meth:`ActiveRole.replay_decision`).
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import re
import select
import threading
import time
from collections.abc import Callable, Sequence

import numpy as np

from privbandits.comm import ROUND, SETUP, ProtocolError, TlsNetwork
from privbandits.deploy import checkpoint
from privbandits.deploy.deployment import Deployment, DeploymentError
from privbandits.deploy.vertical.links import LINK_FAILURES, Relinker, wait_any_readable, wait_readable
from privbandits.deploy.vertical.party import blocks, learner_rng, load_mask_seed, make_learner, mask_from_seed
from privbandits.deploy.vertical.section import VerticalProtocol
from privbandits.serve.decider import DecidedEvent, DecideInput, Decider, Decision, JsonObject, candidate_arms
from privbandits.serve.role import FeatureHolder, FeaturePut, Refused, ServedRole
from privbandits.validation import InvalidInputError

VerticalDeployment = Deployment[VerticalProtocol]

USER_NUMBER = re.compile(r"^(0|[1-9][0-9]{0,18})$")
LARGEST_USER = 2**63 - 1
LINK_WAIT_S = 5.0
"""The longest a decision waits for the parties to be linked (capped by the deployment's ``deadline_s``)."""
IDLE_POLL_S = 0.25
_META = "__meta__"


def user_number(value: str, field: str) -> int:
    """The user id as the parties' shared user number, or :class:`Refused` naming ``field``."""
    if USER_NUMBER.match(value) is None or int(value) > LARGEST_USER:
        raise Refused(
            field,
            f"must be a user id the parties share: a decimal integer in [0, {LARGEST_USER}] without leading zeros "
            f"(as the deployment's data files number users), got {value!r}",
        )
    return int(value)


def _pack(arrays: dict[str, np.ndarray], meta: dict) -> bytes:
    """Arrays and a JSON record as npz bytes (exact: float bytes, not decimal text)."""
    buffer = io.BytesIO()
    words = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    np.savez(buffer, **arrays, **{_META: words})  # type: ignore[arg-type]  # numpy's stub: a key may be allow_pickle
    return buffer.getvalue()


def _unpack(state: bytes) -> tuple[dict[str, np.ndarray], dict]:
    with np.load(io.BytesIO(state), allow_pickle=False) as saved:
        arrays = {key: saved[key] for key in saved.files if key != _META}
        if _META not in saved.files:
            raise ValueError("the checkpoint has no meta record")
        meta = json.loads(saved[_META].tobytes().decode())
    return arrays, meta


def _floats(kept: str | list) -> np.ndarray:
    """float64 numbers kept in an event's state: their little-endian bytes in base64 (exact, and several times
    cheaper to write and read than JSON numbers), or a JSON list of numbers (as stores written before kept them)."""
    if isinstance(kept, str):
        return np.frombuffer(base64.b64decode(kept, validate=True), dtype="<f8").astype(np.float64)
    return np.asarray(kept, dtype=np.float64)


def _identity(deployment: VerticalDeployment, name: str) -> str:
    """What a served party's state depends on: the protocol's settings and mode, the parties' names and roles."""
    return f"vertical-o3m/{deployment.parties[name].role}/{name}/{deployment.protocol_digest()}"


def _link_ledger(links: Relinker) -> JsonObject:
    return {"link_sessions": links.sessions, "link_failures": links.failures, "last_link_failure": links.last_failure}


def _check_rows(features: np.ndarray, n_arms: int, width: int, field: str, what: str) -> None:
    """:class:`Refused` naming ``field`` unless ``features`` is K finite rows of ``width`` numbers."""
    rows, columns = features.shape
    if (rows, columns) != (n_arms, width):
        raise Refused(
            field,
            f"must be {n_arms} rows (one per arm) of {width} numbers ({what}), got {rows} rows of {columns}",
        )
    if not np.all(np.isfinite(features)):
        raise Refused(field, "must be finite numbers")
    if np.abs(features).max(initial=0.0) > 1e150:
        raise Refused(field, "must be at most 1e150 in absolute value (larger ones overflow the scores)")


# --------------------------------------------------------------------------------------------- the active party

PROPENSITY_DRAWS = 1000
"""Draws of VFTS's Monte Carlo propensity estimate."""


def thompson_propensity(
    learner, contexts: np.ndarray, arm: int, candidates: np.ndarray | None, rng: np.random.Generator,
    draws: int = PROPENSITY_DRAWS,
) -> float:  # fmt: skip
    """The probability that one Thompson draw μ ~ N(θ̃, v² Λ̃^{-1}) makes ``arm`` the best of ``candidates`` (all arms
    if None) on ``contexts``: a Monte Carlo estimate from ``draws`` draws of ``rng`` (never the learner's generator,
    so decisions stay as they are), counting the draw that chose it too, so it is in ``(0, 1]``; its standard error
    is at most ``1 / (2 sqrt(draws))``. Ties go to the lowest arm, as the learner breaks them."""
    from privbandits.linear.policies import covariance_root

    stats = learner.stats
    root = covariance_root(stats.A_inv[0], learner.sampler)
    means = stats.theta[0][:, None] + learner.v * (root @ rng.standard_normal((stats.dim, draws)))
    scores = contexts @ means
    position = arm
    if candidates is not None:
        scores, position = scores[candidates], int(np.flatnonzero(candidates == arm)[0])
    wins = int(np.count_nonzero(np.argmax(scores, axis=0) == position))
    return (1 + wins) / (draws + 1)


def mask_fingerprint(block_t: np.ndarray) -> str:
    """A short fingerprint of a party's mask block (which basis its learner's state is in)."""
    return hashlib.sha256(np.ascontiguousarray(block_t).tobytes()).hexdigest()[:16]


class _ServedActiveParty:
    """The deployment's :class:`~privbandits.protocols.vertical.core.ActiveParty` with the application's rows as its
    feature source and every passive party's answer checked (built lazily: the core module imports late)."""

    @staticmethod
    def build(name: str, network: TlsNetwork, learner, protocol: VerticalProtocol, passive: Sequence[str], generator):
        from privbandits.protocols.vertical.core import ActiveParty

        class Served(ActiveParty):
            own: np.ndarray
            ahead: dict[int, dict[str, np.ndarray]]
            """Per round asked ahead (:meth:`ask_ahead`), each passive party's answer not yet absorbed."""

            def ask_ahead(self, requests: list) -> None:
                """Ask every passive party for several rounds in one message each (``RoundRequests``) and keep their
                answers (one message each) for :meth:`absorb` to take in those rounds: a round asked ahead sends and
                receives nothing more. Answers kept from an earlier call are dropped."""
                from privbandits.protocols.vertical.core import (
                    AggregationShareChunk,
                    MaskedContextsChunk,
                    RoundRequests,
                )

                chunk = RoundRequests.of(requests)
                for party in self.passive:
                    self.send(party, chunk)
                self.ahead = {request.round: {} for request in requests}
                for party in self.passive:
                    if self.secure_aggregation:
                        rows = self.receive(AggregationShareChunk, party).share
                    else:
                        rows = self.receive(MaskedContextsChunk, party).blocks
                    if not isinstance(rows, np.ndarray) or rows.ndim != 3 or len(rows) != len(requests):
                        got = getattr(rows, "shape", type(rows).__name__)
                        raise ProtocolError(f"{party!r} answered {got} to a chunk of {len(requests)} requests")
                    for request, row in zip(requests, rows, strict=True):
                        self.ahead[request.round][party] = row

            def _answer(self, party: str, *, secure: bool) -> np.ndarray:
                assert self._request is not None
                held = self.ahead.get(self._request.round)
                answer = held.pop(party) if held else super()._answer(party, secure=secure)
                wanted = (protocol.n_arms, protocol.dim)
                dtype = np.uint64 if secure else np.float64
                if not isinstance(answer, np.ndarray) or answer.shape != wanted or answer.dtype != dtype:
                    got = f"{getattr(answer, 'dtype', type(answer).__name__)} {getattr(answer, 'shape', '')}"
                    raise ProtocolError(f"{party!r} answered {got}; the protocol allows {dtype.__name__} {wanted}")
                if not secure and not np.all(np.isfinite(answer)):
                    raise ProtocolError(f"{party!r} answered masked blocks that are not finite")
                return answer

            def choose_among(self, candidates: np.ndarray | None) -> int:
                """:meth:`choose` (every arm), or the best of ``candidates`` by the learner's scores."""
                if candidates is None:
                    return self.choose()
                from privbandits.linear.tiebreak import break_ties
                from privbandits.protocols.vertical.core import from_fixed_point

                if self._words is not None:
                    self._total += from_fixed_point(self._words)
                self.masked_contexts = self._total
                scores = self.learner.scores(self._total)[candidates]
                learner = self.learner
                return int(candidates[break_ties(scores, learner.tie_break, learner.rng, learner.tie_tolerance)])

        party = Served(name, network, learner, lambda request: party.own.take(request.items, axis=0),
                       passive=passive, generator=generator,
                       secure_aggregation=protocol.secure_aggregation)  # fmt: skip
        party.ahead = {}
        return party


class _Linked:
    """What every vertical role shares: its identity, and its links started and stopped with the service."""

    deployment: VerticalDeployment
    name: str
    links: Relinker

    def identity(self) -> str:
        return _identity(self.deployment, self.name)

    def start(self) -> None:
        self.links.start()

    def stop(self) -> None:
        self.links.stop()


class ActiveRole(_Linked, Decider):
    """The active party as a service (see the module docstring)."""

    kind = "vertical-active"

    def __init__(self, deployment: VerticalDeployment, name: str) -> None:
        self.deployment, self.name, self.protocol = deployment, name, deployment.protocol
        self.width = blocks(deployment)[name]
        self.passive = deployment.names("passive")
        self.generator = deployment.names("mask_generator")[0]
        self.learner = make_learner(self.protocol, learner_rng(deployment, name))
        self.basis: str | None = None
        """The fingerprint of the mask block the learner's state is in (None before the first decision)."""
        self.items = np.arange(self.protocol.n_arms, dtype=np.int64)
        self.coins = np.random.default_rng()
        """VFTS's propensity estimates' draws (OS entropy: they choose nothing)."""
        self.links = Relinker(deployment, name, [self.generator, *self.passive], self._session)
        self.unlinked = 0
        self._party = None
        self._ready, self._broken = threading.Event(), threading.Event()
        self._using = threading.Lock()
        self._round = 0
        self._ahead: dict[str, tuple] = {}
        """Per event id, the linked party and round its passive answers were asked ahead in (:meth:`prepare`)."""

    def stop(self) -> None:
        self._ready.clear()
        super().stop()

    # -- links ---------------------------------------------------------------
    def _session(self, network: TlsNetwork) -> None:
        """Set up (receive Q^1), hand the linked party to the decisions, and keep it until a decision finds a link
        failed, a passive party's link ends while idle, or the party stops."""
        party = _ServedActiveParty.build(self.name, network, self.learner, self.protocol, self.passive, self.generator)
        with network.phase(SETUP):
            party.receive_mask()
        fingerprint = mask_fingerprint(party._block_t)
        if self.basis is not None and fingerprint != self.basis:
            raise ProtocolError(
                f"the mask generator sent a mask block ({fingerprint}) other than the one this party's learner state "
                f"is in ({self.basis}): was its mask seed replaced? The active party cannot serve with it"
            )
        party.fingerprint = fingerprint
        self._round, self._party = 0, party
        self._broken.clear()
        self._ready.set()
        try:
            links = [network.link(peer) for peer in self.passive]
            while not (self.links.stopping.is_set() or self._broken.wait(IDLE_POLL_S)):
                self._check_idle(links)
        finally:
            self._ready.clear()
            self._party = None

    def _check_idle(self, links: list) -> None:
        """A passive party's link that brings a frame (or its end) while no decision is being made has ended, or its
        party broke the protocol: end the session, so every party links again (a restarted one too). Bytes that make
        no frame (TLS's own records) are left alone."""
        if not self._using.acquire(blocking=False):
            return
        try:
            if not self._ready.is_set():
                return
            readable = select.select([link.sock for link in links], [], [], 0)[0]
            for link in links:
                if link.sock not in readable and not link.has_data():
                    continue
                try:
                    frame = link.read(time.monotonic() + IDLE_POLL_S / 5)
                except TimeoutError:
                    continue
                except (EOFError, OSError) as exc:
                    raise ProtocolError(f"the link with {link.peer!r} ended ({exc or 'closed'})") from None
                raise ProtocolError(f"{link.peer!r} sent a {frame.type.name} frame while no request was out")
        finally:
            self._using.release()

    def _linked(self):
        if not self._ready.wait(min(LINK_WAIT_S, self.deployment.deadline_s)):
            self.unlinked += 1
            why = self.links.last_failure or "linking"
            raise Refused("parties", f"this party is not linked with the other parties yet (last: {why}); retry", 503)
        return self._party

    # -- deciding ------------------------------------------------------------
    def _candidates(self, arms: tuple[int, ...] | None) -> np.ndarray | None:
        n_arms = self.protocol.n_arms
        if arms is None:
            return None
        chosen = candidate_arms(arms, n_arms)
        return None if chosen.tolist() == list(range(n_arms)) else chosen

    def prepare(self, requests: Sequence[DecideInput]) -> None:
        """Ask the passive parties for the masked blocks of every decidable one of ``requests`` at once: one
        ``RoundRequests`` message to each and one answer from each, instead of a round trip per decision. Their
        answers depend on no decision, so :meth:`decide` then takes each from what was asked ahead, in any order,
        and decides exactly as it would have asked alone. Not linked, or a link failing: nothing is asked ahead (each
        decision then asks alone, or is refused, as without this)."""
        from privbandits.protocols.vertical.core import RoundRequest

        users = {}
        for request in requests:
            try:
                _check_rows(request.features, self.protocol.n_arms, self.width, "features", "this party's block")
                users[request.event_id] = user_number(request.user_id, "user_id")
            except Refused:
                continue  # refused by decide, asking no one
        party = self._party
        self._ahead = {}
        if len(users) < 2 or party is None or not self._ready.is_set():
            return
        with self._using:
            asked = {event: RoundRequest(self._round + i, user, self.items) for i, (event, user) in
                     enumerate(users.items(), start=1)}  # fmt: skip
            self._round += len(asked)
            try:
                with party.network.phase(ROUND):
                    party.ask_ahead(list(asked.values()))
            except LINK_FAILURES:
                self._ready.clear()
                self._broken.set()
                return
        self._ahead = {event: (party, request) for event, request in asked.items()}

    def decide(self, request: DecideInput) -> Decision:
        _check_rows(request.features, self.protocol.n_arms, self.width, "features", "this party's block")
        candidates = self._candidates(request.arms)
        user = user_number(request.user_id, "user_id")
        party = self._linked()
        ahead = self._ahead.pop(request.event_id, None)
        with self._using:
            try:
                with party.network.phase(ROUND):
                    party.own = request.features
                    if ahead is not None and ahead[0] is party and ahead[1].user == user:
                        party.begin_round(ahead[1])
                    else:
                        self._round += 1
                        party.request_round(self._round, user, self.items)
                    for other in self.passive:
                        party.absorb(other)
                    arm = party.choose_among(candidates)
            except InvalidInputError as exc:  # the summed context overflows the scores (every answer was read)
                raise Refused("features", f"cannot be scored with the other parties' blocks: {exc}") from None
            except LINK_FAILURES as exc:
                self._ready.clear()
                self._broken.set()
                raise Refused(
                    "parties", f"the link with the other parties failed ({exc}); they link again: retry", 503
                ) from None
        propensity = None
        if self.protocol.policy == "vfts":
            propensity = thompson_propensity(self.learner, party.masked_contexts, arm, candidates, self.coins)
        masked = party.masked_contexts[arm]
        self.basis = party.fingerprint
        state = {"masked": base64.b64encode(masked.astype("<f8").tobytes()).decode(), "mask": party.fingerprint}
        return Decision(arm, propensity, self.model_version, state)

    # -- learning ------------------------------------------------------------
    def _masked(self, event: DecidedEvent) -> np.ndarray:
        masked = _floats(event.event_state["masked"])
        if masked.shape != (self.protocol.dim,):
            raise ValueError(f"event {event.event_id}: its masked context has shape {masked.shape}")
        self.basis = str(event.event_state["mask"])
        return masked

    def absorb(self, event: DecidedEvent, reward: float) -> None:
        contexts = np.zeros((self.protocol.n_arms, self.protocol.dim))
        contexts[event.arm] = self._masked(event)
        self.learner.update(contexts, event.arm, reward)

    def replay_decision(self, event: DecidedEvent) -> None:
        """A VFTS decision drew μ̃ (d standard normals, whatever the contexts): draw them again."""
        self._masked(event)
        if self.protocol.policy == "vfts":
            self.learner.rng.standard_normal((1, self.protocol.dim, 1))

    @property
    def model_version(self) -> int:
        return int(self.learner.stats.n_updates.sum())

    def ledger(self) -> JsonObject:
        return {
            "privacy": "O3M masks: the passive parties' features reach this party only masked (Q^j x^j); no noise",
            "policy": self.protocol.policy,
            "rewards_absorbed": self.model_version,
            "linked": self._ready.is_set(),
            "refused_unlinked": self.unlinked,
            **_link_ledger(self.links),
        }

    # -- state ---------------------------------------------------------------
    def checkpoint(self) -> bytes:
        arrays, meta = checkpoint.capture(self.learner)
        return _pack(arrays, {"learner": meta, "basis": self.basis})

    def restore(self, state: bytes) -> None:
        arrays, meta = _unpack(state)
        checkpoint.restore(self.learner, arrays, meta["learner"])
        self.basis = meta["basis"]


# ------------------------------------------------------------------------------------------- a passive party


class PassiveRole(_Linked, FeatureHolder):
    """A passive party as a service (see the module docstring)."""

    kind = "vertical-passive"

    def __init__(self, deployment: VerticalDeployment, name: str) -> None:
        self.deployment, self.name, self.protocol = deployment, name, deployment.protocol
        self.width = blocks(deployment)[name]
        self.active = deployment.names("active")[0]
        self.generator = deployment.names("mask_generator")[0]
        self.others = [other for other in deployment.names("passive") if other != name]
        peers = [self.generator, self.active] + (self.others if self.protocol.secure_aggregation else [])
        self.links = Relinker(deployment, name, peers, self._session)
        self.rows: dict[str, np.ndarray] = {}
        self.puts = self.answered = self.unknown = 0
        self._last_round = 0


    # -- the application's rows ----------------------------------------------
    def check_put(self, put: FeaturePut, previous: np.ndarray | None) -> None:
        user_number(put.key, "key")
        _check_rows(put.features, self.protocol.n_arms, self.width, "features", "this party's block")
        if self.protocol.secure_aggregation:
            from privbandits.protocols.vertical.core import FRACTION_BITS

            limit = 2.0 ** (62 - FRACTION_BITS) / (len(self.others) + 1) / (1 + 1e-6)
            largest = float(np.linalg.norm(put.features, axis=1).max())
            if largest >= limit:
                raise Refused(
                    "features",
                    f"each row must have a Euclidean norm below {limit:g} under secure aggregation (the passive "
                    f"parties' masked sum travels as {FRACTION_BITS}-bit fixed point), got {largest:g}",
                )

    def apply_put(self, put: FeaturePut) -> None:
        self.rows[put.key] = np.ascontiguousarray(put.features, dtype=np.float64)
        self.puts += 1

    @property
    def model_version(self) -> int:
        return self.puts

    # -- serving the active party --------------------------------------------
    def _features(self, request) -> np.ndarray | None:
        """This party's rows for a request, checked against what the protocol allows (else ProtocolError)."""
        items, n_arms = request.items, self.protocol.n_arms
        if request.round <= self._last_round:
            raise ProtocolError(f"{self.active!r} asked for round {request.round} after round {self._last_round}")
        if not (isinstance(items, np.ndarray) and items.ndim == 1 and items.dtype.kind in "iu" and 1 <= len(items)):
            raise ProtocolError(f"{self.active!r} asked for items that are not a 1-d integer array")
        if items.min() < 0 or items.max() >= n_arms or len(np.unique(items)) != len(items):
            raise ProtocolError(f"{self.active!r} asked for items outside 0..{n_arms - 1} or repeated")
        if request.user < 0:
            raise ProtocolError(f"{self.active!r} asked for user {request.user}, not a user number")
        self._last_round = request.round
        self.answered += 1
        rows = self.rows.get(str(request.user))
        if rows is None:
            self.unknown += 1
            return None
        return rows.take(items, axis=0)

    def _session(self, network: TlsNetwork) -> None:
        from privbandits.protocols.vertical.core import PassiveParty, RoundRequest, RoundRequests

        party = PassiveParty(self.name, network, self._features, active=self.active, generator=self.generator)
        with network.phase(SETUP):
            party.receive_mask()
            if self.protocol.secure_aggregation:
                passive = self.deployment.names("passive")
                index = passive.index(self.name)
                party.offer_pair_seeds(passive[index + 1 :])
                party.accept_pair_seeds(passive[:index])
        self._last_round = 0
        while wait_readable(network, self.active, self.links.stopping):
            with network.phase(ROUND):  # a decision's request, or the requests of a group's decisions (one message)
                _, kind = party.peek((RoundRequest.kind, RoundRequests.kind), self.active)
                party.serve_chunk() if kind == RoundRequests.kind else party.serve_round()

    def ledger(self) -> JsonObject:
        return {
            "privacy": "sends only Q^j x^j (its block, masked) for the users the active party asks about; sees no "
            "reward and no decision",
            "users": len(self.rows),
            "puts": self.puts,
            "requests_answered": self.answered,
            "answered_with_zeros": self.unknown,
            **_link_ledger(self.links),
        }

    # -- state ---------------------------------------------------------------
    def checkpoint(self) -> bytes:
        keys = sorted(self.rows)
        shape = (0, self.protocol.n_arms, self.width)
        features = np.stack([self.rows[key] for key in keys]) if keys else np.zeros(shape)
        return _pack({"keys": np.asarray(keys, dtype=str), "features": features}, {"puts": self.puts})

    def restore(self, state: bytes) -> None:
        arrays, meta = _unpack(state)
        keys, features = arrays["keys"], arrays["features"]
        if features.shape != (len(keys), self.protocol.n_arms, self.width) or features.dtype != np.float64:
            raise ValueError(f"the checkpoint's rows have shape {features.shape}; this party's block does not fit")
        self.rows = {str(key): np.ascontiguousarray(rows) for key, rows in zip(keys.tolist(), features, strict=True)}
        self.puts = int(meta["puts"])


# ---------------------------------------------------------------------------------------- the mask generator


def generator_seed(deployment: VerticalDeployment, name: str) -> np.ndarray:
    """The mask generator's private seed: its data file's, else the one kept in its checkpoint file, else fresh OS
    entropy, kept there (0600) before it is used."""
    entry = deployment.parties[name]
    if entry.data is not None:
        return load_mask_seed(entry.data)
    path = deployment.checkpoint_path(name)
    saved = checkpoint.load(path)
    if saved is not None:
        if saved[1].get("digest") != deployment.protocol_digest():
            raise DeploymentError(f"{path} was written for another deployment (its digest differs)")
        return saved[0]["mask_seed"]
    import secrets

    seed = np.frombuffer(secrets.token_bytes(32), dtype=np.uint64).copy()
    checkpoint.save(path, {"mask_seed": seed}, {"digest": deployment.protocol_digest()})
    return seed


class GeneratorRole(_Linked, ServedRole):
    """The mask generator as a service (see the module docstring): no application API, no state in its store."""

    kind = "vertical-mask-generator"

    def __init__(self, deployment: VerticalDeployment, name: str) -> None:
        self.deployment, self.name, self.protocol = deployment, name, deployment.protocol
        self.mask = mask_from_seed(self.protocol, generator_seed(deployment, name))
        self.holders = deployment.names("active") + deployment.names("passive")
        self.links = Relinker(deployment, name, self.holders, self._session)
        self.distributed = 0


    def _session(self, network: TlsNetwork) -> None:
        """Send every data holder its block, then hold the links until one of them ends (a holder restarted: every
        party links again, and this one sends the blocks again) or the party stops. It expects nothing more: a frame
        a holder sends ends the session too."""
        from privbandits.protocols.vertical.core import MaskGenerator

        with network.phase(SETUP):
            MaskGenerator(self.name, network, self.protocol.partition, self.mask).distribute(self.holders)
        self.distributed += 1
        wait_any_readable(network, self.holders, self.links.stopping)

    def ledger(self) -> JsonObject:
        return {
            "privacy": "knows Q and every block width; receives nothing per decision",
            "mask_distributions": self.distributed,
            **_link_ledger(self.links),
        }


ROLES: dict[str, Callable[[VerticalDeployment, str], ServedRole]] = {
    "active": ActiveRole,
    "passive": PassiveRole,
    "mask_generator": GeneratorRole,
}


def serving_role(deployment: VerticalDeployment, name: str) -> ServedRole:
    """Party ``name``'s serving role, built from its own files."""
    return ROLES[deployment.parties[name].role](deployment, name)
