"""P2B as separate party processes: device hosts, the trusted shuffler and the server (issue 17, step 2).

Each party runs the party classes of :mod:`privbandits.protocols.p2b.core` (subclassed through their extension points
in :mod:`privbandits.deploy.p2b.roles`) on its own :class:`~privbandits.comm.TlsNetwork`:

* ``device_host`` (one or more): simulates the devices of its own users and holds only
  their data (``.npz``: ``early_contexts`` (n_e, t, d), ``early_rewards`` (n_e, t, K) of
  0/1, ``late_contexts``, ``late_rewards``). Its early users play cold and send one encoded
  tuple each with probability p to the shuffler (with ``protocol.raw_baseline``, first one raw
  tuple each: the non-private baseline, which hands raw contexts to the server), and the
  host closes each batch with :class:`~privbandits.protocols.p2b.core.CloseBatch`; its late users
  then play cold, warm from the private model (and from the non-private one), each
  model rebuilt from the server's :class:`~privbandits.protocols.p2b.core.ModelRelease`. Over TLS
  each device sends its report on a connection of its own (:mod:`privbandits.comm.oneshot`),
  named ``HOST-deviceUSER`` and vouched for by its host's certificate, and waits for the
  shuffler's acknowledgement (sent once the report is stored); a device whose connection
  ends half-way loses only its own report (the shuffler drops the connection, says why in
  its result's ``dropped``, and goes on).
* ``shuffler``: holds nothing but what it receives; the only party that sees a device's
  identity next to its report. It keeps its listener open for the devices' connections, taken
  by ``protocol.workers`` processes side by side (:mod:`~privbandits.deploy.p2b.front`), which opens
  each batch with :class:`BatchOpen` to every host at once (the default: one worker per CPU); with
  ``workers = 0`` by the shuffler itself, one at a time, host by host, each told :class:`BatchOpen` in
  turn. Each host's :class:`~privbandits.protocols.p2b.core.CloseBatch`, on
  its party link, sent once its devices' reports are acknowledged, ends its part. The batch is
  put in a canonical order, (device host, user number of the device), before its seeded shuffle,
  so the processes' interleaving cannot change a batch. A batch closes when every host has closed
  it, or earlier once it holds ``protocol.batch_size`` reports or ``protocol.batch_window_s``
  seconds after it opened: later devices are refused (their reports are lost, the session goes
  on, and the run then differs from the in-memory one, which has no such limits). It then
  thresholds (crowd-blending) and sends the batch to the server, and to no one
  else. Encoded reports pass through its durable :class:`~privbandits.protocols.p2b.queue.ReportQueue`
  (``OUTPUT/queues/NAME.sqlite``; PostgreSQL with ``protocol.queue_url``): each is persisted with
  its device's identity as it arrives (in group commits) and acknowledged once durable; the batch is
  formed there (identities dropped) and marked released once sent. Raw baseline reports (contexts)
  are not queued. With ``shuffler_front`` parties the devices send to those front ends instead, and the shuffler
  sequences them and forms each batch from the queue they share (:mod:`~privbandits.deploy.p2b.scaleout`).
* ``server``: holds nothing private; it accepts batches from the shuffler only, fits the
  central model and publishes it, versions numbered in the order published (the raw baseline's
  first, if it runs, then the private one); each device host fetches each version
  (:class:`FetchModel`) and the server answers once it is published.

Reproducing the in-memory run. The users are split into contiguous blocks: device host j holds
the j-th block of the early users and the j-th block of the late users
(:func:`~privbandits.deploy.p2b.data.layout`), so the canonical batch order is the in-memory
order (users ascending). Each party takes the nine streams of
:func:`~privbandits.protocols.p2b.core.simulate` from its own root seed (:func:`streams_of`): by
default fresh OS entropy, so no other party (the server above all) can recompute a device's
participation, negative-report or tuple-choice coin, an agent's tie-break or the shuffler's
permutation; with the deployment's ``reproducible = true``, ``protocol.seed``, exactly as
``simulate`` does. A host skips the draws of the users before its block (a population's
tie-break draws are user-major) and makes its participation draws over the whole early
population (padding the other hosts' users, which never send). So, in reproducible mode, the
released batches, the published models and the late users' rewards equal ``simulate(data,
encoder, config, seed)`` on the union of the hosts' data
(:func:`~privbandits.deploy.p2b.outcome.run_in_memory`, which also says what is compared when
the raw baseline is off); anyone holding the file can then recompute every coin
(``tests/deploy/test_deploy_attacks.py``): for tests and demos only.

``shared_warm_agent`` (one agent carried across all late users) is sequential across hosts
and is not offered here.

Faults and ``--resume``: a party that dies may be restarted alone with ``--resume`` while the others keep running
(issue 34). Its peers' links wait up to ``protocol.rejoin_s`` for it (dialing it again, pausing up to
``protocol.rejoin_backoff_s`` between tries, or waiting for its connection:
:class:`~privbandits.comm.tls.rejoin.RejoinNetwork`); a party that stays away longer makes the others stop naming
it (exit 3), as in the other deployments. The restarted party replays its part from the start with the same coins
(from the seed, or from the OS seed the hosts and the shuffler keep in their own entropy files,
:mod:`privbandits.deploy.entropy`); each link's messages are sent again and each side skips those it already has
(checked), and :mod:`privbandits.deploy.p2b.rejoin` keeps the devices' reports and the batches once: the shuffler's
queue keeps each encoded report once (its id is a keyed hash of its device), a report for a batch already closed
is acknowledged and not taken again, and a released batch is sent again from the shuffler's checkpoint. Once the
encoded batch is released the shuffler forgets its report-id key (its checkpoint keeps an empty one), so nothing
left can link an id in the queue to its device; it needs the key no more (a replay after the release is
acknowledged without the queue). The session then ends as the uninterrupted one (``tests/deploy/p2b/test_deploy_p2b.py``
kills each role). Restarting every party with ``--resume`` works the same way. With the concurrent front end
(``workers >= 1``) its workers hold the shuffler's listener, so the shuffler dials every peer, also one that comes
back (:func:`link_order`), and its listener takes only devices; a device that comes before its batch is open (a
restarted shuffler's) is held until it opens, and one for a batch its host has closed is acknowledged and not
taken again. Not covered: a shuffler killed while it collects the raw baseline's batch loses the raw
reports it had acknowledged (they are not queued).
"""

