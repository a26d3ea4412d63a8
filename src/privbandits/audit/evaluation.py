"""Audits of the DP off-policy estimators (:mod:`privbandits.evaluation.private`): DP-IPS, DP-SNIPS and DP-DR.

Each run releases the estimator's noisy sums through the code the estimator runs: its clipped per-record
statistics (:func:`~privbandits.evaluation.private.private_statistics`) and their release
(:class:`~privbandits.privacy.bounded_sums.BoundedSums`: the snapped exact sums plus its noise draws; a test keeps
``dp_*``'s ``released`` equal to the two). The estimate and its interval are post-processing of those sums.

Neighbouring inputs: two logs of :data:`RECORDS` records, identical but for the first, whose two versions move every
statistic as far as one record can (reward range [0, 1], λ = :data:`WEIGHT_CLIP`, uniform logging over 2 actions):

* IPS: ``w̄ = λ, r = 1`` ↔ ``r = 0``: both sums (``w̄r̄`` and its square) move by their whole range;
* SNIPS: ``w̄ = λ, r = 1`` ↔ ``w̄ = 0`` (the target never takes that action): all five sums move by their whole range;
* DR: ``q̄(x, a_t) = 0`` elsewhere 1, ``r = 1`` ↔ ``q̄(x′, a_t) = 1`` elsewhere 0, ``r = 0``, the target taking a_t
  with probability 0.001 and ``w̄ = λ``: the sum moves by ``1 + 2λ − 0.002`` of its range ``1 + 2λ``; its square, by
  less than its range (no record reaches both ends of both), so the pair's exact ε is below the claim.

The released output: Gaussian noise, the vector of sums (Fisher's discriminant is then the likelihood ratio);
Laplace noise, its log-likelihood ratio ``Σ_j (|y_j − μ_j| − |y_j − μ′_j|)/b_j`` (post-processing of the sums, so any
b_j keeps the bound valid; the test "all sums beyond both means" reaches the pair's ε). The weakened copy: the noise
× 0.5 (both calibrations are tight, so it doubles the pair's ε).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from privbandits.audit.base import MechanismAudit, Weakening, additive
from privbandits.audit.stats import gaussian_pair_epsilon

if TYPE_CHECKING:
    from privbandits.logs import LoggedFeedback

RECORDS = 10
WEIGHT_CLIP = 2.0
REWARD_RANGE = (0.0, 1.0)
INTERVAL_SHARE = 0.2
TARGET_SHARE = 0.001
"""DR's pair: the target's probability of the logged action (w̄ = λ still): the smaller, the closer to the range."""


@dataclass(frozen=True)
class _Side:
    """One neighbouring log's records and the target's and reward model's values on them."""

    log: LoggedFeedback
    pi: np.ndarray
    q_hat: np.ndarray


