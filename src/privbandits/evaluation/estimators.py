"""Off-policy estimators of a target policy's value from a log (issue 49 item 2).

Notation: a log of ``n`` rounds ``(x_t, a_t, r_t, p_t)`` with ``p_t = π_b(a_t | x_t)`` the logging policy's
propensity (``pscore``); the target policy ``π_e`` given as ``pi_e[t, a] = π_e(a | x_t)``; the importance weight
``w_t = π_e(a_t | x_t) / p_t``; a reward model ``q̂(x_t, a)`` (``q_hat[t, a]``) and its value under the target,
``q̂_t(π_e) = Σ_a π_e(a | x_t) q̂(x_t, a)``. The estimand is ``V(π_e) = E_x[Σ_a π_e(a | x) E[r | x, a]]``.

============  =========================================================================  ===========================
estimator     formula                                                                    reference
============  =========================================================================  ===========================
IPS           ``(1/n) Σ_t w_t r_t``                                                      Horvitz & Thompson (1952);
                                                                                         Precup et al. (2000)
SNIPS         ``Σ_t w_t r_t / Σ_t w_t``                                                  Swaminathan & Joachims
                                                                                         (2015)
clipped IPS   ``(1/n) Σ_t min(w_t, λ) r_t``                                              Bottou et al. (2013)
DM            ``(1/n) Σ_t q̂_t(π_e)``                                                     Dudík et al. (2011, §2)
DR            ``(1/n) Σ_t [q̂_t(π_e) + w_t (r_t − q̂(x_t, a_t))]``                         Dudík et al. (2011, Eq. 2)
switch-DR     ``(1/n) Σ_t [q̂_t(π_e) + 1{w_t ≤ τ} w_t (r_t − q̂(x_t, a_t))]``              Wang et al. (2017, §4.3)
============  =========================================================================  ===========================

Switch-DR here switches on the logged action's weight only, as Open Bandit Pipeline (Saito et al. 2021)
defines it: DR on the rounds whose weight is at most τ, the direct method on the others (τ → ∞ is DR). Wang,
Agarwal & Dudík's original switch compares ``π_e(a|x)/π_b(a|x)`` for every action, which needs the logging
policy's full distribution, not only ``pscore``.

Every estimator takes the log, ``pi_e`` and its options, and keywords for the interval (``interval``
``"bootstrap"`` or ``"normal"``, ``level``, ``n_bootstrap``, ``seed``: see :mod:`.intervals`); it returns an
:class:`~privbandits.evaluation.result.Estimate`. Those that need ``q_hat`` fit
:func:`~privbandits.evaluation.reward_model.ridge_reward_model` when none is given.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from privbandits.evaluation import intervals
from privbandits.evaluation.checks import (
    check_interval_options,
    check_log,
    check_pi_e,
    check_q_hat,
    check_threshold,
)
from privbandits.evaluation.result import Estimate
from privbandits.evaluation.reward_model import ridge_reward_model
from privbandits.logs.feedback import LoggedFeedback
from privbandits.validation import InvalidInputError


@dataclass(frozen=True)
class _Terms:
    """``V̂ = Σ numerator / Σ denominator`` (``denominator`` None: ``n``), and the weights its ESS counts."""

    numerator: np.ndarray
    denominator: np.ndarray | None
    weights: np.ndarray | None


@dataclass(frozen=True)
class _Interval:
    interval: str = "bootstrap"
    level: float = 0.95
    n_bootstrap: int = 1000
    seed: int = 0


def _weights(feedback: LoggedFeedback, pi: np.ndarray) -> np.ndarray:
    """``w_t = π_e(a_t | x_t) / p_t``."""
    return pi[np.arange(feedback.n_rounds), feedback.action] / feedback.pscore


def _model_terms(feedback: LoggedFeedback, pi: np.ndarray, q_hat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``q̂_t(π_e)`` and the residual ``r_t − q̂(x_t, a_t)`` per round."""
    residual = feedback.reward - q_hat[np.arange(feedback.n_rounds), feedback.action]
    return (pi * q_hat).sum(axis=1), residual


