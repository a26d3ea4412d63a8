"""FCLUB as separate party processes: the users, the local servers and the global server (issue 17, step 3).

Each party runs the party classes of :mod:`privbandits.protocols.fclub` on its own
:class:`~privbandits.comm.TlsNetwork`:

* ``local_server`` ℓ (named ``local0``, ``local1``, ...): serves a contiguous block of the users
  (:func:`~privbandits.envs.clustered.assign_groups`, as the experiments do), keeps their raw
  statistics, detects its local clusters and sends phase uploads and uploads, privatized when
  the algorithm is private, before anything leaves the process. It is linked to the users and
  the global server only.
* ``global_server`` (named ``global``): merges local clusters, pushes renewals and downloads. It
  only ever receives the local servers' :class:`~privbandits.protocols.fclub.PhaseUpload`,
  :class:`~privbandits.protocols.fclub.Upload` and
  :class:`~privbandits.protocols.fclub.DownloadCheck` messages.
* ``users``: the users' devices. It draws the synthetic environment (spec §6.2) and, round by
  round, sends the arriving user's contexts to the user's local server (:class:`Arrival`),
  returns the chosen arm's reward (:class:`Feedback`) and scores the choice. It keeps the public
  clock of §3.2: at t = 2^s − 1 (every round for the reference code's FCLUB) it tells the global
  server and every local server that a phase starts (:class:`PhaseStart`).

Reproducing the in-memory run. The asynchronous protocol is played in lock-step, in the order of
:class:`~privbandits.protocols.fclub.FederatedClusteredBandit`: the users start round t + 1 only
once round t's local server says it is served (:class:`Served`), which it says only after the
global server has confirmed its upload (:class:`UploadDone`, sent once every download it caused
is applied: :class:`Applied`) or its download check (:class:`Checked`). These sequencing messages
travel in phases of their own (``users``, ``schedule``, ``sequence``), outside the paper's count;
the protocol's messages keep their phases (``detect``, ``phase_end``, ``async``, ``check``) and
their bytes, so the traffic of those phases equals the in-memory run's link by link. The users
party draws the synthetic environment from ``protocol.seed`` as
:func:`~privbandits.protocols.fclub.run_fclub` does (the first spawned stream: the demo's data,
public by construction, as P2B's ``data_seed``). Each local server draws its privatizers' noise
and its tie-breaks from fresh OS entropy (:mod:`privbandits.deploy.entropy`), so the global
server, which holds the file, cannot regenerate and remove that noise. With the deployment's
``reproducible = true``, local server ℓ derives them from the ℓ-th child of the second stream,
as ``run_fclub`` does, so regret, communication and the local servers' releases equal
:func:`run_in_memory`'s; anyone holding the file can then recompute the noise
(``tests/test_deploy_attacks.py``): for tests and demos only.

A lost local server (killed, stalled past the deadline, or failed): the global server names it
(its result's ``lost`` and outcome), drops its link and its clusters from later merges, and
delivers no more messages to it; the users stop sending it users (their rounds are counted as
unserved); the other local servers finish. A lost global server or users party ends the session
for everyone, as in the other deployments. There is no ``--resume``.
"""

from __future__ import annotations

import hashlib
import math
import time
import warnings
from collections.abc import Callable

import numpy as np

from privbandits.comm import Message, Network, PeerLost, ProtocolError, message
from privbandits.deploy import entropy
from privbandits.deploy.deployment import Deployment, DeploymentError, FCLUBProtocol
from privbandits.protocols.fclub import (
    ASYNC,
    CHECK,
    DETECT,
    PHASE_END,
    Communication,
    Download,
    DownloadCheck,
    GlobalServer,
    LocalServer,
    PhaseUpload,
    Upload,
    play,
)
from privbandits.protocols.fclub_config import Calibration

USERS, SCHEDULE, SEQUENCE = "users", "schedule", "sequence"
"""Phases of the deployment's sequencing messages (the in-memory driver's call order), outside the protocol."""


@message("deploy.fclub.arrival")
class Arrival(Message):
    """Users → the user's local server: round ``t``'s user (a global id) and its contexts (K × d)."""

    t: int
    user: int
    contexts: np.ndarray


