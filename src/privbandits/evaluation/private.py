"""Differentially private off-policy estimators: IPS, SNIPS and DR from clipped terms and calibrated noise (issue 49
item 3), after Balle, Gomrokchi & Precup (ICML 2016) and Xie, Thomas & Miklau (2019): bound each record's
contribution by clipping, then add noise calibrated to that bound.

**What is protected.** Each logged record ``(x_t, a_t, r_t, p_t)`` is one user's. Two logs are neighbours when they
differ in one record, replaced by any other; the number of records n is public. Every release is (ε, δ)-DP for that
relation: ε-DP with discrete Laplace noise when ``delta = 0``, (ε, δ)-DP with discrete Gaussian noise when
``delta > 0`` (:class:`~privbandits.privacy.bounded_sums.BoundedSums`). This holds only if the target policy
``pi_e`` and the reward model ``q_hat`` do not depend on the records evaluated: a fixed policy, or one trained on
other records (the rounds before the evaluated ones, or public data), and likewise the reward model; then
``π_e(· | x_t)`` and ``q̂(x_t, ·)`` are functions of record t alone. What trained them is protected, or not, by
their own guarantee (a DP learner's ledger entry; none for a plaintext learner). The clipping λ and the reward
range are public choices, not read from the log.

**What is released**: the noisy sums of :mod:`~privbandits.evaluation.private_terms` (``released`` in the result);
the estimate and its interval are post-processing of them, so they cost nothing more.

* DP-IPS: ``V̂ = S̃/n``, ``S̃`` the noisy ``Σ w̄ r̄``.
* DP-DR: ``V̂ = S̃/n``, ``S̃`` the noisy ``Σ [q̄_t(π_e) + w̄ (r̄ − q̄(x_t, a_t))]``.
* DP-SNIPS: a ratio, so its numerator ``Σ w̄ r̄`` and denominator ``Σ w̄`` are privatised separately, each with half
  of the estimate's budget; ``V̂ = clip(Ã/B̃, r_lo, r_hi)`` (SNIPS is a weighted mean of rewards, so it lies in the
  reward range), the middle of the range when ``B̃ ≤ 0``.

With ``epsilon = inf`` nothing is clipped beyond λ and the reward range, no noise is added, and each estimator is
its non-private clipped counterpart exactly (``dp_ips`` is ``clipped_ips``).

**The interval** (``"parametric"``): a share ``interval_share`` of the budget releases the second moments; the
sampling error is taken as normal with the variance they give (SNIPS: the delta method's, from ``(w̄r̄)²``, ``w̄²r̄``
and ``w̄²``), the noise's law is known, and the interval is the percentile interval of ``draws`` simulated estimates
(post-processing: its generator is seeded by ``seed``, which secures nothing). It covers what the clipped estimator
estimates; with λ at least the largest weight, that is the policy's value. A simulated SNIPS whose denominator is
not positive counts as either end of the reward range (half each), so the interval widens to the range when the
denominator's noise is as large as itself.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from privbandits.evaluation.checks import check_log, check_pi_e, check_q_hat
from privbandits.evaluation.private_terms import (
    Clipping,
    Statistics,
    dr_statistics,
    ips_statistics,
    snips_statistics,
)
from privbandits.evaluation.result import Estimate
from privbandits.logs.feedback import LoggedFeedback
from privbandits.privacy.bounded_sums import BoundedSums
from privbandits.privacy.ledger import PrivacyLedger
from privbandits.validation import Instance, Integer, InvalidInputError, NoneOr, Real, describe, validate

__all__ = ["PRIVACY_UNIT", "PRIVATE_ESTIMATORS", "PrivateEstimate", "dp_dr", "dp_ips", "dp_snips",
           "point_estimates", "private_evaluate", "private_statistics"]  # fmt: skip

PRIVACY_UNIT = "one logged record (x, a, r, pscore), replaced by any other (n public)"
PRIVATE_ESTIMATORS: tuple[str, ...] = ("ips", "snips", "dr")
"""The estimators with a DP version, in the order :func:`private_evaluate` reports them."""
DEFAULT_WEIGHT_CLIP = 100.0
"""λ unless told: the threshold :func:`~privbandits.evaluation.evaluate` gives clipped IPS."""
DEFAULT_INTERVAL_SHARE = 0.2
"""The share of an estimate's budget spent on the second moments of its interval."""
INTERVAL_DRAWS = 20_000
"""Simulated estimates behind a parametric interval."""


