"""Off-policy evaluation of logged bandit feedback (issue 49 item 2): the value of a target policy estimated
from a log another policy collected, with confidence intervals.

Estimators (:mod:`.estimators`): IPS, SNIPS, clipped IPS, the direct method, doubly robust and switch-DR, each
returning an :class:`~privbandits.evaluation.result.Estimate`; the reward model they use (:mod:`.reward_model`);
the intervals (:mod:`.intervals`); and any fixed privbandits policy as the target (:mod:`.policies`).

DP versions of IPS, SNIPS and DR (:mod:`.private`): clipped per-record terms (:mod:`.private_terms`) released with
calibrated noise, accounted and recorded in the privacy ledger, each returning a
:class:`~privbandits.evaluation.private.PrivateEstimate`.

The exports load lazily (PEP 562), so the command line starts without numpy.
"""

from __future__ import annotations

from privbandits._lazy import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(
    globals(),
    {
        "ESTIMATORS": ".estimators",
        "Estimate": ".result",
        "PRIVATE_ESTIMATORS": ".private",
        "PrivateEstimate": ".private",
        "clipped_ips": ".estimators",
        "dm": ".estimators",
        "dp_dr": ".private",
        "dp_ips": ".private",
        "dp_snips": ".private",
        "dr": ".estimators",
        "evaluate": ".estimators",
        "ips": ".estimators",
        "policy_probabilities": ".policies",
        "private_evaluate": ".private",
        "ridge_reward_model": ".reward_model",
        "snips": ".estimators",
        "switch_dr": ".estimators",
        "train_on_log": ".policies",
    },
)
