"""The P2B device agent an application embeds (issue 46): decide and reward in-process, on the device's own state.

A :class:`DeviceAgent` is one device (one user) of a device host of a P2B deployment, named ``HOST-deviceUSER`` as
the deployment's devices are. It runs the protocol's local agent (spec §2.2): a disjoint LinUCB on the encoded
context (the public k-means encoder's code; ``representation`` as the deployment says), started from the server's
latest model when it is created (a warm start, §2.6; cold if none is published yet). The application asks
:meth:`~DeviceAgent.decide` for an arm with the user's context and tells :meth:`~DeviceAgent.reward` the user's 0/1
reward later (or never). After its ``protocol.interactions`` rewarded rounds the device makes its report decision
once, as the reference rule does (§2.3): with probability p it sends one encoded tuple ``(code, arm, reward)``,
chosen by the rule of :func:`~privbandits.protocols.p2b.core.choose_reports`, to the trusted shuffler, over the
same mutual-TLS connection of its own a deployment's device uses (its host's certificate). :meth:`~DeviceAgent.report`
makes a further report decision on demand; each one is a run of the reporting mechanism (ε(p) against the server,
composing over reports, spec §3.6) and counts against the device's ``report_budget`` (default 1, the paper's one
tuple per user): one past it is refused with :class:`BudgetExceeded`, naming the budget, and
:meth:`~DeviceAgent.budget` shows what is spent.

Durability (a small SQLite file, the ``store``; many agents may share one): a decision is committed before
:meth:`~DeviceAgent.decide` returns (WAL, ``synchronous=NORMAL``: it survives the application's crash; a power cut may
lose the newest decisions, whose rewards are then refused as unknown), a reward and a report decision with
``synchronous=FULL`` before their call returns. Reopening the agent rebuilds its learner from the model it started
from and its rewards in the order they were absorbed, and sends a report left unsent (the shuffler was down).

Randomness: tie-breaks and the report coins from OS entropy at the device; with the deployment's
``reproducible = true``, from ``protocol.seed``'s streams exactly as the deployment's device hosts draw them (users
below the early population's size are early users of :func:`~privbandits.protocols.p2b.core.simulate`, the others
its late users), so a replay of ``deploy data``'s users equals ``deploy local`` (tests and demos only).
"""

from __future__ import annotations

import functools
import io
import sqlite3
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from privbandits.deploy.deployment import Deployment, load_deployment
from privbandits.deploy.p2b.data import p2b_protocol
from privbandits.deploy.p2b.messages import FetchModel, SealedReport, ServedModel
from privbandits.deploy.p2b.sealing import seal
from privbandits.deploy.p2b.section import P2BProtocol
from privbandits.deploy.p2b.served_wire import Refusal, Unreachable, exchange, party_network
from privbandits.deploy.p2b.session import N_STREAMS
from privbandits.linear.population import BatchedAgents, CodeModel, DisjointModel, batched_agents
from privbandits.linear.population.picking import _pick_rows
from privbandits.linear.tiebreak import DEFAULT_TIE_TOLERANCE
from privbandits.protocols.p2b.core import choose_reports

EARLY_TIES, REPORT_COINS, LATE_TIES = 6, 7, 8
"""The streams of :func:`~privbandits.protocols.p2b.core.simulate` a reproducible device draws from."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS devices (
    device TEXT PRIMARY KEY, deployment TEXT NOT NULL, budget INTEGER NOT NULL, model_version INTEGER NOT NULL,
    first BLOB, second BLOB, reports INTEGER NOT NULL, created_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS events (
    device TEXT NOT NULL, event_id TEXT NOT NULL, round INTEGER NOT NULL, code INTEGER NOT NULL, arm INTEGER NOT NULL,
    model_version INTEGER NOT NULL, reward INTEGER, rewarded_seq INTEGER, PRIMARY KEY (device, event_id)
);
CREATE TABLE IF NOT EXISTS reports (
    device TEXT NOT NULL, number INTEGER NOT NULL, round INTEGER, code INTEGER, action INTEGER, reward INTEGER,
    sent INTEGER NOT NULL, refused TEXT, PRIMARY KEY (device, number)
);
"""


