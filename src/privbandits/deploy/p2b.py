"""P2B as separate party processes: device hosts, the trusted shuffler and the server (issue 17, step 2).

Each party runs the party classes of :mod:`privbandits.protocols.p2b` on its own
:class:`~privbandits.comm.TlsNetwork`:

* ``device_host`` (one or more): simulates the devices of its own users and holds only
  their data (``.npz``: ``early_contexts`` (n_e, t, d), ``early_rewards`` (n_e, t, K) of
  0/1, ``late_contexts``, ``late_rewards``). Its early users play cold and send one encoded
  tuple each with probability p to the shuffler (with ``protocol.raw_baseline``, first one raw
  tuple each: the non-private baseline, which hands raw contexts to the server), and the
  host closes each batch with :class:`~privbandits.protocols.p2b.CloseBatch`; its late users
  then play cold, warm from the private model (and from the non-private one), each
  model rebuilt from the server's :class:`~privbandits.protocols.p2b.ModelRelease`. Over TLS
  each device sends its report on a connection of its own (:mod:`privbandits.comm.oneshot`),
  named ``HOST-deviceUSER`` and vouched for by its host's certificate, and waits for the
  shuffler's acknowledgement (sent once the report is stored); a device whose connection
  ends half-way loses only its own report (the shuffler drops the connection, says why in
  its result's ``dropped``, and goes on).
* ``shuffler``: holds nothing but what it receives; the only party that sees a device's
  identity next to its report. It keeps its listener open for the devices' connections, taken
  by ``protocol.workers`` processes side by side (:mod:`~privbandits.deploy.p2b_front`; with
  ``workers = 0`` by the shuffler itself, one at a time, host by host). It opens each batch with
  :class:`BatchOpen` to every host; each host's :class:`~privbandits.protocols.p2b.CloseBatch`, on
  its party link, sent once its devices' reports are acknowledged, ends its part. The batch is
  put in a canonical order, (device host, user number of the device), before its seeded shuffle,
  so the processes' interleaving cannot change a batch. A batch closes when every host has closed
  it, or earlier once it holds ``protocol.batch_size`` reports or ``protocol.batch_window_s``
  seconds after it opened: later devices are refused (their reports are lost, the session goes
  on, and the run then differs from the in-memory one, which has no such limits). It then
  thresholds (crowd-blending) and sends the batch to the server, and to no one
  else. Encoded reports pass through its durable :class:`~privbandits.protocols.p2b_queue.ReportQueue`
  (``OUTPUT/queues/NAME.sqlite``): each is persisted with its device's identity as it arrives (in
  group commits) and acknowledged once durable; the batch is formed there (identities dropped) and
  marked released once sent. Raw baseline
  reports (contexts) are not queued.
* ``server``: holds nothing private; it accepts batches from the shuffler only, fits the
  central model and publishes it, versions numbered in the order published (the raw baseline's
  first, if it runs, then the private one); each device host fetches each version
  (:class:`FetchModel`) and the server answers once it is published.

Reproducing the in-memory run. The users are split into contiguous blocks: device host j holds
the j-th block of the early users and the j-th block of the late users
(:func:`~privbandits.deploy.p2b_data.layout`), so the canonical batch order is the in-memory
order (users ascending). Each party takes the nine streams of
:func:`~privbandits.protocols.p2b.simulate` from its own root seed (:func:`streams_of`): by
default fresh OS entropy, so no other party (the server above all) can recompute a device's
participation, negative-report or tuple-choice coin, an agent's tie-break or the shuffler's
permutation; with the deployment's ``reproducible = true``, ``protocol.seed``, exactly as
``simulate`` does. A host skips the draws of the users before its block (a population's
tie-break draws are user-major) and makes its participation draws over the whole early
population (padding the other hosts' users, which never send). So, in reproducible mode, the
released batches, the published models and the late users' rewards equal ``simulate(data,
encoder, config, seed)`` on the union of the hosts' data
(:func:`~privbandits.deploy.p2b_outcome.run_in_memory`, which also says what is compared when
the raw baseline is off); anyone holding the file can then recompute every coin
(``tests/test_deploy_attacks.py``): for tests and demos only.

``shared_warm_agent`` (one agent carried across all late users) is sequential across hosts
and is not offered here.

Faults and ``--resume``: a party that dies makes the others stop naming it (exit 3), as in the
other deployments. The server checkpoints each model it publishes (``OUTPUT/checkpoints``),
which is its acknowledgement of the batch; the shuffler's checkpoint holds its private key for
report ids and its session's batch id. Restarted with ``--resume``, the server tells everyone
how many models it has published (a ``resume`` phase); every phase is then replayed: the hosts
resend the same reports in the same order (their streams derive from the seed, or from the OS
seed each host and the shuffler keep in their own entropy file,
:mod:`privbandits.deploy.entropy`), the shuffler's queue keeps each encoded report once (its id
is a keyed hash of the batch and the device's name, so a report accepted before the stop is recognised and
nothing accepted is lost), a batch formed before the stop is taken back unchanged, and a batch
whose model is already published is not sent again: the server serves that model from its
checkpoint instead. The session then ends as the uninterrupted one (``tests/test_deploy_p2b.py``
kills the shuffler while it accepts the encoded batch). Every party restarts, since the
transport has no reconnection: a shuffler restarting alone while devices stay connected is not
offered.
"""

