"""P2B: privacy-preserving on-device bandits through encode–shuffle–analyze (spec ``p2b.md``).

Parties and messages:

* **devices** (:class:`DeviceHost`: one party per sending user, each with its
  own identity on the network): after their t local interactions, users take
  part with probability p and send ONE tuple chosen by the reference rule
  (§2.3): with probability ``negative_rate`` a zero-reward tuple, otherwise a
  reward-1 tuple (falling back to a zero-reward one). Private devices send
  ``(code, action, reward)``; the non-private baseline sends the raw context
  instead of the code. The host then closes the batch with a
  :class:`CloseBatch` message.
* :class:`Shuffler` (trusted, §2.5): holds the reports it receives until the
  batch is closed, counting them itself; anonymises (forwards no sender),
  shuffles the batch with its own randomness, and drops every tuple whose code
  occurs fewer than ``threshold`` times (crowd-blending).
* :class:`Server` (§2.6): fits the central disjoint LinUCB model on the batch
  it receives and publishes it as a :class:`ModelRelease` message.
* :class:`NewAgents` (§2.6): new devices; they start from the model they
  rebuild from the server's :class:`ModelRelease`, and from nothing else.

Every party learns only from the messages it receives, so each could run in a
process of its own. The server only ever sees the arrays of the shuffled batch.

Each party keeps its own privacy ledger: the device host what its devices
sent, the shuffler what it received and released (ε(p) by Eq. (2), the
smallest released crowd, u/k), the server what it received (the crowds it saw,
ε under the public p). :func:`compose_ledgers` composes them into the
protocol's ledger: each release that leaves the trust boundary once, after
checking that what each party says it sent is what the next says it received.
"""

from __future__ import annotations

import gc
import math
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np

from privbandits.comm import InMemoryNetwork, Message, Network, Party, ProtocolError, Traffic, message
from privbandits.datasets.interactions import UserInteractions
from privbandits.linear.population import CodeModel, DisjointModel, PopulationLog, run_population
from privbandits.options import options_of
from privbandits.privacy import crowd_blending
from privbandits.privacy.encoding import ContextEncoder
from privbandits.privacy.ledger import LedgerEntry, PrivacyLedger
from privbandits.protocols.p2b.config import P2BConfig as P2BConfig  # re-exported
from privbandits.protocols.p2b.config import Representation as Representation  # re-exported
from privbandits.validation import (
    Instance,
    Integer,
    InvalidInputError,
    NoneOr,
    Real,
    check,
    describe,
    validate,
)

_DECLARED = options_of(P2BConfig)
"""P2B's declared options: the parties check what they share with the configuration by its declarations."""

PRIVACY_UNIT = "one context vector (one interaction tuple per participating user)"


@message("p2b.encoded_report")
class EncodedReport(Message):
    """Device → shuffler: one encoded interaction ``(y, a, r)``."""

    code: int
    action: int
    reward: int


@message("p2b.raw_report")
class RawReport(Message):
    """Device → server path of the non-private baseline: one raw interaction ``(x, a, r)``."""

    context: np.ndarray
    action: int
    reward: int


@message("p2b.encoded_batch")
class EncodedBatch(Message):
    """Shuffler → server: the anonymised, shuffled, thresholded tuples."""

    codes: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray


@message("p2b.raw_batch")
class RawBatch(Message):
    """Shuffler → server in the non-private baseline: anonymised, shuffled raw tuples (no thresholding)."""

    contexts: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray


@message("p2b.model")
class ModelRelease(Message):
    """Server → new agents: the central model, as two arrays (A and b, or counts and reward sums)."""

    first: np.ndarray
    second: np.ndarray


@message("p2b.close_batch")
class CloseBatch(Message):
    """Device host → shuffler: the batch is complete. No payload (0 bytes): the shuffler counts the
    reports it received before this message itself."""


