"""The users party of a deployed FCLUB session (:mod:`privbandits.deploy.fclub.party`): it draws the synthetic
environment, sends each round's user and contexts to the user's local server, returns the reward of the arm it
chose and scores the choice; it keeps the public clock of §3.2 (:class:`~privbandits.deploy.fclub.messages.PhaseStart`).

Lock-step, it plays one round at a time and waits for the local server's
:class:`~privbandits.deploy.fclub.messages.Served`;
free-running, it keeps up to :data:`~privbandits.deploy.fclub.messages.WINDOW` rounds in flight (:class:`_Pipeline`).
"""

from __future__ import annotations

import math
import time
from collections import deque
from contextlib import nullcontext

import numpy as np

from privbandits.checkpointed import Checkpointed
from privbandits.comm import Message, Party, PeerLost, ProtocolError, TlsNetwork
from privbandits.deploy.deployment import Deployment
from privbandits.deploy.fclub import resume as fclub_resume
from privbandits.deploy.fclub.messages import (
    SCHEDULE,
    USERS,
    WINDOW,
    Arrival,
    Choice,
    Feedback,
    Finish,
    PhaseStart,
    RewardAndArrival,
    Served,
)
from privbandits.deploy.fclub.section import FCLUBProtocol
from privbandits.deploy.fclub.session import (
    _protocol,
    _server_of_user,
    _streams,
    config_of,
    environment_of,
    free_running,
)


class _Reachable:
    """The local servers the users still reach: one found lost is dropped, and the session goes on."""

    def __init__(self, names: list[str], network: TlsNetwork) -> None:
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


class _Record(Checkpointed):
    """What the users score, per round: the arm, its reward and its pseudo-regret (NaN: the round went unserved)."""

    SAVED = ("regret", "rewards", "arms")

    def __init__(self, horizon: int) -> None:
        self.regret, self.rewards = np.full(horizon, np.nan), np.zeros(horizon)
        self.arms = np.full(horizon, -1, dtype=np.int64)

    def score(self, t: int, arm: int, reward: float, expected: np.ndarray) -> None:
        self.arms[t - 1], self.rewards[t - 1] = arm, reward
        self.regret[t - 1] = expected.max() - expected[arm]


def _check_arm(server: str, t: int, arm: object, n_arms: int) -> None:
    if not (isinstance(arm, int) and 0 <= arm < n_arms):
        raise ProtocolError(f"{server!r} chose arm {arm!r} in round {t}; the arms are 0..{n_arms - 1}")


class _Pipeline:
    """Free-running: rounds sent ahead, at most WINDOW, answered oldest first (a local server serves its own rounds in
    order, so its arms come in the order of its rounds); each reward owed to a local server goes with its next round,
    or alone when the pipeline drains."""

    def __init__(self, users: Party, servers: _Reachable, record: _Record, n_arms: int, on_round) -> None:
        self.users, self.servers, self.record, self.n_arms, self.on_round = users, servers, record, n_arms, on_round
        self.pending: dict[str, deque[tuple[int, np.ndarray, np.ndarray]]] = {s: deque() for s in servers.names}
        self.order: deque[tuple[int, str]] = deque()  # the rounds in flight, oldest first
        self.in_flight = 0
        self.owed: dict[str, float] = {}  # per local server, the reward of its last answered round, not yet sent

    def send(self, server: str, t: int, env, contexts: np.ndarray, expected: np.ndarray) -> None:
        """Round ``t``'s user and contexts to ``server``, with the reward of its previous round (answered first: a
        local server learns each reward before it serves its next round); answered later (:meth:`answer`), at most
        WINDOW ahead."""
        while self.pending[server]:
            self.answer()
        try:
            with self.users.network.phase(USERS):
                if server in self.owed:
                    self.users.send(server, RewardAndArrival(self.owed.pop(server), t, env.user, contexts))
                else:
                    self.users.send(server, Arrival(t, env.user, contexts))
        except PeerLost as exc:
            self._lose(server, exc)
            return
        self.pending[server].append((t, expected, env.rewards()))
        self.order.append((t, server))
        self.in_flight += 1
        while self.in_flight >= WINDOW:
            self.answer()

    def answer(self) -> None:
        """The oldest round in flight: its arm, its reward owed to the server, the choice scored. (Waiting for the
        oldest round's server rather than for any: a wait on one link costs less than one on all, and the other
        servers' arms wait read ahead.)"""
        t, server = self.order.popleft()
        if server in self.servers.lost:
            return
        try:
            with self.users.network.phase(USERS):
                arm = self.users.receive(Choice, server).arm
                _, expected, rewards = self.pending[server].popleft()
                _check_arm(server, t, arm, self.n_arms)
        except PeerLost as exc:
            self._lose(server, exc)
            return
        self.in_flight -= 1
        self.owed[server] = float(rewards[arm])
        self.record.score(t, arm, float(rewards[arm]), expected)
        if self.on_round is not None:
            self.on_round(t, len(self.record.arms))

    def drain(self) -> None:
        """Every round in flight answered and every reward sent (before a phase start, and at the end)."""
        while self.order:
            self.answer()
        for server, reward in self.owed.items():
            if server in self.servers.lost:
                continue
            try:
                with self.users.network.phase(USERS):
                    self.users.send(server, Feedback(reward))
            except PeerLost as exc:
                self.servers.lose(server, exc)
        self.owed.clear()

    def _lose(self, server: str, exc: PeerLost) -> None:
        self.servers.lose(server, exc)
        self.owed.pop(server, None)
        self.in_flight -= len(self.pending.get(server, ()))
        self.pending[server] = deque()  # its rounds go unserved