from __future__ import annotations

import secrets
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from privbandits.comm import Message, Network, ProtocolError, message
from privbandits.deploy import checkpoint, entropy
from privbandits.deploy.deployment import Deployment, DeploymentError, P2BProtocol
from privbandits.deploy.p2b_data import Block, HostData, load_host
from privbandits.deploy.p2b_data import p2b_protocol as _protocol
from privbandits.deploy.p2b_data import write_synthetic_data as write_synthetic_data  # `deploy data`

SHARE_RAW, SHARE_ENCODED = "share_raw", "share_encoded"
"""Phases, as in :func:`~privbandits.protocols.p2b.simulate`."""
RESUME = "resume"
"""Phase of a resumed session in which the server says how many models it has published."""
RAW_WARNING = (
    "WARNING: raw_baseline = true: every participating device sends a raw context, action and reward to the "
    "server (the non-private baseline, no privacy for them)"
)


@message("deploy.p2b.resume_at")
class ResumeAt(Message):
    """Server → shuffler and device hosts, only in a resumed session: how many of the session's models
    (the raw baseline's if it runs, then the private one) it has published; the session replays those phases
    without their batch to the server (the server serves each published model from its checkpoint instead)."""

    published: int


@message("deploy.p2b.fetch_model")
class FetchModel(Message):
    """Device host → server: send me model ``version`` (numbered in the order published: the raw baseline's
    first if it runs, then the private one) once it is published (the server answers with a
    :class:`~privbandits.protocols.p2b.ModelRelease`)."""

    version: int


@message("deploy.p2b.batch_open")
class BatchOpen(Message):
    """Shuffler → a device host: its devices may now send this batch's reports (hosts take turns, in deployment
    order, so the batch's arrival order is canonical)."""


N_STREAMS = 9


# -- shared settings --------------------------------------------------------------------------------
def config_of(protocol: P2BProtocol):
    """The :class:`~privbandits.protocols.p2b.P2BConfig` the deployment runs (no shared warm agent)."""
    from privbandits.protocols.p2b import P2BConfig

    return P2BConfig(
        participation=protocol.participation,
        negative_rate=protocol.negative_rate,
        threshold=protocol.threshold,
        alpha=protocol.alpha,
        early_fraction=protocol.early_fraction,
        representation=protocol.representation,
        shared_warm_agent=False,
        tie_break=protocol.tie_break,
        omega=protocol.omega,
    )


def encoder_of(protocol: P2BProtocol):
    """The public k-means encoder (d, q, k, seed), from the on-disk cache or fitted."""
    from privbandits.privacy.encoding import load_or_fit_encoder

    try:
        return load_or_fit_encoder(protocol.dim, protocol.precision, protocol.n_codes, seed=protocol.encoder_seed)
    except ValueError as exc:
        raise DeploymentError(f"protocol: no encoder for dim, precision, n_codes: {exc}") from None