def _summarise(method: str, feedback: LoggedFeedback, terms: _Terms, options: _Interval) -> Estimate:
    check_interval_options(method, options.interval, options.level, options.n_bootstrap, options.seed)
    ones = np.ones(feedback.n_rounds)
    denominator = ones if terms.denominator is None else terms.denominator
    value = intervals.ratio(terms.numerator, denominator)
    if options.interval == "normal":
        if terms.denominator is not None:
            raise InvalidInputError(f"{method}: interval must be 'bootstrap' for a ratio estimator, got 'normal'")
        low, high = intervals.normal(terms.numerator, options.level, method)
    else:
        low, high = intervals.bootstrap(terms.numerator, denominator, options.level, options.n_bootstrap, options.seed)
    ess = float(feedback.n_rounds) if terms.weights is None else intervals.effective_sample_size(terms.weights)
    return Estimate(method, value, low, high, float(options.level), options.interval, feedback.n_rounds, ess)


def _inputs(method: str, feedback: object, pi_e: object) -> tuple[LoggedFeedback, np.ndarray]:
    log = check_log(feedback, method)
    return log, check_pi_e(pi_e, log, method)


def _model(method: str, feedback: LoggedFeedback, q_hat: object | None) -> np.ndarray:
    return ridge_reward_model(feedback) if q_hat is None else check_q_hat(q_hat, feedback, method)


def ips(
    feedback: LoggedFeedback, pi_e: np.ndarray, *, interval: str = "bootstrap", level: float = 0.95,
    n_bootstrap: int = 1000, seed: int = 0,
) -> Estimate:  # fmt: skip
    """Inverse propensity scoring: ``V̂ = (1/n) Σ_t w_t r_t`` (Horvitz & Thompson 1952)."""
    log, pi = _inputs("ips", feedback, pi_e)
    w = _weights(log, pi)
    return _summarise("ips", log, _Terms(w * log.reward, None, w), _Interval(interval, level, n_bootstrap, seed))


def snips(
    feedback: LoggedFeedback, pi_e: np.ndarray, *, interval: str = "bootstrap", level: float = 0.95,
    n_bootstrap: int = 1000, seed: int = 0,
) -> Estimate:  # fmt: skip
    """Self-normalised IPS: ``V̂ = Σ_t w_t r_t / Σ_t w_t`` (Swaminathan & Joachims 2015); refused when every
    ``w_t`` is 0 (the target never takes a logged action)."""
    log, pi = _inputs("snips", feedback, pi_e)
    w = _weights(log, pi)
    if not w.any():
        raise InvalidInputError("snips: pi_e must give some logged action a probability > 0, got 0 at every round")
    return _summarise("snips", log, _Terms(w * log.reward, w, w), _Interval(interval, level, n_bootstrap, seed))


def clipped_ips(
    feedback: LoggedFeedback, pi_e: np.ndarray, threshold: float, *, interval: str = "bootstrap",
    level: float = 0.95, n_bootstrap: int = 1000, seed: int = 0,
) -> Estimate:  # fmt: skip
    """Clipped IPS: ``V̂ = (1/n) Σ_t min(w_t, λ) r_t`` with ``λ = threshold`` > 0 (Bottou et al. 2013)."""
    log, pi = _inputs("clipped_ips", feedback, pi_e)
    cap = check_threshold(threshold, "clipped_ips")
    w = np.minimum(_weights(log, pi), cap)
    options = _Interval(interval, level, n_bootstrap, seed)
    return _summarise("clipped_ips", log, _Terms(w * log.reward, None, w), options)


def dm(
    feedback: LoggedFeedback, pi_e: np.ndarray, q_hat: np.ndarray | None = None, *, interval: str = "bootstrap",
    level: float = 0.95, n_bootstrap: int = 1000, seed: int = 0,
) -> Estimate:  # fmt: skip
    """The direct method: ``V̂ = (1/n) Σ_t Σ_a π_e(a | x_t) q̂(x_t, a)`` (Dudík et al. 2011)."""
    log, pi = _inputs("dm", feedback, pi_e)
    direct, _ = _model_terms(log, pi, _model("dm", log, q_hat))
    return _summarise("dm", log, _Terms(direct, None, None), _Interval(interval, level, n_bootstrap, seed))