DEVICES, RAW_DEVICES = "p2b.devices", "p2b.raw_devices"
"""Ledger mechanisms of a device host: reports sent to the trusted shuffler (inside the trust boundary)."""
SHUFFLED, RAW_BASELINE = "p2b.shuffler", "p2b.raw_baseline"
"""Ledger mechanisms of the shufflers' releases to the server: the protocol's releases (composed)."""
SERVER_ENCODED, SERVER_RAW = "p2b.server.encoded", "p2b.server.raw"
"""Ledger mechanisms of the server: the batches it received (and published a model of)."""
_CHECKS = (
    # (mechanism of the sender's entry, its count), (mechanism of the receiver's entry, its count)
    ((DEVICES, "sent"), (SHUFFLED, "received")),
    ((RAW_DEVICES, "sent"), (RAW_BASELINE, "received")),
    ((SHUFFLED, "released"), (SERVER_ENCODED, "received")),
    ((SHUFFLED, "min_released_crowd"), (SERVER_ENCODED, "min_crowd")),
    ((RAW_BASELINE, "released"), (SERVER_RAW, "received")),
)


_GENERATOR = Instance((np.random.Generator,), "a numpy Generator")


def _batch_array(values: list, name: str, upper: int | None, allowed: str) -> np.ndarray:
    """One field of the received reports as int64: integers in ``[0, upper)``; a bool or a float is
    refused, not converted (``np.array`` would turn ``True`` into 1 and ``1.5`` into 1)."""
    for value in values:
        if not (
            (type(value) is int or isinstance(value, np.integer)) and 0 <= value and (upper is None or value < upper)
        ):
            raise InvalidInputError(f"a report's {name} must be an integer {allowed}, got {describe(value)}")
    return np.array(values, dtype=np.int64)