def streams_of(deployment: Deployment, name: str, *, resume: bool = False) -> list[np.random.Generator]:
    """Party ``name``'s nine streams of :func:`~privbandits.protocols.p2b.simulate` (it uses its own ones): from
    its OS seed, kept in its own entropy file for ``--resume``, or in reproducible mode from ``protocol.seed``."""
    reproducible = np.random.SeedSequence(_protocol(deployment).seed)
    root = entropy.seed_sequence(deployment, name, reproducible, keep=True, resume=resume)
    return [np.random.default_rng(child) for child in root.spawn(N_STREAMS)]


def phases(protocol: P2BProtocol) -> tuple[str, ...]:
    """The session's batches, in order: the raw baseline's (only with ``raw_baseline``), then the encoded one."""
    return (SHARE_RAW, SHARE_ENCODED) if protocol.raw_baseline else (SHARE_ENCODED,)


PER_REPORT_S = 0.02
"""Seconds a batch may take per early user, on top of the deadlines of the parties that wait for a whole batch
(each device's report is a TLS connection of its own: about 3 ms here, taken one at a time)."""


def receive_deadline(deployment: Deployment, name: str) -> float:
    """The shuffler waits ``deadline_s`` for a host's next report or device; the server waits twice that for the
    shuffler's batch and the hosts three times that for a model, each plus :data:`PER_REPORT_S` per early user
    (the whole batch comes first), so a stall is reported by the party next to it."""
    role = deployment.parties[name].role
    if role == "shuffler":
        return deployment.deadline_s
    n_early = int(deployment.protocol.early_fraction * deployment.protocol.n_users)
    return (2.0 if role == "server" else 3.0) * deployment.deadline_s + PER_REPORT_S * n_early