class AgentRefused(ValueError):
    """A call the agent refuses, naming the argument (``field``); nothing changed."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field, self.message = field, message


class BudgetExceeded(AgentRefused):
    """A report decision past the device's ``report_budget``."""


@dataclass(frozen=True)
class AgentDecision:
    """The agent's answer: the event's id (for its reward), the arm, the context's code and the round, the model
    version the device started from (0: cold)."""

    event_id: str
    arm: int
    code: int
    round: int
    model_version: int


@dataclass(frozen=True)
class ReportOutcome:
    """A report decision: its number, whether the device took part (the coin), the round it reports (None if not),
    and whether the shuffler has acknowledged it (False: pending, sent again by :meth:`DeviceAgent.flush`)."""

    number: int
    participated: bool
    round: int | None
    sent: bool


@dataclass
class _Event:
    round: int
    code: int
    arm: int
    reward: int | None


class _Nearest:
    """The public k-means encoder's code of one context, in microseconds: the arithmetic of its compiled search
    (:func:`~privbandits.privacy.encoding._nearest_kernel`: ``‖c‖² − 2x·c`` summed over the dimensions in order, ties
    within the tolerance to the lowest code), without its parallel launch, which costs milliseconds for one row."""

    def __init__(self, encoder) -> None:
        from privbandits.privacy.encoding import TIE_TOLERANCE

        centroids = np.asarray(encoder.centroids, dtype=np.float64)
        self.encoder, self.tolerance = encoder, TIE_TOLERANCE
        self.columns = [np.ascontiguousarray(column) for column in centroids.T]
        self.squares = np.einsum("ij,ij->i", centroids, centroids)
        self.largest = float(self.squares.max())

    def code(self, x: np.ndarray) -> int:
        distance, point_sq = self.squares.copy(), 0.0
        for j, column in enumerate(self.columns):
            value = float(x[j])
            point_sq += value * value
            distance += (-2.0 * value) * column
        limit = distance.min() + self.tolerance * (point_sq + self.largest)
        return int(np.argmax(distance <= limit))


@functools.lru_cache(maxsize=8)
def _encoder(dim: int, precision: int, n_codes: int, seed: int) -> _Nearest:
    """The public k-means encoder, once per process (from the on-disk cache, or fitted)."""
    from privbandits.privacy.encoding import load_or_fit_encoder

    return _Nearest(load_or_fit_encoder(dim, precision, n_codes, seed=seed))


_NETWORKS: dict[tuple[int, str], Any] = {}
_NETWORKS_LOCK = threading.Lock()


def host_network(deployment: Deployment[P2BProtocol], host: str):
    """The network a device host's agents dial from (its certificate), one per deployment and host in a process."""
    with _NETWORKS_LOCK:
        key = (id(deployment), host)
        if key not in _NETWORKS:
            _NETWORKS[key] = party_network(deployment, host, listen=False)
        return _NETWORKS[key]


def fetch_model(deployment: Deployment[P2BProtocol], host: str, timeout: float = 10.0) -> ServedModel | None:
    """The server's latest model as a device of ``host`` fetches it, or None while none is published."""
    answer = fetch_served(deployment, host, timeout)
    return answer if answer is not None and answer.version else None


def fetch_served(deployment: Deployment[P2BProtocol], host: str, timeout: float = 10.0) -> ServedModel | None:
    """The server's answer to a device of ``host``'s fetch: its latest model (version 0, no arrays: none published
    yet) and its HPKE public key, which the device seals its reports to; None if it refused."""
    server = deployment.names("server")[0]
    try:
        got = exchange(host_network(deployment, host), f"{host}-device", server, FetchModel(0), timeout)
    except Refusal:
        return None
    if got is None or not isinstance(got.message, ServedModel):
        raise Unreachable(f"{server!r} answered a model fetch with {None if got is None else got.message.kind!r}")
    return got.message


def _blob(array: np.ndarray | None) -> bytes | None:
    if array is None:
        return None
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    return buffer.getvalue()


def _array(blob: bytes | None) -> np.ndarray | None:
    return None if blob is None else np.load(io.BytesIO(blob), allow_pickle=False)