from __future__ import annotations

import secrets
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from privbandits.comm import Message, TlsNetwork
from privbandits.deploy import entropy
from privbandits.deploy.deployment import Deployment, DeploymentError
from privbandits.deploy.p2b import rejoin as p2b_rejoin
from privbandits.deploy.p2b import scaleout as p2b_scaleout
from privbandits.deploy.p2b.admission import Admission, commitment
from privbandits.deploy.p2b.data import Block, HostData, load_host
from privbandits.deploy.p2b.data import p2b_protocol as _protocol
from privbandits.deploy.p2b.data import write_synthetic_data as write_synthetic_data  # `deploy data`
from privbandits.deploy.p2b.messages import BatchOpen, HostCommit, HostDone, SealedReport, ServerKey
from privbandits.deploy.p2b.messages import FetchModel as FetchModel  # re-exported
from privbandits.deploy.p2b.rejoin import rejoin as rejoin  # the parties' networks: lost peers may come back
from privbandits.deploy.p2b.section import P2BProtocol
from privbandits.deploy.p2b.session import (
    BATCH_FIELDS,
    COMMIT,
    KINDS,
    SHARE_ENCODED,
    SHARE_RAW,
    encoder_of,
    phases,
    root_of,
    streams_of,
)
from privbandits.deploy.registry import play_by_role

RAW_WARNING = (
    "WARNING: raw_baseline = true: every participating device sends a raw context, action and reward to the "
    "server (the non-private baseline, no privacy for them)"
)


PER_REPORT_S = 0.02
"""Seconds a batch may take per early user, on top of the deadlines of the parties that wait for a whole batch
(each device's report is a TLS connection of its own, taken one at a time; ``benchmarks/shuffler_throughput.py``
measures what one costs)."""


def receive_deadline(deployment: Deployment[P2BProtocol], name: str) -> float:
    """The shuffler waits ``deadline_s`` for a host's next report or device; the server waits twice that for the
    shuffler's batch and the hosts three times that for a model, each plus :data:`PER_REPORT_S` per early user
    (the whole batch comes first), so a stall is reported by the party next to it."""
    role = deployment.parties[name].role
    if role == "shuffler" and not deployment.names(p2b_scaleout.ROLE):
        return deployment.deadline_s
    n_early = int(deployment.protocol.early_fraction * deployment.protocol.n_users)
    factor = {"shuffler": 1.5, "server": 2.0}.get(role, 3.0)  # with front ends the shuffler waits for the hosts
    return factor * deployment.deadline_s + PER_REPORT_S * n_early


