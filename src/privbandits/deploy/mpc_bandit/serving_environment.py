"""The environment of the MPC ε-greedy deployment (p′ = p″) as a service: the
:class:`~privbandits.serve.decider.Decider` its application asks for an event's decision and later tells the reward
(:mod:`privbandits.deploy.mpc_bandit.serving`).

It holds no block of the context (the computing parties' applications put those): a decide's ``features`` is
``[[0]]``, and every arm is a candidate (the argmax runs over all of them in secret). It alone learns a_t (η =
log(|A|/ε) per opening, Theorem 1), so the answer's propensity is null: the greedy arm, which it depends on, is
secret to everyone. Its state (the round, its input generator) is written to its own checkpoint after every round's
close, once every computing party acknowledged it; the event of an open round, and a close acknowledged to the
application but not yet played (a party lost meanwhile), are in the service's journal and checkpoints and are played
when the parties link again.
"""

from __future__ import annotations

import json
import threading

import numpy as np

from privbandits.comm import ROUND, ProtocolError, TlsNetwork
from privbandits.deploy.deployment import Deployment, DeploymentError
from privbandits.deploy.mpc_bandit.party import config_of, load_environment
from privbandits.deploy.mpc_bandit.section import MPCProtocol
from privbandits.deploy.mpc_bandit.serving import (
    LINK_FAILURES,
    POLL_S,
    SERVE,
    Ack,
    Agree,
    Close,
    Go,
    LinkedRole,
    Offer,
    Ready,
    Start,
    check_flag,
    check_round,
    held_rounds,
    save_round,
)
from privbandits.protocols.mpc_bandit.config import _check_reward
from privbandits.protocols.mpc_bandit.roles import PullerRewarder
from privbandits.serve.decider import DecidedEvent, DecideInput, Decider, Decision, JsonObject, Refused
from privbandits.validation import InvalidInputError


