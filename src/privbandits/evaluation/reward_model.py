"""The reward model ``q̂(x, a)`` of the direct method and the doubly robust estimators.

:func:`ridge_reward_model` fits one ridge regression per action on the log's contexts (with an intercept):
``θ̂_a = (X̃_aᵀ X̃_a + λ I)⁻¹ X̃_aᵀ r_a`` over the rounds where ``a`` was logged, ``X̃ = [x, 1]``, and predicts
``q̂(x_t, a) = [x_t, 1]ᵀ θ̂_a`` for every round and action (an action never logged predicts 0). Fitted and
evaluated on the same log (no cross-fitting), as the direct method of Dudík, Langford & Li (2011, §2) is
usually run; pass your own ``q_hat`` to the estimators to use another model.
"""

from __future__ import annotations

import numpy as np

from privbandits.evaluation.checks import check_log
from privbandits.logs.feedback import LoggedFeedback
from privbandits.validation import Real, validate


def ridge_reward_model(feedback: LoggedFeedback, reg: float = 1.0) -> np.ndarray:
    """``q̂`` of shape ``(n_rounds, n_actions)``: one ridge regression per action, regulariser ``reg`` > 0."""
    feedback = check_log(feedback, "ridge_reward_model")
    reg = float(validate("ridge_reward_model", {"reg": Real(low=0, low_open=True)}, {"reg": reg})["reg"])
    features = np.hstack([feedback.context, np.ones((feedback.n_rounds, 1))])
    gram = reg * np.eye(features.shape[1])
    q_hat = np.zeros((feedback.n_rounds, feedback.n_actions))
    for a in range(feedback.n_actions):
        rows = feedback.action == a
        if rows.any():
            x = features[rows]
            theta = np.linalg.solve(x.T @ x + gram, x.T @ feedback.reward[rows])
            q_hat[:, a] = features @ theta
    return q_hat
