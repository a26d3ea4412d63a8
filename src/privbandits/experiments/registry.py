"""Build round sources and learners from validated configs; list what is available."""

from __future__ import annotations

import numpy as np

from privbandits.experiments.adapters import PolicyLearner, StepLearner, UserLearner
from privbandits.experiments.config import (
    ENVIRONMENT_CONFIGS,
    POLICY_CONFIGS,
    EnvConfig,
    FCLUBPolicyConfig,
    LinTSConfig,
    LinUCBConfig,
    MPCEpsilonGreedyConfig,
    PlaintextMPCEpsilonGreedyConfig,
    PolicyConfig,
    RandomPolicyConfig,
    VerticalLinTSConfig,
    VerticalLinUCBConfig,
    _DPLinUCBBase,
    _LocalBaselineBase,
    by_kind,
)
from privbandits.experiments.sources import EnvironmentSource, ReplaySource, build_source


def _catalogue(models) -> dict[str, tuple[type, str]]:
    """``kind -> (config class, first line of its docstring)``."""
    return {kind: (model, model.__doc__.strip().splitlines()[0]) for kind, model in by_kind(models).items()}


ENVIRONMENTS = _catalogue(ENVIRONMENT_CONFIGS)
POLICIES = _catalogue(POLICY_CONFIGS)


def build_environment(config: EnvConfig):
    """A fresh environment (stream environments) for one run (call ``reset`` before use)."""
    source = build_source(config)
    return source.env if isinstance(source, EnvironmentSource) else source


def build_policy(config: PolicyConfig, n_arms: int, dim: int, rng: np.random.Generator):
    """A fresh plaintext or vertical policy for ``n_arms`` arms on ``dim``-dimensional contexts."""
    from privbandits.linear import EpsilonGreedy, LinTS, LinUCB, UniformRandom
    from privbandits.protocols.vertical import VerticalFederatedBandit

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


def build_learner(
    config: PolicyConfig,
    source: EnvironmentSource | ReplaySource,
    horizon: int,
    seed: np.random.SeedSequence,
) -> PolicyLearner | UserLearner | StepLearner:
    """The learner of one run behind the runner's contract (:mod:`~privbandits.experiments.adapters`).

    ``seed`` is the run's policy stream: plaintext and vertical policies and FCLUB draw
    from ``default_rng(seed)``; the MPC learners derive their engine and exploration
    streams from it, so the private learner and its twin share their exploration draws.
    """
    rng = np.random.default_rng(seed)
    if isinstance(config, FCLUBPolicyConfig):
        from privbandits.protocols.fclub.driver import FederatedClusteredBandit

        protocol = config.protocol_config(horizon)
        return UserLearner(
            FederatedClusteredBandit(protocol, source.server_of_user, source.dim, source.n_arms, rng=rng)
        )
    if isinstance(config, _LocalBaselineBase):
        from privbandits.protocols.fclub_baselines import LocalBaselineBandit

        return UserLearner(LocalBaselineBandit(config.protocol_config(horizon), source.server_of_user, source.dim, rng))
    if isinstance(config, PlaintextMPCEpsilonGreedyConfig):
        from privbandits.protocols.mpc_bandit import PlaintextEpsilonGreedy, PrivateEpsilonGreedy

        protocol = config.protocol_config(source.n_arms, source.dim)
        if isinstance(config, MPCEpsilonGreedyConfig):
            return StepLearner(PrivateEpsilonGreedy(protocol, seed=seed), source.reward)
        return StepLearner(PlaintextEpsilonGreedy(protocol, seed=seed), source.reward)
    if isinstance(config, _DPLinUCBBase):
        from privbandits.protocols import dp

        learner = {"joint_dp_linucb": dp.JointDPLinUCB, "local_dp_linucb": dp.LocalDPLinUCB}.get(
            config.kind, dp.ShuffleDPLinUCB
        )
        options = config.policy_options()
        return PolicyLearner(learner(source.n_arms, source.dim, horizon=horizon, rng=rng, **options))
    visible = config.visible_features
    return PolicyLearner(build_policy(config, source.n_arms, visible or source.dim, rng), visible)
