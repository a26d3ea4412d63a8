"""Per-user privacy budgets while serving: a :class:`BudgetedDecider` charges every decision to its user.

With ``user_budget_epsilon`` set (:class:`~privbandits.serve.options.ServeOptions`, a reference service file's
``[service]`` table or a deployment's ``[serve.NAME]``), the party's decider is wrapped: each new decision charges the
release the decider says one decision makes of its user's data (:meth:`~privbandits.serve.decider.Decider.
user_release`) to that user in a :class:`~privbandits.privacy.filter.PrivacyFilter` of budget
``(user_budget_epsilon, user_budget_delta)``, composed by the one accountant (PLD). A decision that would take the
user past it is refused before anything changes: a 403 JSON error naming ``user_budget_epsilon``, with the user, the
ε spent and the ε asked. ``GET /v1/ledger`` shows every user's spent ε under ``user_budget``; the metrics the largest.

The charges are part of the role's state: a decision's charge is redone when recovery replays its journal entry
(:meth:`~privbandits.serve.decider.Decider.replay_decision`) and the filter's state is in every checkpoint, so a
restart keeps what each user spent. The budget is part of the role's identity: a store written under another
budget is refused at start (its checkpoints would not fit).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence

from privbandits.privacy.accountant import Release
from privbandits.privacy.filter import BudgetExceeded, PrivacyFilter
from privbandits.serve.decider import DecidedEvent, DecideInput, Decider, Decision, JsonObject, Refused
from privbandits.serve.role import ServedRole

BUDGET_STATUS = 403
"""The status of a decision refused for its user's budget (the request is valid; the user may not have it)."""
_RELEASE_FIELDS = ("noise", "scale", "sensitivity", "count")
_LENGTH = 8  # bytes of the filter state's length at the head of a checkpoint


class BudgetError(ValueError):
    """A budget that cannot be kept by this party: one line naming ``user_budget_epsilon``."""


class BudgetedDecider(Decider):
    """``inner`` with every decision charged to its user's budget (see the module docstring)."""

    def __init__(self, inner: Decider, epsilon: float, delta: float) -> None:
        release = inner.user_release()
        if release is None:
            raise BudgetError(
                f"user_budget_epsilon: this party ({inner.kind}) releases nothing per user on a decision, so a "
                "per-user budget has nothing to charge"
            )
        self.inner, self.release = inner, release
        self.filter = PrivacyFilter(epsilon, delta, "user_budget_epsilon")
        self.kind, self.propensities_known = inner.kind, inner.propensities_known

    def identity(self) -> str:
        budget = [self.filter.epsilon, self.filter.delta, _release_row(self.release)]
        digest = hashlib.sha256(json.dumps(budget).encode()).hexdigest()
        return f"{self.inner.identity()}+user-budget:{digest}"

    def start(self) -> None:
        self.inner.start()

    def stop(self) -> None:
        self.inner.stop()

    # -- deciding ------------------------------------------------------------
    def user_release(self) -> Release | None:
        return self.release

    def prepare(self, requests: Sequence[DecideInput]) -> None:
        """The inner decider's, for the requests whose users' budgets admit a decision now (one refused later only
        was prepared for nothing)."""
        admitted = []
        for request in requests:
            try:
                self.filter.check(request.user_id, self.release)
            except BudgetExceeded:
                continue
            admitted.append(request)
        self.inner.prepare(admitted)

    def decide(self, request: DecideInput) -> Decision:
        try:
            self.filter.check(request.user_id, self.release)
        except BudgetExceeded as exceeded:
            raise Refused("user_budget_epsilon", _refusal(exceeded), BUDGET_STATUS) from None
        decision = self.inner.decide(request)  # a refusal here charges nothing
        self.filter.charge(request.user_id, self.release)
        return decision

    def replay_decision(self, event: DecidedEvent) -> None:
        self.inner.replay_decision(event)
        self.filter.charge(event.user_id, self.release)  # admitted when it was decided, under this same budget

    def check_reward(self, event: DecidedEvent, reward: float) -> None:
        self.inner.check_reward(event, reward)

    def absorb(self, event: DecidedEvent, reward: float) -> None:
        self.inner.absorb(event, reward)

    def expire(self, event: DecidedEvent) -> None:
        self.inner.expire(event)

    # -- views ---------------------------------------------------------------
    @property
    def model_version(self) -> int:
        return self.inner.model_version

    def ledger(self) -> JsonObject:
        spent = self.filter.spent_by_user()
        budget = {
            "epsilon": self.filter.epsilon,
            "delta": self.filter.delta,
            "accountant": "PLD (dp-accounting), each user's decisions composed",
            "per_decision": dict(zip(_RELEASE_FIELDS, _release_row(self.release), strict=True)),
            "spent": spent,
        }
        return self.inner.ledger() | {"user_budget": budget}

    def privacy_spent(self) -> Mapping[str, float]:
        spent = self.filter.spent_by_user().values()
        return {**self.inner.privacy_spent(), "user_epsilon_max": max(spent, default=0.0)}

    # -- state ---------------------------------------------------------------
    def checkpoint(self) -> bytes:
        state = json.dumps(self.filter.state(), separators=(",", ":")).encode()
        return len(state).to_bytes(_LENGTH, "big") + state + self.inner.checkpoint()

    def restore(self, state: bytes) -> None:
        length = int.from_bytes(state[:_LENGTH], "big")
        if len(state) < _LENGTH + length:
            raise ValueError("checkpoint does not fit the budgeted role: its budget state is cut short")
        try:
            charges = json.loads(state[_LENGTH : _LENGTH + length])
        except ValueError as exc:
            raise ValueError(f"checkpoint does not fit the budgeted role: {exc}") from None
        if not isinstance(charges, dict):
            raise ValueError("checkpoint does not fit the budgeted role: its budget state is not an object")
        self.inner.restore(state[_LENGTH + length :])
        self.filter.restore(charges)


def _release_row(release: Release) -> list:
    return [str(release.noise), release.scale, release.sensitivity, release.count]


def _refusal(exceeded: BudgetExceeded) -> str:
    return (
        f"= {exceeded.limit:g} (at delta {exceeded.delta:g}) would be passed for user {exceeded.user!r}: spent "
        f"epsilon {exceeded.spent:.6g}, this decision asks {exceeded.asked:.6g}, composed {exceeded.total:.6g}"
    )


def with_user_budget(role: ServedRole, epsilon: float | None, delta: float) -> ServedRole:
    """``role`` under a per-user budget when ``epsilon`` is set (a :class:`Decider` only: :class:`BudgetError`
    otherwise, or when it releases nothing per user); ``role`` itself when it is None."""
    if epsilon is None:
        return role
    if not isinstance(role, Decider):
        raise BudgetError(f"user_budget_epsilon: this party ({role.kind}) makes no decisions to charge")
    return BudgetedDecider(role, epsilon, delta)
