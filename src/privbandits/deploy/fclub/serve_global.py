"""The served FCLUB global server (:mod:`privbandits.deploy.fclub.serving`): a plain
:class:`~privbandits.serve.role.ServedRole`. It has no application API; its links' thread serves the local servers
(uploads, their downloads, ticks) and keeps the federation's clock, running each phase start the clock makes due
behind a barrier (:class:`~.serve_messages.Quiesce` / :class:`~.serve_messages.Quiet`).

Its state is soft: everything it holds (global statistics, download buffers, the partition) is rebuilt from the local
servers' phase uploads at a phase start, and its clock from their counts; it keeps no checkpoint of its own.
"""

from __future__ import annotations

from privbandits.comm import InMemoryNetwork, Message, PeerLost, ProtocolError
from privbandits.deploy.deployment import Deployment
from privbandits.deploy.fclub.global_server import DeployedGlobal, serve_upload
from privbandits.deploy.fclub.messages import SCHEDULE, SEQUENCE, PhaseStart, UploadDone
from privbandits.deploy.fclub.party import prepare
from privbandits.deploy.fclub.section import FCLUBProtocol
from privbandits.deploy.fclub.serve_messages import CLOCK, Quiesce, Quiet, Tick, Ticked
from privbandits.deploy.fclub.serving import Links, check_statistics, identity, linked, waiting, waiting_message
from privbandits.deploy.fclub.session import _calibration, _protocol, config_of
from privbandits.protocols.fclub.messages import CHECK, DETECT, PHASE_END, DownloadCheck, Upload
from privbandits.serve.role import JsonObject, ServedRole

ROUND_KINDS = (Upload.kind, Tick.kind, DownloadCheck.kind)
"""What a local server sends after each reward it absorbs: each is one round of the federation's clock."""
IDLE_POLL_S = 0.5
"""How long the links' thread waits for a round before it looks whether it is asked to stop."""


