"""Bad input to the estimators and the policy helper is refused in one line naming the field."""

from __future__ import annotations

import re

import numpy as np
import pytest

from privbandits.evaluation import clipped_ips, dr, evaluate, ips, policy_probabilities, snips, switch_dr
from privbandits.linear.policies import LinUCB
from privbandits.logs import LoggedFeedback
from privbandits.validation import InvalidInputError

LOG = LoggedFeedback(
    n_rounds=3, n_actions=2, context=np.zeros((3, 1)), action=[0, 1, 0], reward=[1.0, 0.0, 1.0], pscore=[0.5] * 3
)
UNIFORM = np.full((3, 2), 0.5)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: ips(LOG, np.full((2, 2), 0.5)),
         "ips: pi_e must have shape (n_rounds, n_actions) = (3, 2), got (2, 2)"),
        (lambda: ips(LOG, [[0.5, 0.5], [1.2, -0.2], [0, 1]]),
         "ips: pi_e must be probabilities >= 0, got -0.2 at [1, 1]"),
        (lambda: ips(LOG, [[0.5, 0.5], [0.5, 0.4], [0, 1]]),
         "ips: pi_e rows must sum to 1 (within 1e-06), got 0.9 at round 1"),
        (lambda: ips(LOG, [[0.5, 0.5], [np.nan, 0.5], [0, 1]]),
         "ips: pi_e must be finite (no NaN or inf), got nan at [1, 0]"),
        (lambda: ips({"n_rounds": 3}, UNIFORM), "ips: feedback must be a LoggedFeedback, got dict"),
        (lambda: clipped_ips(LOG, UNIFORM, 0), "clipped_ips: threshold must be > 0, got 0"),
        (lambda: switch_dr(LOG, UNIFORM, -1.0), "switch_dr: threshold must be > 0, got -1.0"),
        (lambda: dr(LOG, UNIFORM, np.zeros((3, 3))),
         "dr: q_hat must have shape (n_rounds, n_actions) = (3, 2), got (3, 3)"),
        (lambda: ips(LOG, UNIFORM, interval="wald"), "ips: interval must be one of 'bootstrap', 'normal', got 'wald'"),
        (lambda: ips(LOG, UNIFORM, level=1.0), "ips: level must be in (0, 1), got 1.0"),
        (lambda: ips(LOG, UNIFORM, n_bootstrap=5), "ips: n_bootstrap must be >= 10, got 5"),
        (lambda: snips(LOG, UNIFORM, interval="normal"),
         "snips: interval must be 'bootstrap' for a ratio estimator, got 'normal'"),
        (lambda: snips(LOG, [[0, 1], [1, 0], [0, 1]]),
         "snips: pi_e must give some logged action a probability > 0, got 0 at every round"),
        (lambda: evaluate(LOG, UNIFORM, ["ips", "magic"]),
         "evaluate: methods must be among ips, snips, clipped_ips, dm, dr, switch_dr, got 'magic'"),
        (lambda: policy_probabilities(LinUCB(2, 1), LOG),
         "policy_probabilities: learner.layout must be 'disjoint' (a log has one context per round), got 'shared'"),
        (lambda: policy_probabilities(LinUCB(3, 1, layout="disjoint"), LOG),
         "policy_probabilities: learner.n_arms must equal the log's n_actions (2), got 3"),
        (lambda: policy_probabilities(LinUCB(2, 2, layout="disjoint"), LOG),
         "policy_probabilities: learner.dim must equal the log's context width (1), got 2"),
        (lambda: policy_probabilities("linucb", LOG),
         "policy_probabilities: learner must be one of LinUCB, LinTS, EpsilonGreedy, UniformRandom, PerArmPolicy, "
         "got str"),
    ],
)  # fmt: skip
def test_refused_in_one_line(call, message):
    with pytest.raises(InvalidInputError, match=f"^{re.escape(message)}$"):
        call()
