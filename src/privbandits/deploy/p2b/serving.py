"""P2B under ``privbandits serve``: the trusted shuffler and the server as services (issue 46).

Neither has an application of its own: each is a plain :class:`~privbandits.serve.role.ServedRole` (health, ledger,
metrics) that serves the other parties, on a loop thread its :meth:`~ServedShuffler.start` begins. The devices are
:class:`~privbandits.deploy.p2b.agent.DeviceAgent` objects that applications embed; every exchange is one message on
a mutual-TLS connection of its own (:mod:`~privbandits.deploy.p2b.served_wire`), so the parties start in any order.

* :class:`ServedShuffler` takes the devices' encoded reports (a device presents its host's certificate and names
  itself ``HOST-deviceUSER``: the admission of ``deploy``'s device front end), checks each against the protocol
  (code in ``[0, n_codes)``, action in ``[0, n_actions)``, reward 0 or 1), stores it in its durable report queue
  (:mod:`privbandits.protocols.p2b.queue`, keyed by a keyed hash of the device, one report per device per batch)
  and only then acknowledges it. A batch closes once it holds ``protocol.batch_size`` reports, or
  ``protocol.batch_window_s`` seconds (default :data:`DEFAULT_WINDOW_S`) after its first report; the protocol's
  :class:`~privbandits.protocols.p2b.core.Shuffler` then puts it in the canonical order (device host in file order,
  users ascending, as ``deploy``), shuffles it with its own stream and drops rare codes (crowd-blending). The
  release, the next batch's fresh report-id key and the stream's state are saved in one atomic checkpoint before the
  queue marks the batch released; the batch then goes to the server, again until it is acknowledged.
* :class:`ServedServer` takes numbered batches from the shuffler only, fits each with the protocol's
  :class:`~privbandits.protocols.p2b.core.Server` and adds it to the published model (version 1, 2, ...: the
  tables of every batch so far), saved atomically before it acknowledges the batch (a batch sent again is
  acknowledged, not taken again). Devices fetch the latest model (:class:`~privbandits.deploy.p2b.messages.FetchModel`
  version 0) and get a :class:`~privbandits.deploy.p2b.messages.ServedModel`.

Randomness: each batch's permutation from a fresh OS seed of its own, never saved (so nothing left regenerates a
released batch's order); with the deployment's ``reproducible = true``, from stream 5 of ``protocol.seed`` as
:func:`~privbandits.protocols.p2b.core.simulate` (so a replay equals ``deploy local``).

Sealed reports (:mod:`~privbandits.deploy.p2b.sealing`): a device seals its action and reward to the server's HPKE
public key (which comes with the model a device fetches, or alone while none is published); the shuffler's queue holds
each report's code and ciphertext only, and the server opens the reports of each batch it is delivered.
``raw_baseline`` is an experiment of ``deploy`` and is not served. Not served either: ``shuffler_front`` parties.
"""

from __future__ import annotations

import logging
import math
import secrets
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

from privbandits.comm import InMemoryNetwork, Message
from privbandits.deploy import checkpoint
from privbandits.deploy.deployment import Deployment
from privbandits.deploy.p2b import sealing
from privbandits.deploy.p2b.admission import Admission
from privbandits.deploy.p2b.data import p2b_protocol
from privbandits.deploy.p2b.messages import FetchModel, NumberedBatch, SealedBatch, SealedReport, ServedModel
from privbandits.deploy.p2b.rejoin import canonical_order, report_id
from privbandits.deploy.p2b.roles import release_sealed, sealed_report
from privbandits.deploy.p2b.sealing import check_sealed
from privbandits.deploy.p2b.section import P2BProtocol
from privbandits.deploy.p2b.served_wire import (
    Incoming,
    Refusal,
    Unreachable,
    exchange,
    next_incoming,
    party_network,
)
from privbandits.deploy.p2b.session import N_STREAMS
from privbandits.privacy.ledger import PrivacyLedger
from privbandits.protocols.p2b.core import EncodedBatch, Server, Shuffler
from privbandits.serve.role import JsonObject, ServedRole

