"""``privbandits evaluate``'s units of work for the results store: a policy's estimates on a log, and the DP
estimators' error over ε.

Each unit is a task function whose parameters are its complete spec (the log by path and SHA-256, the policy and
its options, the estimators, the split, the seeds, the privacy budget and the noise samplers), so the store keys it
by their hash like every experiment (:class:`~privbandits.experiments.tasks.Task`): a rerun reuses it, a changed
option or log is a different unit. A private unit stored is never recomputed unless forced, which would spend its
budget again.

Both split the log: the policy (and DR's reward model) is fitted on the first ``train_fraction`` of the rounds and
evaluated on the rest, so the evaluated records played no part in what is evaluated. The DP learner
(``dp_linucb``: :class:`~privbandits.protocols.dp.JointDPLinUCB` through
:class:`~privbandits.evaluation.features.PerArmPolicy`) protects the training records with its own (ε, δ), the DP
estimators the evaluated ones; a record is in one part only, so a record's guarantee is the larger of the two
(parallel composition), and the ledger lists both.
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass
from typing import Any

import numpy as np

from privbandits.evaluation.estimators import evaluate
from privbandits.evaluation.features import PerArmPolicy, per_arm_dim
from privbandits.evaluation.policies import policy_probabilities, train_on_log
from privbandits.evaluation.private import (
    PRIVATE_ESTIMATORS,
    point_estimates,
    private_evaluate,
    private_statistics,
)
from privbandits.evaluation.private_terms import Clipping
from privbandits.evaluation.reward_model import ridge_reward_model
from privbandits.experiments.tasks import file_identity, identity_path
from privbandits.logs.feedback import LoggedFeedback
from privbandits.privacy.bounded_sums import BoundedSums
from privbandits.privacy.laplace import LAPLACE_SAMPLER
from privbandits.privacy.ledger import PrivacyLedger
from privbandits.privacy.noise import NOISE_SAMPLER

FUNCTION = "privbandits.experiments.evaluation_units:evaluation_unit"
SWEEP = "privbandits.experiments.evaluation_units:error_over_epsilon_unit"
POLICIES = ("linucb", "lints", "epsilon_greedy", "uniform", "dp_linucb")
SAMPLERS = {"gaussian": NOISE_SAMPLER, "laplace": LAPLACE_SAMPLER}
"""The noise samplers, by name in every unit's key: a unit of an earlier sampler is not this code's."""
NOISE_STREAM, LEARNER_STREAM = 1, 2
"""Spawn keys of the seeded noise of the estimators and of the DP learner (a reproducible run only)."""


@dataclass(frozen=True)
class Prepared:
    """A log split for evaluation (``n_train`` rounds to train on, the rest evaluated), the policy's probabilities on
    the evaluated rounds and DR's reward model."""

    n_train: int
    test: LoggedFeedback
    pi_e: np.ndarray
    q_hat: np.ndarray | None
    """Fitted on the training rounds; None without any (the plaintext estimators then fit it on the evaluated
    rounds, as they do by default; the DP ones use 0, since a model of the evaluated records would leak them)."""
    ledger: PrivacyLedger


def _noise_source(seed: int, reproducible: bool, stream: int, policy: str) -> np.random.Generator | None:
    """The DP noise's generator: seeded from ``seed``, the stream and the policy's name (a reproducible run: not
    secret; each policy's noise its own) or None (OS entropy)."""
    return np.random.default_rng([seed, stream, zlib.crc32(policy.encode())]) if reproducible else None


def _learner(policy: str, log: LoggedFeedback, n_train: int, seed: int, options: dict[str, Any], ledger, noise):
    from privbandits.linear.policies import EpsilonGreedy, LinTS, LinUCB, UniformRandom

    if policy == "uniform":
        return UniformRandom(log.n_actions, rng=seed)
    if policy == "dp_linucb":
        from privbandits.protocols.dp import JointDPLinUCB

        descriptor = None if options.get("descriptor") is None else slice(*options["descriptor"])
        dim = per_arm_dim(np.eye(log.n_actions) if log.action_context is None else log.action_context, log.dim,
                          descriptor)  # fmt: skip
        learner = JointDPLinUCB(log.n_actions, dim, epsilon=options["epsilon"], delta=options["delta"],
                                horizon=max(n_train, 1), calibration="analytic", rng=noise, ledger=ledger)  # fmt: skip
        return PerArmPolicy(learner, log.action_context, descriptor)
    kind = {"linucb": LinUCB, "lints": LinTS, "epsilon_greedy": EpsilonGreedy}[policy]
    return kind(log.n_actions, log.dim, layout="disjoint", rng=seed)


def prepare(
    log: LoggedFeedback, policy: str, policy_options: dict[str, Any], seed: int, train_fraction: float,
    reproducible: bool,
) -> Prepared:  # fmt: skip
    """Train ``policy`` on the first ``train_fraction`` of ``log`` (every logged round, not replay) and give its
    probabilities on the rest, with a ridge reward model fitted on the training rounds (None without any)."""
    n_train = int(log.n_rounds * train_fraction)
    ledger = PrivacyLedger()
    noise = _noise_source(seed, reproducible, LEARNER_STREAM, policy)
    learner = _learner(policy, log, n_train, seed, policy_options, ledger, noise)
    test = log.take(slice(n_train, log.n_rounds))
    q_hat = None
    if n_train:
        train = log.take(slice(0, n_train))
        train_on_log(learner, train, replay=False)
        q_hat = ridge_reward_model(test, fit_on=train)
    return Prepared(n_train, test, policy_probabilities(learner, test, seed=seed), q_hat, ledger)


