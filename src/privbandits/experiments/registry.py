"""Build environments and policies from validated configs; list what is available."""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from privbandits.datasets.digits import load_digits_data
from privbandits.envs import ClassificationBandit, Environment, LinearGaussianBandit
from privbandits.experiments.config import (
    ENVIRONMENT_CONFIGS,
    POLICY_CONFIGS,
    EnvConfig,
    LinearGaussianEnvConfig,
    LinTSConfig,
    LinUCBConfig,
    PolicyConfig,
    RandomPolicyConfig,
    VerticalLinTSConfig,
    VerticalLinUCBConfig,
    by_kind,
)
from privbandits.linear import EpsilonGreedy, LinTS, LinUCB, Policy, UniformRandom
from privbandits.protocols.vertical import VerticalFederatedBandit


def _catalogue(models) -> dict[str, tuple[type, str]]:
    """``kind -> (config class, first line of its docstring)``."""
    return {kind: (model, model.__doc__.strip().splitlines()[0]) for kind, model in by_kind(models).items()}


ENVIRONMENTS = _catalogue(ENVIRONMENT_CONFIGS)
POLICIES = _catalogue(POLICY_CONFIGS)


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
    if isinstance(config, VerticalLinUCBConfig | VerticalLinTSConfig):
        mask_rng, common["rng"] = rng.spawn(2)
        if isinstance(config, VerticalLinUCBConfig):
            learner = LinUCB(n_arms, dim, alpha=config.alpha, **common)
        else:
            learner = LinTS(n_arms, dim, v=config.v, sampler=config.sampler, **common)
        return VerticalFederatedBandit(
            config.partition,
            learner,
            mask_source=config.mask_source,
            rng=mask_rng,
            secure_aggregation=config.secure_aggregation,
        )
    if isinstance(config, LinUCBConfig):
        return LinUCB(n_arms, dim, alpha=config.alpha, **common)
    if isinstance(config, LinTSConfig):
        return LinTS(n_arms, dim, v=config.v, sampler=config.sampler, **common)
    return EpsilonGreedy(n_arms, dim, epsilon=config.epsilon, **common)