log = logging.getLogger("privbandits.serve.p2b")

DEFAULT_WINDOW_S = 60.0
"""Seconds after its first report a served batch closes when the deployment sets neither ``batch_size`` nor
``batch_window_s``."""
POLL_S = 0.1
"""How often a loop looks up from its listener (to close a batch, deliver one, or stop)."""
DELIVER_S = 5.0
"""Seconds the shuffler gives the server to take a batch before it tries again (after a pause up to
``protocol.rejoin_backoff_s``)."""
SHUFFLER_STREAM = 5
"""The shuffler's stream of :func:`~privbandits.protocols.p2b.core.simulate`: its permutations."""


def serving_role(deployment: Deployment[P2BProtocol], name: str) -> ServedRole | None:
    """Party ``name`` under ``privbandits serve``: the shuffler, the server, or a device host serving its users'
    devices over HTTP (:class:`~privbandits.deploy.p2b.device_host.ServedDeviceHost`; an application may instead embed
    each device, :class:`~privbandits.deploy.p2b.agent.DeviceAgent`); None for a front end."""
    role = deployment.parties[name].role
    if role == "shuffler":
        return ServedShuffler(deployment, name)
    if role == "server":
        return ServedServer(deployment, name)
    if role == "device_host":
        from privbandits.deploy.p2b.device_host import ServedDeviceHost

        return ServedDeviceHost(deployment, name)
    return None


def state_path(deployment: Deployment, name: str) -> Path:
    """A served party's own state beside its serve store (atomic checkpoint, written before it acknowledges)."""
    return Path(deployment.output) / f"{name}.serve-state.npz"


def generator(state: dict | None, deployment: Deployment[P2BProtocol], stream: int) -> np.random.Generator:
    """A party's generator: restored from ``state``, else fresh (stream ``stream`` of the seed when reproducible)."""
    if state is not None:
        rng = np.random.Generator(np.random.PCG64())
        rng.bit_generator.state = state
        return rng
    if deployment.reproducible:
        return np.random.default_rng(np.random.SeedSequence(p2b_protocol(deployment).seed).spawn(N_STREAMS)[stream])
    return np.random.default_rng(secrets.randbits(256))


