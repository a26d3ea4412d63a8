"""A local server of a deployed FCLUB session (:mod:`privbandits.deploy.fclub.party`): serves a block of the users,
detects
its local clusters and sends phase uploads and uploads (privatized when the algorithm is private); in lock-step it
waits for the global server after each upload or download check, free-running it does not (see the schedules and
the rules for messages that cross a phase start in :mod:`privbandits.deploy.fclub.party`)."""

from __future__ import annotations

import dataclasses
import math
from typing import NamedTuple

import numpy as np

from privbandits.checkpointed import Checkpointed
from privbandits.comm import ProtocolError, TlsNetwork
from privbandits.deploy.deployment import Deployment
from privbandits.deploy.fclub import resume as fclub_resume
from privbandits.deploy.fclub.messages import (
    SCHEDULE,
    SEQUENCE,
    USERS,
    Applied,
    Arrival,
    Checked,
    Choice,
    Downloads,
    Feedback,
    Finish,
    PhaseStart,
    RewardAndArrival,
    Served,
    UploadDone,
)
from privbandits.deploy.fclub.section import FCLUBProtocol
from privbandits.deploy.fclub.session import (
    _calibration,
    _check_sender,
    _next,
    _protocol,
    _server_of_user,
    config_of,
    free_running,
    local_rng,
)
from privbandits.protocols.fclub.local_server import LocalServer
from privbandits.protocols.fclub.messages import ASYNC, CHECK, DETECT, GLOBAL, PHASE_END, Download, PhaseEnd


class _Owed(NamedTuple):
    """A round served whose reward has not come yet: its round, the user (index among the served) and the context
    of the arm chosen."""

    t: int
    user: int
    context: np.ndarray


class _LocalEvents(Checkpointed):
    """What a local server counts, with the round of each event it can date (for the communication series)."""

    SAVED = ("counts", "phases", "upload_rounds", "crossings")

    def __init__(self) -> None:
        self.counts = dict.fromkeys(("phase_uploads", "renewals", "uploads", "downloads", "shared_updates",
                                     "download_checks", "served"), 0)  # fmt: skip
        self.phases: list[list[int]] = []  # [t, phase uploads, renewals]
        self.upload_rounds: list[int] = []
        self.crossings = dict.fromkeys(("stale_downloads", "crossed_downloads", "late_downloads"), 0)
        """Free-running: downloads that crossed a phase start or the end (see :mod:`privbandits.deploy.fclub.party`)."""


def run_local_server(
    deployment: Deployment[FCLUBProtocol], name: str, network: TlsNetwork, resume: bool = False
) -> dict:
    protocol, config = _protocol(deployment), config_of(deployment)
    servers = deployment.names("local_server")
    ell = servers.index(name)
    members = np.flatnonzero(_server_of_user(deployment) == ell)
    server = LocalServer(name, network, members, protocol.dim, _calibration(deployment), local_rng(deployment, name))
    users = deployment.names("users")[0]
    index = {int(user): i for i, user in enumerate(members)}
    events = _LocalEvents()
    count_idle = config.rebuild_local_copies and not config.synchronous
    free = free_running(deployment)
    resumed = _resume(deployment, name, server, events, network, resume)
    wanted: tuple[str, ...] = (Arrival.kind, PhaseStart.kind, Download.kind, Finish.kind)
    if free:
        wanted = (Arrival.kind, PhaseStart.kind, Downloads.kind, Finish.kind, RewardAndArrival.kind, Feedback.kind)
    owed: _Owed | None = None  # free-running: the round served whose reward is still to come
    while True:
        sender, kind = _next(server, wanted, deployment)
        _check_sender(name, sender, kind, FCLUBProtocol.GLOBAL if kind in (Download.kind, Downloads.kind) else users)
        if kind == Download.kind:
            _apply_download(server, events, network)
            continue
        if kind == Downloads.kind:
            _apply_downloads(server, events, network)
            continue
        if free and kind in (Arrival.kind, RewardAndArrival.kind, Feedback.kind):
            owed = _free_step(server, users, kind, owed, index, events, network, protocol, count_idle)
            continue
        if owed is not None:
            raise ProtocolError(f"{users!r} sent a {kind!r} message before the reward of round {owed.t}")
        if kind == PhaseStart.kind:
            t = _detect(server, events, network, free)
            if fclub_resume.is_phase_start(t):
                fclub_resume.save(deployment, name, t, _state(server, events), network)
        elif kind == Arrival.kind:
            _serve(server, users, index, events, network, protocol, count_idle)
        else:
            rounds = server.receive(Finish, users).rounds
            with network.phase(SCHEDULE):
                server.send(FCLUBProtocol.GLOBAL, Finish(rounds))
            if free:
                _await_global_finish(server, events, network)
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
        "resumed_at": resumed,
        **({"crossings": events.crossings} if free else {}),
        "phases": events.phases,
        "upload_rounds": events.upload_rounds,
        "clusters": len(server.clusters),
        "ledger": server.ledger.rows(),
        "privatizers": {key: list(value) for key, value in privatizers.items()},
        "max_nodes_per_datum": per_datum,
        **server.per_user_epsilons(),
        "repairs": dataclasses.asdict(server.repairs),
    }