# -- the parties in a process -----------------------------------------------------------------------
def _parties():
    """The deployment subclasses of the protocol's parties (imported lazily, like the protocol)."""
    from privbandits.protocols.p2b import DeviceHost, EncodedBatch, ModelRelease, RawBatch, Server, Shuffler

    class HostedDevices(DeviceHost):
        """A device host: over TLS each device's report leaves on a connection of its own (the host's certificate,
        the device's name ``HOST-deviceUSER`` as sender), acknowledged by the shuffler once stored (or refused once
        the batch has closed); in memory on the host's link."""

        refused = 0
        """Reports the shuffler refused because their batch had closed (by size or time)."""

        def send_report(self, user: int, receiver: str, report: Message) -> None:
            if own_connections(self.network):
                from privbandits.comm.oneshot import send_own

                if not send_own(self.network, f"{self.prefix}{user}", receiver, report):
                    self.refused += 1  # its batch had closed: the device's report is lost, the device goes on
                    return
            else:
                self.send(receiver, report)
            self.sent += 1

        fetched = 0
        """Models fetched so far (the next fetch asks for version fetched + 1)."""

        def receive_model(self, model, server: str):
            self.fetched += 1
            self.send(server, FetchModel(self.fetched))
            release = self.receive(ModelRelease.kind, server)
            return model(release.first, release.second)

    class CanonicalShuffler(Shuffler):
        """The shuffler of several device hosts: a batch is every host's reports up to its CloseBatch,
        taken host by host in deployment order (canonical), then shuffled with the shuffler's own stream."""

        def __init__(self, *args, hosts: list[str], queue=None, key: bytes = b"", batch_id: int = 0,
                     batch_size: int | None = None, batch_window_s: float | None = None, front=None,
                     forget_key=lambda: b"", **kwargs):  # fmt: skip
            super().__init__(*args, **kwargs)
            self.hosts, self.queue, self.key, self.batch_id, self.front = hosts, queue, key, batch_id, front
            self.batch_size, self.batch_window_s, self.forget_key = batch_size, batch_window_s, forget_key
            self.collected, self.opened_at = 0, 0.0  # the open batch's reports, and when it opened
            self.refused: list[int] = []
            """Per batch, the reports refused after it closed (by size or time)."""
            self.released: list[Message] = []
            self.batch_ids: list[int] = []
            self.first_report_at: float | None = None
            """When the open batch's first report arrived (``time.perf_counter``)."""
            self.published = 0
            """Batches the server has already turned into models (a resumed session replays those phases
            without sending them again)."""
            self.duplicates, self.replaying = 0, False

        def _collect(self, kind: str) -> list[Message]:
            from privbandits.protocols.p2b import EncodedReport

            durable = self.queue is not None and kind == EncodedReport.kind
            # released before a restart: its key is gone, so every report resent for it is taken as a duplicate
            self.replaying = durable and self.queue.released(self.batch_id)
            self.first_report_at = None
            self.collected, self.opened_at = 0, time.monotonic()
            self.refused.append(0)
            if self.front is not None:  # every host's devices at once, stored in groups
                batch = self.front.collect(self, kind, durable)
                held, ids = batch.held, batch.ids
            else:
                held, ids = self._collect_serially(kind, durable)
            if not durable:
                return [report for _, report in sorted(held, key=lambda item: item[0])]
            # the batch is formed in the queue (identities and arrival order dropped there); put back in the
            # canonical order (host, then user) by the keyed ids only this shuffler computes. A restarted shuffler
            # whose batch was formed before the stop gets that same batch back
            batch = self.queue.close_batch(self.batch_id)
            self.batch_ids.append(batch.batch_id)
            rows = zip(batch.report_ids, batch.codes, batch.actions, batch.rewards, strict=True)
            last = (len(self.hosts), 0, "")
            return [EncodedReport(*row[1:]) for row in sorted(rows, key=lambda row: ids.get(row[0], last))]

        def _collect_serially(self, kind: str, durable: bool) -> tuple[list, dict]:
            """Over TLS each host's devices in turn, one connection at a time (``workers = 0``), each encoded report
            persisted with its sender's identity before it is acknowledged; in memory from the hosts' links."""
            from privbandits.deploy.p2b_front import canonical, report_id, serial_reports
            from privbandits.protocols.p2b import CloseBatch

            held, ids = [], {}
            for host in self.hosts:
                if own_connections(self.network):
                    arrivals = serial_reports(self, host, kind)
                else:
                    arrivals = self._from_link(host, kind, CloseBatch.kind)
                for index, (identity, received, delivery) in enumerate(arrivals):
                    if self.first_report_at is None:  # the batch's throughput is timed from here
                        self.first_report_at = time.perf_counter()
                    place = canonical(self.hosts, host, identity) if delivery else (self.hosts.index(host), index, "")
                    if self.replaying:
                        self.duplicates += 1
                    elif durable:  # persisted with its sender's identity before anything else happens to it
                        rid = report_id(self.key, self.batch_id, identity if delivery else f"{host}/{index}")
                        if not self.queue.accept(rid, identity, received.code, received.action, received.reward):
                            self.duplicates += 1  # accepted before a restart (or in the batch already formed)
                        ids[rid] = place
                    else:
                        held.append((place, received))
                    if delivery is not None:
                        delivery.ack()  # stored: the device may go
            return held, ids

        def _from_link(self, host: str, kind: str, close: str):
            while (got := self.receive_one_of((kind, close), host)).kind != close:
                yield host, got, None

        def send(self, receiver: str, message: Message) -> None:
            batch = isinstance(message, EncodedBatch | RawBatch)
            if batch:
                self.released.append(message)
            if not batch or len(self.released) > self.published:  # a batch the server has a model of: not resent
                super().send(receiver, message)
            if self.queue is not None and isinstance(message, EncodedBatch):
                self.queue.mark_released(self.batch_ids[-1])  # the server's checkpoint acknowledges it
                self.key = self.forget_key()  # no key left that could link a batched report's id to its device

    class PublishingServer(Server):
        """The server of a deployment: batches only from the shuffler; models, versioned 1, 2, ... in the order
        published, to each device host that fetches them."""

        def __init__(self, *args, shuffler: str, hosts: list[str], **kwargs) -> None:
            super().__init__(*args, **kwargs)
            self.shuffler, self.hosts = shuffler, hosts
            self.releases: list[tuple[np.ndarray, np.ndarray]] = []

        def receive(self, kind: str, sender: str | None = None) -> Message:
            return super().receive(kind, self.shuffler if sender is None else sender)

        def _publish(self, model, first: np.ndarray, second: np.ndarray, audience: str) -> None:
            self.published.append(model)
            self.releases.append((first, second))

        def serve(self, version: int) -> None:
            """Answer every host's fetch of model ``version`` (published, or restored from the checkpoint)."""
            for host in self.hosts:
                asked = super().receive(FetchModel.kind, host).version
                if asked != version:
                    raise ProtocolError(f"{host!r} fetched model version {asked}; version {version} is published")
                self.send(host, ModelRelease(*self.releases[version - 1]))

    return HostedDevices, CanonicalShuffler, PublishingServer