# -- the parties in a process -----------------------------------------------------------------------
def keeps_listening(deployment: Deployment[P2BProtocol], name: str) -> bool:
    """The shuffler (or, where it has them, each of its front ends) keeps its listener open after set-up: devices
    connect to it, one connection per report."""
    role, fronts = deployment.parties[name].role, deployment.names(p2b_scaleout.ROLE)
    return role == p2b_scaleout.ROLE or (role == "shuffler" and not fronts)


def link_order(deployment: Deployment[P2BProtocol]) -> list[str] | None:
    """Who dials whom: each party whose listener the concurrent device front end's workers hold (the shuffler, or
    its front ends where it has them) comes last, so it dials its peers, also one that comes back, and its listener
    takes only devices; with the serial front end (``workers = 0``), the file's order."""
    from privbandits.deploy.p2b.front import worker_count

    shuffler, fronts = deployment.names("shuffler")[0], deployment.names(p2b_scaleout.ROLE)
    if not fronts and worker_count(_protocol(deployment)) == 0:
        return None
    return [name for name in deployment.parties if name not in (shuffler, *fronts)] + [shuffler, *fronts]


@entropy.recorded
def run_party(
    deployment: Deployment[P2BProtocol],
    name: str,
    network: TlsNetwork,
    *,
    resume: bool = False,
    on_round: Callable[[int, int], None] | None = None,
) -> dict:
    """Play party ``name``'s part of the session on ``network`` (already connected)."""
    if _protocol(deployment).raw_baseline:
        print(RAW_WARNING, file=sys.stderr, flush=True)
    return _by_role(deployment, name, network, resume=resume, on_round=on_round)


def _shuffler_state(deployment: Deployment[P2BProtocol], name: str, queue, resume: bool) -> tuple[bytes, int, dict]:
    """The shuffler's private report-id key, its session's batch id and the batches it released: made and saved
    (atomically) by a fresh session, read back by a resumed one (:mod:`~privbandits.deploy.p2b.rejoin`)."""
    if resume:
        return p2b_rejoin.restore_shuffler(deployment, name)
    key, batch_id = secrets.token_bytes(32), queue.next_batch_id()
    p2b_rejoin.save_shuffler(deployment, name, key, batch_id, {})
    return key, batch_id, {}