class _Coins:
    """A device's coins: tie-break uniforms per round and its report choices (see the module docstring)."""

    def __init__(self, deployment: Deployment[P2BProtocol], user: int) -> None:
        protocol = p2b_protocol(deployment)
        self.protocol, self.user = protocol, user
        self.n_early = int(protocol.early_fraction * protocol.n_users)
        self.reproducible = deployment.reproducible
        self.uniforms = np.empty(0)
        self.ties = self._stream(EARLY_TIES if user < self.n_early else LATE_TIES)
        if self.reproducible:  # this user's block of the population's user-major draws
            block = user if user < self.n_early else user - self.n_early
            generator: Any = self.ties.bit_generator  # PCG64: one 64-bit draw per uniform
            generator.advance(block * protocol.interactions)

    def _stream(self, stream: int) -> np.random.Generator:
        if not self.reproducible:
            return np.random.default_rng()
        return np.random.default_rng(np.random.SeedSequence(self.protocol.seed).spawn(N_STREAMS)[stream])

    def uniform(self, round: int) -> float:
        """Round ``round``'s tie-break uniform."""
        if round >= self.uniforms.size:
            more = max(self.protocol.interactions, round + 1 - self.uniforms.size)
            self.uniforms = np.concatenate([self.uniforms, self.ties.random(more)])
        return float(self.uniforms[round])

    def choose(self, rewards: np.ndarray, number: int) -> int | None:
        """The round report ``number`` sends (the reference rule over ``rewards``, NaN: unrewarded), or None."""
        protocol = self.protocol
        if self.reproducible and number == 0 and self.user < self.n_early:  # as the device hosts draw it
            padded = np.full((self.n_early, rewards.size), np.nan)
            padded[self.user] = rewards
            rng = self._stream(REPORT_COINS)
            users, chosen = choose_reports(padded, protocol.participation, protocol.negative_rate, rng)
            mine = np.flatnonzero(users == self.user)
            return int(chosen[mine[0]]) if mine.size else None
        seeded = [protocol.seed, self.user, number] if self.reproducible else None
        rng = np.random.default_rng(seeded)
        users, chosen = choose_reports(rewards[None], protocol.participation, protocol.negative_rate, rng)
        return int(chosen[0]) if users.size else None