def own_connections(network: Network) -> bool:
    """Whether devices send on connections of their own (over TLS) or on their host's link (in memory)."""
    from privbandits.comm import TlsNetwork

    return isinstance(network, TlsNetwork)


def keeps_listening(deployment: Deployment, name: str) -> bool:
    """The shuffler keeps its listener open after set-up: devices connect to it, one connection per report."""
    return deployment.parties[name].role == "shuffler"


@entropy.recorded
def run_party(
    deployment: Deployment,
    name: str,
    network: Network,
    *,
    resume: bool = False,
    on_round: Callable[[int, int], None] | None = None,
) -> dict:
    """Play party ``name``'s part of the session on ``network`` (already connected)."""
    if _protocol(deployment).raw_baseline:
        print(RAW_WARNING, file=sys.stderr, flush=True)
    role = deployment.parties[name].role
    if role == "shuffler":
        return _run_shuffler(deployment, name, network, resume)
    if role == "server":
        return _run_server(deployment, name, network, on_round, resume)
    return _run_host(deployment, name, network, resume)


def _shuffler_state(deployment: Deployment, name: str, queue, resume: bool) -> tuple[bytes, int]:
    """The shuffler's private report-id key and its session's batch id: made and saved (atomically) by a
    fresh session, read back by a resumed one."""
    if resume:
        arrays, meta = checkpoint.resume(deployment, name)
        return arrays["key"].tobytes(), int(meta["batch_id"])
    key, batch_id = secrets.token_bytes(32), queue.next_batch_id()
    return _save_shuffler(deployment, name, key, batch_id), batch_id


def _save_shuffler(deployment: Deployment, name: str, key: bytes, batch_id: int) -> bytes:
    """Save the shuffler's checkpoint (an empty ``key`` once its batch is released: nothing left to link by)."""
    meta = {"batch_id": batch_id, "digest": deployment.protocol_digest()}
    checkpoint.save(deployment.checkpoint_path(name), {"key": np.frombuffer(key, dtype=np.uint8)}, meta)
    return key


KINDS = {SHARE_RAW: "raw", SHARE_ENCODED: "encoded"}
"""Each batch's name in the parties' results."""
_FIELDS = {"raw": ("contexts", "actions", "rewards"), "encoded": ("codes", "actions", "rewards")}