def _held_out_model(prepared: Prepared) -> np.ndarray:
    """The reward model the DP estimators may use: the one fitted on the training rounds, else 0."""
    test = prepared.test
    return prepared.q_hat if prepared.q_hat is not None else np.zeros((test.n_rounds, test.n_actions))


def _load(log: dict[str, str]) -> LoggedFeedback:
    from privbandits.logs.files import load_log

    path = identity_path(log)
    if file_identity(path)["sha256"] != log["sha256"]:
        raise ValueError(f"{path} changed since the unit was planned (its SHA-256 differs); plan it again")
    return load_log(path, "LOG")


def _row(result) -> dict[str, Any]:
    row = {"method": result.method, "estimate": result.estimate, "low": result.low, "high": result.high,
           "level": result.level, "interval": result.interval, "ess": result.effective_sample_size}  # fmt: skip
    for name in ("epsilon", "delta", "noise", "noise_std", "accounted_epsilon", "weight_clip", "seeded"):
        if hasattr(result, name):
            row[name] = getattr(result, name)
    if hasattr(result, "released"):
        row["released"] = dict(result.released)
    return row


def evaluation_unit(
    log: dict[str, str], policy: str, policy_options: dict[str, Any], estimators: list[str], seed: int,
    train_fraction: float, threshold: float, interval: str, level: float, privacy: dict[str, Any] | None,
    samplers: dict[str, str],
) -> dict[str, Any]:  # fmt: skip
    """One policy's estimates on one log: non-private (``privacy`` None) or DP within ``privacy``'s budget (its
    ``epsilon``, ``delta``, ``weight_clip``, ``reward_range``, ``interval_share`` and ``reproducible``)."""
    if samplers != SAMPLERS:
        raise ValueError(f"samplers must be {SAMPLERS} (this code's), got {samplers}")
    data = _load(log)
    reproducible = bool(privacy and privacy["reproducible"])
    prepared = prepare(data, policy, policy_options, seed, train_fraction, reproducible)
    results: list[Any]
    if privacy is None:
        results = evaluate(prepared.test, prepared.pi_e, estimators, q_hat=prepared.q_hat, threshold=threshold,
                           interval=interval, level=level, seed=seed)  # fmt: skip
    else:
        results = private_evaluate(
            prepared.test, prepared.pi_e, estimators, epsilon=privacy["epsilon"], delta=privacy["delta"],
            q_hat=_held_out_model(prepared), weight_clip=privacy["weight_clip"],
            reward_range=tuple(privacy["reward_range"]), interval_share=privacy["interval_share"], level=level,
            seed=seed, rng=_noise_source(seed, reproducible, NOISE_STREAM, policy), ledger=prepared.ledger,
        )  # fmt: skip
    spent = [e for e in prepared.ledger.entries if e.mechanism.startswith("evaluation.")]
    epsilon, delta = math.fsum(e.epsilon for e in spent), math.fsum(e.delta or 0.0 for e in spent)
    return {
        "log": str(identity_path(log)), "policy": policy, "n_train": prepared.n_train,
        "n_test": prepared.test.n_rounds, "private": privacy is not None, "reproducible": reproducible,
        "rows": [_row(result) for result in results], "ledger": prepared.ledger.rows(),
        "spent": {"epsilon": epsilon, "delta": delta} if privacy is not None else None,
    }  # fmt: skip


def error_over_epsilon_unit(
    log: dict[str, str], policy: str, policy_options: dict[str, Any], seed: int, train_fraction: float,
    epsilons: list[float], delta: float, repeats: int, weight_clip: float, reward_range: list[float],
    interval_share: float, samplers: dict[str, str],
) -> dict[str, Any]:  # fmt: skip
    """The DP estimators' error against their non-private clipped counterpart on one log, over ε: ``repeats``
    seeded releases at each ε (a measurement: the noise is seeded) and their bias, standard deviation and RMSE;
    beside them each estimator's non-private interval half-width (its sampling error, for scale)."""
    if samplers != SAMPLERS:
        raise ValueError(f"samplers must be {SAMPLERS} (this code's), got {samplers}")
    prepared = prepare(_load(log), policy, policy_options, seed, train_fraction, True)
    test, clip = prepared.test, Clipping(weight_clip, *reward_range)
    rng = _noise_source(seed, True, NOISE_STREAM, policy)
    rows, references = [], {}
    model = _held_out_model(prepared)
    for method in PRIVATE_ESTIMATORS:
        statistics = private_statistics(method, test, prepared.pi_e, clip, interval_share, model)
        exact = private_evaluate(test, prepared.pi_e, [method], epsilon=math.inf, q_hat=model,
                                 weight_clip=weight_clip, reward_range=tuple(reward_range), seed=seed)[0]  # type: ignore[arg-type]  # fmt: skip
        references[method] = {"estimate": exact.estimate, "half_width": (exact.high - exact.low) / 2}
        for epsilon in epsilons:
            sums = BoundedSums(statistics.bounds, epsilon, delta, test.n_rounds)
            released = sums.exact(statistics.values) + sums.noise_draws(rng, repeats)
            values = point_estimates(method, dict(zip(sums.names, released.T, strict=True)), clip, test.n_rounds)
            error = values - exact.estimate
            rows.append({"method": f"dp_{method}", "epsilon": epsilon, "bias": float(error.mean()),
                         "std": float(error.std(ddof=1)), "rmse": float(np.sqrt((error**2).mean()))})  # fmt: skip
    return {"log": str(identity_path(log)), "policy": policy, "n_train": prepared.n_train,
            "n_test": test.n_rounds, "delta": delta, "repeats": repeats, "weight_clip": weight_clip,
            "reward_range": list(reward_range), "rows": rows, "references": references}  # fmt: skip