def _run_shuffler(deployment: Deployment[P2BProtocol], name: str, network: TlsNetwork, resume: bool = False) -> dict:
    from privbandits.deploy.p2b.roles import CanonicalShuffler
    from privbandits.privacy.ledger import PrivacyLedger

    protocol = _protocol(deployment)
    server = deployment.names("server")[0]
    queue = open_queue(deployment, name, resume=resume)
    key, batch_id, saved = _shuffler_state(deployment, name, queue, resume)
    streams = _shuffler_streams(deployment, name, resume, KINDS[SHARE_ENCODED] in saved)
    front = _front(deployment, network)
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
        threshold=None,
        participation=protocol.participation,
        n_codes=None,
        rng=streams[0],
        ledger=PrivacyLedger(),
        order=p2b_rejoin.canonical_order(key, deployment),
        admission=Admission.of(deployment),
    )
    network.on_stray = p2b_rejoin.stray_handler(shuffler, network)  # called by a rejoining network only
    commits = shuffler.admission.commits = _commits(deployment, name, shuffler, resume)
    seconds, releases = {}, {}  # per batch, from its first report's arrival to its release; its release
    try:
        for phase in phases(protocol):
            if phase == SHARE_ENCODED:  # the raw baseline is anonymised and shuffled, nothing dropped
                shuffler.threshold, shuffler.n_codes, shuffler.rng = protocol.threshold, protocol.n_codes, streams[5]
                shuffler.omega = protocol.omega
            _release(shuffler, phase, server, saved.get(KINDS[phase]))
            seconds[KINDS[phase]] = time.perf_counter() - (shuffler.first_report_at or time.perf_counter())
            releases[KINDS[phase]] = dict(shuffler.last_release)
            rows = shuffler.ledger.rows()[-1:]
            saved[KINDS[phase]] = (shuffler.released[-1], releases[KINDS[phase]], rows, shuffler.refused[-1])
            # a restart sends this batch again; once the encoded batch is out, its key is saved forgotten (empty)
            p2b_rejoin.save_shuffler(deployment, name, shuffler.key, batch_id, saved, commits)
        _forget_seed(deployment, name, shuffler)  # every batch is out (and saved): no draw is left to replay
        queue.close()
        if isinstance(front, p2b_scaleout.RemoteFronts):
            front.finish(shuffler)  # once every host is done
        # its part is over; stay linked so a failure reaches it too, and keep taking devices meanwhile: a host
        # restarted now replays its devices' reports, each acknowledged and not taken (its batch is closed)
        network.close(timeout=None)
    finally:
        if front is not None:
            front.stop()
        queue.close()
    kinds = [KINDS[phase] for phase in phases(protocol)]
    batches = {kind: {field: getattr(batch, field).tolist() for field in BATCH_FIELDS[kind] if field != "sealed"}
               for kind, batch in zip(kinds, shuffler.released, strict=True)}  # fmt: skip  # (contents: sealed)
    return {
        "party": name,
        "role": "shuffler",
        "outcome": "released " + " and ".join(f"{len(getattr(batch, 'actions' if kind == 'raw' else 'codes'))} {kind}"
                                              for kind, batch in zip(kinds, shuffler.released, strict=True))
        + " tuples",
        "batches": batches,
        "release": releases,
        "seconds": seconds,
        "queue": {"path": queue.location, "batches": shuffler.batch_ids, "duplicates": shuffler.duplicates},
        "refused": dict(zip(kinds, shuffler.refused, strict=True)),
        "resumed": resume,
        "replayed_reports": shuffler.replayed,
        "refused_devices": shuffler.admission.refused,
        "commits": commits,
        "ledger": shuffler.ledger.rows(),
    }


def _commits(deployment: Deployment[P2BProtocol], name: str, shuffler, resume: bool) -> dict[str, str]:
    """Every device host's commitment to its coins (:class:`HostCommit`, first on its link), saved in the shuffler's
    checkpoint before any batch opens; a resumed shuffler refuses a host that commits to other coins than before."""
    before = p2b_rejoin.restore_commits(deployment, name) if resume else {}
    commits = {}
    with shuffler.network.phase(COMMIT):
        for host in shuffler.hosts:
            commits[host] = shuffler.receive(HostCommit, host).digest
            if before.get(host, commits[host]) != commits[host]:
                raise DeploymentError(
                    f"device host {host!r} came back committed to other coins than at the start of the session "
                    "(restarted without --resume, or with another host's entropy file); refused"
                )
    if not before:  # saved before any batch: a checkpoint without them has released nothing yet
        p2b_rejoin.save_shuffler(deployment, name, shuffler.key, shuffler.batch_id, {}, commits)
    return commits


def _shuffler_streams(deployment: Deployment[P2BProtocol], name: str, resume: bool, released: bool) -> list:
    """The shuffler's streams (:func:`streams_of`); resumed after the encoded batch's release, when its seed is
    forgotten (:func:`_forget_seed`), fresh ones it never draws from (the saved batches are sent again)."""
    if resume and released and not deployment.reproducible:
        return streams_of(deployment, name, root=np.random.SeedSequence())
    return streams_of(deployment, name, resume=resume)


def _forget_seed(deployment: Deployment[P2BProtocol], name: str, shuffler) -> None:
    """Once every batch is released: the shuffler's kept OS seed (its entropy file, which regenerates its
    permutations) removed and its generator dropped, so nothing of it regenerates a released batch's order."""
    entropy.entropy_path(deployment, name).unlink(missing_ok=True)
    shuffler.rng = np.random.default_rng()


def _release(shuffler, phase: str, server: str, saved: tuple | None) -> None:
    """The shuffler's batch of ``phase``: collected and released, or, released before a restart, replayed."""
    from privbandits.protocols.p2b.core import RawReport

    with shuffler.network.phase(phase):
        if saved is not None:
            shuffler.replay(SealedReport.kind if phase == SHARE_ENCODED else RawReport.kind, server, saved)
        elif phase == SHARE_ENCODED:
            shuffler.release_sealed(server)
        else:
            shuffler.release_raw(server)


