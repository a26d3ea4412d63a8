"""A served party's decision log, for offline evaluation (``privbandits serve-export``).

The log is read from the party's own store and holds only what that party saw: the features its application sent
(its own block of the context), the arm, its propensity and the reward, for every **rewarded** event in decision
order (an open or expired event has no reward to log). It becomes a :class:`~privbandits.logs.LoggedFeedback`, so it
is written in the formats people pass logged bandit data in: Open Bandit Pipeline's ``BanditFeedback`` (``.npz``) and
Vowpal Wabbit's DSJSON (``.dsjson``/``.jsonl``/``.json``).

* ``context``: the event's features as one row; an event that sent one row per arm is flattened arm by arm
  (``rows × width`` numbers), so every event of a log must have sent the same shape (else refused, naming the event).
* ``pscore``: the propensity the decider returned; a deterministic policy's choice (``null``) is logged as 1.0, the
  probability with which that policy took it.
* ``n_actions``: given, or one more than the largest arm chosen or offered.
* ``event_id`` and ``timestamp`` (the decision's time, ISO 8601 UTC) come along.
"""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np

from privbandits.logs.feedback import LoggedFeedback
from privbandits.serve.store import EventStore, LoggedEvent
from privbandits.validation import InvalidInputError


def _iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def _largest_arm(events: list[LoggedEvent]) -> int:
    offered = [max(event.asked.arms) for event in events if event.asked.arms is not None]
    return max([event.arm for event in events] + offered)


def decision_log(
    store: EventStore, n_actions: int | None = None, *, propensities_known: bool = True
) -> LoggedFeedback:
    """The store's rewarded events as logged feedback (see the module docstring); :class:`InvalidInputError` when
    there is none, or the events' features differ in shape, or ``n_actions`` is below an arm in the log, or the
    party's decider does not know its propensities (``propensities_known``: a null one is not a probability one)."""
    if not propensities_known:
        raise InvalidInputError(
            f"the decisions in {store.path} have no propensities (the party's policy explores, but the chosen arm's "
            "probability is secret to it): its log cannot be used for off-policy evaluation"
        )
    events = list(store.rewarded())
    if not events:
        raise InvalidInputError(f"event store {store.path} holds no rewarded event: there is no decision log yet")
    shape = events[0].asked.features.shape
    for event in events:
        if event.asked.features.shape != shape:
            raise InvalidInputError(
                f"event {event.asked.event_id!r} sent features of shape {event.asked.features.shape}, the log's first "
                f"event {shape}: a decision log needs one shape of context"
            )
    largest = _largest_arm(events)
    if n_actions is not None and n_actions <= largest:
        raise InvalidInputError(f"n_actions must be above every arm in the log (largest {largest}), got {n_actions}")
    return LoggedFeedback(
        n_rounds=len(events),
        n_actions=largest + 1 if n_actions is None else n_actions,
        context=np.stack([event.asked.features.reshape(-1) for event in events]),
        action=np.array([event.arm for event in events], dtype=np.int64),
        reward=np.array([event.reward for event in events]),
        pscore=np.array([1.0 if event.propensity is None else event.propensity for event in events]),
        event_id=tuple(event.asked.event_id for event in events),
        timestamp=tuple(_iso(event.decided_at) for event in events),
    )
