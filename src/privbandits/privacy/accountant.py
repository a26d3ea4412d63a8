"""One accountant: the ε at δ of every release a privacy unit's data enters, by PLD, with RDP beside it.

A :class:`Release` is one noise mechanism a unit's data goes through, ``count`` times: a Gaussian of standard
deviation ``scale`` on a statistic of L2 sensitivity ``sensitivity``, or a Laplace of scale ``scale`` on one of L1
sensitivity ``sensitivity``. :func:`pld_epsilon` composes a list of them with ``dp-accounting``'s privacy loss
distributions (tight up to its discretisation): the ``accounted_epsilon`` every DP ledger entry records. A
composition of Gaussians alone is one Gaussian (below), whose privacy loss distribution is itself Gaussian: its ε
is then dp-accounting's exact one (``get_epsilon_gaussian``, Balle & Wang 2018), which the discretised PLD
approaches from above, and which costs microseconds where the PLD takes a large fraction of a second.
:func:`rdp_epsilon` composes the same list with Rényi DP (an upper bound, the cross-check: PLD ≤ RDP), recorded
beside it as ``rdp_epsilon``. :func:`account` gives both.

The Gaussian part of a composition may be merged (:func:`merged`): k Gaussians of noise multipliers
``m_i = σ_i/Δ_i`` are, exactly, one Gaussian of multiplier ``(Σ 1/m_i²)^(-1/2)`` (the privacy loss of Gaussians
adds in quadrature), so a per-user filter that has charged thousands of releases composes a handful of events.
A Gaussian release whose data enters it several times at once (a user with several rounds in one tree node)
is one release of the summed sensitivity (the triangle inequality).
"""

from __future__ import annotations

import functools
import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum

__all__ = [
    "Accounting", "Noise", "Release", "account", "ledger_epsilons", "merged", "pld_epsilon", "rdp_epsilon",
]  # fmt: skip


class Noise(StrEnum):
    """The noise of a :class:`Release`: Gaussian (L2 sensitivity) or Laplace (L1 sensitivity)."""

    GAUSSIAN = "gaussian"
    LAPLACE = "laplace"


@dataclass(frozen=True)
class Release:
    """``count`` releases of a unit's data with ``noise`` of scale ``scale`` (σ, or Laplace's b) at ``sensitivity``.

    ``scale = 0`` is a release without noise (ε = ∞); ``count = 0`` one that never happened (ε = 0).
    """

    noise: Noise
    scale: float
    sensitivity: float
    count: int = 1

    def __post_init__(self) -> None:
        if not (self.scale >= 0 and math.isfinite(self.scale)):
            raise ValueError(f"Release: scale must be a finite number >= 0, got {self.scale!r}")
        if not (self.sensitivity > 0 and math.isfinite(self.sensitivity)):
            raise ValueError(f"Release: sensitivity must be a finite number > 0, got {self.sensitivity!r}")
        if type(self.count) is not int or self.count < 0:
            raise ValueError(f"Release: count must be an integer >= 0, got {self.count!r}")
        object.__setattr__(self, "noise", Noise(self.noise))

    @classmethod
    def gaussian(cls, std: float, sensitivity: float, count: int = 1) -> Release:
        """``count`` Gaussian mechanisms of noise ``std`` on a statistic of L2 sensitivity ``sensitivity``."""
        return cls(Noise.GAUSSIAN, float(std), float(sensitivity), count)

    @classmethod
    def laplace(cls, scale: float, sensitivity: float, count: int = 1) -> Release:
        """``count`` Laplace mechanisms of scale ``scale`` on a statistic of L1 sensitivity ``sensitivity``."""
        return cls(Noise.LAPLACE, float(scale), float(sensitivity), count)

    @property
    def multiplier(self) -> float:
        """The noise multiplier ``scale / sensitivity`` (what the privacy loss depends on)."""
        return self.scale / self.sensitivity

    def event(self):
        """dp-accounting's event of these releases (a :class:`SelfComposedDpEvent`)."""
        import dp_accounting

        if self.noise is Noise.GAUSSIAN:
            return dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(self.multiplier), self.count)
        return dp_accounting.SelfComposedDpEvent(dp_accounting.LaplaceDpEvent(self.multiplier), self.count)


@dataclass(frozen=True)
class Accounting:
    """A composition's ε at ``delta``: ``pld_epsilon`` (the accounted ε) and ``rdp_epsilon`` (its upper bound)."""

    delta: float
    pld_epsilon: float
    rdp_epsilon: float