def _front(deployment: Deployment[P2BProtocol], network: TlsNetwork):
    """The shuffler's front ends on other hosts (:class:`~privbandits.deploy.p2b.scaleout.RemoteFronts`) where it
    has them; else its concurrent device front end (:mod:`~privbandits.deploy.p2b.front`), started; None with
    ``protocol.workers = 0`` (the serial one) or in memory."""
    from privbandits.deploy.p2b.front import Front, worker_count

    fronts = deployment.names(p2b_scaleout.ROLE)
    if fronts:
        return p2b_scaleout.RemoteFronts(fronts, deployment.names("device_host"))
    workers = worker_count(_protocol(deployment))
    if not network.connection_per_sender or workers == 0:
        return None
    return Front(network, deployment.names("device_host"), workers).start()


def queue_path(deployment: Deployment[P2BProtocol], name: str) -> Path:
    """The shuffler's durable report queue (SQLite), in the deployment's output folder (without ``queue_url``)."""
    return deployment.output / "queues" / f"{name}.sqlite"


def open_queue(deployment: Deployment[P2BProtocol], name: str, *, resume: bool = False):
    """The shuffler's :class:`~privbandits.protocols.p2b.queue.ReportQueue` for the encoded reports: the SQLite
    file :func:`queue_path`, or with ``protocol.queue_url`` schema ``name`` of that PostgreSQL database.

    A queue left with held reports or an unreleased batch by an interrupted session is not
    reused by a fresh one (that would mix two sessions' reports): the party refuses to start
    and names it. A resumed session (``--resume``) continues with it.
    """
    from privbandits.protocols.p2b.queue import open_report_queue, redact
    from privbandits.validation import InvalidInputError

    protocol, url = _protocol(deployment), _protocol(deployment).queue_url
    where = queue_path(deployment, name) if url is None else url
    try:
        queue = open_report_queue(where, schema=name, n_codes=protocol.n_codes, n_arms=protocol.n_actions)
    except InvalidInputError as exc:
        raise DeploymentError(f"the shuffler's report queue {where if url is None else redact(url)}: {exc}") from None
    held, unreleased = queue.held(), queue.unreleased()
    if (held or unreleased) and not resume:
        queue.close()
        raise DeploymentError(
            f"the shuffler's report queue {queue.location} holds {held} report(s) and unreleased batch(es) "
            f"{unreleased} of an interrupted session; move it away to start afresh"
        )
    return queue


def _run_server(
    deployment: Deployment[P2BProtocol], name: str, network: TlsNetwork, resume: bool = False, on_round=None
) -> dict:
    from privbandits.deploy.p2b import sealing
    from privbandits.deploy.p2b.roles import PublishingServer

    protocol = _protocol(deployment)
    shuffler, hosts = deployment.names("shuffler")[0], deployment.names("device_host")
    private = sealing.server_key(server_key_path(deployment, name), resume=resume, digest=deployment.protocol_digest())
    server = PublishingServer(
        name,
        network,
        protocol.n_actions,
        participation=protocol.participation,
        omega=protocol.omega,
        shuffler=shuffler,
        hosts=hosts,
        opener=sealing.Opener(private),
    )
    kinds = [KINDS[phase] for phase in phases(protocol)]
    with network.phase(COMMIT):  # each host's devices seal their reports to it
        for host in hosts:
            server.send(host, ServerKey(sealing.public_key(private)))
    for version, phase in enumerate(phases(protocol), start=1):  # resumed: replayed from the shuffler's batches
        with network.phase(phase):
            _publish_model(server, phase, protocol)
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
        "batches": {kind: {field: getattr(server.batches[kind], field).tolist() for field in _RECEIVED[kind]}
                    for kind in kinds},  # fmt: skip
        "unopened_reports": server.unopened,
        "resumed": resume,
        "ledger": server.ledger.rows(),
    }


_RECEIVED = {"raw": ("contexts", "actions", "rewards"), "encoded": ("codes", "actions", "rewards")}
"""The arrays of each batch the server received (the encoded one as opened), in its result."""


def server_key_path(deployment: Deployment[P2BProtocol], name: str) -> Path:
    """The server's own file of its HPKE private key (0600, beside its checkpoint), read back by ``--resume``."""
    return deployment.output / "checkpoints" / f"{name}.server-key.npz"


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