def _run_shuffler(deployment: Deployment, name: str, network: Network, resume: bool = False) -> dict:
    from privbandits.privacy.ledger import PrivacyLedger

    protocol = _protocol(deployment)
    _, CanonicalShuffler, _ = _parties()
    streams, server = streams_of(deployment, name, resume=resume), deployment.names("server")[0]
    queue = open_queue(deployment, name, resume=resume)
    key, batch_id = _shuffler_state(deployment, name, queue, resume)
    front = _front(deployment, network, queue)
    forget = lambda: _save_shuffler(deployment, name, b"", batch_id)  # noqa: E731
    shuffler = CanonicalShuffler(
        name,
        network,
        hosts=deployment.names("device_host"),
        queue=queue,
        key=key,
        batch_id=batch_id,
        batch_size=protocol.batch_size,
        batch_window_s=protocol.batch_window_s,
        front=front,
        forget_key=forget,
        threshold=None,
        participation=protocol.participation,
        n_codes=None,
        rng=streams[0],
        ledger=PrivacyLedger(),
    )
    if resume:
        with network.phase(RESUME):
            shuffler.published = _published(shuffler.receive(ResumeAt.kind, server).published, protocol)
    seconds, releases = {}, {}  # per batch, from its first report's arrival to its release; its release
    try:
        for phase in phases(protocol):
            if phase == SHARE_ENCODED:  # the raw baseline is anonymised and shuffled, nothing dropped
                shuffler.threshold, shuffler.n_codes, shuffler.rng = protocol.threshold, protocol.n_codes, streams[5]
                shuffler.omega = protocol.omega
            with network.phase(phase):
                if phase == SHARE_ENCODED:
                    shuffler.release_encoded(server)
                else:
                    shuffler.release_raw(server)
                seconds[KINDS[phase]] = time.perf_counter() - (shuffler.first_report_at or time.perf_counter())
            releases[KINDS[phase]] = dict(shuffler.last_release)
    finally:
        if front is not None:
            front.stop()
        queue.close()
    network.close(timeout=None)  # its part is over; stay linked so a failure reaches it too
    kinds = [KINDS[phase] for phase in phases(protocol)]
    batches = {kind: {field: getattr(batch, field).tolist() for field in _FIELDS[kind]}
               for kind, batch in zip(kinds, shuffler.released, strict=True)}  # fmt: skip
    return {
        "party": name,
        "role": "shuffler",
        "outcome": "released " + " and ".join(f"{len(batches[kind]['actions'])} {kind}" for kind in kinds) + " tuples",
        "batches": batches,
        "release": releases,
        "seconds": seconds,
        "queue": {"path": str(queue.path), "batches": shuffler.batch_ids, "duplicates": shuffler.duplicates},
        "refused": dict(zip(kinds, shuffler.refused, strict=True)),
        "resumed_after": shuffler.published if resume else None,
        "ledger": shuffler.ledger.rows(),
    }


def _front(deployment: Deployment, network: Network, queue):
    """The shuffler's concurrent device front end (:mod:`~privbandits.deploy.p2b_front`), started; None with
    ``protocol.workers = 0`` (the serial one) or in memory."""
    from privbandits.deploy.p2b_front import Front, worker_count

    workers = worker_count(_protocol(deployment).workers)
    if not own_connections(network) or workers == 0:
        return None
    return Front(network, deployment.names("device_host"), workers).start()


def _published(count: int, protocol: P2BProtocol) -> int:
    models = len(phases(protocol))
    if not 0 <= count <= models:
        raise DeploymentError(f"the server resumes after {count} published models, outside 0..{models}")
    return count


def queue_path(deployment: Deployment, name: str) -> Path:
    """The shuffler's durable report queue (SQLite), in the deployment's output folder."""
    return deployment.output / "queues" / f"{name}.sqlite"


def open_queue(deployment: Deployment, name: str, *, resume: bool = False):
    """The shuffler's :class:`~privbandits.protocols.p2b_queue.ReportQueue` for the encoded reports.

    A queue left with held reports or an unreleased batch by an interrupted session is not
    reused by a fresh one (that would mix two sessions' reports): the party refuses to start
    and names it. A resumed session (``--resume``) continues with it.
    """
    from privbandits.protocols.p2b_queue import ReportQueue
    from privbandits.validation import InvalidInputError

    protocol, path = _protocol(deployment), queue_path(deployment, name)
    try:
        queue = ReportQueue(path, n_codes=protocol.n_codes, n_arms=protocol.n_actions)
    except InvalidInputError as exc:
        raise DeploymentError(f"the shuffler's report queue {path}: {exc}") from None
    held, unreleased = queue.held(), queue.unreleased()
    if (held or unreleased) and not resume:
        queue.close()
        raise DeploymentError(
            f"the shuffler's report queue {path} holds {held} report(s) and unreleased batch(es) {unreleased} "
            "of an interrupted session; move it away to start afresh"
        )
    return queue


def _save_server(deployment: Deployment, name: str, server) -> None:
    """The server's checkpoint: every model it published (its acknowledgement of each batch) and its ledger."""
    arrays = {f"release{i}.{part}": value for i, pair in enumerate(server.releases) for part, value in
              zip(("first", "second"), pair, strict=True)}  # fmt: skip
    meta = {"published": len(server.releases), "ledger": server.ledger.rows()}
    checkpoint.save(deployment.checkpoint_path(name), arrays, meta | {"digest": deployment.protocol_digest()})