def merged(releases: Iterable[Release]) -> tuple[Release, ...]:
    """The same composition in few releases: every Gaussian merged into one of sensitivity 1 and multiplier
    ``(Σ count/m²)^(-1/2)`` (exact), Laplaces of one multiplier counted together; releases of count 0 dropped.
    A noiseless release (scale 0) stays, alone, as the composition's ε is ∞ anyway."""
    inverse_square = 0.0
    laplace: Counter[float] = Counter()
    for release in releases:
        if release.count == 0:
            continue
        if release.scale == 0:
            return (release,)
        if release.noise is Noise.GAUSSIAN:
            inverse_square += release.count / release.multiplier**2
        else:
            laplace[release.multiplier] += release.count
    gaussians = [Release.gaussian(inverse_square**-0.5, 1.0)] if inverse_square > 0 else []
    return (*gaussians, *(Release.laplace(m, 1.0, n) for m, n in sorted(laplace.items())))


def pld_epsilon(releases: Sequence[Release], delta: float) -> float:
    """ε at ``delta`` of the composition of ``releases`` (dp-accounting, PLD): the accounted ε."""
    return _epsilon(tuple(releases), float(delta), "pld")


def rdp_epsilon(releases: Sequence[Release], delta: float) -> float:
    """ε at ``delta`` of the same composition with Rényi DP (an upper bound on :func:`pld_epsilon`)."""
    return _epsilon(tuple(releases), float(delta), "rdp")


def account(releases: Sequence[Release], delta: float) -> Accounting:
    """Both: :func:`pld_epsilon` and :func:`rdp_epsilon` at ``delta``."""
    return Accounting(float(delta), pld_epsilon(releases, delta), rdp_epsilon(releases, delta))


RESOLVED_MULTIPLIER = 1e-6
"""A noise multiplier at or below this is recorded as ε = ∞ in a ledger: beyond what the accountants resolve."""


def ledger_epsilons(releases: Sequence[Release], delta: float) -> dict[str, float]:
    """What a DP ledger entry records of the releases one privacy unit's data entered: ``accounted_epsilon`` (PLD)
    and ``rdp_epsilon`` beside it, at ``delta``; both ∞ where a release's noise multiplier is at most
    :data:`RESOLVED_MULTIPLIER`."""
    if any(release.count > 0 and release.multiplier <= RESOLVED_MULTIPLIER for release in releases):
        pld = rdp = math.inf
    else:
        pld, rdp = pld_epsilon(releases, delta), rdp_epsilon(releases, delta)
    return {"accounted_epsilon": pld, "rdp_epsilon": rdp}


PLD_INTERVAL = 1e-4
"""dp-accounting's default discretisation of the privacy loss, used up to ε = 10; beyond, the interval grows with
the RDP ε (``1e-4·ε/10``) so that the loss's range keeps a bounded number of points (at ε in the thousands the default
needs more memory than a machine has). A coarser interval is still an upper bound (pessimistic discretisation)."""
PLD_CAP = 1000.0
"""Beyond this RDP ε the PLD is not computed (dp-accounting's discretisation overflows) and the RDP ε stands for
it: an upper bound, of a release that protects nothing."""


@functools.lru_cache(maxsize=4096)
def _epsilon(releases: tuple[Release, ...], delta: float, method: str) -> float:
    if not 0 < delta < 1:
        raise ValueError(f"accountant: delta must be in (0, 1), got {delta!r}")
    live = [release for release in releases if release.count > 0]
    if not live:
        return 0.0
    if any(release.scale == 0 for release in live):
        return math.inf
    import dp_accounting
    from dp_accounting import pld, rdp

    if method == "pld":
        gaussian = merged(live)
        if len(gaussian) == 1 and gaussian[0].noise is Noise.GAUSSIAN:  # exact: a Gaussian's privacy profile
            return float(dp_accounting.get_epsilon_gaussian(gaussian[0].multiplier, delta))
    events = [release.event() for release in live]
    event = events[0] if len(events) == 1 else dp_accounting.ComposedDpEvent(events)
    accountant = rdp.RdpAccountant()
    accountant.compose(event)
    upper = float(accountant.get_epsilon(delta))
    if method == "rdp" or not upper <= PLD_CAP:
        return upper
    tight = pld.PLDAccountant(value_discretization_interval=PLD_INTERVAL * max(1.0, upper / 10.0))
    tight.compose(event)
    return float(tight.get_epsilon(delta))