def _apply_download(server, events: _LocalEvents, network: TlsNetwork) -> None:
    """Lock-step: one download, acknowledged."""
    with network.phase(ASYNC):
        shared = server.receive_download()
    events.counts["downloads"] += 1
    events.counts["shared_updates"] += bool(shared)
    with network.phase(SEQUENCE):
        server.send(FCLUBProtocol.GLOBAL, Applied())


def _received_downloads(server, network: TlsNetwork) -> list[Download]:
    """Free-running: the downloads of the next :class:`Downloads` message from the global server."""
    with network.phase(ASYNC):
        return server.receive(Downloads, GLOBAL).entries(server.dim)


def _apply_downloads(server, events: _LocalEvents, network: TlsNetwork) -> int:
    """Free-running: the downloads of the next :class:`Downloads` message, applied; how many."""
    downloads = _received_downloads(server, network)
    for msg in downloads:
        events.counts["shared_updates"] += bool(server.absorb_download(msg))
    events.counts["downloads"] += len(downloads)
    return len(downloads)


def _detect(server, events: _LocalEvents, network: TlsNetwork, free: bool = False) -> int:
    t = server.receive(PhaseStart).t
    network.round_label = f"round {t}"
    with network.phase(DETECT):
        sent = server.detect(t)
    crossed = []  # free-running: downloads the global server sent before its PhaseEnd (the old phase's)
    while free and server.peek((Downloads.kind, PhaseEnd.kind), GLOBAL)[1] == Downloads.kind:
        crossed += _received_downloads(server, network)
    with network.phase(PHASE_END):
        renewals = server.end_phase()
    _settle(server, events, crossed, replaced=renewals > 0 or server.config.rebuild_local_copies)
    events.counts["phase_uploads"] += sent
    events.counts["renewals"] += renewals
    events.phases.append([t, sent, renewals])
    return t


def _state(server: LocalServer, events: _LocalEvents) -> dict:
    return {"server": server, "events": events}


def _resume(
    deployment: Deployment[FCLUBProtocol],
    name: str,
    server: LocalServer,
    events: _LocalEvents,
    network: TlsNetwork,
    resume: bool,
) -> int:
    """Resumed: the state of the agreed phase start put back into the fresh ``server`` and ``events``; else the
    checkpoints of an earlier session cleared. Returns the round the server goes on from (0: a fresh session)."""
    if not resume:
        fclub_resume.start_afresh(deployment, name)
        return 0
    t = fclub_resume.agree(deployment, name, server)
    fclub_resume.load(deployment, name, t, network).restore({"server": server, "events": events})
    return t


def _settle(server, events: _LocalEvents, crossed: list, replaced: bool) -> None:
    """Old-phase downloads read after the detection: dropped when the cluster copies were replaced (renewal) or
    rebuilt from the phase uploads, which hold what they carry; applied otherwise (the same clusters go on)."""
    events.counts["downloads"] += len(crossed)
    if replaced:
        events.crossings["stale_downloads"] += len(crossed)
        return
    for msg in crossed:
        events.counts["shared_updates"] += bool(server.absorb_download(msg))
        events.crossings["crossed_downloads"] += 1


