"""Checks of an estimator's inputs, each refusal one line naming the field, the allowed values and the value
given (as :mod:`privbandits.validation`)."""

from __future__ import annotations

import numpy as np

from privbandits.logs.feedback import PI_B_TOLERANCE, LoggedFeedback, _floats
from privbandits.validation import Choice, Integer, InvalidInputError, Real, validate

INTERVALS = ("bootstrap", "normal")


def check_log(feedback: object, method: str) -> LoggedFeedback:
    """``feedback`` if it is a :class:`LoggedFeedback`."""
    if not isinstance(feedback, LoggedFeedback):
        raise InvalidInputError(f"{method}: feedback must be a LoggedFeedback, got {type(feedback).__name__}")
    return feedback


def check_pi_e(pi_e: object, feedback: LoggedFeedback, method: str) -> np.ndarray:
    """``pi_e`` as float64 of shape ``(n_rounds, n_actions)``, entries >= 0, rows summing to 1."""
    n, k = feedback.n_rounds, feedback.n_actions
    try:
        pi = _floats(pi_e, "pi_e", (n, k), f"(n_rounds, n_actions) = ({n}, {k})")
    except InvalidInputError as error:
        raise InvalidInputError(f"{method}: {error}") from None
    if (pi < 0).any():
        t, a = np.argwhere(pi < 0)[0]
        raise InvalidInputError(f"{method}: pi_e must be probabilities >= 0, got {pi[t, a]} at [{t}, {a}]")
    sums = pi.sum(axis=1)
    bad = np.flatnonzero(np.abs(sums - 1.0) > PI_B_TOLERANCE)
    if bad.size:
        t = int(bad[0])
        raise InvalidInputError(
            f"{method}: pi_e rows must sum to 1 (within {PI_B_TOLERANCE:g}), got {float(sums[t])} at round {t}"
        )
    return pi


def check_q_hat(q_hat: object, feedback: LoggedFeedback, method: str) -> np.ndarray:
    """``q_hat`` (the estimated reward of every action at every round) as float64 of shape (n_rounds, n_actions)."""
    n, k = feedback.n_rounds, feedback.n_actions
    try:
        return _floats(q_hat, "q_hat", (n, k), f"(n_rounds, n_actions) = ({n}, {k})")
    except InvalidInputError as error:
        raise InvalidInputError(f"{method}: {error}") from None


def check_threshold(threshold: object, method: str) -> float:
    """A weight threshold (λ of clipped IPS, τ of switch-DR): a finite real > 0."""
    return float(validate(method, {"threshold": Real(low=0, low_open=True)}, {"threshold": threshold})["threshold"])


def check_interval_options(method: str, interval: object, level: object, n_bootstrap: object, seed: object) -> None:
    """The interval's kind, level, resamples and seed."""
    validate(
        method,
        {
            "interval": Choice(INTERVALS), "level": Real(low=0, high=1, low_open=True, high_open=True),
            "n_bootstrap": Integer(low=10), "seed": Integer(low=0),
        },
        {"interval": interval, "level": level, "n_bootstrap": n_bootstrap, "seed": seed},
    )  # fmt: skip
