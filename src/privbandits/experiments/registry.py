"""Build environments and policies from validated configs; list what is available."""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from privbandits.datasets.digits import load_digits_data
from privbandits.envs import ClassificationBandit, Environment, LinearGaussianBandit
from privbandits.experiments.config import (
    DigitsEnvConfig,
    EnvConfig,
    EpsilonGreedyConfig,
    LinearGaussianEnvConfig,
    LinTSConfig,
    LinUCBConfig,
    PolicyConfig,
    RandomPolicyConfig,
)
from privbandits.linear import EpsilonGreedy, LinTS, LinUCB, Policy, UniformRandom

ENVIRONMENTS: dict[str, tuple[type, str]] = {
    "linear_gaussian": (
        LinearGaussianEnvConfig,
        "Vertical O3M paper §5.1: fresh unit-norm Gaussian contexts per arm, unit-norm θ*, Gaussian noise",
    ),
    "digits": (
        DigitsEnvConfig,
        "scikit-learn digits as a 10-arm classification bandit (offline MNIST stand-in; PCA + unit norm)",
    ),
}

POLICIES: dict[str, tuple[type, str]] = {
    "linucb": (LinUCBConfig, "LinUCB (Li et al. 2010): ridge estimate + alpha·confidence width"),
    "lints": (LinTSConfig, "Linear Thompson sampling (Agrawal & Goyal 2013): μ ~ N(θ̂, v²A⁻¹)"),
    "epsilon_greedy": (EpsilonGreedyConfig, "ε-greedy on ridge estimates (MPC paper, Alg. 1)"),
    "random": (RandomPolicyConfig, "Uniformly random arm every round (baseline)"),
}


@lru_cache(maxsize=8)
def _digits(pca_components: int | None, unit_norm: bool):
    return load_digits_data(pca_components, unit_norm)


def build_environment(config: EnvConfig) -> Environment:
    """A fresh environment for one run (call ``reset`` before use)."""
    if isinstance(config, LinearGaussianEnvConfig):
        return LinearGaussianBandit(
            dim=config.dim,
            n_arms=config.n_arms,
            context_variance=config.context_variance,
            theta_variance=config.theta_variance,
            noise_variance=config.noise_variance,
        )
    data = _digits(config.pca_components, config.unit_norm)
    return ClassificationBandit(data.features, data.labels, order=config.order)


def build_policy(config: PolicyConfig, n_arms: int, dim: int, rng: np.random.Generator) -> Policy:
    """A fresh policy for ``n_arms`` arms on ``dim``-dimensional contexts."""
    if isinstance(config, RandomPolicyConfig):
        return UniformRandom(n_arms, rng=rng)
    common = dict(
        layout=config.layout,
        reg=config.reg,
        refresh_every=config.refresh_every,
        tie_break=config.tie_break,
        tie_tolerance=config.tie_tolerance,
        rng=rng,
    )
    if isinstance(config, LinUCBConfig):
        return LinUCB(n_arms, dim, alpha=config.alpha, **common)
    if isinstance(config, LinTSConfig):
        return LinTS(n_arms, dim, v=config.v, sampler=config.sampler, **common)
    return EpsilonGreedy(n_arms, dim, epsilon=config.epsilon, **common)