def _send_reports(host, shuffler: str, log, seen, protocol: P2BProtocol, rng, block: Block,
                  sealing: tuple[np.ndarray, str] | None, fronts: tuple[str, ...] = ()) -> int:  # fmt: skip
    """This host's devices choose and send their tuples (the draws over all early users; the other
    hosts' users are unknown rewards here, which never send), each to the shuffler or to its front end
    (``fronts``: :func:`~privbandits.deploy.p2b.scaleout.front_of`), and the host closes the batch. With
    ``sealing`` (the server's public key, the host's commitment), encoded reports with their action and reward sealed
    to the server; without, raw ones."""
    from privbandits.deploy.p2b.sealing import seal
    from privbandits.protocols.p2b.core import RawReport, choose_reports

    first = block.early.start
    padded = np.full((block.n_early, protocol.interactions), np.nan)
    padded[first : first + len(block.early)] = log.rewards
    users, chosen = choose_reports(padded, protocol.participation, protocol.negative_rate, rng)
    local = users - first
    if host.network.connection_per_sender:
        host.receive(BatchOpen.kind, shuffler)  # the shuffler takes the hosts' devices in turn
    payloads = seen[local, chosen]
    arms, rewards = log.arms[local, chosen].tolist(), log.rewards[local, chosen].astype(np.int64).tolist()
    private = sealing is not None
    for user, payload, arm, reward in zip(
        users.tolist(), payloads.tolist() if private else list(payloads), arms, rewards, strict=True
    ):
        if sealing is None:
            report: Message = RawReport(payload, arm, reward)
        else:
            report = SealedReport(payload, seal(sealing[0], payload, arm, reward), sealing[1])
        host.send_report(user, p2b_scaleout.front_of(fronts, user, shuffler), report)
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
        sent = _send_reports(host, shuffler, early_raw, early.contexts, protocol, streams[2], block, None)
        non_private = host.receive_model(DisjointModel, server)
    return sent, _play(non_private, late.contexts, late.reward_table, streams[4], block.late.start, protocol)


def _run_host(deployment: Deployment[P2BProtocol], name: str, network: TlsNetwork, resume: bool = False) -> dict:
    from privbandits.deploy.p2b.roles import HostedDevices
    from privbandits.linear.population import CodeModel, DisjointModel
    from privbandits.protocols.p2b.core import DEVICES, RAW_DEVICES, private_inputs

    protocol = _protocol(deployment)
    data = load_host(deployment, name)
    encoder = encoder_of(protocol)
    root = root_of(deployment, name, resume=resume)
    streams = streams_of(deployment, name, root=root)
    shuffler, server = deployment.names("shuffler")[0], deployment.names("server")[0]
    early, late, block = data.early, data.late, data.block
    n_arms, dim = protocol.n_actions, protocol.dim
    host = HostedDevices(name, network, prefix=f"{name}-device", mechanism=RAW_DEVICES)
    commit = commitment(root, name)
    with network.phase(COMMIT):  # first of all: the shuffler detects a restart with other coins by it
        host.send(shuffler, HostCommit(commit))
        public = host.receive(ServerKey, server).public  # what its devices seal their reports to
    # resumed: every phase is replayed (the same reports and fetches; the shuffler and the server skip them)

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
        encoded_sent = _send_reports(host, shuffler, early_private, early_codes, protocol, streams[7], block,
                                     (public, commit), tuple(deployment.names(p2b_scaleout.ROLE)))  # fmt: skip
        private_model = host.receive_model(DisjointModel if scalar else CodeModel, server)
    first_late = block.late.start  # the late users play once the batches are out (the shuffler waits for them)
    cold = _play(DisjointModel.cold(n_arms, dim), late.contexts, late.reward_table, streams[3], first_late, protocol)
    warm_p = _play(private_model, late_seen, late.reward_table, streams[8], first_late, protocol)
    if deployment.names(p2b_scaleout.ROLE):
        with network.phase(p2b_scaleout.END):
            host.send(shuffler, HostDone())  # the shuffler's front ends may close
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
        "resumed": resume,
        "ledger": host.ledger.rows(),
    }


_by_role = play_by_role(
    {"shuffler": _run_shuffler, "server": _run_server, p2b_scaleout.ROLE: p2b_scaleout.run_front,
     "device_host": _run_host}
)  # fmt: skip