@message("deploy.fclub.choice")
class Choice(Message):
    """Local server → users: the arm recommended."""

    arm: int


@message("deploy.fclub.feedback")
class Feedback(Message):
    """Users → local server: the reward of the recommended arm."""

    reward: float


@message("deploy.fclub.served")
class Served(Message):
    """Local server → users: round ``t`` is done (its upload confirmed, or its download check answered)."""

    t: int


@message("deploy.fclub.phase_start")
class PhaseStart(Message):
    """Users → the global server and every local server: detection runs before round ``t`` (§3.2)."""

    t: int


@message("deploy.fclub.finish")
class Finish(Message):
    """Users → every party, then each local server → the global server: the session's ``rounds`` are over."""

    rounds: int


@message("deploy.fclub.applied")
class Applied(Message):
    """Local server → global: a :class:`~privbandits.protocols.fclub.Download` is applied."""


@message("deploy.fclub.upload_done")
class UploadDone(Message):
    """Global → the uploading local server: the upload is absorbed and every download it caused is applied
    (how many is not said: a local server learns nothing of the other members from it)."""


@message("deploy.fclub.checked")
class Checked(Message):
    """Global → local server: its :class:`~privbandits.protocols.fclub.DownloadCheck` is counted."""


NOISE_WARNING = "FCLUB: privatizer noise exceeded"
FAITHFUL = "CDP-FCLUB-DC (faithful)"


# -- the run the parties share -----------------------------------------------------------------------
def _protocol(deployment: Deployment) -> FCLUBProtocol:
    protocol = deployment.protocol
    if not isinstance(protocol, FCLUBProtocol):
        raise DeploymentError(f"protocol.name must be 'fclub' here, got {protocol.name!r}")
    return protocol


def setting_of(deployment: Deployment):
    """The experiments' :class:`~privbandits.experiments.papers.fclub.runs.Setting` of the deployment."""
    from privbandits.experiments.papers.fclub.runs import Setting

    protocol = _protocol(deployment)
    return Setting(kind="synthetic", n_users=protocol.n_users, n_clusters=protocol.n_clusters,
                   n_servers=len(deployment.names("local_server")), dim=protocol.dim, n_arms=protocol.n_arms,
                   construction=protocol.construction, epsilon=protocol.epsilon)  # fmt: skip


def config_of(deployment: Deployment):
    """The algorithm's :class:`~privbandits.protocols.fclub_config.FCLUBConfig` (the experiments' presets)."""
    from privbandits.experiments.papers.fclub.runs import fclub_config

    protocol = _protocol(deployment)
    return fclub_config(protocol.algorithm, setting_of(deployment), protocol.horizon, protocol.options)


def _seeds(deployment: Deployment) -> tuple[np.random.SeedSequence, np.random.SeedSequence]:
    """The environment's seed and the protocol's, spawned from ``protocol.seed`` as
    :func:`~privbandits.protocols.fclub.run_fclub` does (the protocol's used only in reproducible mode)."""
    environment, protocol = np.random.SeedSequence(_protocol(deployment).seed).spawn(2)
    return environment, protocol


def _streams(deployment: Deployment) -> tuple[np.random.Generator, list[np.random.Generator]]:
    """The environment's generator and each local server's in reproducible mode, as ``run_fclub``."""
    environment, protocol = _seeds(deployment)
    servers = protocol.spawn(len(deployment.names("local_server")))
    return np.random.default_rng(environment), [np.random.default_rng(seed) for seed in servers]


def local_rng(deployment: Deployment, name: str) -> np.random.Generator:
    """Local server ``name``'s generator (its privatizers' noise, its tie-breaks): OS entropy, or in
    reproducible mode ``run_fclub``'s."""
    servers = deployment.names("local_server")
    return entropy.generator(deployment, name, _seeds(deployment)[1].spawn(len(servers))[servers.index(name)])


def _server_of_user(deployment: Deployment) -> np.ndarray:
    from privbandits.envs.clustered import assign_groups

    return assign_groups(_protocol(deployment).n_users, len(deployment.names("local_server")), remainder_last=True)