class DeviceAgent:
    """One device of a P2B deployment, embedded in its application (see the module docstring).

    Parameters
    ----------
    deployment : Deployment or path
        The deployment file (or it loaded): the protocol, the parties' addresses, the host's certificate bundle.
    host : str
        The device host (role ``device_host``) the device belongs to: its certificate vouches for the device.
    user : int
        The device's number on its host (its name is ``HOST-deviceUSER``).
    store : path
        The SQLite file the device's state lives in (created 0600 if missing; shared by many agents).
    report_budget : int
        Report decisions this device may make (fixed when the device is first created).
    timeout_s : float
        Seconds a report or a model fetch may take before it is left pending (the call returns).
    fetch_model : bool
        Start from the server's latest model (else cold, and cold too when the server cannot be reached within
        ``timeout_s``); only when the device is first created.
    auto_report : bool
        Make the first report decision by itself after ``protocol.interactions`` rewarded rounds.

    One agent is used from one thread at a time (a lock serialises its calls).
    """

    def __init__(self, deployment: Deployment[P2BProtocol] | str | Path, host: str, user: int, store: str | Path, *,
                 report_budget: int = 1, timeout_s: float = 10.0, fetch_model: bool = True,
                 auto_report: bool = True) -> None:  # fmt: skip
        loaded: Any = deployment if isinstance(deployment, Deployment) else load_deployment(deployment)
        self.deployment: Deployment[P2BProtocol] = loaded
        self.protocol = protocol = p2b_protocol(self.deployment)
        if host not in self.deployment.names("device_host"):
            hosts = ", ".join(self.deployment.names("device_host"))
            raise AgentRefused("host", f"must be a device host of the deployment ({hosts}), got {host!r}")
        if type(user) is not int or user < 0:
            raise AgentRefused("user", f"must be an integer >= 0, got {user!r}")
        if type(report_budget) is not int or report_budget < 0:
            raise AgentRefused("report_budget", f"must be an integer >= 0, got {report_budget!r}")
        self.host, self.user, self.name = host, user, f"{host}-device{user}"
        self.timeout_s, self.auto_report = timeout_s, auto_report
        self.shuffler = self.deployment.names("shuffler")[0]
        self.encoder = _encoder(protocol.dim, protocol.precision, protocol.n_codes, protocol.encoder_seed)
        self.scalar = protocol.representation == "scalar_code"
        self.random = protocol.tie_break == "random"
        self.coins = _Coins(self.deployment, user)
        self.lock = threading.Lock()
        self.public: np.ndarray | None = None
        """The server's HPKE public key its reports are sealed to (from the server, once reached)."""
        self.db = _open(Path(store))
        self._load(report_budget, fetch_model)
        self.flush()

    # -- state -------------------------------------------------------------------------------------------------------
    def _load(self, budget: int, fetch: bool) -> None:
        row = self.db.execute("SELECT budget, model_version, first, second, reports FROM devices WHERE device = ?",
                              (self.name,)).fetchone()  # fmt: skip
        if row is None:
            try:
                answer = fetch_served(self.deployment, self.host, self.timeout_s) if fetch else None
                self.public = None if answer is None else answer.public
                model = answer if answer is not None and answer.version else None
            except Unreachable:  # no server now: the device starts cold, as one created before any model
                model = None
            version = 0 if model is None else model.version
            first, second = (None, None) if model is None else (model.first, model.second)
            with _transaction(self.db, full=True):
                self.db.execute("INSERT INTO devices VALUES (?, ?, ?, ?, ?, ?, 0, ?)", (
                    self.name, self.deployment.protocol_digest(), budget, version, _blob(first), _blob(second),
                    time.time()))  # fmt: skip
            row = (budget, version, _blob(first), _blob(second), 0)
        self.budget_total, self.model_version, self.reports = int(row[0]), int(row[1]), int(row[4])
        self.learner = self._learner(_array(row[2]), _array(row[3]))
        self.events: dict[str, _Event] = {}
        self.rounds: list[_Event] = []
        rows = self.db.execute("SELECT event_id, round, code, arm, reward FROM events WHERE device = ? ORDER BY round",
                               (self.name,)).fetchall()  # fmt: skip
        for event_id, round, code, arm, reward in rows:
            self.events[event_id] = event = _Event(round, code, arm, reward)
            self.rounds.append(event)
        learned = self.db.execute("SELECT code, arm, reward, rewarded_seq FROM events WHERE device = ? AND reward IS "
                                  "NOT NULL ORDER BY rewarded_seq", (self.name,)).fetchall()  # fmt: skip
        for code, arm, reward, _ in learned:
            self._learn(code, arm, reward)
        self.seq = learned[-1][3] if learned else 0
        self.rewarded = len(learned)

    def _learner(self, first: np.ndarray | None, second: np.ndarray | None) -> BatchedAgents:
        n_arms, protocol = self.protocol.n_actions, self.protocol
        model: CodeModel | DisjointModel
        if first is None or second is None:
            model = DisjointModel.cold(n_arms, 1) if self.scalar else CodeModel.cold(n_arms, protocol.n_codes)
        else:
            model = DisjointModel(first, second) if self.scalar else CodeModel(first, second)
        return batched_agents(model, 1, alpha=protocol.alpha, tie_break="lowest")

    def _x(self, code: int) -> np.ndarray:
        return np.array([[float(code)]]) if self.scalar else np.array([code], dtype=np.int64)

    def _learn(self, code: int, arm: int, reward: int) -> None:
        self.learner.update(self._x(code), np.array([arm]), np.array([float(reward)]))

    # -- the application's calls -------------------------------------------------------------------------------------
    def decide(self, context: Any, arms: Any = None, event_id: str | None = None) -> AgentDecision:
        """An arm for the user's ``context`` (d numbers) among ``arms`` (None: every arm; else distinct arms), durable
        before it returns. ``event_id``: the application's id for the event (default a fresh one); asked again, the
        same answer."""
        with self.lock:
            if event_id is not None and event_id in self.events:
                event = self.events[event_id]
                return AgentDecision(event_id, event.arm, event.code, event.round, self.model_version)
            code = self._code(context)
            candidates = self._candidates(arms)
            scores = self.learner.scores(self._x(code))
            uniform = self.coins.uniform(len(self.rounds)) if self.random else -1.0
            picked = _pick_rows(np.ascontiguousarray(scores[:, candidates]), DEFAULT_TIE_TOLERANCE, self.random,
                                np.array([[uniform]]))  # fmt: skip
            arm = int(candidates[picked[0]])
            event_id = uuid.uuid4().hex if event_id is None else _event_id(event_id)
            event = _Event(len(self.rounds), code, arm, None)
            self.db.execute("INSERT INTO events VALUES (?, ?, ?, ?, ?, ?, NULL, NULL)",
                            (self.name, event_id, event.round, code, arm, self.model_version))  # fmt: skip
            self.events[event_id] = event
            self.rounds.append(event)
            return AgentDecision(event_id, arm, code, event.round, self.model_version)

    def _code(self, context: Any) -> int:
        try:
            values = np.asarray(context, dtype=np.float64)
        except (TypeError, ValueError):
            raise AgentRefused("context", f"must be {self.protocol.dim} numbers, got {context!r}") from None
        if values.shape != (self.protocol.dim,) or not np.isfinite(values).all():
            raise AgentRefused("context", f"must be {self.protocol.dim} finite numbers (dim), got shape {values.shape}")
        return self.encoder.code(values)

    def _candidates(self, arms: Any) -> np.ndarray:
        n_arms = self.protocol.n_actions
        if arms is None:
            return np.arange(n_arms)
        chosen = [int(arm) for arm in arms] if all(isinstance(arm, int | np.integer) for arm in arms) else None
        if not chosen or len(set(chosen)) != len(chosen) or min(chosen) < 0 or max(chosen) >= n_arms:
            raise AgentRefused("arms", f"must be distinct arms in [0, {n_arms - 1}] (at least one), got {arms!r}")
        return np.array(chosen)

    def reward(self, event_id: str, reward: int) -> bool:
        """Learn the user's 0/1 ``reward`` for ``event_id``'s decision (durable before it returns); True for the same
        reward again (a duplicate, not learnt twice). After the device's ``protocol.interactions``-th reward it makes
        its first report decision (``auto_report``)."""
        with self.lock:
            event = self.events.get(event_id)
            if event is None:
                raise AgentRefused("event_id", f"{event_id!r} has no decision on this device (a reward follows one)")
            if isinstance(reward, bool) or reward not in (0, 1):
                raise AgentRefused("reward", f"must be 0 or 1 (P2B's rewards), got {reward!r}")
            if event.reward is not None:
                if event.reward != reward:
                    raise AgentRefused("reward", f"{event_id!r} was already rewarded {event.reward}, got {reward!r}")
                return True
            seq = self.seq + 1
            with _transaction(self.db, full=True):
                self.db.execute("UPDATE events SET reward = ?, rewarded_seq = ? WHERE device = ? AND event_id = ?",
                                (int(reward), seq, self.name, event_id))  # fmt: skip
            self.seq, event.reward = seq, int(reward)
            self._learn(event.code, event.arm, event.reward)
            self.rewarded += 1
            due = self.auto_report and self.rewarded == self.protocol.interactions and self.reports == 0
        if due and self.budget_total > 0:
            self.report()
        return False

    def report(self) -> ReportOutcome:
        """Make a report decision now (the reference rule over every round so far; with probability p one tuple goes
        to the shuffler); :class:`BudgetExceeded` past ``report_budget``."""
        with self.lock:
            if self.reports >= self.budget_total:
                raise BudgetExceeded("report_budget", (
                    f"device {self.name!r} has made {self.reports} of its {self.budget_total} report decision(s) "
                    f"(each ε = {self._epsilon():.4g} against the server); no more reports"))  # fmt: skip
            rewards = np.array([np.nan if e.reward is None else e.reward for e in self.rounds], dtype=np.float64)
            number = self.reports
            chosen = self.coins.choose(rewards, number) if rewards.size else None
            event = None if chosen is None else self.rounds[chosen]
            with _transaction(self.db, full=True):
                self.db.execute("INSERT INTO reports VALUES (?, ?, ?, ?, ?, ?, ?, NULL)", (
                    self.name, number, chosen, None if event is None else event.code,
                    None if event is None else event.arm, None if event is None else event.reward,
                    int(event is None)))  # fmt: skip
                self.db.execute("UPDATE devices SET reports = reports + 1 WHERE device = ?", (self.name,))
            self.reports += 1
        sent = event is not None and self._send(number, event)
        return ReportOutcome(number, event is not None, chosen, sent)

    def _send(self, number: int, event: _Event) -> bool:
        """Send report ``number`` to the shuffler: True once acknowledged (or refused: recorded, not sent again)."""
        assert event.reward is not None
        refused = None
        try:
            if self.public is None:  # fetched from the server (its own key; the report waits while it is away)
                answer = fetch_served(self.deployment, self.host, self.timeout_s)
                if answer is None:
                    return False
                self.public = answer.public
            report = SealedReport(event.code, seal(self.public, event.code, event.arm, event.reward))
            exchange(host_network(self.deployment, self.host), self.name, self.shuffler, report, self.timeout_s)
        except Unreachable:
            return False
        except Refusal as exc:
            refused = exc.reason
        with self.lock, _transaction(self.db, full=True):
            self.db.execute("UPDATE reports SET sent = 1, refused = ? WHERE device = ? AND number = ?",
                            (refused, self.name, number))  # fmt: skip
        return refused is None

    def flush(self) -> int:
        """Send the reports left pending (the shuffler was unreachable); how many are still pending."""
        rows = self.db.execute("SELECT number, code, action, reward FROM reports WHERE device = ? AND sent = 0",
                               (self.name,)).fetchall()  # fmt: skip
        return sum(not self._send(number, _Event(-1, code, arm, reward)) for number, code, arm, reward in rows)

    # -- what the device has spent -----------------------------------------------------------------------------------
    def _epsilon(self) -> float:
        from privbandits.privacy import crowd_blending

        return crowd_blending.epsilon(self.protocol.participation)

    def budget(self) -> dict[str, Any]:
        """The device's report budget and what it has spent: decisions made (each ε against the server), reports
        sent and acknowledged, pending, refused."""
        rows = self.db.execute("SELECT round IS NOT NULL, sent, refused IS NOT NULL FROM reports WHERE device = ?",
                               (self.name,)).fetchall()  # fmt: skip
        took_part = sum(1 for part, _, _ in rows if part)
        return {
            "device": self.name,
            "report_budget": self.budget_total,
            "report_decisions": self.reports,
            "reports_sent": sum(1 for part, sent, refused in rows if part and sent and not refused),
            "reports_pending": sum(1 for part, sent, _ in rows if part and not sent),
            "reports_refused": sum(1 for _, _, refused in rows if refused),
            "took_part": took_part,
            "epsilon_per_report": self._epsilon(),
            "epsilon_spent": self.reports * self._epsilon(),
            "rounds": len(self.rounds),
            "rewards": self.rewarded,
            "model_version": self.model_version,
        }

    def close(self) -> None:
        """Close the store (everything is already committed)."""
        self.db.close()


