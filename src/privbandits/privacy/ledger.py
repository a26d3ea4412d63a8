"""The privacy ledger: every privacy-relevant release a protocol makes, with its guarantee.

Protocols record an entry each time they release something computed from
private data (a shuffled batch, a noisy statistic, an opened action). Reports
read guarantees from here rather than recomputing them, so what is printed is
what was recorded during the run.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class LedgerEntry:
    """One release and its guarantee.

    Attributes
    ----------
    mechanism : str
        What released the data, e.g. ``"p2b.shuffler"``.
    epsilon : float
        The ε of the release (``math.inf`` when there is no DP guarantee).
    delta : float or None
        Its δ, or None when it cannot be computed from what is known (e.g. P2B's
        δ needs a constant Ω the paper does not give).
    unit : str
        The privacy unit the guarantee protects, e.g. "one context vector".
    details : dict
        Numbers that qualify the entry (crowd sizes, thresholds, noise scales).
    """

    mechanism: str
    epsilon: float
    delta: float | None
    unit: str
    details: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not (self.epsilon >= 0):
            raise ValueError(f"epsilon must be >= 0, got {self.epsilon}")
        if self.delta is not None and not 0.0 <= self.delta <= 1.0:
            raise ValueError(f"delta must be in [0, 1] or None, got {self.delta}")


class PrivacyLedger:
    """An append-only list of :class:`LedgerEntry`, with basic composition."""

    def __init__(self) -> None:
        self._entries: list[LedgerEntry] = []

    def record(self, entry: LedgerEntry) -> LedgerEntry:
        self._entries.append(entry)
        return entry

    @property
    def entries(self) -> tuple[LedgerEntry, ...]:
        return tuple(self._entries)

    def rows(self) -> list[dict[str, Any]]:
        """The entries as plain JSON-ready rows (a party's result file, a checkpoint)."""
        fields = ("mechanism", "epsilon", "delta", "unit")
        return [{**{key: getattr(e, key) for key in fields}, "details": dict(e.details)} for e in self._entries]

    def record_rows(self, rows: list[dict[str, Any]]) -> None:
        """Record the entries :meth:`rows` wrote."""
        for row in rows:
            self.record(LedgerEntry(row["mechanism"], row["epsilon"], row["delta"], row["unit"], dict(row["details"])))

    def basic_composition(self, mechanism: str | None = None) -> tuple[float, float | None]:
        """(Σε, Σδ) over the entries (of ``mechanism``): sequential composition, an upper bound.

        δ is None if any entry's δ is unknown.
        """
        chosen = [e for e in self._entries if mechanism is None or e.mechanism == mechanism]
        epsilon = math.fsum(e.epsilon for e in chosen)
        known = [e.delta for e in chosen if e.delta is not None]
        return epsilon, None if len(known) < len(chosen) else math.fsum(known)
