"""The application-facing role a protocol implements to be served: :class:`Decider`.

A served party answers an application's events: decide now, reward later or never. The service
(:mod:`privbandits.serve.service`) owns what every protocol shares: the HTTP API, the event store, idempotency,
timeouts, metrics and recovery. A protocol supplies a :class:`Decider`, which owns only the learning:

* :meth:`Decider.decide` chooses an arm for one event (it may exchange protocol messages and block) and returns a
  :class:`Decision`, whose ``event_state`` is everything the decider needs later to absorb that event's reward (e.g.
  the caller's features, masked contributions, secret shares). The service writes it to the party's own store
  before the answer is sent, so per-event state survives a crash and never leaves the party. Before a group of
  concurrent calls runs, :meth:`Decider.prepare` hears the events the group will decide, so a protocol can batch
  their messages (one per link for the whole group); deciding one at a time needs nothing of it.
* :meth:`Decider.absorb` learns from an event's reward, :meth:`Decider.expire` hears that an event closed without
  one (the reference learner learns nothing from it).
* :meth:`Decider.checkpoint` / :meth:`Decider.restore` save and load the learner's state as bytes. Recovery is exact
  because every change of that state goes through :meth:`absorb`, :meth:`expire` or :meth:`replay_decision`, which
  the store journals in order: the last checkpoint plus the journal after it rebuilds the state bit for bit.

A decider is one kind of :class:`~privbandits.serve.role.ServedRole` (its lifecycle, ledger and checkpoints); the
others are a party whose application puts its own features (:class:`~privbandits.serve.role.FeatureHolder`) and a
party with no application API of its own (a plain ``ServedRole``: it serves only the other parties).

Refusals are :class:`Refused` (the request's field and a message): raised before anything changes, they become
one JSON error with a 4xx status.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from privbandits.privacy.accountant import Release
from privbandits.serve.role import JsonObject, Refused, ServedRole

__all__ = ["DecideInput", "DecidedEvent", "Decider", "Decision", "JsonObject", "Refused", "candidate_arms"]


@dataclass(frozen=True)
class DecideInput:
    """One event to decide: the application's id for it, its user, its features and candidate arms.

    ``features`` is float64 of shape ``(rows, dim)``: one row per arm, or one row shared by every arm (the decider
    says which shapes it takes). ``arms`` is None (every arm) or the candidate arms, distinct, in the caller's order.
    """

    event_id: str
    user_id: str
    features: np.ndarray
    arms: tuple[int, ...] | None = None


@dataclass(frozen=True)
class Decision:
    """A decider's answer: the arm, its propensity where the policy randomises (None where it does not), the model
    version that chose it, and the per-event state the decider needs to absorb the reward (JSON-able)."""

    arm: int
    propensity: float | None
    model_version: int
    event_state: JsonObject = field(default_factory=dict)


@dataclass(frozen=True)
class DecidedEvent:
    """An event as the store holds it, handed back to the decider to absorb its reward or expire it."""

    event_id: str
    user_id: str
    arm: int
    propensity: float | None
    model_version: int
    event_state: JsonObject


class Decider(ServedRole):
    """What a protocol's serving role implements (see the module docstring for the contract).

    All calls come from one thread, one at a time, so an implementation needs no locking of its own.

    ``propensities_known``: whether a null propensity means a deterministic choice (probability one). A decider whose
    policy randomises without knowing the chosen arm's probability (the MPC environment: it depends on the secret
    greedy arm) says False, and its decision log is refused for off-policy evaluation.
    """

    propensities_known: bool = True

    def prepare(self, requests: Sequence[DecideInput]) -> None:
        """Hear, before a group of calls runs, the new events the group will :meth:`decide` (in arrival order, each
        once, none decided before), so that their protocol messages can be batched: e.g. one request per link for
        all of them instead of one per decision. :meth:`decide` is still called for each, in order, and must decide
        exactly as it would have without this. Must not change the learner's state; default: nothing."""
        return None

    @abstractmethod
    def decide(self, request: DecideInput) -> Decision:
        """Choose an arm for ``request``; :class:`Refused` (nothing changed) for input the decider cannot take.
        Must not change the learner's state, except as :meth:`replay_decision` repeats it on recovery."""

    def check_reward(self, event: DecidedEvent, reward: float) -> None:
        """:class:`Refused` naming ``reward`` when this decider cannot absorb it (default: any finite reward)."""
        return None

    @abstractmethod
    def absorb(self, event: DecidedEvent, reward: float) -> None:
        """Learn from ``reward`` for ``event`` (already checked by :meth:`check_reward` and made durable)."""

    def expire(self, event: DecidedEvent) -> None:
        """``event`` closed without a reward (its ``reward_timeout_s`` passed); default: learn nothing."""
        return None

    def user_release(self) -> Release | None:
        """The release one decision makes of its user's data (the noise mechanism and how many times), which a
        per-user budget (``user_budget_epsilon``, :mod:`privbandits.serve.budget`) charges to the user; None
        (default): decisions release nothing per user, and a per-user budget is refused at start."""
        return None

    def replay_decision(self, event: DecidedEvent) -> None:
        """Redo the state change :meth:`decide` made for ``event`` (recovery); default: none (deciding changed no
        state). A decider whose decisions spend something (a privacy budget, a counter) redoes it here."""
        return None


def candidate_arms(arms: tuple[int, ...] | None, n_arms: int) -> np.ndarray:
    """A request's candidate arms as int64, every arm for None; :class:`Refused` naming ``arms`` (or the arm at fault)
    when they are empty, out of ``[0, n_arms)`` or repeated."""
    if arms is None:
        return np.arange(n_arms)
    if not arms:
        raise Refused("arms", "must name at least one arm")
    for i, arm in enumerate(arms):
        if not 0 <= arm < n_arms:
            raise Refused(f"arms[{i}]", f"must be an arm in [0, {n_arms - 1}], got {arm}")
    if len(set(arms)) != len(arms):
        raise Refused("arms", "must not repeat an arm")
    return np.asarray(arms, dtype=np.int64)