def _restore_server(deployment: Deployment, name: str, server) -> int:
    arrays, meta = checkpoint.resume(deployment, name)
    published = _published(int(meta["published"]), _protocol(deployment))
    server.releases = [(arrays[f"release{i}.first"], arrays[f"release{i}.second"]) for i in range(published)]
    server.ledger.record_rows(meta["ledger"])
    return published


def _run_server(deployment: Deployment, name: str, network: Network, on_round, resume: bool = False) -> dict:

    protocol = _protocol(deployment)
    _, _, PublishingServer = _parties()
    shuffler, hosts = deployment.names("shuffler")[0], deployment.names("device_host")
    server = PublishingServer(
        name,
        network,
        protocol.n_actions,
        participation=protocol.participation,
        omega=protocol.omega,
        shuffler=shuffler,
        hosts=hosts,
    )
    published = _restore_server(deployment, name, server) if resume else 0
    if resume:
        with network.phase(RESUME):
            for other in [shuffler, *hosts]:
                server.send(other, ResumeAt(published))
    else:
        _save_server(deployment, name, server)  # nothing published yet (replaces an older session's)
    kinds = [KINDS[phase] for phase in phases(protocol)]
    for version, phase in enumerate(phases(protocol), start=1):
        with network.phase(phase):
            if published < version:  # else the phase is replayed: its model is served again, from the checkpoint
                _publish_model(server, phase, protocol)
                _save_server(deployment, name, server)  # published: the batch is acknowledged
            server.serve(version)
        if on_round is not None:
            on_round(version, len(kinds))
    network.close(timeout=None)
    models = {"raw": "non_private", "encoded": "private"}
    return {
        "party": name,
        "role": "server",
        "outcome": "published the " + " and the ".join(models[kind].replace("_", "-") for kind in kinds) + " model",
        "models": {
            models[kind]: [first.tolist(), second.tolist()]
            for kind, (first, second) in zip(kinds, server.releases, strict=True)
        },  # fmt: skip
        "resumed_after": published if resume else None,
        "ledger": server.ledger.rows(),
    }


def _publish_model(server, phase: str, protocol: P2BProtocol) -> None:
    """Fit and publish the model of the batch of ``phase``: linear on raw contexts, or on the codes."""
    if phase == SHARE_RAW:
        server.publish_linear_model("device hosts", protocol.dim)
    elif protocol.representation == "scalar_code":
        server.publish_scalar_code_model("device hosts")
    else:
        server.publish_code_model(protocol.n_codes, "device hosts")


def _play(model, contexts, table, rng: np.random.Generator, first: int, protocol: P2BProtocol):
    """This host's users of a population whose users before ``first`` are other hosts': their
    tie-break draws (user-major, ``interactions`` per user) are skipped, so each user plays as in
    the whole population's run."""
    from privbandits.linear.population import run_population

    rng.random(first * protocol.interactions)
    return run_population(model, contexts, table, rng=rng, alpha=protocol.alpha, tie_break=protocol.tie_break)


def _send_reports(host, shuffler: str, log, seen, protocol: P2BProtocol, rng, block: Block, private: bool) -> int:
    """This host's devices choose and send their tuples (the draws over all early users; the other
    hosts' users are unknown rewards here, which never send) and the host closes the batch."""
    from privbandits.protocols.p2b import EncodedReport, RawReport, choose_reports

    first = block.early.start
    padded = np.full((block.n_early, protocol.interactions), np.nan)
    padded[first : first + len(block.early)] = log.rewards
    users, chosen = choose_reports(padded, protocol.participation, protocol.negative_rate, rng)
    local = users - first
    if own_connections(host.network):
        host.receive(BatchOpen.kind, shuffler)  # the shuffler takes the hosts' devices in turn
    payloads = seen[local, chosen]
    arms, rewards = log.arms[local, chosen].tolist(), log.rewards[local, chosen].astype(np.int64).tolist()
    report = EncodedReport if private else RawReport
    for user, payload, arm, reward in zip(
        users.tolist(), payloads.tolist() if private else list(payloads), arms, rewards, strict=True
    ):
        host.send_report(user, shuffler, report(payload, arm, reward))
    return host.close_batch(shuffler)