@dataclass(frozen=True)
class PrivateEstimate(Estimate):
    """A DP estimate: an :class:`~privbandits.evaluation.result.Estimate` (``interval = "parametric"``; its
    ``effective_sample_size`` from the released sums for SNIPS, NaN for IPS and DR, which release no weight sum)
    and what it spent.

    Attributes
    ----------
    epsilon, delta : float
        The guarantee of this estimate's release (ε = inf: no noise; δ = 0: pure ε-DP, Laplace noise).
    noise : str
        ``"laplace"``, ``"gaussian"`` or ``"none"``.
    noise_std : float
        The standard deviation the noise adds to the estimate (SNIPS: by the delta method at the released sums).
    accounted_epsilon : float
        ε by the accountant at ``delta``: Laplace, the sum of the statistics' ε; Gaussian, dp-accounting's PLD.
    weight_clip : float
        λ.
    reward_range : tuple of float
        ``(r_lo, r_hi)``.
    released : dict
        The noisy sums, by statistic name: everything the estimate and interval are computed from.
    seeded : bool
        Whether the noise came from a seeded generator (a simulation: reproducible, not secret) rather than OS
        entropy.
    """

    epsilon: float
    delta: float
    noise: str
    noise_std: float
    accounted_epsilon: float
    weight_clip: float
    reward_range: tuple[float, float]
    released: Mapping[str, float]
    seeded: bool


@dataclass(frozen=True)
class _Options:
    epsilon: float
    delta: float
    clip: Clipping
    interval_share: float
    level: float
    seed: int


def _options(method: str, values: dict[str, Any]) -> _Options:
    checked = validate(
        method,
        {
            "epsilon": Real(low=0, low_open=True, finite=False, note="inf = no noise"),
            "delta": Real(low=0, high=1, high_open=True, note="0 = pure ε-DP, Laplace noise"),
            "weight_clip": Real(low=0, low_open=True), "interval_share": Real(low=0, high=1, low_open=True,
                                                                             high_open=True),
            "level": Real(low=0, high=1, low_open=True, high_open=True), "seed": Integer(low=0),
        },
        {key: values[key] for key in ("epsilon", "delta", "weight_clip", "interval_share", "level", "seed")},
    )  # fmt: skip
    low, high = _reward_range(method, values["reward_range"])
    clip = Clipping(float(checked["weight_clip"]), low, high)
    return _Options(float(checked["epsilon"]), float(checked["delta"]), clip, float(checked["interval_share"]),
                    float(checked["level"]), int(checked["seed"]))  # fmt: skip


def _reward_range(method: str, value: object) -> tuple[float, float]:
    message = f"{method}: reward_range must be two finite reals (low, high) with low < high, got {describe(value)}"
    try:
        low, high = (float(v) for v in value)  # type: ignore[attr-defined]
    except (TypeError, ValueError):
        raise InvalidInputError(message) from None
    if not (math.isfinite(low) and math.isfinite(high) and low < high):
        raise InvalidInputError(message)
    return low, high


def _generator(method: str, rng: object) -> np.random.Generator | None:
    """The noise's source: None (OS entropy), a seed, or a Generator."""
    if rng is None or isinstance(rng, np.random.Generator):
        return rng
    if isinstance(rng, int | np.integer) and not isinstance(rng, bool) and rng >= 0:
        return np.random.default_rng(int(rng))
    raise InvalidInputError(f"{method}: rng must be None (OS entropy), a seed >= 0 or a numpy Generator, got "
                            f"{describe(rng)}")  # fmt: skip


