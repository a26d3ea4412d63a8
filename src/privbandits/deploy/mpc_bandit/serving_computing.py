"""A computing party of the MPC ε-greedy deployment as a service: its application puts its own block of each event's
context (``POST /v1/features``, key = the event id, one row), and it plays the event's round with the other
computing parties when the environment starts it (:mod:`privbandits.deploy.mpc_bandit.serving`).

Its learner state (its shares of W^{-1} and b, its input generator) changes only through rounds, so it is written to
its own checkpoint (``OUTPUT/checkpoints/NAME.serve.npz``, and the one before) before the party acknowledges a
round's close; its blocks are journalled by the service (puts) and checkpointed with it (:meth:`checkpoint`).
"""

from __future__ import annotations

import io
import re
import threading

import numpy as np

from privbandits.comm import ProtocolError, TlsNetwork
from privbandits.deploy.deployment import Deployment, DeploymentError
from privbandits.deploy.mpc_bandit.party import blocks, config_of, load_computing
from privbandits.deploy.mpc_bandit.section import MPCProtocol
from privbandits.deploy.mpc_bandit.serving import (
    SERVE,
    Ack,
    Agree,
    Close,
    Go,
    LinkedRole,
    MaterialRequest,
    Offer,
    Ready,
    Start,
    Stopped,
    check_flag,
    check_round,
    held_rounds,
    save_round,
    wait_message,
)
from privbandits.protocols.mpc_bandit.private import PrivateEpsilonGreedy
from privbandits.serve.role import FeatureHolder, FeaturePut, JsonObject, Refused

EVENT_ID = re.compile(r"^[A-Za-z0-9._:@-]{1,128}$")
"""An event id as the API takes it (a put's key), checked again on what the environment sends."""


class ServedLearner(PrivateEpsilonGreedy):
    """A computing party's learner whose round waits for the environment's close before the reward is shared: the
    deployment's round, cut where the pull is (the reward comes from an application, later)."""

    rewarded = True

    def await_close(self) -> bool:
        """Wait for the round's close; whether its reward follows (set by the role)."""
        raise NotImplementedError

    def _pull(self, arm, pull):
        self.rewarded = self.await_close()
        return super()._pull(arm, pull)