class _Looping(ServedRole):
    """A served party with a listener and a loop thread (:meth:`step`), started by :meth:`start`."""

    def __init__(self, deployment: Deployment[P2BProtocol], name: str) -> None:
        self.deployment, self.name, self.protocol = deployment, name, p2b_protocol(deployment)
        self.hosts = deployment.names("device_host")
        self.lock = threading.Lock()
        self.network: Any = None
        self.thread: threading.Thread | None = None
        self.running = False
        self.failures = 0

    def identity(self) -> str:
        return f"p2b-{self.kind}:{self.name}:{self.deployment.protocol_digest()}"

    def start(self) -> None:
        self.load()
        self.network = party_network(self.deployment, self.name, listen=True).connect()
        self.running = True
        self.thread = threading.Thread(target=self._loop, name=f"p2b-{self.name}", daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.running = False
        if self.thread is not None:
            self.thread.join()
        if self.network is not None:
            self.network.close_sockets()

    def _loop(self) -> None:
        while self.running:
            try:
                self.step()
            except Exception:  # one bad exchange never ends the service: logged, counted, and it goes on
                self.failures += 1
                log.exception("%s: a step of the loop failed", self.name)
                time.sleep(POLL_S)

    def load(self) -> None:
        """Read the party's saved state (or begin afresh)."""

    def step(self) -> None:
        """One pass of the loop."""


class ServedShuffler(_Looping):
    """The trusted shuffler as a service (see the module docstring)."""

    kind = "shuffler"

    def __init__(self, deployment: Deployment[P2BProtocol], name: str) -> None:
        super().__init__(deployment, name)
        self.server = deployment.names("server")[0]
        protocol = self.protocol
        self.batch_size = protocol.batch_size
        window = protocol.batch_window_s
        self.window_s = window if window is not None else (math.inf if protocol.batch_size else DEFAULT_WINDOW_S)
        self.counts = {"accepted": 0, "duplicates": 0, "refused": 0, "released_batches": 0, "delivered_batches": 0}
        self.outbox: dict[int, NumberedBatch] = {}
        self.admission = Admission.of(deployment, served=True)
        """The devices it takes reports from (:mod:`~privbandits.deploy.p2b.admission`)."""
        self.arrivals: dict[str, int] = {}
        self.first_at: float | None = None
        self.next_try = 0.0
        self.pause = 0.05

    # -- state -------------------------------------------------------------------------------------------------------
    def load(self) -> None:
        from privbandits.protocols.p2b.queue import open_report_queue

        protocol = self.protocol  # the deployment's PostgreSQL queue where it names one (a schema apart from deploy's)
        where = protocol.queue_url or Path(self.deployment.output) / "queues" / f"{self.name}.serve.sqlite"
        self.queue = open_report_queue(where, schema=f"{self.name}_serve", n_codes=protocol.n_codes,
                                       n_arms=protocol.n_actions)  # fmt: skip
        saved = checkpoint.load(state_path(self.deployment, self.name))
        ledger = PrivacyLedger()
        if saved is None:
            self.key, self.batch_id, rng = secrets.token_bytes(32), self.queue.next_batch_id(), generator(
                None, self.deployment, SHUFFLER_STREAM)  # fmt: skip
        else:
            arrays, meta = saved
            self.key, self.batch_id = arrays["key"].tobytes(), int(meta["batch_id"])
            rng = generator(meta["rng"], self.deployment, SHUFFLER_STREAM)
            ledger.record_rows(meta["ledger"])
            self.counts.update(meta["counts"])
            self.outbox = {int(n): NumberedBatch(int(n), *(arrays[f"{n}.{f}"] for f in ("codes", "sealed")))
                           for n in meta["outbox"]}  # fmt: skip
            for number in range(self.batch_id):
                self.queue.mark_released(number)  # saved released, the queue told or not before a stop
        self.shuffler = _QueueShuffler(self, rng, ledger)
        self.order = canonical_order(self.key, self.deployment)
        self.open_reports = self.queue.held()
        self.counts["accepted"] += self.open_reports  # accepted since the last save: exactly the held ones
        self.first_at = time.monotonic() if self.open_reports else None  # a restart opens the window again
        if saved is None:
            self.save()  # the key before any report is stored under it: a device sending again is known after a stop

    def save(self) -> None:
        """The shuffler's state, atomically: its key, next batch, stream, undelivered batches, ledger, counts."""
        arrays = {"key": np.frombuffer(self.key, dtype=np.uint8)}
        for number, batch in self.outbox.items():
            arrays |= {f"{number}.{field}": getattr(batch, field) for field in ("codes", "sealed")}
        rng = self.shuffler.rng.bit_generator.state if self.deployment.reproducible else None  # (a past one's state
        # would regenerate its permutation: PCG64 steps back as well as forward)
        meta = {"batch_id": self.batch_id, "rng": rng, "outbox": list(self.outbox),
                "ledger": self.shuffler.ledger.rows(),
                "counts": self.counts | {"accepted": self.counts["accepted"] - self.open_reports},  # held: the queue's
                "digest": self.deployment.protocol_digest()}  # fmt: skip
        checkpoint.save(state_path(self.deployment, self.name), arrays, meta)

    # -- the loop ----------------------------------------------------------------------------------------------------
    def step(self) -> None:
        self._deliver()
        if self.open_reports and (
            (self.batch_size is not None and self.open_reports >= self.batch_size)
            or time.monotonic() - (self.first_at or 0.0) >= self.window_s
        ):
            self._release()
        incoming = next_incoming(self.network, self.hosts, POLL_S)
        if incoming is not None:
            self._take(incoming)

    def _take(self, incoming: Incoming) -> None:
        """A device's report: checked, stored (then acknowledged), or refused naming why."""
        from privbandits.validation import InvalidInputError

        report, sender = incoming.message, incoming.envelope.sender
        if not isinstance(report, SealedReport):
            self.counts["refused"] += 1
            return incoming.refuse(f"a device sends one {SealedReport.kind!r} message; got {report.kind!r}")
        refusal = self.admission.check(incoming.party, sender) or check_sealed(report)
        if refusal is not None:  # not a device the deployment gives this host, or a malformed report
            self.counts["refused"] += 1
            return incoming.refuse(refusal)
        rid = report_id(self.key, sender)
        try:
            new = self.queue.accept_sealed(rid, sender, report.code, report.sealed.tobytes())
        except InvalidInputError as exc:  # a field out of range, or another report of this device in this batch
            self.counts["refused"] += 1
            if "already accepted" in str(exc):
                return incoming.refuse(self.admission.refuse("duplicate", f"{exc} (one report per device per "
                                                             "batch)"))  # fmt: skip
            return incoming.refuse(str(exc))
        with self.lock:
            if new:
                self.counts["accepted"] += 1
                self.open_reports += 1
                self.arrivals[rid] = len(self.arrivals)
                self.first_at = self.first_at if self.first_at is not None else time.monotonic()
            else:
                self.counts["duplicates"] += 1
        return incoming.ack()

    def _release(self) -> None:
        """Close the open batch: order, shuffle, threshold (the protocol's shuffler), save, then mark it released."""
        number = self.batch_id
        if not self.deployment.reproducible:  # each batch's permutation from a seed of its own, never saved
            self.shuffler.rng = np.random.default_rng(secrets.randbits(256))
        release_sealed(self.shuffler, self.server)
        with self.lock:
            assert self.shuffler.release is not None
            self.outbox[number] = self.shuffler.release
            self.batch_id += 1
            self.counts["released_batches"] += 1
            self.key, self.arrivals, self.open_reports, self.first_at = secrets.token_bytes(32), {}, 0, None
            self.save()  # the release, the next batch's key and the stream's state, before anything else
        self.queue.mark_released(number)
        self.order = canonical_order(self.key, self.deployment)
        self.next_try = 0.0

    def _deliver(self) -> None:
        """Send the oldest undelivered batch to the server (until it acknowledges; pausing after a failure)."""
        if not self.outbox or time.monotonic() < self.next_try:
            return
        number = min(self.outbox)
        try:
            exchange(self.network, f"{self.name}-release", self.server, self.outbox[number], DELIVER_S)
        except (Unreachable, Refusal) as exc:
            log.warning("%s: batch %d not delivered yet: %s", self.name, number, exc)
            self.next_try = time.monotonic() + self.pause
            self.pause = min(2 * self.pause, self.protocol.rejoin_backoff_s)
            return
        with self.lock:
            del self.outbox[number]
            self.counts["delivered_batches"] += 1
            self.save()
        self.pause = 0.05

    def rank(self, rid: str) -> tuple:
        """A report's place in the canonical batch: known devices by user number, then the others as they came."""
        user = self.order.get(rid)
        return (0, user, "") if user is not None else (1, self.arrivals.get(rid, math.inf), rid)

    # -- views -------------------------------------------------------------------------------------------------------
    @property
    def model_version(self) -> int:
        return self.counts["released_batches"]

    def ledger(self) -> JsonObject:
        from privbandits.privacy import crowd_blending

        with self.lock:
            return {
                "privacy": "each device report: pre-sampled with p, crowd-blended with threshold l (spec §3)",
                "epsilon_per_report": crowd_blending.epsilon(self.protocol.participation),
                "participation": self.protocol.participation,
                "threshold": self.protocol.threshold,
                "reports": dict(self.counts),
                "refused_devices": dict(self.admission.refused),
                "open_batch": {"batch": self.batch_id, "reports": self.open_reports},
                "undelivered_batches": sorted(self.outbox),
                "releases": self.shuffler.ledger.rows(),
                "dropped_connections": self.network.dropped_count if self.network is not None else 0,
            }

    def privacy_spent(self) -> dict[str, float]:
        from privbandits.privacy import crowd_blending

        return {"epsilon_per_report": crowd_blending.epsilon(self.protocol.participation)}


class ServedServer(_Looping):
    """The server as a service (see the module docstring): batches from the shuffler only, models to devices."""

    kind = "server"

    def __init__(self, deployment: Deployment[P2BProtocol], name: str) -> None:
        super().__init__(deployment, name)
        self.shuffler = deployment.names("shuffler")[0]
        self.version, self.batches = 0, 0
        self.numbers: set[int] = set()
        self.first: np.ndarray | None = None
        self.second: np.ndarray | None = None
        self.private = b""
        """Its HPKE private key (:mod:`~privbandits.deploy.p2b.sealing`)."""
        self.unopened = 0
        """Released reports whose sealed content did not open (dropped, counted, logged)."""

    def load(self) -> None:
        self.fitter = _FittingServer(self)
        saved = checkpoint.load(state_path(self.deployment, self.name))
        if saved is None:  # its HPKE key pair, from OS entropy, kept (0600) before any device may seal to it
            self.private = sealing.new_private_key()
            self.save()
            return
        arrays, meta = saved
        self.private = arrays["private"].tobytes()
        self.version, self.numbers = int(meta["version"]), {int(n) for n in meta["numbers"]}
        self.fitter.ledger.record_rows(meta["ledger"])
        if self.version:
            self.first, self.second = arrays["first"], arrays["second"]

    def save(self) -> None:
        arrays = {} if self.first is None or self.second is None else {"first": self.first, "second": self.second}
        arrays["private"] = np.frombuffer(self.private, dtype=np.uint8)
        meta = {"version": self.version, "numbers": sorted(self.numbers), "ledger": self.fitter.ledger.rows(),
                "digest": self.deployment.protocol_digest()}  # fmt: skip
        checkpoint.save(state_path(self.deployment, self.name), arrays, meta)

    def step(self) -> None:
        incoming = next_incoming(self.network, [self.shuffler, *self.hosts], POLL_S)
        if incoming is None:
            return
        message = incoming.message
        if incoming.party == self.shuffler and isinstance(message, NumberedBatch):
            self._absorb(incoming, message)
        elif incoming.party in self.hosts and isinstance(message, FetchModel):
            self._answer(incoming, message)
        else:
            incoming.refuse(f"the server takes {NumberedBatch.kind!r} from {self.shuffler!r} and {FetchModel.kind!r} "
                            f"from devices; got {message.kind!r} from a connection of {incoming.party!r}")  # fmt: skip

    def _absorb(self, incoming: Incoming, batch: NumberedBatch) -> None:
        """Fit the batch (the protocol's server), add it to the model, save, then acknowledge; once per number."""
        if batch.number in self.numbers:
            return incoming.ack()
        problem = check_batch(batch, self.protocol)
        if problem is not None:
            return incoming.refuse(problem)
        opened, unopened = sealing.open_batch(sealing.Opener(self.private), batch.codes, batch.sealed,
                                              self.protocol.n_actions)  # fmt: skip
        self.unopened += unopened
        fitted = self.fitter.fit(opened)
        with self.lock:
            self.first, self.second = self._merged(*fitted)
            self.version += 1
            self.numbers.add(batch.number)
            self.save()
        return incoming.ack()

    def _merged(self, first: np.ndarray, second: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The published model plus a batch's fit: the sums of every batch so far (the first batch's fit as it is)."""
        if self.first is None or self.second is None:
            return first, second
        if self.protocol.representation == "scalar_code":  # A = I + Σ x xᵀ: the prior once
            return self.first + (first - np.eye(first.shape[1])[None]), self.second + second
        return self.first + first, self.second + second

    def _answer(self, incoming: Incoming, fetch: FetchModel) -> None:
        """The latest model to a device (version 0, or the latest's number); refused while none is published."""
        with self.lock:
            version, first, second = self.version, self.first, self.second
        public = sealing.public_key(self.private)
        if first is None or second is None:  # none published yet: its key alone (version 0, no arrays)
            return incoming.reply(ServedModel(0, np.empty(0), np.empty(0), public))
        if fetch.version not in (0, version):
            return incoming.refuse(f"version must be 0 (the latest) or {version} (the latest), got {fetch.version}")
        return incoming.reply(ServedModel(version, first, second, public))

    @property
    def model_version(self) -> int:
        return self.version

    def ledger(self) -> JsonObject:
        with self.lock:
            return {
                "privacy": "receives only the shuffler's crowd-blended batches (ε per device report as they say)",
                "models_published": self.version,
                "batches": sorted(self.numbers),
                "unopened_reports": self.unopened,
                "received": self.fitter.ledger.rows(),
                "dropped_connections": self.network.dropped_count if self.network is not None else 0,
            }


def check_batch(batch: NumberedBatch, protocol: P2BProtocol) -> str | None:
    """Why the shuffler's ``batch`` cannot be taken (its number, an array's shape, type or range), or None."""
    if type(batch.number) is not int or batch.number < 0:
        return f"number must be an integer >= 0, got {batch.number!r}"
    codes, sealed = np.asarray(batch.codes), np.asarray(batch.sealed)
    if codes.ndim != 1 or codes.dtype.kind not in "iu":
        return f"codes must be a 1-d array of integers, got shape {codes.shape} of dtype {codes.dtype}"
    if codes.size and (codes.min() < 0 or codes.max() >= protocol.n_codes):
        return f"codes must be in [0, {protocol.n_codes}), got values in [{codes.min()}, {codes.max()}]"
    if sealed.dtype != np.uint8 or sealed.shape != (codes.size, sealing.SEALED_BYTES):
        return (f"sealed must be a ({codes.size}, {sealing.SEALED_BYTES}) uint8 array (a sealed report per code), "
                f"got shape {sealed.shape} of dtype {sealed.dtype}")  # fmt: skip
    return None


class _FittingServer(Server):
    """The protocol's server, fed one batch at a time (its fit and its ledger; publishing is the role's)."""

    def __init__(self, role: ServedServer) -> None:
        protocol = role.protocol
        super().__init__(role.name, InMemoryNetwork(), protocol.n_actions, participation=protocol.participation,
                         omega=protocol.omega)  # fmt: skip
        self.protocol = protocol
        self.incoming: EncodedBatch | None = None
        self.fitted: tuple[np.ndarray, np.ndarray] | None = None

    def fit(self, batch: EncodedBatch) -> tuple[np.ndarray, np.ndarray]:
        self.incoming = batch
        if self.protocol.representation == "scalar_code":
            self.publish_scalar_code_model("devices")
        else:
            self.publish_code_model(self.protocol.n_codes, "devices")
        assert self.fitted is not None
        return self.fitted

    def receive(self, kind, sender=None):  # type: ignore[override]  # the batch the role hands over
        return self.incoming

    def publish(self, model, first: np.ndarray, second: np.ndarray, audience: str) -> None:
        self.fitted = (first, second)


class _QueueShuffler(Shuffler):
    """The protocol's shuffler over the served queue: a batch is formed in the queue (identities dropped there) and put
    in the canonical order; its release is kept for the role, which saves it and delivers it until acknowledged."""

    def __init__(self, role: ServedShuffler, rng: np.random.Generator, ledger: PrivacyLedger) -> None:
        protocol = role.protocol
        super().__init__(role.name, InMemoryNetwork(), threshold=protocol.threshold,
                         participation=protocol.participation, n_codes=protocol.n_codes, rng=rng, ledger=ledger,
                         omega=protocol.omega)  # fmt: skip
        self.role = role
        self.release: NumberedBatch | None = None

    def collect_batch(self, kind: str) -> list[Message]:
        role = self.role
        batch = role.queue.close_batch(role.batch_id)
        rows = sorted(zip(batch.report_ids, batch.codes, batch.sealed, strict=True), key=lambda row: role.rank(row[0]))
        return [sealed_report(code, sealed) for _, code, sealed in rows]

    def send(self, receiver: str, message: Message) -> None:
        assert isinstance(message, SealedBatch)
        self.release = NumberedBatch(self.role.batch_id, message.codes, message.sealed)
