"""The MPC ε-greedy deployment's parties as services (``privbandits serve DEPLOY.toml --as NAME``, issue 46).

Who faces an application (docs/serve-mpc.md):

* each **computing** party is a :class:`~privbandits.serve.role.FeatureHolder`
  (:class:`~privbandits.deploy.mpc_bandit.serving_computing.ComputingHolder`): its application puts its own block of
  an event's context under the event id (``POST /v1/features``, one row; one event = one block);
* the **environment** (p′ = p″) is the :class:`~privbandits.serve.decider.Decider`
  (:class:`~privbandits.deploy.mpc_bandit.serving_environment.EnvironmentDecider`): its application asks for the
  decision of an event id and later reports the reward;
* the **dealer** serves the computing parties only (:class:`DealerService`): a round's material when asked for it.

One event is one round of Alg. 1, split where the deployment's round waits for the pull: the environment starts
the round (:class:`Start`); each computing party waits (at most the deployment's ``deadline_s``) for its block of
the event and says whether it has it (:class:`Ready`); only if all have it does the environment let the round run
(:class:`Go`), otherwise nothing changes anywhere and the decide is refused (503, naming the party whose block is
missing). The round runs up to a_t, opened to the environment alone, which answers the application. The reward, when
it comes (or the event's expiry), closes the round (:class:`Close`): the environment shares r_t and the computing
parties finish the Sherman–Morrison update (an expired event's round is played with r = 0 and its update dropped:
the learner is told nothing, while every party's randomness stays in step). Each computing party writes its state
(its shares of W^{-1} and b, its input generator) to its own checkpoint before it acknowledges the close
(:class:`Ack`); the environment writes its own after every acknowledgement. The learner is sequential (each
decision uses every earlier reward): one event at a time is open at the MPC learner.

**Recovery.** A party that finds a link ended aborts its links (the others hear of it) and links again; every new
session begins with the agreement of the deployment's ``--resume``: each computing party offers the rounds it holds
a checkpoint of (its last two), the environment picks the last round all hold, and everyone loads it (a computing
party killed mid-round is one behind; the others roll back to it). The environment then replays, from its own
store, the event of the next round if its decision was acknowledged (the round is played again from the same state,
material and generators, so it opens the same arm: checked) and its close if its reward or expiry was acknowledged.
So every acknowledged reward is absorbed exactly once, every acknowledged decision stays joinable, and a round that
was cut before its answer is as if it had never begun.
"""

from __future__ import annotations

import logging
import select
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from privbandits.comm import HandshakeError, Message, MessageDecodeError, PeerLost, ProtocolError, TlsNetwork, message
from privbandits.comm.frames import FrameError
from privbandits.deploy.deployment import Deployment, DeploymentError
from privbandits.deploy.mpc_bandit.party import load_dealer_seed, save_state, saved_states
from privbandits.deploy.mpc_bandit.section import MPCProtocol
from privbandits.serve.role import JsonObject, ServedRole

log = logging.getLogger(__name__)

SERVE = "serve"
"""Phase of the messages that drive the served rounds (start, ready, go, close, acknowledgements, agreement)."""

LINK_FAILURES = (PeerLost, ProtocolError, FrameError, MessageDecodeError, OSError, DeploymentError)
"""What ends a session of links (the role links again)."""

POLL_S = 0.5
"""How often a waiting party checks whether it should stop."""

MOST_SERVED_ROUNDS = 10**9
"""The largest round a party accepts in a message (a guard on what peers send, far beyond any session)."""


@message("serve.mpc.start")
class Start(Message):
    """Environment → computing party: round ``round`` is the event ``event``; does it have its block?"""

    event: str
    round: int


@message("serve.mpc.ready")
class Ready(Message):
    """Computing party → environment: whether it has its block of round ``round``'s event (within its wait)."""

    round: int
    ready: bool


@message("serve.mpc.go")
class Go(Message):
    """Environment → computing party: run round ``round`` (``go``), or drop it (a block is missing)."""

    round: int
    go: bool


@message("serve.mpc.close")
class Close(Message):
    """Environment → computing party: round ``round`` closes; ``rewarded``: its reward follows (shared), else the
    event expired and the round's update is dropped."""

    round: int
    rewarded: bool


@message("serve.mpc.ack")
class Ack(Message):
    """Computing party → environment: round ``round`` is closed and in its checkpoint."""

    round: int


@message("serve.mpc.offer")
class Offer(Message):
    """Computing party → environment, at every new session: the rounds it holds a checkpoint of."""

    rounds: np.ndarray


@message("serve.mpc.agree")
class Agree(Message):
    """Environment → computing party: every party continues after round ``round``."""

    round: int


