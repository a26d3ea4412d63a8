"""Audits of the local- and shuffle-DP LinUCB reports (Zheng et al. 2020; Chowdhury & Zhou 2022).

Each user sends ``(x xᵀ + B, r x + ξ)`` through the project's
:class:`~privbandits.protocols.dp.local.LocalRandomizer`. Neighbouring inputs: one user's
``(x, r)`` replaced, ``(e₁, 1)`` in D and ``(e₁, −1)`` in D′ (d = 1): the report's vector part
moves by 2, so the pair is ``2/σ`` noise standard deviations apart.

Local DP: the released output is the one report. Shuffle DP: the central view of one batch
of ``batch_size`` reports after the project's :class:`~privbandits.protocols.dp.shuffle.Shuffler`,
every other user a clone ``(e₁, 1)`` of D's target; σ₀ and the central (ε, δ) come from
:func:`~privbandits.protocols.dp.shuffle.shuffle_calibration`. The test statistic of a batch is
the log-likelihood ratio of "one report is the target's D′ datum" against "all are clones",
``log Σᵢ exp(−2 vᵢ/σ₀²)`` over the vector parts vᵢ (post-processing, so any σ₀ in it keeps the
bound valid). ``drop`` removes the noise ξ of the vector part: the weakened copy under either
calibration, since no pair reaches the claimed sensitivity √6 (d = 1: at most 2), so even the
analytic calibration halved is only ε ≈ 1.7 on this pair, at the edge of what 400,000 samples resolve
(measured 0.69 and 1.14 on two seeds).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from privbandits.audit.base import MechanismAudit, Weakening, additive
from privbandits.audit.stats import gaussian_pair_epsilon

TARGET = np.array([1.0])
RELATION = "one user's report (x, r) replaced, ‖x‖ ≤ 1, |r| ≤ 1: (e₁, 1) ↔ (e₁, −1), d = 1"


def _reports(rewards: np.ndarray, std: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Exact and noise parts, (n, 2) each (Gram entry, vector entry), of one LocalRandomizer report per reward."""
    from privbandits.protocols.dp.local import LocalRandomizer

    randomizer = LocalRandomizer(std, rng)
    exact = np.stack([np.full(len(rewards), TARGET[0] ** 2), rewards * TARGET[0]], axis=1)
    noisy = np.array([np.concatenate([g.ravel(), v]) for g, v in (randomizer.report(TARGET, r) for r in rewards)])
    return exact, noisy - exact


def _pair_epsilon(std: float, delta: float):
    return lambda w: math.inf if w.drop or std == 0 else gaussian_pair_epsilon(2.0 / (std * w.scale), delta)


def _suffix(calibration: str) -> str:
    return "" if calibration == "paper" else f"@{calibration}"


def local_report(epsilon: float = 1.0, delta: float = 1e-5, calibration: str = "paper") -> MechanismAudit:
    """One report of :class:`~privbandits.protocols.dp.local.LocalDPLinUCB` at (ε, δ)."""
    from privbandits.protocols.dp.local import local_noise_std

    std = local_noise_std(epsilon, delta, calibration)

    def sample(n: int, rng: np.random.Generator, weakening: Weakening) -> tuple[np.ndarray, np.ndarray]:
        outputs = []
        for reward in (1.0, -1.0):
            exact, noise = _reports(np.full(n, reward), std, rng)
            outputs.append(additive(exact, noise, weakening, np.array([1])))
        return outputs[0], outputs[1]

    return MechanismAudit(
        name="dp_linucb.local" + _suffix(calibration),
        notion="(ε, δ)-local DP per report",
        relation=RELATION,
        claimed_epsilon=epsilon,
        claimed_delta=delta,
        discrete=False,
        dropped="the noise ξ of r x",
        weakened=Weakening(drop=True),
        sample=sample,
        pair_epsilon=_pair_epsilon(std, delta),
        settings={"noise_std": std, "calibration": calibration},
    )


def shuffle_batch(epsilon: float = 1.0, delta: float = 1e-5, batch_size: int = 100,
                  calibration: str = "paper") -> MechanismAudit:  # fmt: skip
    """One shuffled batch of :class:`~privbandits.protocols.dp.shuffle.ShuffleDPLinUCB` at central (ε, δ)."""
    from privbandits.protocols.dp.shuffle import Shuffler, shuffle_calibration

    batch = shuffle_calibration(epsilon, delta, batch_size, calibration)
    std = batch.noise_std

    def batch_statistic(rewards: np.ndarray, rng: np.random.Generator, weakening: Weakening) -> float:
        exact, noise = _reports(rewards, std, rng)
        reports = additive(exact, noise, weakening, np.array([1]))
        shuffled = np.array(Shuffler(rng).shuffle(list(reports)))
        return float(special.logsumexp(-2.0 * shuffled[:, 1] / std**2))

    def sample(n: int, rng: np.random.Generator, weakening: Weakening) -> tuple[np.ndarray, np.ndarray]:
        outputs = []
        for target in (1.0, -1.0):
            rewards = np.ones(batch_size)
            rewards[0] = target
            outputs.append(np.array([[batch_statistic(rewards, rng, weakening)] for _ in range(n)]))
        return outputs[0], outputs[1]

    amplified = "amplified" if batch.amplified else "not amplified: each report is (ε, δ)-LDP"
    return MechanismAudit(
        name="dp_linucb.shuffle" + _suffix(calibration),
        notion=f"(ε, δ)-DP of one shuffled batch of {batch_size} ({amplified})",
        relation=RELATION + f"; the other {batch_size - 1} users are clones of D's target",
        claimed_epsilon=batch.central_epsilon,
        claimed_delta=batch.central_delta,
        discrete=False,
        dropped="the noise ξ of r x",
        weakened=Weakening(drop=True),
        sample=sample,
        pair_epsilon=_pair_epsilon(std, batch.central_delta),
        note="pair ε is the local view's (one report alone); the shuffled batch is at most that",
        settings={"noise_std": std, "batch_size": batch_size, "epsilon0": batch.epsilon0,
                  "delta0": batch.delta0, "amplified": batch.amplified, "calibration": calibration},
    )  # fmt: skip
