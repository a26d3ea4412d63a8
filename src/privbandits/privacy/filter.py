"""A privacy filter (odometer): a declared per-user budget (ε, δ), and every release of a user's data charged to it.

:class:`PrivacyFilter` keeps, per user, the releases their data has entered (:class:`~privbandits.privacy.accountant.
Release`, merged into a few: :func:`~privbandits.privacy.accountant.merged`) and composes them with the one accountant
(PLD, at the budget's δ). :meth:`PrivacyFilter.charge` adds a release only if the composition stays within the
budget's ε; a release past it raises :class:`BudgetExceeded` (naming the budget, the user, what they spent and what
was asked) and changes nothing. :meth:`PrivacyFilter.spent` reads what a user has spent; :meth:`PrivacyFilter.state`
and :meth:`PrivacyFilter.restore` carry the whole ledger as JSON (a served party's checkpoint).

What the budget guarantees: where a user's releases are fixed in advance (a served decider charges the same release
for every decision), the filter admits a fixed number k of them, the largest whose composition is within the budget,
and the user's data is (ε, δ)-DP by plain composition of those k. Where the releases' parameters are chosen
adaptively, from earlier outputs, a filter on PLD is not known to be valid in general (filters on Rényi DP are:
Feldman & Zrnic 2021); charge only releases fixed in advance.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from privbandits.privacy.accountant import Noise, Release, merged, pld_epsilon

__all__ = ["BudgetExceeded", "PrivacyFilter"]


class BudgetExceeded(ValueError):
    """A release that would take ``user`` past the budget named ``budget``: ``spent`` before it, ``asked`` by it
    alone, ``total`` the two composed (all ε at the budget's δ, PLD)."""

    def __init__(self, budget: str, limit: float, delta: float, user: str, spent: float, asked: float, total: float):
        super().__init__(
            f"{budget} = {limit:g} (at delta {delta:g}) refuses this release for user {user!r}: spent epsilon "
            f"{spent:.6g}, asked {asked:.6g}, composed {total:.6g} > {limit:g}"
        )
        self.budget, self.limit, self.delta = budget, limit, delta
        self.user, self.spent, self.asked, self.total = user, spent, asked, total


class PrivacyFilter:
    """A per-user budget ``(epsilon, delta)``, named ``name`` in refusals (see the module docstring)."""

    def __init__(self, epsilon: float, delta: float, name: str = "user_budget_epsilon") -> None:
        if not (isinstance(epsilon, int | float) and 0 < epsilon < math.inf):
            raise ValueError(f"PrivacyFilter: epsilon must be a finite number > 0, got {epsilon!r}")
        if not (isinstance(delta, int | float) and 0 < delta < 1):
            raise ValueError(f"PrivacyFilter: delta must be in (0, 1), got {delta!r}")
        self.epsilon, self.delta, self.name = float(epsilon), float(delta), name
        self._charged: dict[str, tuple[Release, ...]] = {}

    def spent(self, user: str) -> float:
        """The ε ``user`` has spent (PLD at the budget's δ): 0 for a user never charged."""
        return pld_epsilon(self._charged.get(user, ()), self.delta)

    def spent_by_user(self) -> dict[str, float]:
        """Every charged user's spent ε, by user id (sorted)."""
        return {user: self.spent(user) for user in sorted(self._charged)}

    def check(self, user: str, releases: Release | Sequence[Release]) -> tuple[Release, ...]:
        """The user's composition with ``releases`` added, or :class:`BudgetExceeded` when it would pass the budget
        (nothing changes either way)."""
        asked = (releases,) if isinstance(releases, Release) else tuple(releases)
        composed = merged((*self._charged.get(user, ()), *asked))
        total = pld_epsilon(composed, self.delta)
        if not total <= self.epsilon:
            raise BudgetExceeded(self.name, self.epsilon, self.delta, user, self.spent(user),
                                 pld_epsilon(asked, self.delta), total)  # fmt: skip
        return composed

    def charge(self, user: str, releases: Release | Sequence[Release]) -> float:
        """Charge ``releases`` to ``user``: the ε they have spent after it, or :class:`BudgetExceeded` (nothing
        charged) when it would pass the budget."""
        self._charged[user] = self.check(user, releases)
        return self.spent(user)

    # -- state ---------------------------------------------------------------
    def state(self) -> dict[str, list[list[Any]]]:
        """Every user's charged releases as JSON: ``{user: [[noise, scale, sensitivity, count], ...]}``."""
        return {user: [[str(r.noise), r.scale, r.sensitivity, r.count] for r in releases]
                for user, releases in sorted(self._charged.items())}  # fmt: skip

    def restore(self, state: Mapping[str, Sequence[Sequence[Any]]]) -> None:
        """Replace the charges with a :meth:`state` (``ValueError`` if it is not one; nothing changes then)."""
        try:
            charged = {str(user): tuple(Release(Noise(n), float(s), float(d), int(c)) for n, s, d, c in releases)
                       for user, releases in state.items()}  # fmt: skip
        except (TypeError, ValueError, AttributeError) as exc:
            raise ValueError(f"PrivacyFilter: not a filter's state ({exc})") from None
        self._charged = charged