def private_statistics(
    method: str, feedback: LoggedFeedback, pi: np.ndarray, clip: Clipping, interval_share: float,
    q_hat: np.ndarray | None = None,
) -> Statistics:  # fmt: skip
    """The clipped per-record statistics of ``method`` (``"ips"``, ``"snips"`` or ``"dr"``, which needs ``q_hat``):
    what :class:`~privbandits.privacy.bounded_sums.BoundedSums` releases (the audit runs the same function)."""
    if method == "ips":
        return ips_statistics(feedback, pi, clip, interval_share)
    if method == "snips":
        return snips_statistics(feedback, pi, clip, interval_share)
    if q_hat is None:
        raise InvalidInputError("dr: q_hat must be given")
    return dr_statistics(feedback, pi, q_hat, clip, interval_share)


def _release(
    method: str, log: LoggedFeedback, statistics: Statistics, options: _Options, rng: object,
    ledger: PrivacyLedger | None,
) -> tuple[BoundedSums, dict[str, float], bool]:  # fmt: skip
    """The noisy sums, recorded in ``ledger``."""
    source = _generator(f"dp_{method}", rng)
    if ledger is not None and not isinstance(ledger, PrivacyLedger):
        raise InvalidInputError(f"dp_{method}: ledger must be a PrivacyLedger or None, got {describe(ledger)}")
    sums = BoundedSums(statistics.bounds, options.epsilon, options.delta, log.n_rounds)
    released = dict(zip(sums.names, (float(v) for v in sums.release(statistics.values, source)), strict=True))
    if ledger is not None:
        details = {"estimator": method, "weight_clip": options.clip.weight,
                   "reward_range": [options.clip.low, options.clip.high], "interval_share": options.interval_share,
                   "seeded": source is not None}  # fmt: skip
        ledger.record(sums.ledger_entry(f"evaluation.dp_{method}", PRIVACY_UNIT, details))
    return sums, released, source is not None


def _noise(sums: BoundedSums, name: str, rng: np.random.Generator, size: int) -> np.ndarray:
    """Draws of the noise of statistic ``name``, continuous twins of the discrete laws (for the interval only)."""
    noise = sums.noise[sums.names.index(name)]
    if sums.mechanism == "laplace":
        return rng.laplace(0.0, noise.scale, size)
    return rng.normal(0.0, noise.std, size) if noise.std > 0 else np.zeros(size)


def _percentiles(draws: np.ndarray, level: float) -> tuple[float, float]:
    tail = (1.0 - level) / 2.0
    low, high = np.quantile(draws, [tail, 1.0 - tail])
    return float(low), float(high)


def point_estimates(method: str, released: Mapping[str, np.ndarray], clip: Clipping, n: int) -> np.ndarray:
    """The estimates of releases (each statistic an array of runs): ``S̃/n`` for IPS and DR, SNIPS's
    ``clip(Ã/B̃, r_lo, r_hi)`` (the middle of the range where ``B̃ ≤ 0``). Post-processing only."""
    if method != "snips":
        return np.asarray(released["sum"], dtype=np.float64) / n
    top, bottom = (np.asarray(released[name], dtype=np.float64) for name in ("numerator", "denominator"))
    ratio = np.clip(np.divide(top, bottom, out=np.zeros_like(top), where=bottom > 0), clip.low, clip.high)
    return np.where(bottom > 0, ratio, (clip.low + clip.high) / 2)


def _mean_estimate(sums: BoundedSums, released: dict[str, float], options: _Options, n: int):
    """IPS and DR: ``S̃/n``, its interval and the noise's std."""
    mean = float(point_estimates("ips", released, options.clip, n))  # type: ignore[arg-type]
    variance = max(released["sum_of_squares"] / n - mean * mean, 0.0) * (n / (n - 1) if n > 1 else 0.0)
    rng = np.random.default_rng(options.seed)
    draws = (mean + rng.normal(0.0, math.sqrt(variance / n), INTERVAL_DRAWS)
             + _noise(sums, "sum", rng, INTERVAL_DRAWS) / n)  # fmt: skip
    return mean, _percentiles(draws, options.level), sums.noise[0].std / n, math.nan