@message("serve.mpc.material_request")
class MaterialRequest(Message):
    """Computing party → dealer: its shares of round ``round``'s material, please."""

    round: int


def check_round(value: object, what: str, sender: str, expected: int | None = None) -> int:
    """``value`` as a round a peer may name (ProtocolError naming the sender otherwise)."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or not 0 <= int(value) <= MOST_SERVED_ROUNDS:
        raise ProtocolError(f"{sender!r} sent {what} with round {value!r}, not a round number")
    if expected is not None and int(value) != expected:
        raise ProtocolError(f"{sender!r} sent {what} for round {int(value)}, expected round {expected}")
    return int(value)


def check_flag(value: object, what: str, sender: str) -> bool:
    """``value`` as a yes/no a peer sends (ProtocolError naming the sender otherwise)."""
    if not isinstance(value, bool | np.bool_):
        raise ProtocolError(f"{sender!r} sent {what} whose flag is {value!r}, not true or false")
    return bool(value)


# ----------------------------------------------------------------------------- state files


def state_name(name: str) -> str:
    """The checkpoint name of party ``name``'s served state (beside, never over, its ``deploy`` checkpoints)."""
    return f"{name}.serve"


def held_rounds(deployment: Deployment[MPCProtocol], name: str) -> dict[int, tuple[dict[str, np.ndarray], dict]]:
    """The served checkpoints party ``name`` holds, by round (its last two)."""
    return saved_states(deployment, state_name(name))


def save_round(
    deployment: Deployment[MPCProtocol], name: str, rounds: int, arrays: dict[str, np.ndarray], meta: dict
) -> None:
    """Party ``name``'s served state after ``rounds`` rounds, durable (atomic, fsynced); the one before is kept."""
    save_state(deployment, state_name(name), rounds, arrays, meta)


def state_path(deployment: Deployment[MPCProtocol], name: str) -> Path:
    return deployment.checkpoint_path(state_name(name))


# ----------------------------------------------------------------------------- links


class Stopped(Exception):
    """A wait ended because the role is stopping (not a failure)."""


def wait_message(
    network: TlsNetwork, kind: type[Message], senders: Sequence[str], stop: threading.Event, *, watch_all: bool = False
) -> tuple[str, Message] | None:
    """The next ``kind`` message from any of ``senders``, waiting as long as it takes (None once ``stop`` is set).

    ``watch_all``: every link is watched meanwhile (for a party between rounds, to which no peer sends anything
    else): a peer that ends (its process killed, or an ABORT) raises :class:`~privbandits.comm.PeerLost` at once,
    and any other message is a protocol error. Otherwise only the senders' links are (a peer may already send the
    next step of the round to a party that is still reading this message)."""
    peers = [peer for peer in network.parties if peer != network.local] if watch_all else list(senders)
    while not stop.is_set():
        for peer in peers:
            link = network.link(peer)
            if link.queue or link.has_data():
                return _take(network, kind, senders, peer)
        readable, _, _ = select.select([network.link(peer).sock for peer in peers], [], [], POLL_S)
        for sock in readable:
            peer = next(peer for peer in peers if network.link(peer).sock is sock)
            return _take(network, kind, senders, peer)
    return None


def _take(network: TlsNetwork, kind: type[Message], senders: Sequence[str], peer: str) -> tuple[str, Message]:
    got = network.receive_one_of(network.local, (kind.kind,), peer)  # PeerLost if the link ended
    if peer not in senders:
        raise ProtocolError(f"{peer!r} sent a {got.kind!r} message while {network.local!r} waited on {list(senders)}")
    return peer, got