def _calibration(deployment: Deployment):
    protocol = _protocol(deployment)
    return Calibration(config_of(deployment), protocol.dim, protocol.n_users, len(deployment.names("local_server")))


def peers(deployment: Deployment, name: str) -> list[str] | None:
    """The parties ``name`` links with: a local server only with the users and the global server."""
    if deployment.parties[name].role == "local_server":
        return [deployment.names("users")[0], FCLUBProtocol.GLOBAL]
    return None


def receive_deadline(deployment: Deployment, name: str) -> float:
    """Seconds party ``name`` waits for a message before it counts its peer as lost.

    The global server waits ``deadline_s`` (for a local server's phase uploads or its
    :class:`Applied`), a local server twice that (for the global server, which may be waiting on
    another local server), the users three times (for a local server waiting on the global server):
    so a stalled local server is named by the global server, which goes on without it.
    """
    factor = {"global_server": 1.0, "local_server": 2.0}.get(deployment.parties[name].role, 3.0)
    return factor * deployment.deadline_s


IDLE = 4.0
"""The global server and the local servers wait this many ``deadline_s`` for whatever comes next (longer than the
users wait for a local server), so a local server that stalls mid-round is named by the users, who go on without
it, rather than ending the session; nothing at all within it means the users, who keep the clock, are lost."""


def _next(party, wanted: tuple[str, ...], deployment: Deployment) -> tuple[str, str]:
    """``party.peek(wanted)`` from any peer, waiting :data:`IDLE` deadlines; the users are named if nothing comes."""
    with party.network.patience(IDLE * deployment.deadline_s):
        try:
            return party.peek(wanted)
        except PeerLost as exc:
            if exc.peer != "any":
                raise
            users = deployment.names("users")[0]
            raise PeerLost(
                f"lost peer {users!r} in {exc.round}: no message from any peer within "
                f"{IDLE * deployment.deadline_s:g} s (the users keep the clock)",
                peer=users,
                round=exc.round,
            ) from None


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
    if resume:
        raise DeploymentError("FCLUB deployments have no --resume: a lost local server is dropped, the others finish")
    role = deployment.parties[name].role
    with warnings.catch_warnings():
        if _protocol(deployment).algorithm != FAITHFUL:  # as the experiments' runs
            warnings.filterwarnings("ignore", message=NOISE_WARNING)
        if role == "users":
            return _run_users(deployment, name, network, on_round)
        if role == "global_server":
            return _run_global(deployment, name, network)
        return _run_local_server(deployment, name, network)


# -- the users ---------------------------------------------------------------------------------------
class _Reachable:
    """The local servers the users still reach: one found lost is dropped, and the session goes on."""

    def __init__(self, names: list[str], network: Network) -> None:
        self.names, self.network = names, network
        self.lost: dict[str, str] = {}

    def lose(self, server: str, exc: PeerLost) -> None:
        if exc.peer != server:  # the server reported losing another party (the global server, or us): fatal
            raise exc
        self.lost[server] = str(exc)
        self.network.drop(server)

    def tell(self, users, message: Message) -> None:
        """``message`` to every local server still reached."""
        for server in self.names:
            if server not in self.lost:
                try:
                    users.send(server, message)
                except PeerLost as exc:
                    self.lose(server, exc)