def _common(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The shared records 1..n−1: actions, rewards, target rows and reward model rows (fixed, not random)."""
    action = np.arange(n) % 2
    reward = (np.arange(n) % 3 == 0).astype(np.float64)
    pi = np.tile([0.3, 0.7], (n, 1))
    q_hat = np.tile([0.4, 0.6], (n, 1))
    return action, reward, pi, q_hat


def _first_record(estimator: str, present: bool) -> tuple[float, float, list[float], list[float]]:
    """(reward, pscore, target row, reward model row) of the first record on side D (``present``) or D′."""
    if estimator == "dr":
        pscore = TARGET_SHARE / WEIGHT_CLIP
        pi = [TARGET_SHARE, 1 - TARGET_SHARE]
        return (1.0, pscore, pi, [0.0, 1.0]) if present else (0.0, pscore, pi, [1.0, 0.0])
    if estimator == "snips" and not present:
        return 1.0, 0.5, [0.0, 1.0], [0.5, 0.5]
    return (1.0 if present else 0.0), 0.5, [1.0, 0.0], [0.5, 0.5]  # w = 1/0.5 = 2 = λ


def _side(estimator: str, present: bool) -> _Side:
    from privbandits.logs import LoggedFeedback

    action, reward, pi, q_hat = _common(RECORDS)
    pscore = np.full(RECORDS, 0.5)
    action[0] = 0
    reward[0], pscore[0], pi[0], q_hat[0] = _first_record(estimator, present)
    log = LoggedFeedback(n_rounds=RECORDS, n_actions=2, context=np.zeros((RECORDS, 1)), action=action,
                         reward=reward, pscore=pscore)  # fmt: skip
    return _Side(log, pi, q_hat)


def _laplace_statistic(means0: np.ndarray, means1: np.ndarray, scales: np.ndarray):
    """The log-likelihood ratio of D′ against D for Laplace noise of ``scales`` around either side's sums."""
    return lambda y: ((np.abs(y - means0) - np.abs(y - means1)) / scales).sum(axis=1, keepdims=True)


def estimator_release(estimator: str, epsilon: float = 1.0, delta: float = 0.0) -> MechanismAudit:
    """The audit of ``dp_<estimator>``'s release at (ε, δ) (δ = 0: Laplace; else Gaussian)."""
    from privbandits.evaluation.private import private_statistics
    from privbandits.evaluation.private_terms import Clipping
    from privbandits.privacy.bounded_sums import BoundedSums

    clip = Clipping(WEIGHT_CLIP, *REWARD_RANGE)
    sides = [_side(estimator, present) for present in (True, False)]
    stats = [private_statistics(estimator, s.log, s.pi, clip, INTERVAL_SHARE, s.q_hat) for s in sides]
    sums = BoundedSums(stats[0].bounds, epsilon, delta, RECORDS)
    means = [sums.exact(s.values) for s in stats]
    scales = np.array([noise.scale for noise in sums.noise])
    laplace = sums.mechanism == "laplace"
    llr = _laplace_statistic(means[0], means[1], scales)

    def sample(n: int, rng: np.random.Generator, weakening: Weakening) -> tuple[np.ndarray, np.ndarray]:
        outputs = []
        for mean in means:
            noisy = additive(np.broadcast_to(mean, (n, len(mean))), sums.noise_draws(rng, n), weakening,
                             np.arange(len(mean)))  # fmt: skip
            outputs.append(llr(noisy) if laplace else noisy)
        return outputs[0], outputs[1]

    def pair_epsilon(weakening: Weakening) -> float:
        if weakening.drop:
            return math.inf
        shift = np.abs(means[0] - means[1]) / (scales * weakening.scale)
        return float(shift.sum()) if laplace else gaussian_pair_epsilon(float(np.sqrt((shift**2).sum())), delta)

    noise = "Laplace, ε-DP" if laplace else "Gaussian, (ε, δ)-DP"
    return MechanismAudit(
        name=f"evaluation.dp_{estimator}" + ("" if laplace else "@gaussian"),
        notion=f"{noise} per logged record (one release of the estimator's sums)",
        relation=_RELATIONS[estimator] + f"; {RECORDS} records, λ = {WEIGHT_CLIP:g}, rewards in [0, 1]",
        claimed_epsilon=epsilon,
        claimed_delta=delta,
        discrete=False,
        dropped="the noise of every sum",
        weakened=Weakening(scale=0.5),
        sample=sample,
        pair_epsilon=pair_epsilon,
        note="" if estimator != "dr" else "no record reaches both ends of DR's sum and its square: pair ε < claim",
        settings={
            "statistics": list(sums.names),
            "scales": scales.tolist(),
            "noise": sums.mechanism,
            "weight_clip": WEIGHT_CLIP,
            "records": RECORDS,
        },  # fmt: skip
    )


_RELATIONS = {
    "ips": "one logged record replaced: w̄ = λ, r = 1 ↔ r = 0",
    "snips": "one logged record replaced: w̄ = λ, r = 1 ↔ w̄ = 0",
    "dr": "one logged record replaced: r = 1, q̄(a_t) = 0 ↔ r = 0, q̄(a_t) = 1 (w̄ = λ, π_e(a_t) = 0.001)",
}