def _ratio(top: np.ndarray, bottom: np.ndarray, clip: Clipping) -> np.ndarray:
    """``clip(top/bottom, r_lo, r_hi)``; a non-positive ``bottom`` gives either end of the range, alternately."""
    positive = bottom > 0
    ratio = np.clip(np.divide(top, bottom, out=np.zeros_like(top), where=positive), clip.low, clip.high)
    ends = np.where(np.arange(top.size) % 2 == 0, clip.low, clip.high)
    return np.where(positive, ratio, ends)


def _snips_estimate(sums: BoundedSums, released: dict[str, float], options: _Options, n: int):
    """SNIPS: ``clip(Ã/B̃)``, its delta-method parametric interval, the noise's std and the ESS ``B̃²/Σ̃w̄²``."""
    clip = options.clip
    a, b = released["numerator"] / n, released["denominator"] / n
    value = float(point_estimates("snips", released, clip, n))  # type: ignore[arg-type]
    var_a = max(released["numerator_squares"] / n - a * a, 0.0)
    var_b = max(released["denominator_squares"] / n - b * b, 0.0)
    limit = math.sqrt(var_a * var_b)
    cov = min(max(released["cross"] / n - a * b, -limit), limit)
    rng = np.random.default_rng(options.seed)
    sampling = rng.multivariate_normal([0.0, 0.0], np.array([[var_a, cov], [cov, var_b]]) / n, INTERVAL_DRAWS)
    top = a + sampling[:, 0] + _noise(sums, "numerator", rng, INTERVAL_DRAWS) / n
    bottom = b + sampling[:, 1] + _noise(sums, "denominator", rng, INTERVAL_DRAWS) / n
    interval = _percentiles(_ratio(top, bottom, clip), options.level)
    std_a, std_b = sums.noise[0].std / n, sums.noise[1].std / n
    noise_std = math.sqrt(std_a**2 + (value * std_b) ** 2) / b if b > 0 else math.inf
    squares = released["denominator_squares"]
    ess = min(max(released["denominator"] ** 2 / squares, 0.0), float(n)) if squares > 0 else math.nan
    return value, interval, noise_std, ess


_ESTIMATES: dict[str, Callable[..., tuple[float, tuple[float, float], float, float]]] = {
    "ips": _mean_estimate, "dr": _mean_estimate, "snips": _snips_estimate,
}  # fmt: skip


def _private(
    method: str, feedback: object, pi_e: object, q_hat: object | None, values: dict[str, Any]
) -> PrivateEstimate:
    name = f"dp_{method}"
    log = check_log(feedback, name)
    pi = check_pi_e(pi_e, log, name)
    options = _options(name, values)
    model = None
    if method == "dr":
        if q_hat is None:
            raise InvalidInputError(
                "dp_dr: q_hat must be given: a reward model fitted without the evaluated records (held-out rounds or "
                "public data; ridge_reward_model(log, fit_on=other_log)), since one fitted on them would leak them"
            )
        model = check_q_hat(q_hat, log, name)
    if method == "snips" and not (pi[np.arange(log.n_rounds), log.action] > 0).any():
        raise InvalidInputError(f"{name}: pi_e must give some logged action a probability > 0, got 0 at every round")
    statistics = private_statistics(method, log, pi, options.clip, options.interval_share, model)
    sums, released, seeded = _release(method, log, statistics, options, values["rng"], values["ledger"])
    value, (low, high), noise_std, ess = _ESTIMATES[method](sums, released, options, log.n_rounds)
    return PrivateEstimate(
        name, value, low, high, options.level, "parametric", log.n_rounds, ess, options.epsilon, options.delta,
        sums.mechanism, noise_std, sums.accounted_epsilon, options.clip.weight, (options.clip.low, options.clip.high),
        released, seeded,
    )  # fmt: skip


def dp_ips(
    feedback: LoggedFeedback, pi_e: np.ndarray, *, epsilon: float, delta: float = 0.0,
    weight_clip: float = DEFAULT_WEIGHT_CLIP, reward_range: tuple[float, float] = (0.0, 1.0),
    interval_share: float = DEFAULT_INTERVAL_SHARE, level: float = 0.95, seed: int = 0,
    rng: np.random.Generator | int | None = None, ledger: PrivacyLedger | None = None,
) -> PrivateEstimate:  # fmt: skip
    """DP inverse propensity scoring: ``(Σ_t min(w_t, λ) r̄_t + noise)/n`` (see the module docstring), (ε, δ)-DP
    per logged record; recorded in ``ledger``. ``rng``: the noise's source (None: OS entropy; a seed or a
    Generator: a simulation); ``seed``: the interval's simulation only."""
    return _private("ips", feedback, pi_e, None, locals())


