"""The global server of a deployed FCLUB session (:mod:`privbandits.deploy.fclub.party`): merges the local clusters,
pushes renewals and downloads, and goes on without a lost local server. In lock-step it waits until every download
an upload caused is applied before it confirms the upload; free-running it confirms nothing, drains the uploads a
local server sent before its phase uploads into the old phase, and ends the session with a Finish to each local
server once all have finished (see :mod:`privbandits.deploy.fclub.party`)."""

from __future__ import annotations

from contextlib import nullcontext
from typing import overload

from privbandits.comm import Message, PeerLost, ProtocolError, TlsNetwork
from privbandits.comm.messages import M
from privbandits.deploy.deployment import Deployment
from privbandits.deploy.fclub import resume as fclub_resume
from privbandits.deploy.fclub.messages import (
    SCHEDULE,
    SEQUENCE,
    Applied,
    Checked,
    Downloads,
    Finish,
    PhaseStart,
    UploadDone,
)
from privbandits.deploy.fclub.section import FCLUBProtocol
from privbandits.deploy.fclub.session import (
    _calibration,
    _check_sender,
    _next,
    _protocol,
    chain_upload,
    free_running,
)
from privbandits.protocols.fclub.global_server import GlobalServer
from privbandits.protocols.fclub.messages import ASYNC, CHECK, DETECT, PHASE_END, DownloadCheck, PhaseUpload, Upload


class DeployedGlobal(GlobalServer):
    """The global server of a deployment: goes on without a lost local server."""

    network: TlsNetwork  # deployed: a transport's, which can drop a lost peer
    SAVED = (*GlobalServer.SAVED, "lost", "undelivered", "uploads_digest")

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.lost: dict[str, str] = {}
        self.undelivered = 0
        """Messages due to a lost local server, not sent."""
        self.uploads_digest = ""
        """:func:`upload_digest` of every phase upload and upload received, with its sender."""

    @overload
    def receive(self, kind: type[M], sender: str | None = None) -> M: ...
    @overload
    def receive(self, kind: str, sender: str | None = None) -> Message: ...
    def receive(self, kind: str | type[Message], sender: str | None = None) -> Message:
        msg = super().receive(kind, sender)
        if isinstance(msg, PhaseUpload | Upload):
            self.uploads_digest = chain_upload(self.uploads_digest, sender, msg)
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


