"""A served FCLUB local server (:mod:`privbandits.deploy.fclub.serving`): a
:class:`~privbandits.serve.decider.Decider` over the protocol's :class:`~privbandits.protocols.fclub.LocalServer`.

* decide: ``user_id`` is one of this server's users (a global user id), ``features`` the K candidate arms' rows
  (K × d; ``arms`` may restrict the candidates); the arm of the UCB on the user's local cluster's synchronized
  statistics (§3.7). The event's state, kept in this server's store only, is the user and the chosen arm's row.
* absorb: the user's statistics and its cluster's upload buffer learn ``(x, y)`` (clipped to ‖x‖ ≤ 1, |y| ≤ 1 when the
  variant is private, as in memory); then the upload Eq. 5 makes due, or a tick, goes to the global server, and the
  absorb waits for its answer, applying the downloads and the phase start that come first.
* expire: nothing is learnt, and the clock does not move (a round is a reward absorbed).

Its privatizers' noise and tie-breaks come from OS entropy at this server, or from the file's seed with
``reproducible = true`` (then the decisions equal ``deploy local``'s). Its learner's state (the users' statistics,
the clusters, the privatizers and the generators) is checkpointed exactly.
"""

from __future__ import annotations

import warnings

import numpy as np

from privbandits.comm import Envelope, Message, Network, PeerLost, ProtocolError, TlsNetwork
from privbandits.deploy.deployment import Deployment
from privbandits.deploy.fclub.local_server import _apply_download, _detect, _LocalEvents
from privbandits.deploy.fclub.messages import NOISE_WARNING, PhaseStart, UploadDone
from privbandits.deploy.fclub.party import prepare
from privbandits.deploy.fclub.section import FCLUBProtocol
from privbandits.deploy.fclub.serve_messages import CLOCK, Quiesce, Quiet, Tick, Ticked
from privbandits.deploy.fclub.serving import (
    POLL_S,
    Links,
    check_statistics,
    decode_state,
    encode_state,
    identity,
    linked,
    readable,
    waiting_message,
)
from privbandits.deploy.fclub.session import _calibration, _protocol, _server_of_user, config_of, local_rng
from privbandits.linear._kernels import finite_row_norms
from privbandits.linear.tiebreak import TieBreak
from privbandits.privacy.bounds import DataBounds
from privbandits.protocols.fclub.local_server import LocalServer
from privbandits.protocols.fclub.messages import ASYNC, CHECK, GLOBAL, Download
from privbandits.serve.decider import DecidedEvent, DecideInput, Decider, Decision, JsonObject, Refused

FROM_GLOBAL = (Download.kind, Quiesce.kind)
"""What the global server sends a local server unasked: a download, or the barrier before a phase start."""


class _Unlinked(Network):
    """A local server's network before its links are made (its recovery replays its journal then): its messages go
    nowhere; the phase start that follows the linking rebuilds what the global server holds from the phase uploads."""

    def _send(self, name: str, receiver: str, message: Message) -> None:
        return None

    def _deliver(self, envelope: Envelope, depth: int) -> None:
        return None

    def _take(self, receiver: str, kind: str, sender: str | None) -> tuple[Envelope, int]:
        raise ProtocolError(f"{receiver!r} is not linked yet: no {kind!r} message can come")