def _per_user(log) -> dict[str, list]:
    return {"mean_reward": log.mean_reward.tolist(), "known": log.known.tolist()}


def _raw_baseline(host, data: HostData, protocol: P2BProtocol, streams, shuffler: str, server: str) -> tuple:
    """The non-private baseline (``protocol.raw_baseline``): the early users play cold on raw contexts and send
    one raw tuple each with probability p; the late users play warm from the server's model of them. Returns the
    reports sent and the late users' results."""
    from privbandits.linear.population import DisjointModel

    early, late, block = data.early, data.late, data.block
    cold = DisjointModel.cold(protocol.n_actions, protocol.dim)
    early_raw = _play(cold, early.contexts, early.reward_table, streams[1], block.early.start, protocol)
    # inside a batch the devices' reports leave in large writes, at the latest when the host waits for the model
    with host.network.phase(SHARE_RAW), host.network.batch():
        sent = _send_reports(host, shuffler, early_raw, early.contexts, protocol, streams[2], block, False)
        non_private = host.receive_model(DisjointModel, server)
    return sent, _play(non_private, late.contexts, late.reward_table, streams[4], block.late.start, protocol)


def _run_host(deployment: Deployment, name: str, network: Network, resume: bool = False) -> dict:
    from privbandits.linear.population import CodeModel, DisjointModel
    from privbandits.protocols.p2b import DEVICES, RAW_DEVICES, private_inputs

    protocol = _protocol(deployment)
    data = load_host(deployment, name)
    encoder = encoder_of(protocol)
    HostedDevices, _, _ = _parties()
    streams = streams_of(deployment, name, resume=resume)
    shuffler, server = deployment.names("shuffler")[0], deployment.names("server")[0]
    early, late, block = data.early, data.late, data.block
    n_arms, dim = protocol.n_actions, protocol.dim
    host = HostedDevices(name, network, prefix=f"{name}-device", mechanism=RAW_DEVICES)
    resumed_after = None
    if resume:  # every phase is replayed (the same reports, deduplicated by the shuffler's queue)
        with network.phase(RESUME):
            resumed_after = _published(host.receive(ResumeAt.kind, server).published, protocol)

    raw_sent = warm_np = None
    if protocol.raw_baseline:
        raw_sent, warm_np = _raw_baseline(host, data, protocol, streams, shuffler, server)

    early_codes = encoder.encode(early.contexts.reshape(-1, dim)).reshape(early.n_users, -1)
    late_codes = encoder.encode(late.contexts.reshape(-1, dim)).reshape(late.n_users, -1)
    scalar = protocol.representation == "scalar_code"
    early_seen, late_seen, cold_private = private_inputs(scalar, early_codes, late_codes, n_arms, encoder.n_codes)
    early_private = _play(cold_private, early_seen, early.reward_table, streams[6], block.early.start, protocol)
    host.mechanism = DEVICES
    with network.phase(SHARE_ENCODED), network.batch():
        encoded_sent = _send_reports(host, shuffler, early_private, early_codes, protocol, streams[7], block, True)
        private_model = host.receive_model(DisjointModel if scalar else CodeModel, server)
    first_late = block.late.start  # the late users play once the batches are out (the shuffler waits for them)
    cold = _play(DisjointModel.cold(n_arms, dim), late.contexts, late.reward_table, streams[3], first_late, protocol)
    warm_p = _play(private_model, late_seen, late.reward_table, streams[8], first_late, protocol)
    network.close()
    played = {"cold": cold, "warm_non_private": warm_np, "warm_private": warm_p}
    late_results = {setting: _per_user(log) for setting, log in played.items() if log is not None}
    raw = "" if raw_sent is None else f"{raw_sent} raw and "
    return {
        "party": name,
        "role": "device_host",
        "outcome": f"{early.n_users} early users sent {raw}{encoded_sent} encoded reports; "
        f"{late.n_users} late users played",
        "early_users": [block.early.start, block.early.stop],
        "late_users": [block.late.start, block.late.stop],
        "raw_reports_sent": raw_sent,
        "encoded_reports_sent": encoded_sent,
        "reports_refused": host.refused,
        "late": late_results,
        "resumed_after": resumed_after,
        "ledger": host.ledger.rows(),
    }