class LinkedRole:
    """The links of a served party: a thread that links with every peer (mutual TLS, from the deployment file, as
    ``deploy`` does), runs :meth:`session` on them, and links again whenever a session fails, until :meth:`stop`."""

    def __init__(self, deployment: Deployment[MPCProtocol], name: str) -> None:
        self.deployment, self.name = deployment, name
        self.stopping = threading.Event()
        self.sessions = 0
        self._thread: threading.Thread | None = None
        self._network: TlsNetwork | None = None

    def session(self, network: TlsNetwork) -> None:
        """Serve the peers over ``network`` (linked) until ``stopping`` is set or a link fails."""
        raise NotImplementedError

    def start_links(self) -> None:
        self._thread = threading.Thread(target=self._links, name=f"mpc-links-{self.name}", daemon=True)
        self._thread.start()

    def stop_links(self) -> None:
        """End the links: the thread's waits notice within :data:`POLL_S`; one still linking (a peer gone first)
        is left to end with the process (a daemon thread; nothing it holds is state)."""
        self.stopping.set()
        if self._thread is not None:
            self._thread.join(timeout=2 * POLL_S + 1)
        network = self._network
        if network is not None and self._thread is not None and self._thread.is_alive():
            network.close_sockets()  # still linking (or in a long wait): cut it short, it ends quietly

    def new_network(self) -> TlsNetwork:
        from privbandits.deploy.party import network_for

        return network_for(self.deployment, self.name, deadline=self.deployment.deadline_s)

    def _links(self) -> None:
        backoff = 0.2
        while not self.stopping.is_set():
            try:
                network = self.new_network()
                self._network = network
                network.connect()
            except (HandshakeError, *LINK_FAILURES) as exc:
                if not self.stopping.is_set():
                    log.warning("%s: cannot link with every peer yet (%s); trying again", self.name, exc)
                self.stopping.wait(backoff)
                backoff = min(2 * backoff, 5.0)
                continue
            backoff = 0.2
            self.sessions += 1
            self._serve(network)
        self._network = None

    def _serve(self, network: TlsNetwork) -> None:
        """One session on ``network``; a failure ends the links (the others hear of it), a stop just closes them."""
        try:
            self.session(network)
        except Exception as exc:
            if self.stopping.is_set() or isinstance(exc, Stopped):
                network.close_sockets()
                return
            if isinstance(exc, LINK_FAILURES):
                log.warning("%s: session %d ended (%s); linking again", self.name, self.sessions, exc)
                network.abort(f"{self.name!r}: {exc}", lost=getattr(exc, "peer", None))
                return
            log.exception("%s: session %d failed", self.name, self.sessions)  # a bug: say so, link again
            network.abort(f"{self.name!r} failed: {type(exc).__name__}: {exc}", lost=self.name)
            self.stopping.wait(1.0)
            return
        network.close_sockets()


# ----------------------------------------------------------------------------- the dealer


class DealerService(LinkedRole, ServedRole):
    """The trusted dealer as a service: a computing party's shares of a round's material when it asks for them.

    Its state is its private seed (its file) and the rounds it has drawn: a round asked for again (a computing party
    that resumed) is drawn again from the seed, so it keeps nothing on disk and needs no checkpoint."""

    kind = "mpc-dealer"

    def __init__(self, deployment: Deployment[MPCProtocol], name: str) -> None:
        from privbandits.deploy.mpc_bandit.party import config_of, dealer_seeds
        from privbandits.protocols.mpc_bandit import DealerRole, PrivateSeeds

        LinkedRole.__init__(self, deployment, name)
        self.computing = deployment.names("computing")
        material, exploration = dealer_seeds(load_dealer_seed(deployment, name))
        self._fresh: Callable[[], DealerRole] = lambda: DealerRole(
            config_of(deployment), len(self.computing), PrivateSeeds(material, exploration, {})
        )
        self._role = self._fresh()
        self._drawn: dict[int, list[np.ndarray]] = {}
        self.served = 0

    def identity(self) -> str:
        return f"mpc-dealer:{self.name}:{self.deployment.protocol_digest()}"

    def start(self) -> None:
        self.start_links()

    def stop(self) -> None:
        self.stop_links()

    def ledger(self) -> JsonObject:
        return {"role": "dealer", "rounds_drawn": self._role.rounds, "materials_sent": self.served, "sessions":
                self.sessions}  # fmt: skip

    def material(self, round: int) -> list[np.ndarray]:
        """Every computing party's words of round ``round`` (drawn again from the seed if asked for an earlier one)."""
        if round in self._drawn:
            return self._drawn[round]
        if round <= self._role.rounds:  # before what is kept: draw again from the seed
            self._role, self._drawn = self._fresh(), {}
        while self._role.rounds < round:
            words = self._role.next_round()
            self._drawn[self._role.rounds] = words
            self._drawn.pop(self._role.rounds - 3, None)  # the computing parties are never more than one apart
        return self._drawn[round]

    def session(self, network: TlsNetwork) -> None:
        from privbandits.comm import Party
        from privbandits.mpc.dealer import OFFLINE, Material

        dealer = Party(self.name, network)
        while True:
            got = wait_message(network, MaterialRequest, self.computing, self.stopping, watch_all=True)
            if got is None:
                return
            sender, request = got
            assert isinstance(request, MaterialRequest)
            round = check_round(request.round, "a material request", sender)
            if round < 1:
                raise ProtocolError(f"{sender!r} asked for the material of round {round}; rounds count from 1")
            words = self.material(round)[self.computing.index(sender)]
            with network.phase(OFFLINE):
                dealer.send(sender, Material(round, words))
            self.served += 1