def _run_users(deployment: Deployment, name: str, network: Network, on_round) -> dict:
    from privbandits.comm import Party

    protocol, config = _protocol(deployment), config_of(deployment)
    env = setting_of(deployment).environment()
    env.reset(_streams(deployment)[0])
    server_of_user, users = _server_of_user(deployment), Party(name, network)
    servers = _Reachable(deployment.names("local_server"), network)
    horizon = protocol.horizon
    regret, arms, rewards = np.full(horizon, np.nan), np.full(horizon, -1, dtype=np.int64), np.zeros(horizon)
    next_start, phase = 1, 0
    start = time.perf_counter()
    for t in range(1, horizon + 1):
        network.round_label = f"round {t}"
        contexts, expected = env.next_round()
        starts = t == next_start
        if starts:
            phase += 1
            next_start = 2 ** (phase + 1) - 1
        if starts or config.detect_every_round:
            with network.phase(SCHEDULE):
                users.send(FCLUBProtocol.GLOBAL, PhaseStart(t))
                servers.tell(users, PhaseStart(t))
        server = servers.names[server_of_user[env.user]]
        if server not in servers.lost:
            try:
                arms[t - 1], rewards[t - 1] = _round(users, server, t, env, contexts, protocol.n_arms, network)
                regret[t - 1] = expected.max() - expected[arms[t - 1]]
            except PeerLost as exc:
                servers.lose(server, exc)
        if on_round is not None:
            on_round(t, horizon)
    seconds = time.perf_counter() - start
    with network.phase(SCHEDULE):
        servers.tell(users, Finish(horizon))
        users.send(FCLUBProtocol.GLOBAL, Finish(horizon))
    network.close()
    served, lost = int((arms >= 0).sum()), servers.lost
    return {
        "party": name,
        "role": "users",
        "rounds": horizon,
        "served": served,
        "cumulative_reward": float(rewards.sum()),
        "cumulative_regret": float(np.nansum(regret)),
        "seconds": seconds,
        "rounds_per_second": horizon / seconds,
        "regret": [None if math.isnan(r) else float(r) for r in regret],
        "arms": arms.tolist(),
        "lost": lost,
        "outcome": f"{served} of {horizon} rounds served" + (f"; lost {', '.join(lost)}" if lost else ""),
    }


def _round(users, server: str, t: int, env, contexts: np.ndarray, n_arms: int, network: Network) -> tuple[int, float]:
    """One round at the user's local server: contexts out, the arm back, the reward out, then its end."""
    with network.phase(USERS):
        users.send(server, Arrival(t, env.user, contexts))
        arm = users.receive(Choice.kind, server).arm
        if not (isinstance(arm, int) and 0 <= arm < n_arms):
            raise ProtocolError(f"{server!r} chose arm {arm!r} in round {t}; the arms are 0..{n_arms - 1}")
        reward = env.reward(arm)
        users.send(server, Feedback(reward))
        done = users.receive(Served.kind, server).t
    if done != t:
        raise ProtocolError(f"{server!r} said round {done} was served while round {t} ran")
    return arm, reward


# -- a local server ----------------------------------------------------------------------------------
class _LocalEvents:
    """What a local server counts, with the round of each event it can date (for the communication series)."""

    def __init__(self) -> None:
        self.counts = dict.fromkeys(("phase_uploads", "renewals", "uploads", "downloads", "shared_updates",
                                     "download_checks", "served"), 0)  # fmt: skip
        self.phases: list[list[int]] = []  # [t, phase uploads, renewals]
        self.upload_rounds: list[int] = []


def _run_local_server(deployment: Deployment, name: str, network: Network) -> dict:
    protocol, config = _protocol(deployment), config_of(deployment)
    servers = deployment.names("local_server")
    ell = servers.index(name)
    members = np.flatnonzero(_server_of_user(deployment) == ell)
    server = LocalServer(name, network, members, protocol.dim, _calibration(deployment), local_rng(deployment, name))
    users = deployment.names("users")[0]
    index = {int(user): i for i, user in enumerate(members)}
    events = _LocalEvents()
    count_idle = config.rebuild_local_copies and not config.synchronous
    wanted = (Arrival.kind, PhaseStart.kind, Download.kind, Finish.kind)
    while True:
        sender, kind = _next(server, wanted, deployment)
        _check_sender(name, sender, kind, FCLUBProtocol.GLOBAL if kind == Download.kind else users)
        if kind == Download.kind:
            _apply_download(server, events, network)
        elif kind == PhaseStart.kind:
            _detect(server, events, network)
        elif kind == Arrival.kind:
            _serve(server, users, index, events, network, protocol, count_idle)
        else:
            rounds = server.receive(Finish.kind, users).rounds
            with network.phase(SCHEDULE):
                server.send(FCLUBProtocol.GLOBAL, Finish(rounds))
            break
    network.close()
    privatizers, per_datum = server.privacy_accounts()
    return {
        "party": name,
        "role": "local_server",
        "outcome": f"served {events.counts['served']} rounds of {len(members)} users; "
        f"{events.counts['uploads']} uploads, {events.counts['downloads']} downloads",
        "users": members.tolist(),
        "counts": events.counts,
        "phases": events.phases,
        "upload_rounds": events.upload_rounds,
        "clusters": len(server.clusters),
        "ledger": server.ledger.rows(),
        "privatizers": {key: list(value) for key, value in privatizers.items()},
        "max_nodes_per_datum": per_datum,
        "repairs": vars(server.repairs),
    }


