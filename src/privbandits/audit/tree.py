"""Audits of the tree-based (binary) mechanism: joint-DP LinUCB and FCLUB's privatizer at a local server.

Both release prefix sums of the augmented statistic ``Σ z zᵀ``, ``z = [x; y]``, through
:class:`~privbandits.privacy.tree_mechanism.TreeMechanism`; they differ in the calibration
of its node noise (joint DP: :func:`~privbandits.protocols.dp.joint.joint_noise_std`;
FCLUB: :meth:`~privbandits.protocols.fclub.config.Calibration.form_std`), both at the sensitivity 2 of the
audit's pair (the learners' σ is larger by the slack of snapping their data to the grid, which this pair,
on the grid already, does not need). The audit
releases the first ``releases`` prefixes of one data stream, split as the learners split
them: the Gram part ``[:d, :d]`` and the vector part ``[:d, d]`` (Σ y x).

Neighbouring inputs: one datum replaced, the first one (it enters one node on every level):
``(x, y) = (e₁, 1)`` in D and ``(e₁, −1)`` in D′ (every later datum is ``(e₁/2, 1/2)``). The
pair differs by 2 in one off-diagonal entry of every prefix, the claimed sensitivity
(:data:`~privbandits.privacy.tree_mechanism.REPLACE_SENSITIVITY`), so it is ``2√levels/σ``
noise standard deviations apart: :func:`~privbandits.audit.stats.gaussian_pair_epsilon` gives
its exact ε. ``drop`` removes the noise of the vector part (Σ y x released exactly).
"""

from __future__ import annotations

import math

import numpy as np

from privbandits.audit.base import MechanismAudit, Weakening, additive
from privbandits.audit.stats import gaussian_pair_epsilon


def _stream(releases: int, dim: int, first_reward: float) -> np.ndarray:
    """The exact prefix sums ``Σ_{s≤k} z_s z_sᵀ``, k = 1..releases, of the audit's data stream."""
    z = np.zeros((releases, dim + 1))
    z[0, 0], z[0, dim] = 1.0, first_reward
    z[1:, 0], z[1:, dim] = 0.5, 0.5
    return np.cumsum(np.einsum("ti,tj->tij", z, z), axis=0)


def _released(prefixes: np.ndarray, dim: int) -> np.ndarray:
    """The learners' view of each prefix: the Gram part then the vector part, flattened per run."""
    gram = prefixes[..., :dim, :dim].reshape(*prefixes.shape[:-2], dim * dim)
    vector = prefixes[..., :dim, dim]
    return np.concatenate([gram, vector], axis=-1).reshape(prefixes.shape[0], -1)


def _tree_noise(n: int, releases: int, dim: int, std: float, rng: np.random.Generator) -> np.ndarray:
    """``n`` runs of the project's TreeMechanism (side by side, ``runs=n``): (n, releases, d+1, d+1) noise of the
    successive prefixes."""
    from privbandits.privacy.tree_mechanism import TreeMechanism

    tree = TreeMechanism(dim + 1, std, rng, runs=n)
    return np.stack([tree.release() for _ in range(releases)], axis=1)


def _tree_audit(name: str, notion: str, std: float, releases: int, dim: int, epsilon: float, delta: float,
                weakened: Weakening, **extra):  # fmt: skip
    levels = releases.bit_length()
    vector_columns = np.concatenate([np.arange(k * (dim * dim + dim) + dim * dim, (k + 1) * (dim * dim + dim))
                                     for k in range(releases)])  # fmt: skip

    def sample(n: int, rng: np.random.Generator, weakening: Weakening) -> tuple[np.ndarray, np.ndarray]:
        outputs = []
        for reward in (1.0, -1.0):
            exact = _released(_stream(releases, dim, reward)[None], dim)
            noise = _released(_tree_noise(n, releases, dim, std, rng), dim)
            outputs.append(additive(np.broadcast_to(exact, noise.shape), noise, weakening, vector_columns))
        return outputs[0], outputs[1]

    def pair_epsilon(weakening: Weakening) -> float:
        if weakening.drop or std == 0:
            return math.inf
        return gaussian_pair_epsilon(2.0 * math.sqrt(levels) / (std * weakening.scale), delta)

    return MechanismAudit(
        name=name,
        notion=notion,
        relation="one datum (x, y) replaced, ‖x‖ ≤ 1, |y| ≤ 1: the first of the stream, (e₁, 1) ↔ (e₁, −1)",
        claimed_epsilon=epsilon,
        claimed_delta=delta,
        discrete=False,
        dropped="the noise of Σ y x",
        weakened=weakened,
        sample=sample,
        pair_epsilon=pair_epsilon,
        settings={"noise_std": std, "releases": releases, "levels": levels, "dim": dim, **extra},
    )


def weakened_for(calibration: str) -> Weakening:
    """The weakened copy: a noise term dropped under the papers' loose calibrations (halving their noise
    still meets the claim); noise × 0.5 under the analytic Gaussian, which is tight."""
    return Weakening(scale=0.5) if calibration == "analytic" else Weakening(drop=True)


def joint_linucb(epsilon: float = 1.0, delta: float = 1e-5, horizon: int = 8, dim: int = 1,
                 calibration: str = "paper") -> MechanismAudit:  # fmt: skip
    """Joint-DP LinUCB's tree (Shariff & Sheffet 2018) calibrated for ``horizon`` rounds, all released."""
    from privbandits.protocols.dp.joint import joint_noise_std, tree_levels

    return _tree_audit(
        "dp_linucb.joint" + ("" if calibration == "paper" else f"@{calibration}"),
        "(ε, δ)-joint DP of the whole run (the tree's releases)",
        joint_noise_std(epsilon, delta, horizon, calibration),
        horizon,
        dim,
        epsilon,
        delta,
        weakened_for(calibration),
        horizon=horizon,
        calibration=calibration,
        calibrated_levels=tree_levels(horizon),
    )


def fclub_privatizer(epsilon: float = 1.0, delta: float = 0.1, horizon: int = 6, dim: int = 1,
                     noise_variance: str = "squared_log") -> MechanismAudit:  # fmt: skip
    """FCLUB's privatizer PVT at a local server (paper Alg. 5, Thm 3): one depth-ν tree, its first 2^(ν−1)
    releases (the first datum enters all ν nodes); ν and σ from the run's :class:`Calibration`."""
    from privbandits.protocols.fclub.config import Calibration, FCLUBConfig, NoiseVariance

    config = FCLUBConfig(epsilon=epsilon, delta=delta, horizon=horizon, noise_variance=NoiseVariance(noise_variance))
    calibration = Calibration(config, dim, 1, 1)
    depth = calibration.depth(1)
    return _tree_audit(
        "fclub.pvt" if noise_variance == "squared_log" else f"fclub.pvt@{noise_variance}",
        "(ε, δ)-DP per privatizer (Thm 3)",
        calibration.form_std(depth),  # at sensitivity 2, as the pair: the runs' σ adds the snapping slack
        2 ** (depth - 1),
        dim,
        epsilon,
        delta,
        weakened_for(noise_variance),
        depth=depth,
        noise_variance=noise_variance,
    )