def choose_reports(
    rewards: np.ndarray, participation: float, negative_rate: float, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Which user sends which of its interactions (spec §2.3, reference rule), vectorised.

    ``rewards`` is the (U, t) 0/1 log of each user's own interactions (NaN: a
    replayed round whose reward is unknown, never sent). Each user
    takes part with probability ``participation``; a participant sends, with
    probability ``negative_rate``, a uniformly chosen zero-reward tuple (none
    if it has none), otherwise a uniformly chosen reward-1 tuple (a random
    zero-reward tuple if it has none). Returns (users, tuple indices) of the
    sent tuples, users ascending.
    """
    _DECLARED.check(None, {"participation": participation, "negative_rate": negative_rate})
    check(rng, "rng", _GENERATOR)
    rewards = np.asarray(rewards)
    if rewards.ndim != 2:
        raise ValueError(f"rewards must be a (users, interactions) array, got shape {rewards.shape}")
    n_users = rewards.shape[0]
    takes_part = rng.random(n_users) < participation
    wants_negative = rng.random(n_users) < negative_rate
    keys = rng.random(rewards.shape)  # a uniform choice among eligible tuples = the largest key among them
    positive, negative = rewards > 0, rewards == 0  # NaN is neither
    has_positive, has_negative = positive.any(axis=1), negative.any(axis=1)
    use_negative = np.asarray(wants_negative | ~has_positive)  # an array (numpy's stubs: maybe a scalar)
    eligible = np.where(use_negative[:, None], negative, positive)
    chosen = np.argmax(np.where(eligible, keys, -1.0), axis=1)
    sends = takes_part & np.where(use_negative, has_negative, True)
    users = np.flatnonzero(sends)
    return users, chosen[users]


class Shuffler(Party):
    """The trusted shuffler: anonymise, shuffle, threshold (crowd-blending), release (§2.5).

    Extension point: :meth:`collect_batch` says where a batch's reports come from (here, one device host's link,
    up to its :class:`CloseBatch`); a subclass may override it (a deployment's shuffler takes several hosts'
    devices, each on a connection of its own, through a durable queue). What is released is decided here.
    """

    def __init__(
        self,
        name: str,
        network: Network,
        *,
        threshold: int | None,
        participation: float,
        n_codes: int | None,
        rng: np.random.Generator,
        ledger: PrivacyLedger,
        omega: float | None = None,
    ) -> None:
        validate(
            None,
            {
                "threshold": NoneOr(Integer(low=1, note="or None for no thresholding")),
                "participation": _DECLARED["participation"].constraint,
                "n_codes": NoneOr(Integer(low=1)),
                "rng": _GENERATOR,
                "ledger": Instance((PrivacyLedger,)),
                "omega": NoneOr(Real(low=0, low_open=True)),
            },
            {"threshold": threshold, "participation": participation, "n_codes": n_codes, "rng": rng,
             "ledger": ledger, "omega": omega},
        )  # fmt: skip
        super().__init__(name, network)
        self.threshold, self.participation, self.n_codes = threshold, participation, n_codes
        self.rng, self.ledger, self.omega = rng, ledger, omega
        """``ledger``: this shuffler's own record of what it received and released."""
        self.last_release: dict[str, float] = {}
        self._held: list[Message] = []

    def collect_batch(self, kind: str) -> list[Message]:
        """The reports of ``kind`` received until the device host closes the batch (senders are not kept), in the
        order the release shuffles. Extension point: a subclass may override it (see the class docstring).

        Reports are held as they arrive; if the close has not come yet (a protocol error here,
        in one process) they stay held for the next call, so no accepted report is lost.
        """
        wanted, held = (kind, CloseBatch.kind), self._held
        while (message := self.receive_one_of(wanted)).kind != CloseBatch.kind:
            held.append(message)
        self._held = []
        return held

    @property
    def held(self) -> int:
        """Reports received for the open batch (not yet closed)."""
        return len(self._held)

    def release_encoded(self, server: str) -> None:
        """Receive the encoded tuples of one batch, drop rare codes, and send the shuffled rest to ``server``.

        The batch is every report received before the device host's :class:`CloseBatch`;
        a batch with a malformed report is refused whole (nothing released, nothing drawn).
        """
        reports = cast("list[EncodedReport]", self.collect_batch(EncodedReport.kind))  # every one of that kind
        # checked before any draw: a malformed report is refused, not truncated to an integer
        codes = self.codes_of(reports)
        actions = _batch_array([r.action for r in reports], "action", None, ">= 0")
        rewards = _batch_array([r.reward for r in reports], "reward", 2, "0 or 1")
        chosen = self.blend(codes)
        self.send(server, EncodedBatch(codes[chosen], actions[chosen], rewards[chosen]))
        self.record_release(len(reports), codes[chosen])

    def codes_of(self, reports: list) -> np.ndarray:
        """The reports' codes, checked: integers in ``[0, n_codes)``."""
        return _batch_array([r.code for r in reports], "code", self.n_codes, f"in [0, n_codes) = [0, {self.n_codes})")

    def blend(self, codes: np.ndarray) -> np.ndarray:
        """Shuffle and threshold a batch by its ``codes`` alone: the indices released, in the shuffled order (one
        permutation of this shuffler's stream; codes seen fewer than ``threshold`` times dropped)."""
        order = self.rng.permutation(len(codes))
        shuffled = codes[order]
        keep = np.ones(len(codes), dtype=bool)
        if self.threshold is not None and len(codes):
            values, counts = np.unique(shuffled, return_counts=True)
            keep = ~np.isin(shuffled, values[counts < self.threshold])
        return order[keep]

    def record_release(self, n_reports: int, released: np.ndarray) -> None:
        """The release's details and this shuffler's ledger entry: ``n_reports`` received, ``released`` codes."""
        crowd = int(np.unique(released, return_counts=True)[1].min()) if released.size else 0
        self.last_release = {
            "received": n_reports,
            "released": int(released.size),
            "dropped": int(n_reports - released.size),
            "threshold": self.threshold or 0,
            "min_released_crowd": crowd,
            "optimal_crowd_u_over_k": crowd_blending.optimal_crowd(n_reports, self.n_codes) if self.n_codes else 0.0,
        }
        epsilon = crowd_blending.epsilon(self.participation)
        delta = None if self.omega is None else crowd_blending.delta(self.participation, crowd, self.omega)
        self.ledger.record(LedgerEntry(SHUFFLED, epsilon, delta, PRIVACY_UNIT, dict(self.last_release)))

    def release_raw(self, server: str) -> None:
        """Non-private baseline: forward one batch of raw tuples anonymised and shuffled, nothing dropped (§5.1)."""
        reports = cast("list[RawReport]", self.collect_batch(RawReport.kind))  # every one of that kind
        n_reports = len(reports)
        actions = _batch_array([r.action for r in reports], "action", None, ">= 0")
        rewards = _batch_array([r.reward for r in reports], "reward", 2, "0 or 1")
        order = self.rng.permutation(n_reports)
        contexts = np.stack([r.context for r in reports])[order] if reports else np.empty((0, 0))
        self.send(server, RawBatch(contexts, actions[order], rewards[order]))
        self.last_release = {"received": n_reports, "released": n_reports, "dropped": 0}
        self.ledger.record(LedgerEntry(RAW_BASELINE, math.inf, None, PRIVACY_UNIT, dict(self.last_release)))