def _check_sender(name: str, sender: str, kind: str, expected: str) -> None:
    if sender != expected:
        raise ProtocolError(f"{name!r} takes {kind!r} messages only from {expected!r}, got one from {sender!r}")


def _apply_download(server, events: _LocalEvents, network: Network) -> None:
    with network.phase(ASYNC):
        shared = server.receive_download()
    events.counts["downloads"] += 1
    events.counts["shared_updates"] += bool(shared)
    with network.phase(SEQUENCE):
        server.send(FCLUBProtocol.GLOBAL, Applied())


def _detect(server, events: _LocalEvents, network: Network) -> None:
    t = server.receive(PhaseStart.kind).t
    network.round_label = f"round {t}"
    with network.phase(DETECT):
        sent = server.detect(t)
    with network.phase(PHASE_END):
        renewals = server.end_phase()
    events.counts["phase_uploads"] += sent
    events.counts["renewals"] += renewals
    events.phases.append([t, sent, renewals])


def _serve(server, users: str, index: dict[int, int], events: _LocalEvents, network: Network, protocol,
           count_idle: bool) -> None:  # fmt: skip
    """One round: recommend, learn the reward, upload if Eq. 5 fires (or ask for the download check), say so."""
    arrival = server.receive(Arrival.kind, users)
    t, i, contexts = arrival.t, index.get(arrival.user), arrival.contexts
    network.round_label = f"round {t}"
    if i is None:
        raise ProtocolError(f"{users!r} sent user {arrival.user} in round {t}, whom {server.name!r} does not serve")
    shape = (protocol.n_arms, protocol.dim)
    if contexts.shape != shape or contexts.dtype != np.float64 or not np.isfinite(contexts).all():
        raise ProtocolError(
            f"{users!r} sent contexts of shape {contexts.shape} ({contexts.dtype}) in round {t}; "
            f"expected finite float64 of shape {shape}"
        )
    with network.phase(USERS):
        arm = server.recommend(i, contexts)
        server.send(users, Choice(arm))
        reward = server.receive(Feedback.kind, users).reward
    if not (isinstance(reward, float) and math.isfinite(reward)):
        raise ProtocolError(f"{users!r} sent reward {reward!r} in round {t}; expected a finite float")
    cluster = server.observe(i, contexts[arm], reward)
    if cluster is not None:
        with network.phase(ASYNC):
            server.upload(cluster)
        events.counts["uploads"] += 1
        events.upload_rounds.append(t)
        while server.peek((Download.kind, UploadDone.kind), FCLUBProtocol.GLOBAL)[1] == Download.kind:
            _apply_download(server, events, network)
        server.receive(UploadDone.kind, FCLUBProtocol.GLOBAL)
    elif count_idle:
        with network.phase(CHECK):
            server.check_download(i)
        events.counts["download_checks"] += 1
        server.receive(Checked.kind, FCLUBProtocol.GLOBAL)
    events.counts["served"] += 1
    with network.phase(USERS):
        server.send(users, Served(t))


