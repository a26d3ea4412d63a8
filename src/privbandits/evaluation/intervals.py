"""Confidence intervals for estimators of the form ``V̂ = Σ_t u_t / Σ_t d_t`` (``d_t = 1`` for the averages;
``d_t = w_t`` for SNIPS).

* ``"bootstrap"`` (the default): Efron's percentile bootstrap over rounds (Efron & Tibshirani 1993, ch. 13):
  ``B`` resamples of the rounds with replacement from a seeded generator, ``V̂*_b = Σ u_{t*} / Σ d_{t*}``, and the
  ``(1 - level)/2`` and ``(1 + level)/2`` quantiles of the ``V̂*_b``. The reward model is held fixed (fitted once
  on the whole log), so the interval does not include its fitting noise.
* ``"normal"``: the central limit theorem on the per-round terms of an average, ``V̂ ± z · s / √n`` with ``s``
  their sample standard deviation (ddof = 1) and ``z`` the standard normal's ``(1 + level)/2`` quantile. Only
  for the estimators that are averages (all but SNIPS, a ratio).
"""

from __future__ import annotations

from statistics import NormalDist

import numpy as np

from privbandits.validation import InvalidInputError

CHUNK = 4_000_000
"""Resampled indices drawn at once (memory bound of the bootstrap)."""


def ratio(numerator: np.ndarray, denominator: np.ndarray) -> float:
    """``Σ numerator / Σ denominator`` (0 when the denominator sums to 0)."""
    total = float(denominator.sum())
    return float(numerator.sum()) / total if total != 0 else 0.0


def bootstrap(
    numerator: np.ndarray, denominator: np.ndarray, level: float, n_bootstrap: int, seed: int
) -> tuple[float, float]:
    """The percentile bootstrap interval of ``Σ u / Σ d`` over resampled rounds (a resample whose ``Σ d`` is 0
    counts as 0)."""
    n = numerator.size
    rng = np.random.default_rng(seed)
    per_chunk = max(1, CHUNK // n)
    values = np.empty(n_bootstrap)
    for start in range(0, n_bootstrap, per_chunk):
        stop = min(n_bootstrap, start + per_chunk)
        index = rng.integers(0, n, size=(stop - start, n))
        tops, bottoms = numerator[index].sum(axis=1), denominator[index].sum(axis=1)
        values[start:stop] = np.divide(tops, bottoms, out=np.zeros_like(tops), where=bottoms != 0)
    tail = (1.0 - level) / 2.0
    low, high = np.quantile(values, [tail, 1.0 - tail])
    return float(low), float(high)


def normal(terms: np.ndarray, level: float, method: str) -> tuple[float, float]:
    """``mean ± z · s / √n`` of the per-round ``terms``."""
    n = terms.size
    if n < 2:
        raise InvalidInputError(f"{method}: interval 'normal' needs n_rounds >= 2, got {n}")
    z = NormalDist().inv_cdf((1.0 + level) / 2.0)
    centre = float(terms.mean())
    half = z * float(terms.std(ddof=1)) / float(np.sqrt(n))
    return centre - half, centre + half


def effective_sample_size(weights: np.ndarray) -> float:
    """Kish's ``(Σ w)² / Σ w²`` (0 when every weight is 0)."""
    squares = float((weights * weights).sum())
    return float(weights.sum()) ** 2 / squares if squares > 0 else 0.0