def dr(
    feedback: LoggedFeedback, pi_e: np.ndarray, q_hat: np.ndarray | None = None, *, interval: str = "bootstrap",
    level: float = 0.95, n_bootstrap: int = 1000, seed: int = 0,
) -> Estimate:  # fmt: skip
    """Doubly robust: ``V̂ = (1/n) Σ_t [q̂_t(π_e) + w_t (r_t − q̂(x_t, a_t))]`` (Dudík, Langford & Li 2011)."""
    log, pi = _inputs("dr", feedback, pi_e)
    direct, residual = _model_terms(log, pi, _model("dr", log, q_hat))
    w = _weights(log, pi)
    terms = _Terms(direct + w * residual, None, w)
    return _summarise("dr", log, terms, _Interval(interval, level, n_bootstrap, seed))


def switch_dr(
    feedback: LoggedFeedback, pi_e: np.ndarray, threshold: float, q_hat: np.ndarray | None = None, *,
    interval: str = "bootstrap", level: float = 0.95, n_bootstrap: int = 1000, seed: int = 0,
) -> Estimate:  # fmt: skip
    """Switch-DR: ``V̂ = (1/n) Σ_t [q̂_t(π_e) + 1{w_t ≤ τ} w_t (r_t − q̂(x_t, a_t))]``, ``τ = threshold`` > 0
    (Wang, Agarwal & Dudík 2017, in Open Bandit Pipeline's form: see the module docstring)."""
    log, pi = _inputs("switch_dr", feedback, pi_e)
    tau = check_threshold(threshold, "switch_dr")
    direct, residual = _model_terms(log, pi, _model("switch_dr", log, q_hat))
    w = _weights(log, pi)
    kept = np.where(w <= tau, w, 0.0)
    terms = _Terms(direct + kept * residual, None, kept)
    return _summarise("switch_dr", log, terms, _Interval(interval, level, n_bootstrap, seed))


ESTIMATORS: tuple[str, ...] = ("ips", "snips", "clipped_ips", "dm", "dr", "switch_dr")
"""The estimators' names, in the order :func:`evaluate` reports them."""

DEFAULT_THRESHOLD = 100.0
"""λ of clipped IPS and τ of switch-DR when :func:`evaluate` is given none."""


def evaluate(
    feedback: LoggedFeedback, pi_e: np.ndarray, methods: Sequence[str] = ESTIMATORS, *,
    q_hat: np.ndarray | None = None, threshold: float = DEFAULT_THRESHOLD, interval: str = "bootstrap",
    level: float = 0.95, n_bootstrap: int = 1000, seed: int = 0,
) -> list[Estimate]:  # fmt: skip
    """Every estimator named in ``methods`` on one log, the reward model fitted once (when ``q_hat`` is None) and
    ``threshold`` the λ/τ of clipped IPS and switch-DR; ``"normal"`` intervals fall back to the bootstrap for
    SNIPS."""
    log, pi = _inputs("evaluate", feedback, pi_e)
    names = tuple(methods)
    for name in names:
        if name not in ESTIMATORS:
            raise InvalidInputError(f"evaluate: methods must be among {', '.join(ESTIMATORS)}, got {name!r}")
    needs_model = {"dm", "dr", "switch_dr"} & set(names)
    model = _model("evaluate", log, q_hat) if needs_model else None
    options = _Interval(interval, level, n_bootstrap, seed)
    return [_run(name, log, pi, model, threshold, options) for name in names]


def _run(
    name: str, log: LoggedFeedback, pi: np.ndarray, model: np.ndarray | None, threshold: float, options: _Interval
) -> Estimate:
    """One estimator of :func:`evaluate` (SNIPS always with the bootstrap)."""
    kind = "bootstrap" if name == "snips" else options.interval
    kw = {"interval": kind, "level": options.level, "n_bootstrap": options.n_bootstrap, "seed": options.seed}
    if name == "ips":
        return ips(log, pi, **kw)  # type: ignore[arg-type]
    if name == "snips":
        return snips(log, pi, **kw)  # type: ignore[arg-type]
    if name == "clipped_ips":
        return clipped_ips(log, pi, threshold, **kw)  # type: ignore[arg-type]
    if name == "dm":
        return dm(log, pi, model, **kw)  # type: ignore[arg-type]
    if name == "dr":
        return dr(log, pi, model, **kw)  # type: ignore[arg-type]
    return switch_dr(log, pi, threshold, model, **kw)  # type: ignore[arg-type]