# -- the global server -------------------------------------------------------------------------------
class DeployedGlobal(GlobalServer):
    """The global server of a deployment: goes on without a lost local server."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.lost: dict[str, str] = {}
        self.undelivered = 0
        """Messages due to a lost local server, not sent."""
        self.uploads_digest = hashlib.sha256()
        """:func:`upload_digest` of every phase upload and upload received, with its sender."""

    def receive(self, kind: str, sender: str | None = None) -> Message:
        msg = super().receive(kind, sender)
        if kind in (PhaseUpload.kind, Upload.kind):
            _digest_upload(self.uploads_digest, sender, msg)
        return msg

    def lose(self, server: str, exc: PeerLost) -> None:
        """Name ``server`` lost, drop its link, and leave it out of later merges."""
        if exc.peer != server or server not in self.servers:
            raise exc
        self.lost[server] = str(exc)
        self.servers.remove(server)
        self.uploads = {key: msg for key, msg in self.uploads.items() if key[0] != server}
        self.network.drop(server)

    def receive_phase_batch(self, server: str) -> None:
        try:
            super().receive_phase_batch(server)
        except PeerLost as exc:
            self.lose(server, exc)

    def send(self, receiver: str, message: Message) -> None:
        if receiver in self.lost:
            self.undelivered += 1
            return
        try:
            super().send(receiver, message)
        except PeerLost as exc:
            if receiver not in self.servers:
                raise
            self.lose(receiver, exc)
            self.undelivered += 1


def _run_global(deployment: Deployment, name: str, network: Network) -> dict:
    servers = deployment.names("local_server")
    users = deployment.names("users")[0]
    glob = DeployedGlobal(network, list(servers), _protocol(deployment).dim, _calibration(deployment))
    downloads: dict[str, list[int]] = {server: [] for server in servers}  # per upload, in upload order
    changed: list[int] = []  # rounds whose detection changed the partition
    wanted = (PhaseStart.kind, Upload.kind, DownloadCheck.kind, Finish.kind)
    while True:
        try:
            sender, kind = _next(glob, wanted, deployment)
        except PeerLost as exc:
            glob.lose(exc.peer, exc)  # a local server (anyone else ends the session)
            continue
        if kind == PhaseStart.kind:
            _check_sender(name, sender, kind, users)
        elif sender not in servers and kind != Finish.kind:
            raise ProtocolError(f"{name!r} takes {kind!r} messages only from local servers, got one from {sender!r}")
        if kind == PhaseStart.kind:
            t = glob.receive(PhaseStart.kind, users).t
            network.round_label = f"the phase from round {t}"  # the global server sees no other round
            with network.phase(DETECT):
                if glob.detect(t):
                    changed.append(t)
            with network.phase(PHASE_END):
                glob.end_phase()
        elif kind == Upload.kind:
            downloads[sender].append(_serve_upload(glob, sender, network))
        elif kind == DownloadCheck.kind:
            with network.phase(CHECK):
                glob.receive_download_check(sender)
            with network.phase(SEQUENCE):
                glob.send(sender, Checked())
        else:  # the users' Finish, or a local server's passing it on (read first from another link)
            glob.receive(Finish.kind, users)
            break
    _await_finish(glob)
    network.close()
    lost = ", ".join(f"{server} ({reason})" for server, reason in glob.lost.items())
    return {
        "party": name,
        "role": "global_server",
        "outcome": f"{len(glob.partition)} global cluster(s) from {len(glob.servers)} local servers"
        + (f"; lost {lost}; the others finished" if glob.lost else ""),
        "lost": glob.lost,
        "undelivered": glob.undelivered,
        "downloads_per_upload": downloads,
        "changed_rounds": changed,
        "counts": {"changed_phases": glob.changed_phases, "idle_downloads": glob.idle_downloads},
        "partition": sorted(sorted([server, int(uid)] for server, uid in group) for group in glob.partition),
        "ledger": glob.ledger.rows(),
        "uploads_digest": glob.uploads_digest.hexdigest(),
    }


def _serve_upload(glob, sender: str, network: Network) -> int:
    """An upload: absorb it, send the downloads it makes due, wait until each is applied, confirm it.

    Returns how many downloads were delivered."""
    with network.phase(ASYNC):
        due = glob.receive_upload(sender)
        delivered = []
        for key in due:
            glob.send_download(key)
            if key[0] not in glob.lost:
                delivered.append(key[0])
    with network.phase(SEQUENCE):
        for server in delivered:
            if server in glob.lost:
                continue
            try:
                glob.receive(Applied.kind, server)
            except PeerLost as exc:
                glob.lose(server, exc)
        glob.send(sender, UploadDone())
    return len(delivered)


def _await_finish(glob) -> None:
    """Each remaining local server's :class:`Finish` (so none is still reading when this server closes)."""
    with glob.network.phase(SCHEDULE):
        for server in list(glob.servers):
            try:
                glob.receive(Finish.kind, server)
            except PeerLost as exc:
                glob.lose(server, exc)