class ComputingHolder(LinkedRole, FeatureHolder):
    """A computing party: a :class:`~privbandits.serve.role.FeatureHolder` of its blocks, keyed by event id."""

    kind = "mpc-computing"

    def __init__(self, deployment: Deployment[MPCProtocol], name: str) -> None:
        LinkedRole.__init__(self, deployment, name)
        self.config = config_of(deployment)
        self.share_seed = load_computing(deployment, name).share_seed
        start, stop = blocks(deployment)[name]
        self.width = stop - start
        self.environment = deployment.names("environment")[0]
        self.dealer = deployment.names("dealer")[0]
        self.computing = deployment.names("computing")
        self._blocks: dict[str, np.ndarray] = {}
        self._lock = threading.Condition()
        held = held_rounds(deployment, name)
        self.rounds = max(held, default=0)
        """Rounds closed and in this party's checkpoint."""
        self._last_event: str | None = held[self.rounds][1].get("event") if held else None

    def identity(self) -> str:
        return f"mpc-computing:{self.name}:{self.deployment.protocol_digest()}"

    # -- the application's blocks ---------------------------------------------
    def check_put(self, put: FeaturePut, previous: np.ndarray | None) -> None:
        rows, width = put.features.shape
        if rows != 1 or width != self.width:
            what = f"must be 1 row of {self.width} numbers ({self.name}'s block of the context)"
            raise Refused("features", f"{what}, got {rows} × {width}")
        norm = float(np.linalg.norm(put.features[0]))
        if norm > self.config.context_norm_limit:
            raise Refused("features", f"the block's L2 norm must be <= 1 (the whole context's is), got {norm:.6g}")
        if previous is not None:
            what = "already has its block (one event, one block: put another event's under its own id)"
            raise Refused("key", f"event {put.key!r} {what}", 409)

    def apply_put(self, put: FeaturePut) -> None:
        with self._lock:
            self._blocks[put.key] = np.array(put.features[0], dtype=np.float64)
            self._lock.notify_all()

    def _wait_block(self, event: str) -> np.ndarray | None:
        """The block of ``event``, waiting at most the deployment's ``deadline_s`` for its application to put it."""
        if self.width == 0:
            return np.zeros(0)
        with self._lock:
            self._lock.wait_for(lambda: event in self._blocks or self.stopping.is_set(), self.deployment.deadline_s)
            return self._blocks.get(event)

    # -- state ------------------------------------------------------------------
    @property
    def model_version(self) -> int:
        return self.rounds

    def ledger(self) -> JsonObject:
        with self._lock:
            waiting = len(self._blocks)
        return {"role": "computing", "rounds_closed": self.rounds, "blocks_held": waiting, "sessions": self.sessions,
                "privacy": "its block never leaves it in the clear: only its random shares do"}  # fmt: skip

    def checkpoint(self) -> bytes:
        with self._lock:
            keys = sorted(self._blocks)
            rows = np.asarray([self._blocks[key] for key in keys], dtype=np.float64).reshape(len(keys), self.width)
        buffer = io.BytesIO()
        np.savez(buffer, keys=np.asarray(keys, dtype=str), rows=rows)
        return buffer.getvalue()

    def restore(self, state: bytes) -> None:
        with np.load(io.BytesIO(state), allow_pickle=False) as saved:
            keys, rows = saved["keys"], saved["rows"]
        if rows.shape != (len(keys), self.width):
            raise ValueError(f"checkpoint holds blocks of shape {rows.shape}, not {self.width} numbers each")
        with self._lock:
            self._blocks = {str(key): row.copy() for key, row in zip(keys, rows, strict=True)}

    # -- the rounds ---------------------------------------------------------------
    def start(self) -> None:
        self.start_links()

    def stop(self) -> None:
        self.stop_links()

    def _learner(self, network: TlsNetwork) -> ServedLearner:
        from privbandits.protocols.mpc_bandit import PrivateSeeds

        seeds = PrivateSeeds(None, None, {self.name: self.share_seed})
        learner = ServedLearner(self.config, network=network, seeds=seeds, parties=self.computing, local=self.name,
                                dealer=self.dealer)  # fmt: skip  # setup: the environment shares W^-1 = I, b = 0
        learner.await_close = lambda: self._await_close(network, learner)  # type: ignore[method-assign]
        return learner

    def _save(self, learner: ServedLearner, event: str | None) -> None:
        rng = learner.engine.input_rng(self.name)
        arrays = {"inverse": learner.inverse.shares, "b": learner.b.shares}
        meta = {"scale": learner.inverse.scale, "rng": rng.bit_generator.state, "event": event}
        save_round(self.deployment, self.name, learner.rounds, arrays, meta)

    def _agree(self, learner: ServedLearner) -> None:
        """The new session's agreement: offer the rounds held, load the one the environment picks."""
        from privbandits.mpc.dealer import RemoteDealer
        from privbandits.mpc.sharing import ArithmeticShares

        held = held_rounds(self.deployment, self.name)
        if not held:  # the first session: the state after setup is round 0
            self._save(learner, None)
            held = held_rounds(self.deployment, self.name)
        party, network = learner.engine.party, learner.engine.network
        with network.phase(SERVE):
            party.send(self.environment, Offer(np.asarray(sorted(held), dtype=np.int64)))
            agreed = check_round(party.receive(Agree, self.environment).round, "the agreement", self.environment)
        if agreed not in held:
            raise DeploymentError(f"the environment continues after round {agreed}; {self.name} holds {sorted(held)}")
        arrays, meta = held[agreed]
        engine = learner.engine
        learner.inverse = ArithmeticShares(arrays["inverse"], meta["scale"], engine.leads)
        learner.b = ArithmeticShares(arrays["b"], meta["scale"], engine.leads)
        engine.input_rng(self.name).bit_generator.state = meta["rng"]
        learner.rounds = agreed
        assert isinstance(engine.dealer, RemoteDealer)
        engine.dealer.skip_to(agreed)
        if agreed != max(held):  # rolled back: the agreed state becomes the latest again (the newer one, previous)
            self._save(learner, meta.get("event"))
        self.rounds, self._last_event = agreed, meta.get("event")

    def session(self, network: TlsNetwork) -> None:
        learner = self._learner(network)
        self._agree(learner)
        party = learner.engine.party
        while True:
            got = wait_message(network, Start, [self.environment], self.stopping, watch_all=True)
            if got is None:
                return
            start = got[1]
            assert isinstance(start, Start)
            t = check_round(start.round, "a start", self.environment, learner.rounds + 1)
            if not isinstance(start.event, str) or not EVENT_ID.match(start.event):
                raise ProtocolError(f"{self.environment!r} started round {t} with event id {start.event!r}")
            block = self._wait_block(start.event)
            with network.phase(SERVE):
                party.send(self.environment, Ready(t, block is not None))
                with network.patience(2 * self.deployment.deadline_s + 5):
                    go = party.receive(Go, self.environment)
                check_round(go.round, "a go", self.environment, t)
                if not check_flag(go.go, "a go", self.environment) or block is None:
                    continue
                party.send(self.dealer, MaterialRequest(t))
            self._play(learner, start.event, block)

    def _play(self, learner: ServedLearner, event: str, block: np.ndarray) -> None:
        before = learner.inverse, learner.b
        learner.play({self.name: block})
        if not learner.rewarded:  # the event expired: the round is played, its update dropped
            learner.inverse, learner.b = before
        self._save(learner, event)
        with self._lock:
            if self._last_event is not None:
                self._blocks.pop(self._last_event, None)  # its round can no longer be played again
        self.rounds, self._last_event = learner.rounds, event
        with learner.engine.network.phase(SERVE):
            learner.engine.party.send(self.environment, Ack(learner.rounds))

    def _await_close(self, network: TlsNetwork, learner: ServedLearner) -> bool:
        got = wait_message(network, Close, [self.environment], self.stopping)
        if got is None:
            raise Stopped
        close = got[1]
        assert isinstance(close, Close)
        check_round(close.round, "a close", self.environment, learner.rounds + 1)
        return check_flag(close.rewarded, "a close", self.environment)