class EnvironmentDecider(LinkedRole, Decider):
    """The environment party: decide runs a round up to a_t, the reward (or the event's expiry) closes it."""

    kind = "mpc-environment"
    propensities_known = False  # ε-greedy explores, but the chosen arm's probability depends on the secret greedy arm

    def __init__(self, deployment: Deployment[MPCProtocol], name: str) -> None:
        LinkedRole.__init__(self, deployment, name)
        self.config = config_of(deployment)
        self.share_seed = load_environment(deployment, name).share_seed
        self.computing = deployment.names("computing")
        self._lock = threading.Condition()
        self._party: PullerRewarder | None = None
        """The linked session's p′ = p″ (None: not linked)."""
        self._broken = threading.Event()
        self._started = False
        held = held_rounds(deployment, name)
        self.rounds = max(held, default=0)
        """Rounds closed at every party (in this party's checkpoint)."""
        meta = held[self.rounds][1] if held else {}
        self.invalid_openings, self.voided = int(meta.get("invalid_openings", 0)), int(meta.get("voided", 0))
        self._open: tuple[str, int, int, bool] | None = None
        """The open round: (event id, round, arm, whether the opened index was an arm)."""
        self._closing: tuple[bool, float] | None = None
        """Its close, acknowledged to the application and not yet played: (rewarded, reward)."""

    def identity(self) -> str:
        return f"mpc-environment:{self.name}:{self.deployment.protocol_digest()}"

    # -- the application's events ---------------------------------------------
    def decide(self, request: DecideInput) -> Decision:
        features = request.features
        if features.shape != (1, 1) or features[0, 0] != 0:
            raise Refused("features", f"must be [[0]]: the environment holds no block of the context (the computing "
                          f"parties' applications put it), got {features.tolist()!r}"[:300])  # fmt: skip
        if request.arms is not None:
            raise Refused("arms", f"must be left out: every one of the {self.config.n_arms} arms is a candidate "
                          f"(the argmax runs over all of them in secret), got {list(request.arms)}")  # fmt: skip
        with self._lock:
            self._linked_or_refuse()  # first: a close acknowledged while a party was lost is played on linking
            if self._open is not None:
                raise Refused("event_id", f"event {self._open[0]!r} is still open (no reward yet): the MPC learner "
                              "plays one event at a time (each decision uses every earlier reward); report its "
                              "reward, or wait for its reward_timeout_s", 409)  # fmt: skip
            t = self.rounds + 1
            try:
                missing, opened = self._start_round(request.event_id, t)
            except LINK_FAILURES as exc:
                self._fail(exc)
                raise Refused("event_id", f"a party was lost while deciding ({exc}); nothing was decided: ask again "
                              "once the parties are linked again", 503) from None  # fmt: skip
            if missing:
                deadline = self.deployment.deadline_s
                raise Refused("event_id", f"computing party {missing[0]!r} has no block of event "
                              f"{request.event_id!r}: its application must put it (POST /v1/features, key "
                              f"{request.event_id!r}) within {deadline:g} s of the decide; nothing was decided "
                              f"(missing at {', '.join(missing)})", 503)  # fmt: skip
            assert opened is not None
            arm, valid = opened
            self._open = (request.event_id, t, arm, valid)
        return Decision(arm, None, self.rounds, {"round": t})

    def check_reward(self, event: DecidedEvent, reward: float) -> None:
        try:
            _check_reward(reward, self.config)
        except InvalidInputError as exc:
            raise Refused("reward", str(exc)) from None

    def absorb(self, event: DecidedEvent, reward: float) -> None:
        self._close(event, True, reward)

    def expire(self, event: DecidedEvent) -> None:
        self._close(event, False, 0.0)

    def replay_decision(self, event: DecidedEvent) -> None:
        t = int(event.event_state["round"])
        if t > self.rounds:
            self._open = (event.event_id, t, event.arm, True)

    def _close(self, event: DecidedEvent, rewarded: bool, reward: float) -> None:
        """Close ``event``'s round: now if linked, else (or if a party is lost meanwhile) once the parties link."""
        with self._lock:
            t = int(event.event_state["round"])
            if t <= self.rounds:  # recovery: its close is in this party's checkpoint already
                return
            if self._open is None or self._open[:2] != (event.event_id, t):
                raise RuntimeError(f"event {event.event_id!r} of round {t} is not the open round {self._open}")
            self._closing = (rewarded, reward)
            if not self._started or self._party is None:
                return
            try:
                self._close_round()
            except LINK_FAILURES as exc:
                self._fail(exc)

    # -- the rounds ---------------------------------------------------------------
    def _linked_or_refuse(self) -> None:
        if not self._lock.wait_for(lambda: self._party is not None, self.deployment.connect_deadline_s):
            raise Refused("event_id", "the environment is not linked with every other party yet (one is starting or "
                          "was lost); nothing was decided: ask again", 503)  # fmt: skip

    def _start_round(self, event: str, t: int) -> tuple[list[str], tuple[int, bool] | None]:
        """Round ``t`` up to a_t: the parties missing their block of ``event`` (the round not run), or the arm."""
        party = self._party
        assert party is not None
        network, engine = party.engine.network, party.engine
        with network.phase(SERVE):
            for name in self.computing:
                engine.party.send(name, Start(event, t))
            ready = {}
            with network.patience(self.deployment.deadline_s + 5):
                for name in self.computing:
                    answer = engine.party.receive(Ready, name)
                    check_round(answer.round, "a ready", name, t)
                    ready[name] = check_flag(answer.ready, "a ready", name)
            missing = [name for name in self.computing if not ready[name]]
            for name in self.computing:
                engine.party.send(name, Go(t, not missing))
        if missing:
            return missing, None
        with network.phase(ROUND):
            opened = engine.open_to(None, self.config.puller, scale=0, shape=())
        assert opened is not None, "opened to this party (the puller)"
        index = int(opened)
        return [], (index % self.config.n_arms, 0 <= index < self.config.n_arms)

    def _close_round(self) -> None:
        """Play the open round's close (lock held, linked): the reward's shares, then every party's acknowledgement."""
        party = self._party
        assert party is not None and self._open is not None and self._closing is not None
        network, engine = party.engine.network, party.engine
        _, t, _, valid = self._open
        rewarded, reward = self._closing
        with network.phase(SERVE):
            for name in self.computing:
                engine.party.send(name, Close(t, rewarded))
        with network.phase(ROUND):
            engine.input(reward if rewarded else 0.0, self.config.rewarder, scale=party._reward_scale)
        with network.phase(SERVE):
            for name in self.computing:
                check_round(engine.party.receive(Ack, name).round, "an acknowledgement", name, t)
        self.rounds, self.invalid_openings = t, self.invalid_openings + (not valid)
        self.voided += not rewarded
        self._save(engine, self._open[0])
        self._open = self._closing = None

    def _save(self, engine, event: str | None) -> None:
        meta = {"rng": engine.input_rng(self.name).bit_generator.state, "invalid_openings": self.invalid_openings,
                "voided": self.voided, "event": event}  # fmt: skip
        save_round(self.deployment, self.name, self.rounds, {}, meta)

    def _fail(self, exc: BaseException) -> None:
        """A link failed (lock held): end this session (the others hear of it) and link again."""
        party, self._party = self._party, None
        if party is not None and isinstance(party.engine.network, TlsNetwork):
            party.engine.network.abort(f"{self.name!r}: {exc}", lost=getattr(exc, "peer", None))
        self._broken.set()

    # -- sessions of links ------------------------------------------------------------
    def start(self) -> None:
        self._started = True
        self.start_links()

    def stop(self) -> None:
        self.stop_links()

    def session(self, network: TlsNetwork) -> None:
        with self._lock:
            self._broken.clear()
            party = PullerRewarder(self.config, network, self.computing, self.share_seed)
            party.setup()
            self._agree(party)
            self._party = party
            try:
                self._catch_up()
            except BaseException:
                self._party = None
                raise
            self._lock.notify_all()
        while not self._broken.wait(POLL_S):
            if self.stopping.is_set():
                return

    def _agree(self, party: PullerRewarder) -> None:
        """The new session's agreement: the last round every party holds; this party's state loaded from it."""
        engine = party.engine
        held = held_rounds(self.deployment, self.name)
        if not held:  # the first session: the state after setup is round 0
            self._save(engine, None)
            held = held_rounds(self.deployment, self.name)
        common = set(held)
        with engine.network.phase(SERVE):
            for name in self.computing:
                offer = engine.party.receive(Offer, name).rounds
                if not isinstance(offer, np.ndarray) or offer.ndim != 1 or offer.dtype.kind not in "iu":
                    raise ProtocolError(f"{name!r} offered rounds {offer!r}, not a 1-d array of round numbers")
                common &= {check_round(int(r), "an offer", name) for r in offer}
            if not common or max(common) < max(held):
                raise DeploymentError(f"the computing parties hold no checkpoint of round {max(held)}, the last "
                                      f"this environment closed (they offered {sorted(common)})")  # fmt: skip
            agreed = max(common)
            for name in self.computing:
                engine.party.send(name, Agree(agreed))
        meta = held[agreed][1]
        engine.input_rng(self.name).bit_generator.state = meta["rng"]
        self.rounds = agreed

    def _catch_up(self) -> None:
        """Play again what the application was answered and the parties lost: the open round, and its close."""
        if self._open is None:
            return
        event, t, arm, _ = self._open
        missing, opened = self._start_round(event, t)
        if missing:
            raise DeploymentError(f"{', '.join(missing)} no longer hold the block of event {event!r} (round {t})")
        assert opened is not None
        if opened[0] != arm:
            raise DeploymentError(f"round {t} played again opened arm {opened[0]}, not the {arm} answered")
        self._open = (event, t, arm, opened[1])
        if self._closing is not None:
            self._close_round()

    # -- views and checkpoints ----------------------------------------------------------
    @property
    def model_version(self) -> int:
        return self.rounds

    def ledger(self) -> JsonObject:
        openings = self.rounds + (self._open is not None)
        eta = self.config.privacy_loss
        return {
            "role": "environment",
            "privacy": "each opened arm is η-DP towards this party (η = log(|A|/ε), Theorem 1); epsilon: their sum",
            "epsilon_per_opening": eta,
            "openings": openings,
            "epsilon": openings * eta,
            "rounds_closed": self.rounds,
            "rounds_expired": self.voided,
            "invalid_openings": self.invalid_openings,
            "open_event": None if self._open is None else self._open[0],
            "sessions": self.sessions,
        }

    def privacy_spent(self) -> dict[str, float]:
        return {"epsilon": (self.rounds + (self._open is not None)) * self.config.privacy_loss}

    def checkpoint(self) -> bytes:
        with self._lock:
            state = {"open": self._open, "closing": self._closing}
        return json.dumps(state).encode()

    def restore(self, state: bytes) -> None:
        saved = json.loads(state.decode())
        open_, closing = saved["open"], saved["closing"]
        if open_ is not None and int(open_[1]) > self.rounds:
            self._open = (str(open_[0]), int(open_[1]), int(open_[2]), bool(open_[3]))
            self._closing = None if closing is None else (bool(closing[0]), float(closing[1]))