# -- the session's outcome, and the in-memory run it must equal -------------------------------------
def outcome(deployment: Deployment) -> dict:
    """The session from the parties' result files: per-round cumulative regret (unserved rounds add
    nothing) and communication (the paper's count, dated by the local servers' logs and the global
    server's downloads per upload), the communication totals, and the local servers' composed ledger."""
    import json

    from privbandits.privacy.ledger import PrivacyLedger

    results = {}
    for name in deployment.parties:
        path = deployment.result_path(name)
        if path.is_file():
            results[name] = json.loads(path.read_text())
    horizon = _protocol(deployment).horizon
    users = results[deployment.names("users")[0]]
    glob = results[FCLUBProtocol.GLOBAL]
    regret = np.cumsum([0.0 if r is None else r for r in users["regret"]])
    added = np.zeros(horizon + 1, dtype=np.int64)
    counts = Communication(synchronous=config_of(deployment).synchronous, rounds=users["served"])
    ledger = PrivacyLedger()
    for name in deployment.names("local_server"):
        if name not in results:
            continue  # lost: it wrote no result
        local = results[name]
        for t, sent, renewals in local["phases"]:
            added[t] += sent + renewals
        for t, delivered in zip(local["upload_rounds"], glob["downloads_per_upload"][name], strict=True):
            added[t] += 1 + delivered
        for key in ("phase_uploads", "renewals", "uploads", "downloads", "shared_updates"):
            setattr(counts, key, getattr(counts, key) + local["counts"][key])
        ledger.record_rows(local["ledger"])
    counts.changed_phases = glob["counts"]["changed_phases"]
    counts.idle_downloads = glob["counts"]["idle_downloads"]
    return {
        "regret": regret,
        "communication": np.cumsum(added[1:]),
        "counts": counts,
        "ledger": ledger,
        "results": results,
    }


def run_in_memory(deployment: Deployment, network: Network | None = None):
    """The run of the deployment's algorithm, setting, horizon and seed in one process, as the experiments
    run it (:func:`~privbandits.protocols.fclub.run_fclub`; on ``network``, default a fresh in-memory one): a
    :class:`~privbandits.protocols.fclub.FCLUBOutcome`. With OS randomness (not reproducible) the local
    servers' generators come from fresh OS entropy, as the processes' do; the environment is the same."""
    from privbandits.protocols.fclub import FederatedClusteredBandit

    config, setting = config_of(deployment), setting_of(deployment)
    environment, protocol = _seeds(deployment)
    env = setting.environment()
    env.reset(np.random.default_rng(environment))
    rng = entropy.generator(deployment, None, protocol)
    with warnings.catch_warnings():
        if _protocol(deployment).algorithm != FAITHFUL:
            warnings.filterwarnings("ignore", message=NOISE_WARNING)
        bandit = FederatedClusteredBandit(
            config, _server_of_user(deployment), env.dim, env.n_arms, rng=rng, network=network
        )
        return play(bandit, env, config.horizon)


def upload_digest(uploads) -> str:
    """SHA-256 over ``(sender, message)`` phase uploads and uploads, in order (what the global server received)."""
    digest = hashlib.sha256()
    for sender, msg in uploads:
        _digest_upload(digest, sender, msg)
    return digest.hexdigest()


def _digest_upload(digest, sender: str, msg: Message) -> None:
    digest.update(f"{msg.kind}|{sender}|{msg.cluster}|{msg.count}|".encode())
    digest.update(np.ascontiguousarray(msg.gram).tobytes())
    digest.update(np.ascontiguousarray(msg.moment).tobytes())