class ServedGlobalServer(ServedRole):
    """The global server, served (see the module docstring)."""

    kind = "fclub-global-server"

    def __init__(self, deployment: Deployment[FCLUBProtocol], name: str) -> None:
        self.deployment, self.name = deployment, name
        self.config = config_of(deployment)
        self.servers = deployment.names("local_server")
        self.glob = DeployedGlobal(InMemoryNetwork(), list(self.servers), _protocol(deployment).dim,
                                   _calibration(deployment))  # fmt: skip  # linked in start()
        self.links = Links()
        self.rounds = 0  # rewards absorbed by the local servers, all together (the clock)
        self.phase, self.next_start = 0, 1
        self.phase_starts: list[int] = []
        self.changed: list[int] = []
        self.broken = False  # a link ended: link again, then resynchronise
        self.relinks = 0

    def identity(self) -> str:
        return identity(self.deployment, self.name)

    # -- links ---------------------------------------------------------------
    def start(self) -> None:
        prepare(self.deployment, self.name)
        self._link()
        self.links.run(self._loop, self.name)

    def stop(self) -> None:
        self.links.stop()

    def _link(self) -> None:
        """(Re)make the links to every local server (a fresh network: each comes back, or is restarted, and dials)."""
        if self.links.network is not None:
            self.links.network.close_sockets()
        self.glob.lost.clear()
        self.glob.servers = list(self.servers)
        self.broken = False
        network = linked(self.deployment, self.name, self.servers, self.deployment.deadline_s, self.links.stopping)
        self.links.network = self.glob.network = network
        self.glob.endpoint = network.register(self.glob.name)

    def _loop(self) -> None:
        """The first phase start (from the local servers' counts: round 1 of a new federation), then the rounds; a
        link that ends (a local server stopped or restarted) makes the federation link again and resynchronise."""
        with self.links.lock:
            self._phase_start(None)
        while not self.links.stopping.is_set():
            if self.broken or self.glob.lost:
                with self.links.lock:
                    self.relinks += 1
                    self._link()
                    self._phase_start(None)
                continue
            try:
                with self.glob.network.patience(IDLE_POLL_S):
                    sender, kind = self.glob.peek(ROUND_KINDS)
            except PeerLost as exc:
                self.broken = not waiting(exc)
                continue
            with self.links.lock:
                self._round(sender, kind)

    def _lose(self, exc: PeerLost) -> None:
        if exc.peer in self.glob.servers:
            self.glob.lose(exc.peer, exc)
        self.broken = True

    # -- rounds and phases ------------------------------------------------------
    def _absorb(self, sender: str, kind: str) -> Message:
        """One round from ``sender``: its upload (with the downloads it makes due, each applied), its download check,
        or its tick, counted; the answer it waits for."""
        network = self.glob.network
        self.rounds += 1
        if kind == Upload.kind:
            upload = waiting_message(network, sender, Upload.kind)  # type: ignore[arg-type]
            check_statistics(upload, sender, self.glob.dim, {c for s, c in self.glob.members if s == sender})
            serve_upload(self.glob, sender, network, confirm=False)  # type: ignore[arg-type]
            return UploadDone()
        if kind == DownloadCheck.kind:
            with network.phase(CHECK):
                self.glob.receive_download_check(sender)
        else:
            self.glob.receive(Tick, sender)
        return Ticked()

    def _round(self, sender: str, kind: str) -> None:
        """A round, then the phase start it makes due (if any), then its answer."""
        try:
            answer = self._absorb(sender, kind)
            t = self.rounds + 1
            if self._starts(t):
                self._phase_start(t)
            with self.glob.network.phase(SEQUENCE):
                self.glob.send(sender, answer)
        except PeerLost as exc:
            self._lose(exc)

    def _starts(self, t: int) -> bool:
        """Whether round ``t`` starts a phase: t = 2^s − 1 (past it, if rounds of a barrier passed it), or every
        round with ``detect_every_round``."""
        if t >= self.next_start:
            self.phase += 1
            self.next_start = 2 ** (self.phase + 1) - 1
            return True
        return self.config.detect_every_round

    def _phase_start(self, t: int | None) -> None:
        """Quiesce every local server (serving the rounds each still had in flight), then the phase start of round
        ``t`` as ``deploy`` runs it: detection and phase uploads, the merge, the renewals. ``t`` None: a
        resynchronisation (a new federation, or one linked again after a party stopped): the clock is rebuilt from
        the local servers' counts and the renewal is forced, so the global statistics are rebuilt from the phase
        uploads, which hold every reward each local server absorbed."""
        glob, network = self.glob, self.glob.network
        with network.phase(CLOCK):
            for server in list(glob.servers):
                glob.send(server, Quiesce())
        absorbed = 0
        for server in list(glob.servers):
            try:
                while (kind := glob.peek((*ROUND_KINDS, Quiet.kind), server)[1]) != Quiet.kind:
                    answer = self._absorb(server, kind)
                    with network.phase(SEQUENCE):
                        glob.send(server, answer)
                rewards = glob.receive(Quiet, server).rewards
                if not (isinstance(rewards, int) and rewards >= 0):
                    raise ProtocolError(f"{server!r} sent a malformed 'quiet': rewards must be >= 0, got {rewards!r}")
                absorbed += rewards
            except PeerLost as exc:
                self._lose(exc)
        if t is None:
            self.rounds, t = absorbed, absorbed + 1
            self.phase = (t + 1).bit_length() - 1  # the phase round t is in: 2^s − 1 <= t < 2^(s+1) − 1
            self.next_start = 2 ** (self.phase + 1) - 1
            glob.partition = frozenset()  # renew: every local copy and download buffer starts again from the uploads
        network.round_label = f"the phase from round {t}"
        with network.phase(SCHEDULE):
            for server in list(glob.servers):
                glob.send(server, PhaseStart(t))
        with network.phase(DETECT):
            if glob.detect(t):
                self.changed.append(t)
        with network.phase(PHASE_END):
            glob.end_phase()
        self.phase_starts.append(t)

    # -- views ---------------------------------------------------------------
    def ledger(self) -> JsonObject:
        with self.links.lock:
            received = len(self.glob._received)
            return {
                "privacy": "receives only the local servers' cluster statistics, privatized at each local server "
                "when the variant is private (cluster DP, spec §4)",
                "rounds": self.rounds,
                "phase_starts": list(self.phase_starts),
                "changed_phases": list(self.changed),
                "global_clusters": len(self.glob.partition),
                "releases_received": received,
                "lost": dict(self.glob.lost),
                "relinks": self.relinks,
                "links": "up" if self.links.failure is None else f"ended: {self.links.failure}",
            }

    @property
    def model_version(self) -> int:
        return self.rounds
