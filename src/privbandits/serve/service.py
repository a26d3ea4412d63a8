"""The protocol-independent core of a served party: its role (a :class:`Decider`, a :class:`FeatureHolder`, or a
plain :class:`ServedRole`) behind an :class:`EventStore`.

:class:`DecisionService` turns the application's requests into the decider's calls and the store's journal:

* **decide**: a known event id asked again with the same input gets the stored answer (asked with other input: 409);
  a new one is decided, journalled and committed, then answered.
* **reward**: an unknown event id is refused (404: a reward follows its decision); a reward for an open event is
  committed, then absorbed; the same reward again is acknowledged as a duplicate and absorbed no more; a reward for an
  event that timed out, or another reward for a rewarded one, is refused (409).
* **expiry**: an open event past its deadline (``reward_timeout_s`` after its decision) is closed without a reward,
  journalled, counted; the decider is told through :meth:`Decider.expire` (the reference learns nothing).

* **put** (a feature holder): the rows under a key, journalled and committed, then applied; the same rows again are
  acknowledged as a duplicate.

Recovery (:meth:`DecisionService.open`): the decider restores the newest checkpoint, then the journal after it is
replayed in sequence order (decisions through :meth:`Decider.replay_decision`, rewards through
:meth:`Decider.absorb`, expiries through :meth:`Decider.expire`, puts through :meth:`FeatureHolder.apply_put`); then
the role starts (:meth:`ServedRole.start`: its links to the other parties). Every change of the learner's state is
made in that same order while serving, after its journal entry committed, so the rebuilt state is the one the service
had: every committed (so every acknowledged) reward is absorbed exactly once, and a reward committed but not
acknowledged before a crash is absorbed once and acknowledged as a duplicate when the application sends it again.

Every method runs on the service's one worker thread (:meth:`DecisionService.call`,
:class:`~privbandits.serve.worker.GroupWorker`): the decider and the store see one call at a time, in the order the
journal records; calls that queued up meanwhile share one commit (group commit), answered after it, and the decider
hears first which new events the group will decide (:meth:`Decider.prepare`: e.g. one message per link for them all).
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from privbandits.serve.decider import DecidedEvent, DecideInput, Decider, Refused
from privbandits.serve.metrics import ServiceMetrics
from privbandits.serve.role import FeatureHolder, FeaturePut, ServedRole
from privbandits.serve.store import EventStore, JournalEntry, StoreError, features_text
from privbandits.serve.worker import GroupWorker, Pending

T = TypeVar("T")


@dataclass(frozen=True)
class ServiceOptions:
    """How the service keeps events: ``reward_timeout_s`` closes an event without a reward; a checkpoint of the
    learner is written every ``checkpoint_every`` journalled changes (recovery replays at most that many)."""

    reward_timeout_s: float = 3600.0
    checkpoint_every: int = 100


@dataclass(frozen=True)
class PutOutcome:
    """A put acknowledged: durable and applied (``duplicate``: the same rows were the key's already)."""

    key: str
    duplicate: bool
    model_version: int


@dataclass(frozen=True)
class RewardOutcome:
    """A reward's acknowledgement: the event, whether it was a duplicate, the model version after it."""

    event: DecidedEvent
    duplicate: bool
    model_version: int


def request_digest(request: DecideInput, features: str | None = None) -> str:
    """SHA-256 of what was asked (user, features, arms): tells a repeat from another request under the same id.
    ``features``: the features as the store keeps them (:func:`~privbandits.serve.store.features_text`), if already
    written (a decision's are written once, for its digest and its store row)."""
    if features is None:
        features = features_text(request.features)
    arms = "null" if request.arms is None else json.dumps(list(request.arms), separators=(",", ":"))
    return hashlib.sha256(f'[{json.dumps(request.user_id)},"{features}",{arms}]'.encode()).hexdigest()


def legacy_digest(request: DecideInput) -> str:
    """The digest stores written before :func:`request_digest` (the features as JSON numbers): a repeat of an event
    decided then is still told from another request."""
    asked = [request.user_id, request.features.tolist(), None if request.arms is None else list(request.arms)]
    return hashlib.sha256(json.dumps(asked, separators=(",", ":")).encode()).hexdigest()


class DecisionService:
    """A role, its store, its metrics and its worker thread (see the module docstring). ``decider`` is the role
    (any :class:`ServedRole`; decide and reward need a :class:`Decider`, put a :class:`FeatureHolder`)."""

    def __init__(
        self, decider: ServedRole, store: EventStore, options: ServiceOptions, clock: Callable[[], float] = time.time
    ) -> None:
        self.decider, self.store, self.options, self.clock = decider, store, options, clock
        self._worker = GroupWorker(store, prepare=self._prepare)
        self._checkpointed = 0
        self._closed = self._started = False
        self.started = time.monotonic()
        self.open_events = store.counts()["open"]
        self.metrics = ServiceMetrics(
            lambda: self.open_events, lambda: self.decider.model_version, self.decider.privacy_spent,
            lambda: self.commits,
        )  # fmt: skip

    @property
    def commits(self) -> tuple[int, int]:
        """``(transactions, calls)``: the store transactions group commit made, and the requests run inside them (the
        ``commit_groups`` and ``grouped_calls`` metrics)."""
        return self._worker.batches, self._worker.calls

    @classmethod
    def open(cls, decider: ServedRole, path: str | Path, options: ServiceOptions | None = None, **kwargs: Any):
        """The service over the store at ``path`` (created if missing), its decider rebuilt from what the store holds
        (:class:`StoreError`, one line naming the file, if the store is damaged or its state does not fit)."""
        store = EventStore(path, decider.identity())
        service = cls(decider, store, options or ServiceOptions(), **kwargs)
        try:
            service._recover()
        except (ValueError, KeyError, TypeError) as exc:
            service._worker.shutdown()
            store.close()
            raise StoreError(f"event store {store.path} cannot be used: its state does not replay ({exc})") from None
        try:
            decider.start()
        except BaseException:
            service._worker.shutdown()
            store.close()
            raise
        service._started = True
        return service

    def _recover(self) -> None:
        saved = self.store.last_checkpoint()
        after = 0
        if saved is not None:
            after, state = saved
            self.decider.restore(state)
        self._checkpointed = after
        for entry in self.store.journal(after):
            self._replay(entry)

    def _replay(self, entry: JournalEntry) -> None:
        if entry.kind == "put":
            assert entry.put is not None and isinstance(self.decider, FeatureHolder)
            self.decider.apply_put(entry.put)
            return
        assert entry.event is not None and isinstance(self.decider, Decider)
        if entry.kind == "decide":
            self.decider.replay_decision(entry.event)
        elif entry.kind == "rewarded":
            assert entry.reward is not None
            self.decider.absorb(entry.event, entry.reward)
        else:
            self.decider.expire(entry.event)

    async def call(self, function: Callable[..., T], *args: Any) -> T:
        """Run ``function(*args)`` on the worker thread (one call at a time, in arrival order), answered once what it
        wrote has committed."""
        return await self._worker.call(function, *args)

    def close(self) -> None:
        """Checkpoint the learner and close the store (after the worker's last call); again: nothing."""
        if self._closed:
            return
        self._closed = True
        self._worker.shutdown()
        if self._started:
            self.decider.stop()
        if self.store.last_seq > self._checkpointed and self._worker.broken is None:  # broken: the role may hold
            # what never committed, so no checkpoint of it; a restart rebuilds it from the store
            self.store.write_checkpoint(self.decider.checkpoint(), self.decider.model_version)
        self.store.close()

    # -- the application's requests ------------------------------------------
    def _decider(self) -> Decider:
        if not isinstance(self.decider, Decider):
            raise Refused("path", f"this party ({self.decider.kind}) does not decide", 404)
        return self.decider

    def decide(self, request: DecideInput) -> DecidedEvent:
        """The decision for ``request``'s event: the stored one for a repeat, else a new one made durable first."""
        decider = self._decider()
        text = features_text(request.features)
        digest = request_digest(request, text)
        stored = self.store.get(request.event_id)
        if stored is not None:
            if stored.request_sha256 != digest and stored.request_sha256 != legacy_digest(request):
                raise Refused("event_id", "was already decided for other input (an event id names one event)", 409)
            self.metrics.repeats.inc()
            return stored.event
        decision = decider.decide(request)
        now = self.clock()
        event = self.store.add_decision(request, digest, decision, now + self.options.reward_timeout_s, text)
        self.open_events += 1
        self.metrics.decisions.inc()
        return event

    def _prepare(self, calls: list[Pending]) -> None:
        """Tell the decider the new events a group of calls will decide (:meth:`Decider.prepare`)."""
        if not isinstance(self.decider, Decider):
            return
        fresh: dict[str, DecideInput] = {}
        for function, args in calls:
            if function == self.decide and args[0].event_id not in fresh and self.store.get(args[0].event_id) is None:
                fresh[args[0].event_id] = args[0]
        if fresh:
            self.decider.prepare(list(fresh.values()))

    def reward(self, event_id: str, reward: float) -> RewardOutcome:
        """Absorb ``reward`` for an open event (committed first), acknowledge a duplicate, or refuse (409/404)."""
        decider = self._decider()
        if not math.isfinite(reward):
            raise Refused("reward", "must be a finite number")
        stored = self.store.get(event_id)
        if stored is None:
            raise Refused("event_id", "has no decision (a reward follows its event's decision)", 404)
        status = stored.status
        if status == "open" and stored.deadline <= self.clock():
            self._expire(stored.event)
            status = "expired"
        if status == "rewarded":
            if stored.reward != reward:
                absorbed = f"differs from the reward already absorbed for this event ({stored.reward})"
                raise Refused("reward", absorbed, 409)
            self.metrics.duplicates.inc()
            return RewardOutcome(stored.event, True, decider.model_version)
        if status == "expired":
            raise Refused("event_id", "is closed: no reward came within reward_timeout_s", 409)
        decider.check_reward(stored.event, reward)
        self.store.close_event(event_id, reward)
        self.open_events -= 1
        decider.absorb(stored.event, reward)
        self.metrics.rewards.inc()
        self._maybe_checkpoint()
        return RewardOutcome(stored.event, False, decider.model_version)

    def put(self, put: FeaturePut) -> PutOutcome:
        """Keep a feature holder's rows (committed first, then applied), or acknowledge the same rows as a duplicate."""
        holder = self.decider
        if not isinstance(holder, FeatureHolder):
            raise Refused("path", f"this party ({holder.kind}) keeps no application rows", 404)
        previous = self.store.last_put(put.key)
        if previous is not None and previous.shape == put.features.shape and (previous == put.features).all():
            self.metrics.put_duplicates.inc()
            return PutOutcome(put.key, True, holder.model_version)
        holder.check_put(put, previous)
        self.store.add_put(put)
        holder.apply_put(put)
        self.metrics.puts.inc()
        self._maybe_checkpoint()
        return PutOutcome(put.key, False, holder.model_version)

    def expire_due(self) -> int:
        """Close every open event past its deadline; how many closed."""
        closed = 0
        if not isinstance(self.decider, Decider):
            return closed
        while due := self.store.due(self.clock()):
            for event_id in due:
                stored = self.store.get(event_id)
                assert stored is not None
                self._expire(stored.event)
                closed += 1
        return closed

    def _expire(self, event: DecidedEvent) -> None:
        self.store.close_event(event.event_id, None)
        self.open_events -= 1
        assert isinstance(self.decider, Decider)
        self.decider.expire(event)
        self.metrics.expired.inc()
        self._maybe_checkpoint()

    def _maybe_checkpoint(self) -> None:
        if self.store.last_seq - self._checkpointed >= self.options.checkpoint_every:
            self.store.write_checkpoint(self.decider.checkpoint(), self.decider.model_version)
            self._checkpointed = self.store.last_seq

    # -- views ---------------------------------------------------------------
    def health(self) -> dict[str, Any]:
        """The service's state in brief (``GET /v1/health``)."""
        return {
            "status": "ok",
            "decider": self.decider.kind,
            "model_version": self.decider.model_version,
            "open_events": self.open_events,
            "uptime_s": round(time.monotonic() - self.started, 3),
        }

    def ledger(self) -> dict[str, Any]:
        """The decider's ledger and the events by status (``GET /v1/ledger``)."""
        return {"decider": self.decider.kind, "events": self.store.counts(), "learner": self.decider.ledger()}