class ServedLocalServer(Decider):
    """Local server ``name`` of the deployment, served (see the module docstring)."""

    kind = "fclub-local-server"

    def __init__(self, deployment: Deployment[FCLUBProtocol], name: str) -> None:
        self.deployment, self.name = deployment, name
        protocol, self.config = _protocol(deployment), config_of(deployment)
        self.n_arms, self.dim = protocol.n_arms, protocol.dim
        ell = deployment.names("local_server").index(name)
        self.users = np.flatnonzero(_server_of_user(deployment) == ell)
        self.index = {int(user): i for i, user in enumerate(self.users)}
        self.server = LocalServer(name, _Unlinked(), self.users, self.dim, _calibration(deployment),
                                  local_rng(deployment, name))  # fmt: skip  # linked in start()
        self.events = _LocalEvents()
        self.bounds = DataBounds(self.config.private)
        self.absorbed = 0
        self.count_idle = self.config.rebuild_local_copies and not self.config.synchronous
        self.links = Links()
        if protocol.preset == "reference":  # its noise often passes ρ, as in the experiments' runs: not news there
            warnings.filterwarnings("ignore", message=NOISE_WARNING)

    def identity(self) -> str:
        return identity(self.deployment, self.name)

    # -- links ---------------------------------------------------------------
    def start(self) -> None:
        prepare(self.deployment, self.name)
        with self.links.lock:
            self._relink()
        self.links.run(self._watch, self.name)

    def stop(self) -> None:
        self.links.stop()

    def _relink(self) -> None:
        """(Re)make the link to the global server, then take part in the phase start that follows it (a new
        federation's first, or the resynchronisation after a party stopped or restarted); again while the link ends
        before that phase start is over."""
        while True:
            if self.links.network is not None:
                self.links.network.close_sockets()
            network = linked(self.deployment, self.name, [GLOBAL], 2 * self.deployment.deadline_s, self.links.stopping)
            self.links.network = self.server.network = network
            self.server.endpoint = network.register(self.name)
            target = len(self.events.phases) + 1
            try:
                with network.patience(self.deployment.connect_deadline_s):
                    while len(self.events.phases) < target:
                        self._take(FROM_GLOBAL)
                return
            except PeerLost:
                if self.links.stopping.is_set():
                    raise

    def _watch(self) -> None:
        """The links' thread: the downloads and phase starts the global server sends between this server's absorbs."""
        while not self.links.stopping.is_set():
            network = self.links.network
            assert network is not None
            link = network.link(GLOBAL)
            try:
                ready = readable(link, POLL_S)  # looked at without the lock: decisions go on meanwhile
            except (OSError, ValueError):  # the link was made again meanwhile (its old socket closed)
                ready = True
            if not ready:
                continue
            with self.links.lock:
                if self.links.network is not network:
                    continue
                try:
                    if readable(link, 0.0) or any(item[0].message.kind in FROM_GLOBAL for item in link.queue):
                        self._handle(self.server.peek(FROM_GLOBAL, GLOBAL)[1])
                except PeerLost:
                    if self.links.stopping.is_set():
                        return
                    self._relink()

    def _take(self, kinds: tuple[str, ...]) -> str:
        """The next message of ``kinds`` from the global server: handled if it is one it sends unasked, else left
        waiting; its kind."""
        kind = self.server.peek(kinds, GLOBAL)[1]
        if kind in FROM_GLOBAL:
            self._handle(kind)
        return kind

    def _handle(self, kind: str) -> None:
        network = self.links.network
        assert network is not None, "only a linked server hears from the global server"
        if kind == Download.kind:
            self._apply_download(network)
            return
        self.server.receive(Quiesce, GLOBAL)
        with network.phase(CLOCK):
            self.server.send(GLOBAL, Quiet(self.absorbed))
        while self.server.peek((Download.kind, PhaseStart.kind), GLOBAL)[1] == Download.kind:
            self._apply_download(network)  # what rounds of the old phase still make due
        _detect(self.server, self.events, network)

    def _apply_download(self, network: TlsNetwork) -> None:
        """A download from the global server, checked (a known cluster, finite statistics of the right shapes), then
        applied and acknowledged as ``deploy`` does."""
        msg = waiting_message(network, GLOBAL, Download.kind)
        check_statistics(msg, GLOBAL, self.dim, self.server.clusters)
        _apply_download(self.server, self.events, network)

    # -- deciding ------------------------------------------------------------
    def _user(self, user_id: str) -> int:
        first, last = int(self.users[0]), int(self.users[-1])
        try:
            user = int(user_id)
        except ValueError:
            user = -1
        if user not in self.index:
            raise Refused("user_id", f"must be a user of {self.name}: an integer in [{first}, {last}], got {user_id!r}")
        return self.index[user]

    def _candidates(self, arms: tuple[int, ...] | None) -> np.ndarray:
        if arms is None:
            return np.arange(self.n_arms)
        if not arms:
            raise Refused("arms", "must name at least one arm")
        for i, arm in enumerate(arms):
            if not 0 <= arm < self.n_arms:
                raise Refused(f"arms[{i}]", f"must be an arm in [0, {self.n_arms - 1}], got {arm}")
        if len(set(arms)) != len(arms):
            raise Refused("arms", "must not repeat an arm")
        return np.asarray(arms)

    def _contexts(self, features: np.ndarray) -> np.ndarray:
        if features.shape != (self.n_arms, self.dim):
            raise Refused(
                "features",
                f"must be one row of d = {self.dim} numbers per arm (K = {self.n_arms} rows), got shape "
                f"{features.shape[0]} × {features.shape[1]}",
            )
        contexts = np.ascontiguousarray(features, dtype=np.float64)
        if not finite_row_norms(contexts):
            raise Refused("features", "rows must have a finite squared norm (a row overflows float64)")
        return contexts

    def decide(self, request: DecideInput) -> Decision:
        i = self._user(request.user_id)
        contexts = self._contexts(request.features)
        candidates = self._candidates(request.arms)
        with self.links.lock:
            arm = int(candidates[self.server.recommend(i, contexts[candidates])])
        state: JsonObject = {"user": i, "x": contexts[arm].tolist()}
        if self.config.tie_break is not TieBreak.LOWEST:  # its draws are redone on recovery
            state["candidates"] = contexts[candidates].tolist()
        return Decision(arm, None, self.model_version, state)

    def replay_decision(self, event: DecidedEvent) -> None:
        if "candidates" in event.event_state:
            with self.links.lock:
                self.server.recommend(event.event_state["user"], np.asarray(event.event_state["candidates"]))

    # -- learning ------------------------------------------------------------
    def check_reward(self, event: DecidedEvent, reward: float) -> None:
        if self.links.network is None:
            raise Refused("reward", f"{self.name} is not linked to the global server yet", 503)

    def absorb(self, event: DecidedEvent, reward: float) -> None:
        i = int(event.event_state["user"])
        x, y = self.bounds.apply(np.asarray(event.event_state["x"], dtype=np.float64), float(reward))
        with self.links.lock:
            if not self.server.cluster_of:  # recovery of a server that crashed before its first checkpoint: its
                self.server.detect(1)  # clusters as a first detection makes them (the phase start that follows its
            cluster = self.server.observe(i, x, y)  # linking replaces what the global server gave it)
            self.absorbed += 1
            self.events.counts["served"] += 1
            if self.links.network is None:  # recovery, before the links: the upload goes nowhere (the phase start
                if cluster is not None:  # that follows the linking rebuilds what the global server holds)
                    self.server.upload(cluster)
                    self.events.counts["uploads"] += 1
                return
            try:
                self._exchange(i, cluster)
            except PeerLost:  # the global server (or this link) went: link again and resynchronise
                if self.links.stopping.is_set():
                    raise
                self._relink()

    def _exchange(self, i: int, cluster) -> None:
        """The upload Eq. 5 made due (or the download check, or a tick), then the global server's answer, applying
        the downloads and the phase start that come first."""
        network = self.links.network
        assert network is not None
        if cluster is not None:
            with network.phase(ASYNC):
                self.server.upload(cluster)
            self.events.counts["uploads"] += 1
            answer = UploadDone.kind
        elif self.count_idle:
            with network.phase(CHECK):
                self.server.check_download(i)
            self.events.counts["download_checks"] += 1
            answer = Ticked.kind
        else:
            with network.phase(CLOCK):
                self.server.send(GLOBAL, Tick())
            answer = Ticked.kind
        while self._take((*FROM_GLOBAL, answer)) != answer:
            pass
        self.server.receive(answer, GLOBAL)

    # -- views and state -------------------------------------------------------
    @property
    def model_version(self) -> int:
        counts = self.events.counts
        return self.absorbed + counts["downloads"] + counts["renewals"] + len(self.events.phases)

    def ledger(self) -> JsonObject:
        with self.links.lock:
            privatizers, per_datum = self.server.privacy_accounts()
            entries = self.server.ledger.entries
            return {
                "privacy": "cluster DP (spec §4): each upload leaves privatized by this server's tree mechanisms"
                if self.config.private and not self.config.noise_in_trigger_only
                else "none: this variant's uploads leave without noise",
                "epsilon_per_privatizer": self.config.epsilon if self.config.private else 0.0,
                "delta_per_privatizer": self.config.delta if self.config.private else 0.0,
                "releases": len(entries),
                "privatizers": len(privatizers),
                "max_nodes_per_datum": per_datum,
                **self.server.per_user_epsilons(),
                "rewards_absorbed": self.absorbed,
                "counts": dict(self.events.counts),
                "phase_starts": [t for t, _, _ in self.events.phases],
                "clipped": self.bounds.metrics(),
                "links": "up" if self.links.failure is None else f"ended: {self.links.failure}",
            }

    def privacy_spent(self) -> dict[str, float]:
        if not self.config.private:
            return {}
        return {"epsilon_per_privatizer": self.config.epsilon, "releases": float(len(self.server.ledger.entries))}

    def checkpoint(self) -> bytes:
        with self.links.lock:
            role = {"absorbed": self.absorbed, "clipped": [self.bounds.clipped_contexts, self.bounds.clipped_rewards]}
            return encode_state({"server": self.server.state(), "events": self.events.state(), "role": role})

    def restore(self, state: bytes) -> None:
        saved = decode_state(state)
        try:
            self.server.restore(saved["server"])
            self.events.restore(saved["events"])
            role = saved["role"]
        except KeyError as exc:
            raise ValueError(f"the checkpoint lacks {exc}") from None
        self.absorbed = int(role["absorbed"])
        self.bounds.clipped_contexts, self.bounds.clipped_rewards = (int(n) for n in role["clipped"])