class Server(Party):
    """The analyzer: fits the central disjoint LinUCB model on the batch it receives and publishes it (§2.6).

    Extension point: :meth:`publish` says how a fitted model reaches the new agents (here, sent at once as a
    :class:`ModelRelease`); a subclass may override it (a deployment's server keeps each release for the device
    hosts that fetch it). How a model is fitted is decided here.

    ``participation`` and ``omega`` are the protocol's public parameters p and Ω: with them
    the server states, in its own ledger, the guarantee of each encoded batch it receives
    (ε(p) by Eq. (2), δ from the smallest crowd it sees); without p it claims none (ε = ∞).
    """

    def __init__(
        self,
        name: str,
        network: Network,
        n_arms: int,
        *,
        participation: float | None = None,
        omega: float | None = None,
    ) -> None:
        self.n_arms = check(n_arms, "n_arms", Integer(low=1), "Server")
        check(participation, "participation", NoneOr(Real(low=0, high=1), "not told"), "Server")
        _DECLARED["omega"].check(omega, "omega", "Server")
        super().__init__(name, network)
        self.participation, self.omega = participation, omega
        self.ledger = PrivacyLedger()
        """What this server received: one entry per batch."""
        self.published: list[CodeModel | DisjointModel] = []
        """The models it published, in order (its own copies; new agents rebuild theirs from the messages)."""

    def _record(self, mechanism: str, codes: np.ndarray | None, received: int) -> None:
        """One entry per batch received: its size and, for codes, the smallest crowd and the guarantee under p."""
        details = {"received": received}
        epsilon, delta = math.inf, None  # raw contexts, or p not told: no guarantee
        if codes is not None:
            crowd = details["min_crowd"] = int(np.unique(codes, return_counts=True)[1].min()) if codes.size else 0
            if self.participation is not None:
                epsilon = crowd_blending.epsilon(self.participation)
                if self.omega is not None:
                    delta = crowd_blending.delta(self.participation, crowd, self.omega)
        self.ledger.record(LedgerEntry(mechanism, epsilon, delta, PRIVACY_UNIT, details))

    def publish(self, model: CodeModel | DisjointModel, first: np.ndarray, second: np.ndarray, audience: str) -> None:
        """Make ``model`` (its two arrays ``first``, ``second``: A and b, or counts and reward sums) known to
        ``audience``, and keep it in :attr:`published`. Extension point: a subclass may override it (see the class
        docstring)."""
        self.published.append(model)
        self.send(audience, ModelRelease(first, second))

    def publish_code_model(self, n_codes: int, audience: str) -> None:
        """Fit per-(arm, code) tables on the shuffled encoded batch and send them to ``audience``."""
        batch = self.receive(EncodedBatch)
        model = CodeModel.fit(batch.codes, batch.actions, batch.rewards, self.n_arms, n_codes)
        self._record(SERVER_ENCODED, batch.codes, len(batch.codes))
        self.publish(model, model.counts, model.reward_sums, audience)

    def publish_scalar_code_model(self, audience: str) -> None:
        """Reference-compatible mode (§4.5): fit 1-D LinUCB on the code values of the encoded batch."""
        batch = self.receive(EncodedBatch)
        model = DisjointModel.fit(batch.codes[:, None].astype(float), batch.actions, batch.rewards, self.n_arms)
        self._record(SERVER_ENCODED, batch.codes, len(batch.codes))
        self.publish(model, model.A, model.b, audience)

    def publish_linear_model(self, audience: str, dim: int) -> None:
        """Fit ``A_a = I + Σ x xᵀ``, ``b_a = Σ r x`` on a raw (or scalar-code) batch and send it to ``audience``."""
        batch = self.receive(RawBatch)
        contexts = batch.contexts if len(batch.contexts) else np.empty((0, dim))
        model = DisjointModel.fit(contexts, batch.actions, batch.rewards, self.n_arms)
        self._record(SERVER_RAW, None, len(batch.actions))
        self.publish(model, model.A, model.b, audience)