def _await_global_finish(server, events: _LocalEvents, network: TlsNetwork) -> None:
    """Free-running, after this server's Finish: the downloads still on their way, then the global server's Finish."""
    while server.peek((Downloads.kind, Finish.kind), GLOBAL)[1] == Downloads.kind:
        events.crossings["late_downloads"] += _apply_downloads(server, events, network)
    with network.phase(SCHEDULE):
        server.receive(Finish.kind, GLOBAL)


def _serve(server, users: str, index: dict[int, int], events: _LocalEvents, network: TlsNetwork, protocol,
           count_idle: bool) -> None:  # fmt: skip
    """Lock-step, one round: recommend, learn the reward, upload if Eq. 5 fires (or ask for the download check), and
    say so once the global server has answered."""
    owed = _recommend(server, users, index, server.receive(Arrival, users), network, protocol)
    with network.phase(USERS):
        reward = server.receive(Feedback, users).reward
    t = _learn(server, users, owed, reward, events, network, count_idle, free=False)
    with network.phase(USERS):
        server.send(users, Served(t))


def _free_step(server, users: str, kind: str, owed: _Owed | None, index: dict[int, int], events: _LocalEvents,
               network: TlsNetwork, protocol, count_idle: bool) -> _Owed | None:  # fmt: skip
    """Free-running, a message of ``kind`` from the users: a round (:class:`Arrival`) when none is owed, or the reward
    of the round owed, alone (:class:`Feedback`) or with the server's next round (:class:`RewardAndArrival`): it is
    learnt first (its upload sent), then the next round served. Returns the round whose reward is now owed."""
    msg = server.receive(kind, users)
    if kind == Arrival.kind:
        if owed is not None:
            raise ProtocolError(f"{users!r} sent round {msg.t} to {server.name!r} before the reward of round {owed.t}")
        return _recommend(server, users, index, msg, network, protocol)
    if owed is None:
        raise ProtocolError(f"{users!r} sent {server.name!r} a reward, but it owes no round one")
    _learn(server, users, owed, msg.reward, events, network, count_idle, free=True)
    return None if kind == Feedback.kind else _recommend(server, users, index, msg, network, protocol)


def _recommend(server, users: str, index: dict[int, int], arrival, network: TlsNetwork, protocol) -> _Owed:
    """Recommend an arm for ``arrival`` (an :class:`Arrival` or :class:`RewardAndArrival`, checked) and send it; the
    round whose reward is now owed."""
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
    return _Owed(t, i, contexts[arm])


def _learn(server, users: str, owed: _Owed, reward: object, events: _LocalEvents, network: TlsNetwork,
           count_idle: bool, free: bool) -> int:  # fmt: skip
    """Learn round ``owed``'s reward; upload if Eq. 5 fires (or ask for the download check), and in lock-step wait
    for the global server's answer. Returns the round."""
    t = owed.t
    network.round_label = f"round {t}"
    if not (isinstance(reward, float) and math.isfinite(reward)):
        raise ProtocolError(f"{users!r} sent reward {reward!r} in round {t}; expected a finite float")
    cluster = server.observe(owed.user, owed.context, reward)
    if cluster is not None:
        with network.phase(ASYNC):
            server.upload(cluster)
        events.counts["uploads"] += 1
        events.upload_rounds.append(t)
        while not free and server.peek((Download.kind, UploadDone.kind), FCLUBProtocol.GLOBAL)[1] == Download.kind:
            _apply_download(server, events, network)
        if not free:
            server.receive(UploadDone.kind, FCLUBProtocol.GLOBAL)
    elif count_idle:
        with network.phase(CHECK):
            server.check_download(owed.user)
        events.counts["download_checks"] += 1
        if not free:
            server.receive(Checked.kind, FCLUBProtocol.GLOBAL)
    events.counts["served"] += 1
    return t