class _Clock(Checkpointed):
    """The public phase schedule of §3.2: phase s starts at round t = 2^s − 1."""

    SAVED = ("phase", "next_start")

    def __init__(self) -> None:
        self.phase, self.next_start = 0, 1

    def starts(self, t: int) -> bool:
        if t != self.next_start:
            return False
        self.phase += 1
        self.next_start = 2 ** (self.phase + 1) - 1
        return True


def run_users(
    deployment: Deployment[FCLUBProtocol], name: str, network: TlsNetwork, resume: bool = False, on_round=None
) -> dict:
    protocol, config = _protocol(deployment), config_of(deployment)
    env = environment_of(deployment)
    env.reset(_streams(deployment)[0])
    server_of_user, users = _server_of_user(deployment), Party(name, network)
    servers = _Reachable(deployment.names("local_server"), network)
    horizon = protocol.horizon
    record, clock = _Record(horizon), _Clock()
    state = {"record": record, "clock": clock, "lost": servers.lost}
    resumed = _resume(deployment, name, users, env, state, network, resume)
    pipeline = _Pipeline(users, servers, record, protocol.n_arms, on_round) if free_running(deployment) else None
    start = time.perf_counter()
    with network.batch() if pipeline is not None else nullcontext():
        for t in range(max(resumed, 1), horizon + 1):
            network.round_label = f"round {t}"
            contexts, expected = env.next_round()
            if t != resumed and (clock.starts(t) or config.detect_every_round):  # resumed: detected at t already
                if pipeline is not None:
                    pipeline.drain()
                with network.phase(SCHEDULE):
                    users.send(FCLUBProtocol.GLOBAL, PhaseStart(t))
                    servers.tell(users, PhaseStart(t))
                if fclub_resume.is_phase_start(t):
                    fclub_resume.save(deployment, name, t, {"record": record, "clock": clock, "lost": servers.lost},
                                      network)  # fmt: skip
            server = servers.names[server_of_user[env.user]]
            if server in servers.lost:
                pass
            elif pipeline is not None:
                pipeline.send(server, t, env, contexts, expected)
            else:
                try:
                    arm, reward = _round(users, server, t, env, contexts, protocol.n_arms, network)
                    record.score(t, arm, reward, expected)
                except PeerLost as exc:
                    servers.lose(server, exc)
            if on_round is not None and pipeline is None:
                on_round(t, horizon)
        if pipeline is not None:
            pipeline.drain()
    seconds = time.perf_counter() - start
    with network.phase(SCHEDULE):
        servers.tell(users, Finish(horizon))
        users.send(FCLUBProtocol.GLOBAL, Finish(horizon))
    network.close()
    served, lost = int((record.arms >= 0).sum()), servers.lost
    return {
        "party": name,
        "role": "users",
        "rounds": horizon,
        "served": served,
        "cumulative_reward": float(record.rewards.sum()),
        "cumulative_regret": float(np.nansum(record.regret)),
        "seconds": seconds,
        "rounds_per_second": horizon / seconds,
        "regret": [None if math.isnan(r) else float(r) for r in record.regret],
        "arms": record.arms.tolist(),
        "lost": lost,
        "resumed_at": resumed,
        "outcome": f"{served} of {horizon} rounds served" + (f"; lost {', '.join(lost)}" if lost else ""),
    }


def _resume(
    deployment: Deployment[FCLUBProtocol], name: str, users: Party, env, state: dict, network: TlsNetwork, resume: bool
) -> int:
    """Resumed: the record, clock and lost servers of the agreed phase start t put back into ``state``'s objects, the
    environment replayed to round t; else an earlier session's checkpoints cleared. Returns t (0: a fresh session)."""
    if not resume:
        fclub_resume.start_afresh(deployment, name)
        return 0
    t = fclub_resume.agree(deployment, name, users)
    saved = fclub_resume.load(deployment, name, t, network)
    saved.restore({"record": state["record"], "clock": state["clock"]})
    state["lost"].update(saved["lost"])
    for _ in range(t - 1):
        env.next_round()
    return t


def _round(
    users, server: str, t: int, env, contexts: np.ndarray, n_arms: int, network: TlsNetwork
) -> tuple[int, float]:
    """One round at the user's local server: contexts out, the arm back, the reward out, then its end."""
    with network.phase(USERS):
        users.send(server, Arrival(t, env.user, contexts))
        arm = users.receive(Choice, server).arm
        _check_arm(server, t, arm, n_arms)
        reward = env.reward(arm)
        users.send(server, Feedback(reward))
        done = users.receive(Served, server).t
    if done != t:
        raise ProtocolError(f"{server!r} said round {done} was served while round {t} ran")
    return arm, reward