class NewAgents(Party):
    """New devices joining the system (§2.6): their warm start is the model they rebuild from the
    server's :class:`ModelRelease` message, never the server's own object."""

    def __init__(self, name: str, network: Network, *, server: str = "server") -> None:
        super().__init__(name, network)
        self.server = server

    def receive_model(self, model: type[CodeModel] | type[DisjointModel]) -> CodeModel | DisjointModel:
        """The next published model, as ``model`` (the agents know which model they run): a
        :class:`CodeModel` from counts and reward sums, a :class:`DisjointModel` from A and b."""
        release = self.receive(ModelRelease, self.server)
        return model(release.first, release.second)


class DeviceHost(Party):
    """The devices' side of one batch: many simulated devices, each a party with its own identity
    (``{prefix}{user}``, on the network from its first report), and the host, which closes the batch.

    Its ledger records, per closed batch, how many reports its devices sent to the trusted
    shuffler (inside the trust boundary: no guarantee against the shuffler, ε = ∞).
    """

    def __init__(self, name: str, network: Network, *, prefix: str = "device", mechanism: str = DEVICES) -> None:
        super().__init__(name, network)
        self.prefix, self.mechanism = prefix, mechanism
        self.ledger = PrivacyLedger()
        self.sent = 0
        """Reports sent in the open batch."""
        self._devices: dict[int, Party] = {}

    def send_report(self, user: int, receiver: str, report: Message) -> None:
        """User ``user``'s device sends ``report`` to ``receiver``, as itself."""
        device = self._devices.get(user)
        if device is None:
            device = self._devices[user] = Party(f"{self.prefix}{user}", self.network)
        device.send(receiver, report)
        self.sent += 1

    def close_batch(self, shuffler: str) -> int:
        """Tell ``shuffler`` that the batch is complete; the number of reports it held."""
        sent, self.sent = self.sent, 0
        self.send(shuffler, CloseBatch())
        self.ledger.record(LedgerEntry(self.mechanism, math.inf, None, PRIVACY_UNIT, {"sent": sent}))
        return sent


def compose_ledgers(ledgers: Mapping[str, PrivacyLedger]) -> PrivacyLedger:
    """The protocol's privacy ledger, composed from its parties' own (``ledgers`` by party, in protocol order).

    It holds every release that leaves the trust boundary, once: each shuffler's batch to
    the server (mechanisms ``p2b.raw_baseline`` and ``p2b.shuffler``), in order. Reports
    inside the boundary and the server's receipts are not composed again; they are checked:
    each count a party says it sent (and the smallest crowd released) must equal what the
    next party recorded, batch by batch, or ProtocolError names the disagreement.
    """
    entries = [entry for ledger in ledgers.values() for entry in ledger.entries]
    by_mechanism: dict[str, list[LedgerEntry]] = {}
    for entry in entries:
        by_mechanism.setdefault(entry.mechanism, []).append(entry)
    for (sender, sent), (receiver, received) in _CHECKS:
        said = [entry.details[sent] for entry in by_mechanism.get(sender, [])]
        heard = [entry.details[received] for entry in by_mechanism.get(receiver, [])]
        if said != heard:
            raise ProtocolError(
                f"the parties' ledgers disagree: {sender} {sent} {said}, but {receiver} {received} {heard}"
            )
    composed = PrivacyLedger()
    for entry in entries:
        if entry.mechanism in (RAW_BASELINE, SHUFFLED):
            composed.record(entry)
    return composed


# -- the experiment protocol (spec §2.7) ------------------------------------------------------------
@dataclass(frozen=True)
class SettingResult:
    """Mean and standard deviation over late users of their mean reward over t rounds (spec §2.7).

    Under replay (a partially observed reward table) a user's mean is over its
    rounds with a known reward, and users with none are left out: ``n_users``
    counts the users behind the mean and ``rounds`` their known rounds.
    """

    mean: float
    std: float
    n_users: int
    rounds: int

    @classmethod
    def of(cls, log: PopulationLog) -> SettingResult:
        per_user = log.mean_reward
        measured = ~np.isnan(per_user)
        if not measured.any():
            return cls(math.nan, math.nan, 0, 0)
        values = per_user[measured]
        return cls(float(values.mean()), float(values.std()), int(values.size), int(log.known.sum()))