def dp_snips(
    feedback: LoggedFeedback, pi_e: np.ndarray, *, epsilon: float, delta: float = 0.0,
    weight_clip: float = DEFAULT_WEIGHT_CLIP, reward_range: tuple[float, float] = (0.0, 1.0),
    interval_share: float = DEFAULT_INTERVAL_SHARE, level: float = 0.95, seed: int = 0,
    rng: np.random.Generator | int | None = None, ledger: PrivacyLedger | None = None,
) -> PrivateEstimate:  # fmt: skip
    """DP self-normalised IPS: numerator ``Σ w̄ r̄`` and denominator ``Σ w̄`` released separately, each with half of
    the estimate's budget, then ``clip(Ã/B̃, r_lo, r_hi)``; arguments as :func:`dp_ips`."""
    return _private("snips", feedback, pi_e, None, locals())


def dp_dr(
    feedback: LoggedFeedback, pi_e: np.ndarray, q_hat: np.ndarray, *, epsilon: float, delta: float = 0.0,
    weight_clip: float = DEFAULT_WEIGHT_CLIP, reward_range: tuple[float, float] = (0.0, 1.0),
    interval_share: float = DEFAULT_INTERVAL_SHARE, level: float = 0.95, seed: int = 0,
    rng: np.random.Generator | int | None = None, ledger: PrivacyLedger | None = None,
) -> PrivateEstimate:  # fmt: skip
    """DP doubly robust: ``(Σ_t [q̄_t(π_e) + w̄_t (r̄_t − q̄(x_t, a_t))] + noise)/n``; ``q_hat`` must not be fitted on
    these records (see the module docstring); the other arguments as :func:`dp_ips`."""
    return _private("dr", feedback, pi_e, q_hat, locals())


def private_evaluate(
    feedback: LoggedFeedback, pi_e: np.ndarray, methods: Sequence[str] = PRIVATE_ESTIMATORS, *, epsilon: float,
    delta: float = 0.0, q_hat: np.ndarray | None = None, weight_clip: float = DEFAULT_WEIGHT_CLIP,
    reward_range: tuple[float, float] = (0.0, 1.0), interval_share: float = DEFAULT_INTERVAL_SHARE,
    level: float = 0.95, seed: int = 0, rng: np.random.Generator | int | None = None,
    ledger: PrivacyLedger | None = None,
) -> list[PrivateEstimate]:  # fmt: skip
    """Every DP estimator in ``methods`` on one log within one budget: each gets ``(ε/k, δ/k)`` of the k, so the
    ledger's basic composition of the k releases is (ε, δ). ``rng`` seeds (or is) one generator for all."""
    names = tuple(methods)
    if not names or any(name not in PRIVATE_ESTIMATORS for name in names) or len(set(names)) < len(names):
        raise InvalidInputError(f"private_evaluate: methods must be distinct names among "
                                f"{', '.join(PRIVATE_ESTIMATORS)}, got {list(names)}")  # fmt: skip
    validate(
        "private_evaluate",
        {
            "epsilon": Real(low=0, low_open=True, finite=False),
            "delta": Real(low=0, high=1, high_open=True),
            "ledger": NoneOr(Instance((PrivacyLedger,))),
        },
        {"epsilon": epsilon, "delta": delta, "ledger": ledger},
    )
    source = _generator("private_evaluate", rng)
    share = {"epsilon": epsilon / len(names), "delta": delta / len(names), "weight_clip": weight_clip,
             "reward_range": reward_range, "interval_share": interval_share, "level": level, "seed": seed,
             "rng": source, "ledger": ledger}  # fmt: skip
    return [_private(name, feedback, pi_e, q_hat if name == "dr" else None, share) for name in names]
