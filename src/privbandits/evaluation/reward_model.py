"""The reward model ``q̂(x, a)`` of the direct method and the doubly robust estimators.

:func:`ridge_reward_model` fits one ridge regression per action on the log's contexts (with an intercept):
``θ̂_a = (X̃_aᵀ X̃_a + λ I)⁻¹ X̃_aᵀ r_a`` over the rounds where ``a`` was logged, ``X̃ = [x, 1]``, and predicts
``q̂(x_t, a) = [x_t, 1]ᵀ θ̂_a`` for every round and action (an action never logged predicts 0). By default fitted and
evaluated on the same log (no cross-fitting), as the direct method of Dudík, Langford & Li (2011, §2) is
usually run; ``fit_on`` fits it on another log (other rounds), as the DP estimators need: a model fitted on the
records it is evaluated on would carry them past the noise. Pass your own ``q_hat`` to use another model.
"""

from __future__ import annotations

import numpy as np

from privbandits.evaluation.checks import check_log
from privbandits.logs.feedback import LoggedFeedback
from privbandits.validation import InvalidInputError, Real, validate


def ridge_reward_model(
    feedback: LoggedFeedback, reg: float = 1.0, *, fit_on: LoggedFeedback | None = None
) -> np.ndarray:
    """``q̂`` of shape ``(n_rounds, n_actions)`` on ``feedback``'s contexts: one ridge regression per action,
    regulariser ``reg`` > 0, fitted on ``fit_on`` (None: on ``feedback`` itself)."""
    feedback = check_log(feedback, "ridge_reward_model")
    train = feedback if fit_on is None else check_log(fit_on, "ridge_reward_model")
    if (train.n_actions, train.dim) != (feedback.n_actions, feedback.dim):
        raise InvalidInputError(
            f"ridge_reward_model: fit_on must have the log's n_actions and context width "
            f"({feedback.n_actions}, {feedback.dim}), got ({train.n_actions}, {train.dim})"
        )
    reg = float(validate("ridge_reward_model", {"reg": Real(low=0, low_open=True)}, {"reg": reg})["reg"])
    fit_features = np.hstack([train.context, np.ones((train.n_rounds, 1))])
    features = np.hstack([feedback.context, np.ones((feedback.n_rounds, 1))])
    gram = reg * np.eye(features.shape[1])
    q_hat = np.zeros((feedback.n_rounds, feedback.n_actions))
    for a in range(feedback.n_actions):
        rows = train.action == a
        if rows.any():
            x = fit_features[rows]
            theta = np.linalg.solve(x.T @ x + gram, x.T @ train.reward[rows])
            q_hat[:, a] = features @ theta
    return q_hat