@dataclass
class P2BOutcome:
    """Cold, warm non-private and warm private results of one simulation, and what was shared."""

    cold: SettingResult
    warm_non_private: SettingResult
    warm_private: SettingResult
    raw_tuples_shared: int
    encoded_tuples_shared: int
    release: dict[str, float]
    ledger: PrivacyLedger
    """The protocol's ledger, composed from the parties' own (:func:`compose_ledgers`)."""
    traffic: Traffic
    ledgers: dict[str, PrivacyLedger] = field(default_factory=dict)
    """Each party's own ledger, by party name."""


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector while devices send (restored afterwards).

    A share phase creates a few live objects per message (report, envelope,
    link counters) and none of them is cyclic garbage, yet every 700
    allocations the collector would rescan them, a large share of a whole
    simulation's time at 2·10^5 messages (``benchmarks/p2b_scale.py``).
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _share(
    devices: DeviceHost,
    shuffler: Shuffler,
    log: PopulationLog,
    seen: np.ndarray,
    config: P2BConfig,
    rng: np.random.Generator,
    private: bool,
) -> int:
    """Devices choose and send their tuples and close the batch; the shuffler releases it to the server.

    ``seen[u, s]`` is what user u's report of its round s carries: the raw
    context (non-private baseline) or the code (P2B). Returns the reports the devices sent.
    """
    users, chosen = choose_reports(log.rewards, config.participation, config.negative_rate, rng)
    report = EncodedReport if private else RawReport
    payloads = seen[users, chosen]
    arms, rewards = log.arms[users, chosen].tolist(), log.rewards[users, chosen].astype(np.int64).tolist()
    with _collector_paused():
        for user, payload, arm, reward in zip(
            users.tolist(), payloads.tolist() if private else list(payloads), arms, rewards, strict=True
        ):
            devices.send_report(user, shuffler.name, report(payload, arm, reward))
        sent = devices.close_batch(shuffler.name)
        if private:
            shuffler.release_encoded("server")
        else:
            shuffler.release_raw("server")
    return sent


def _check_simulation(
    data: UserInteractions, encoder: ContextEncoder, config: P2BConfig, seed: object, network: object
) -> None:
    """The arguments of :func:`simulate`, before any user plays: types, seed, and the encoder's dimension."""
    validate(
        "simulate",
        {"data": Instance((UserInteractions,)), "encoder": Instance((ContextEncoder,)),
         "config": Instance((P2BConfig,)),
         "seed": Instance((int, np.integer, np.random.SeedSequence), "an integer >= 0 or a numpy SeedSequence"),
         "network": NoneOr(Instance((InMemoryNetwork,)), "a fresh in-memory network")},
        {"data": data, "encoder": encoder, "config": config, "seed": seed, "network": network},
    )  # fmt: skip
    if isinstance(seed, bool | np.bool_) or isinstance(seed, int | np.integer) and seed < 0:
        raise InvalidInputError(f"simulate: seed must be an integer >= 0 or a numpy SeedSequence, got {seed!r}")
    if encoder.dim != data.dim:
        raise InvalidInputError(
            f"simulate: encoder.dim must equal data.dim = {data.dim} (the encoder codes the users' contexts), "
            f"got {encoder.dim}"
        )


def private_inputs(
    scalar: bool, early_codes: np.ndarray, late_codes: np.ndarray, n_arms: int, n_codes: int
) -> tuple[np.ndarray, np.ndarray, CodeModel | DisjointModel]:
    """What the private agents see and the cold model they start from: the code as a 1-d context of a
    disjoint LinUCB (``scalar``, the reference code's mode), or the code itself for per-(arm, code) tables."""
    if scalar:
        return early_codes[..., None].astype(float), late_codes[..., None].astype(float), DisjointModel.cold(n_arms, 1)
    return early_codes, late_codes, CodeModel.cold(n_arms, n_codes)


