"""The ε a user pays at each point of the map, in the point's own notion, beside the ε the map places it at.

The map places a point at its stated ε (:mod:`~privbandits.papers.privacy_map.systems`); what one user pays can
differ: a DP baseline's stated ε is a calibration target, and the one accountant (PLD,
:mod:`~privbandits.privacy.accountant`) gives the ε its noise actually has; FCLUB's ε is per privatizer, while a
user's data enters the nodes of several (its ``per_user_epsilon``, composed over all of them, read from the run).
The unit of each figure is named with it: on the map's problems a user is one round (the DP baselines and the MPC
learner, whose rounds are fresh users), one shared context (P2B), or one datum of a recurring user (FCLUB, whose
users return; its per-user figure composes every privatizer that user's data entered). No map number changes: this
is a column of its own.
"""

from __future__ import annotations

import math
from typing import Any

from privbandits.papers.privacy_map.environments import MapEnvironment
from privbandits.papers.privacy_map.systems import SHUFFLE_DEFAULT_BATCH, Point
from privbandits.privacy.accountant import Release, ledger_epsilons

NOT_STORED = "not in the stored runs (rerun to record it)"
"""FCLUB's per-user ε where the stored runs predate it (their keys are unchanged, so they are reused)."""


def _epsilon(value: float) -> str:
    return "∞" if value == math.inf else f"{value:.3g}"


def _joint(point: Point, dim: int, horizon: int) -> float:
    """The accounted ε of one round's (x, r) through the point's continual release (the tree's m nodes, or the
    square-root factorization's one release, as its ``continual_release`` says)."""
    from privbandits.privacy import factorization
    from privbandits.privacy.tree_mechanism import REPLACE_SENSITIVITY, augmented_coordinates
    from privbandits.protocols.dp.joint import joint_noise, joint_noise_std, tree_levels

    policy = point.policy
    if policy.get("continual_release", "tree") == "sqrt_factorization":
        noise = factorization.factorization_noise(
            policy["epsilon"],
            policy["delta"],
            horizon,
            REPLACE_SENSITIVITY,
            augmented_coordinates(dim),
            1.0,
            policy.get("factorization_band"),
        )
        return ledger_epsilons(factorization.releases(noise), policy["delta"])["accounted_epsilon"]
    formula = joint_noise_std(policy["epsilon"], policy["delta"], horizon, policy["calibration"])
    tree = joint_noise(formula, horizon, dim)
    releases = [Release.gaussian(tree.std, tree.sensitivity, tree_levels(horizon))]
    return ledger_epsilons(releases, policy["delta"])["accounted_epsilon"]


def _local(epsilon: float, delta: float, calibration: str, dim: int) -> float:
    from privbandits.protocols.dp.local import local_accounting, local_noise_std, report_noise

    noise = report_noise(local_noise_std(epsilon, delta, calibration), dim)
    return local_accounting(noise.std, delta, noise.sensitivity)["accounted_epsilon"]


def _shuffle(point: Point, dim: int) -> tuple[float, str]:
    from privbandits.protocols.dp.shuffle import shuffle_calibration

    policy = point.policy
    batch = policy.get("batch_size", SHUFFLE_DEFAULT_BATCH)
    cal = shuffle_calibration(policy["epsilon"], policy["delta"], batch, policy["calibration"], dim)
    if cal.amplified:
        return cal.central_epsilon, "per report, central (amplification bound, not PLD)"
    return _local(policy["epsilon"], policy["delta"], policy["calibration"], dim), "per report (local DP, PLD)"


def user_epsilon(env: MapEnvironment, point: Point, runs: list[dict[str, Any]]) -> str:
    """What one user pays at ``point`` (its stored ``runs`` for the figures a run records), with its unit."""
    model, kind, dim = point.model, point.policy.get("kind"), sum(env.partition)
    if model in ("random", "p2b_cold"):
        return "0 (uses no data)" if model == "random" else "0 (shares nothing)"
    if point.epsilon == math.inf:
        return "∞ (no DP)"
    policy = point.policy
    if kind == "joint_dp_linucb":
        return f"{_epsilon(_joint(point, dim, env.horizon))} per round's (x, r) (PLD)"
    if kind == "local_dp_linucb":
        return f"{_epsilon(_local(policy['epsilon'], policy['delta'], policy['calibration'], dim))} per report (PLD)"
    if kind == "shuffle_dp_linucb":
        value, unit = _shuffle(point, dim)
        return f"{_epsilon(value)} {unit}"
    if model == "fclub_cdp":
        stored = [(run.get("metrics") or {}).get("per_user_epsilon") for run in runs]
        if not stored or any(value is None for value in stored):
            return NOT_STORED
        worst = max(float(value) for value in stored if value is not None)
        return f"{_epsilon(worst)} per datum of the worst user, every privatizer (PLD)"
    if model == "mpc_eta":
        return f"{_epsilon(point.epsilon)} per round (one opened action; a user's rounds add)"
    if model == "p2b":
        return f"{_epsilon(point.epsilon)} per user (one shared context)"
    return _epsilon(point.epsilon)
