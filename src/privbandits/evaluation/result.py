"""The result every estimator returns: the estimate, its interval and what it rests on."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Estimate:
    """A target policy's estimated value on a log.

    Attributes
    ----------
    method : str
        The estimator (``"ips"``, ``"snips"``, ``"clipped_ips"``, ``"dm"``, ``"dr"``, ``"switch_dr"``).
    estimate : float
        The estimated value ``V̂(π_e)``.
    low, high : float
        The confidence interval at ``level``.
    level : float
        Its nominal coverage (0.95: a 95% interval).
    interval : str
        How it was computed: ``"bootstrap"`` (percentile, over rounds) or ``"normal"`` (from the per-round terms).
    n_rounds : int
        Rounds in the log.
    effective_sample_size : float
        Kish's ``(Σ_t w_t)² / Σ_t w_t²`` of the importance weights the estimator uses (clipped for clipped IPS,
        those kept for switch-DR, 0 when none is); ``n_rounds`` for the direct method, which weights no round.
    """

    method: str
    estimate: float
    low: float
    high: float
    level: float
    interval: str
    n_rounds: int
    effective_sample_size: float

    def covers(self, value: float) -> bool:
        """Whether ``value`` lies in ``[low, high]``."""
        return self.low <= value <= self.high