def _event_id(value: Any) -> str:
    if not isinstance(value, str) or not 1 <= len(value) <= 128:
        raise AgentRefused("event_id", f"must be a string of 1 to 128 characters, got {value!r}")
    return value


def _open(path: Path) -> sqlite3.Connection:
    """The agents' store: WAL; decisions committed with ``synchronous=NORMAL``, the rest with FULL."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch(mode=0o600, exist_ok=True)
    db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    db.execute("PRAGMA busy_timeout = 10000")
    db.execute("PRAGMA journal_mode = WAL")
    db.execute("PRAGMA synchronous = NORMAL")
    db.executescript(_SCHEMA)
    return db


class _transaction:  # noqa: N801  (used as a context manager, like a function)
    """``BEGIN IMMEDIATE`` ... ``COMMIT`` (``ROLLBACK`` on an exception); ``full``: fsync'd (``synchronous=FULL``)."""

    def __init__(self, db: sqlite3.Connection, full: bool = False) -> None:
        self.db, self.full = db, full

    def __enter__(self) -> None:
        if self.full:
            self.db.execute("PRAGMA synchronous = FULL")
        self.db.execute("BEGIN IMMEDIATE")

    def __exit__(self, kind, value, traceback) -> None:
        self.db.execute("ROLLBACK" if kind else "COMMIT")
        if self.full:
            self.db.execute("PRAGMA synchronous = NORMAL")