def simulate(
    data: UserInteractions,
    encoder: ContextEncoder,
    config: P2BConfig,
    seed: int | np.random.SeedSequence,
    *,
    network: InMemoryNetwork | None = None,
) -> P2BOutcome:
    """One P2B simulation: cold, warm non-private and warm private late users (spec §2.7).

    Early users (the first ``early_fraction``) run cold agents for t rounds on
    raw contexts, share one raw tuple each with probability p, and the server
    fits the non-private model; they run again on encoded contexts and share
    one encoded tuple through the thresholding shuffler for the private model.
    Late users are then measured cold, warm from the non-private model and warm
    (on codes) from the private one. Every tuple crosses the message layer, and
    each party acts only on the messages it receives: the shuffler counts its
    batch, new agents rebuild each model from the server's release.

    ``network``: the in-memory network the parties talk on (default a fresh one;
    ``InMemoryNetwork(serialize=True)`` sends every message as bytes). Every message
    sent is received by the end of the run.
    """
    _check_simulation(data, encoder, config, seed, network)
    early, late = data.split(config.early_fraction)
    sequence = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    streams = [np.random.default_rng(child) for child in sequence.spawn(9)]
    run: dict[str, Any] = dict(alpha=config.alpha, tie_break=config.tie_break)
    n_arms, dim = data.n_actions, data.dim
    network = InMemoryNetwork() if network is None else network
    server = Server("server", network, n_arms, participation=config.participation, omega=config.omega)
    new_agents = NewAgents("new_agents", network, server=server.name)

    # Non-private baseline: raw tuples, anonymised and shuffled, no thresholding (§5.1 setting 2).
    raw_devices = DeviceHost("raw-devices", network, prefix="raw-device", mechanism=RAW_DEVICES)
    raw_shuffler = Shuffler(
        "raw_shuffler",
        network,
        threshold=None,
        participation=config.participation,
        n_codes=None,
        rng=streams[0],
        ledger=PrivacyLedger(),
    )
    early_raw = run_population(
        DisjointModel.cold(n_arms, dim), early.contexts, early.reward_table, rng=streams[1], **run
    )
    with network.phase("share_raw"):
        raw_shared = _share(raw_devices, raw_shuffler, early_raw, early.contexts, config, streams[2], private=False)
        server.publish_linear_model(new_agents.name, dim)
        non_private_model = new_agents.receive_model(DisjointModel)
    cold = run_population(DisjointModel.cold(n_arms, dim), late.contexts, late.reward_table, rng=streams[3], **run)
    warm_np = run_population(
        non_private_model,
        late.contexts,
        late.reward_table,
        rng=streams[4],
        shared_agent=config.shared_warm_agent,
        **run,
    )

    # P2B: encoded contexts, thresholding shuffler (§5.1 setting 3).
    early_codes = np.asarray(encoder.encode(early.contexts.reshape(-1, dim))).reshape(early.n_users, -1)  # a batch
    late_codes = np.asarray(encoder.encode(late.contexts.reshape(-1, dim))).reshape(late.n_users, -1)
    scalar = config.representation is Representation.SCALAR_CODE
    devices = DeviceHost("devices", network, prefix="device", mechanism=DEVICES)
    shuffler = Shuffler(
        "shuffler",
        network,
        threshold=config.threshold,
        participation=config.participation,
        n_codes=encoder.n_codes,
        rng=streams[5],
        ledger=PrivacyLedger(),
        omega=config.omega,
    )
    early_seen, late_seen, cold_private = private_inputs(scalar, early_codes, late_codes, n_arms, encoder.n_codes)
    early_private = run_population(cold_private, early_seen, early.reward_table, rng=streams[6], **run)
    with network.phase("share_encoded"):
        encoded_shared = _share(devices, shuffler, early_private, early_codes, config, streams[7], private=True)
        if scalar:
            server.publish_scalar_code_model(new_agents.name)
            private_model = new_agents.receive_model(DisjointModel)
        else:
            server.publish_code_model(encoder.n_codes, new_agents.name)
            private_model = new_agents.receive_model(CodeModel)
    warm_p = run_population(
        private_model, late_seen, late.reward_table, rng=streams[8], shared_agent=config.shared_warm_agent, **run
    )
    ledgers = {party.name: party.ledger for party in (raw_devices, raw_shuffler, devices, shuffler, server)}
    return P2BOutcome(
        cold=SettingResult.of(cold),
        warm_non_private=SettingResult.of(warm_np),
        warm_private=SettingResult.of(warm_p),
        raw_tuples_shared=raw_shared,
        encoded_tuples_shared=encoded_shared,
        release=dict(shuffler.last_release),
        ledger=compose_ledgers(ledgers),
        traffic=network.traffic,
        ledgers=ledgers,
    )
