"""What an FCLUB run reports about itself: its :class:`Communication` (the paper's C(T) and the reference code's
count, §8 A23) and its :class:`PrivacyReport` (the paper's per-privatizer claim beside dp-accounting's numbers)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from privbandits.privacy.accountant import Release


@dataclass
class Communication:
    """Messages between local servers and the global server, by kind (§1.4, §8 A23).

    ``total`` is the paper's C(T) with renewal pushes counted as downloads;
    ``reference`` is the reference code's count: asynchronous events plus one per
    phase whose partition changed (synchronous: one per round). The two differ beyond
    that in ``shared_updates`` (downloads that carry the shared copy of
    ``shared_statistics_defect``: the reference code's members hold one array, so it
    counts none) and ``idle_downloads`` (with ``rebuild_local_copies``, rounds where
    Eq. 6 holds for a member of the arriving user's global cluster with nothing to
    download: the reference code checks every round and counts each; the global server
    counts them from :class:`DownloadCheck` messages).

    The driver counts from what the parties report: each local server the phase uploads
    and uploads it sent and the renewals and downloads it received, the global server the
    changed phases and idle downloads.
    """

    phase_uploads: int = 0
    renewals: int = 0
    uploads: int = 0
    downloads: int = 0
    changed_phases: int = 0
    rounds: int = 0
    shared_updates: int = 0
    idle_downloads: int = 0
    synchronous: bool = False

    @property
    def total(self) -> int:
        return self.phase_uploads + self.renewals + self.uploads + self.downloads

    @property
    def reference(self) -> int:
        if self.synchronous:
            return self.rounds
        return self.uploads + self.downloads - self.shared_updates + self.idle_downloads + self.changed_phases


@dataclass
class PrivacyReport:
    """Guarantees of a run: the paper's per-privatizer claim next to dp-accounting's numbers.

    ``accounted_epsilon_*`` are at the claimed δ, ``accounted_delta_*`` at the claimed ε, by Rényi DP (the
    fields the stored runs have always had).

    ``per_user_epsilon`` is what a user pays, by the one accountant (PLD, at the claimed δ): the composition of
    every tree node of every privatizer that user's data entered (new clusters after a split, phase-start trees),
    for the worst user, as Gaussians at the effective sensitivity. Its privacy unit is one (x, y) of that user:
    the paper's per-privatizer ε does not compose across privatizers (§4.5, §8 A9), this does.
    ``per_user_rdp_epsilon`` is the same composition by Rényi DP (it equals ``accounted_epsilon_per_datum``).
    """

    claimed_epsilon: float
    claimed_delta: float
    privatizers: int
    releases: int
    max_levels_per_privatizer: int
    accounted_epsilon_per_privatizer: float
    accounted_delta_per_privatizer: float
    max_nodes_per_datum: int
    accounted_epsilon_per_datum: float
    accounted_delta_per_datum: float
    per_user_epsilon: float = math.inf
    per_user_rdp_epsilon: float = math.inf
    notes: list[str] = field(default_factory=list)


def per_user_epsilons(releases: list[Release], delta: float) -> dict[str, float]:
    """:class:`PrivacyReport`'s ``per_user_epsilon`` (PLD) and ``per_user_rdp_epsilon`` for a worst user whose data
    entered ``releases`` (:meth:`~privbandits.protocols.fclub.config.Calibration.datum_releases`)."""
    from privbandits.privacy.accountant import ledger_epsilons

    composed = ledger_epsilons(releases, delta)
    return {"per_user_epsilon": composed["accounted_epsilon"], "per_user_rdp_epsilon": composed["rdp_epsilon"]}