class _GlobalRun:
    """The global server's session: the loop over what the users and the local servers send."""

    def __init__(self, deployment: Deployment[FCLUBProtocol], name: str, network: TlsNetwork) -> None:
        self.deployment, self.name, self.network, self.free = deployment, name, network, free_running(deployment)
        self.servers, self.users = deployment.names("local_server"), deployment.names("users")[0]
        self.glob = DeployedGlobal(network, list(self.servers), _protocol(deployment).dim, _calibration(deployment))
        self.downloads: dict[str, list[int]] = {server: [] for server in self.servers}  # per upload, in order
        self.changed: list[int] = []  # rounds whose detection changed the partition
        self.crossed_uploads = 0  # free-running: uploads and checks of the old phase read after its PhaseStart
        self.finished: set[str] = set()  # free-running: the parties whose Finish has come
        self.resumed_at = 0  # the phase start a resumed session went on from
        self.due: dict[tuple[str, int], None] = {}  # free-running: local clusters due a download, in order
        self.last = ""  # free-running: the local server whose upload was absorbed last

    def state(self) -> dict:
        """What a checkpoint holds: the global server's state (not its links or configuration) and the session's."""
        return {"glob": self.glob, "downloads": self.downloads, "changed": self.changed,
                "crossed": self.crossed_uploads}  # fmt: skip

    def resume(self, resume: bool) -> None:
        """Resumed: the state of the agreed phase start put back; else an earlier session's checkpoints cleared."""
        if not resume:
            fclub_resume.start_afresh(self.deployment, self.name)
            return
        self.resumed_at = t = fclub_resume.agree(self.deployment, self.name, self.glob)
        state = fclub_resume.load(self.deployment, self.name, t, self.network)
        state.restore({"glob": self.glob})
        self.downloads, self.changed, self.crossed_uploads = state["downloads"], state["changed"], state["crossed"]

    def loop(self, deployment: Deployment[FCLUBProtocol]) -> None:
        wanted = (PhaseStart.kind, Upload.kind, DownloadCheck.kind, Finish.kind)
        while not self._over():
            try:
                sender, kind = _next(self.glob, wanted, deployment)
            except PeerLost as exc:
                if exc.peer != self.users or self.users not in self.finished:  # the users may close once done
                    self.glob.lose(exc.peer, exc)  # a local server (anyone else ends the session)
                continue
            if kind == PhaseStart.kind:
                _check_sender(self.name, sender, kind, self.users)
                self.phase_start()
            elif kind == Finish.kind:
                self.finish(sender)
            elif sender not in self.servers:
                raise ProtocolError(
                    f"{self.name!r} takes {kind!r} messages only from local servers, got one from {sender!r}"
                )
            else:
                self.serve(sender, kind)

    def _over(self) -> bool:
        if not self.free:
            return self.users in self.finished
        return self.users in self.finished and set(self.glob.servers) <= self.finished

    def phase_start(self) -> None:
        glob, network = self.glob, self.network
        t = glob.receive(PhaseStart, self.users).t
        network.round_label = f"the phase from round {t}"  # the global server sees no other round
        if self.free:
            self._drain_old_phase()
            self._send_due()
        with network.phase(DETECT):
            if glob.detect(t):
                self.changed.append(t)
        with network.phase(PHASE_END):
            glob.end_phase()
        if fclub_resume.is_phase_start(t):
            fclub_resume.save(self.deployment, self.name, t, self.state(), network)

    def _drain_old_phase(self) -> None:
        """Free-running: each local server's uploads and checks sent before its phase uploads (the old phase's)."""
        for server in list(self.glob.servers):
            try:
                while (kind := self.glob.peek((Upload.kind, DownloadCheck.kind, PhaseUpload.kind), server)[1]) != (
                    PhaseUpload.kind
                ):
                    self.serve(server, kind)
                    self.crossed_uploads += 1
            except PeerLost as exc:
                self.glob.lose(server, exc)

    def serve(self, sender: str, kind: str) -> None:
        """An upload (its downloads sent) or a download check; lock-step, each confirmed. Free-running, the downloads
        an upload makes due wait until no other message is waiting: each then carries every upload absorbed."""
        if kind == Upload.kind and self.free:
            with self.network.phase(ASYNC):
                self.due.update(dict.fromkeys(self.glob.receive_upload(sender)))
            self.downloads[sender].append(0)
            self.last = sender
            if not self._waiting():
                self._send_due()
            return
        if kind == Upload.kind:
            self.downloads[sender].append(serve_upload(self.glob, sender, self.network))
            return
        with self.network.phase(CHECK):
            self.glob.receive_download_check(sender)
        if not self.free:
            with self.network.phase(SEQUENCE):
                self.glob.send(sender, Checked())

    def _waiting(self) -> bool:
        """Whether a message for the loop is already here (read ahead, or on a link), without waiting."""
        try:
            with self.network.patience(0.0):
                self.glob.peek((PhaseStart.kind, Upload.kind, DownloadCheck.kind, Finish.kind))
        except PeerLost as exc:
            if exc.peer != "any" and "deadline" not in str(exc):  # a closed or aborted link, not the empty poll
                raise
            return False
        return True

    def _send_due(self) -> None:
        """Free-running: the downloads due (each member's buffer once), one message per local server
        (:class:`Downloads`), counted with the last upload absorbed."""
        delivered = 0
        by_server: dict[str, list[tuple[str, int]]] = {}
        for key in self.due:
            if key[0] not in self.glob.lost and key in self.glob.members:
                by_server.setdefault(key[0], []).append(key)
        with self.network.phase(ASYNC):
            for server, keys in by_server.items():
                self.glob.send(server, Downloads.of([self.glob.take_download(key) for key in keys]))
                delivered += len(keys) if server not in self.glob.lost else 0
        if self.due:
            self.downloads[self.last][-1] += delivered
        self.due = {}

    def finish(self, sender: str) -> None:
        """Lock-step: the users' Finish (or a local server's, read first from another link) ends the loop, then
        every local server's; free-running: each party's, as it comes, then one to each local server."""
        if not self.free:
            self.glob.receive(Finish.kind, self.users)
            self.finished.add(self.users)
            _await_finish(self.glob)
            return
        self.glob.receive(Finish.kind, sender)
        self.finished.add(sender)
        if self._over():
            self._send_due()
            with self.network.phase(SCHEDULE):
                for server in list(self.glob.servers):
                    self.glob.send(server, Finish(0))

    def result(self) -> dict:
        glob = self.glob
        lost = ", ".join(f"{server} ({reason})" for server, reason in glob.lost.items())
        return {
            "party": self.name,
            "role": "global_server",
            "outcome": f"{len(glob.partition)} global cluster(s) from {len(glob.servers)} local servers"
            + (f"; lost {lost}; the others finished" if glob.lost else ""),
            "lost": glob.lost,
            "undelivered": glob.undelivered,
            "downloads_per_upload": self.downloads,
            "changed_rounds": self.changed,
            "resumed_at": self.resumed_at,
            "counts": {"changed_phases": glob.changed_phases, "idle_downloads": glob.idle_downloads},
            **({"crossings": {"crossed_uploads": self.crossed_uploads}} if self.free else {}),
            "partition": sorted(sorted([server, int(uid)] for server, uid in group) for group in glob.partition),
            "ledger": glob.ledger.rows(),
            "uploads_digest": glob.uploads_digest,
        }


def run_global(deployment: Deployment[FCLUBProtocol], name: str, network: TlsNetwork, resume: bool = False) -> dict:
    session = _GlobalRun(deployment, name, network)
    session.resume(resume)
    with network.batch() if session.free else nullcontext():  # free-running: a wait flushes what it holds
        session.loop(deployment)
    network.close()
    return session.result()


def serve_upload(glob, sender: str, network: TlsNetwork, confirm: bool = True) -> int:
    """Lock-step, an upload: absorb it, send the downloads it makes due, wait until each is applied, confirm it
    (unless not ``confirm``: a served global server first runs the phase start it makes due). Returns how many
    downloads were delivered."""
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
        if confirm:
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
