"""Build each run's learner from its validated policy config (plaintext, vertical, FCLUB, MPC, DP baselines)."""

from __future__ import annotations

import numpy as np

from privbandits.experiments.adapters import PolicyLearner, StepLearner, UserLearner
from privbandits.experiments.config import (
    EpsilonGreedyConfig,
    FCLUBPolicyConfig,
    LinTSConfig,
    LinUCBConfig,
    MPCEpsilonGreedyConfig,
    P2BPolicyConfig,
    PlaintextMPCEpsilonGreedyConfig,
    PolicyConfig,
    RandomPolicyConfig,
    VerticalLinTSConfig,
    VerticalLinUCBConfig,
    _DPLinUCBBase,
    _LocalBaselineBase,
)
from privbandits.experiments.sources import EnvironmentSource, ReplaySource
from privbandits.validation import InvalidInputError

StreamPolicyConfig = LinUCBConfig | LinTSConfig | EpsilonGreedyConfig | RandomPolicyConfig
"""The policies :func:`build_policy` builds (the vertical ones are LinUCB and LinTS subclasses)."""


def build_policy(config: StreamPolicyConfig, n_arms: int, dim: int, rng: np.random.Generator):
    """A fresh plaintext or vertical policy for ``n_arms`` arms on ``dim``-dimensional contexts."""
    from privbandits.linear import EpsilonGreedy, LinTS, LinUCB, UniformRandom
    from privbandits.protocols.vertical.core import VerticalFederatedBandit

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
    if isinstance(config, FCLUBPolicyConfig | _LocalBaselineBase):
        return _user_learner(config, source, horizon, rng)
    if isinstance(config, PlaintextMPCEpsilonGreedyConfig):
        from privbandits.protocols.mpc_bandit import PlaintextEpsilonGreedy, PrivateEpsilonGreedy

        # incompatibility() refuses the MPC learners on replay, the only source without reward()
        assert isinstance(source, EnvironmentSource), "MPC learners run on environments, not replay"
        protocol = config.protocol_config(source.n_arms, source.dim)
        if isinstance(config, MPCEpsilonGreedyConfig):
            return StepLearner(PrivateEpsilonGreedy(protocol, seed=seed), source.reward)
        return StepLearner(PlaintextEpsilonGreedy(protocol, seed=seed), source.reward)
    if isinstance(config, _DPLinUCBBase):
        learner = dp_learner(config.kind)
        options = config.policy_options()
        return PolicyLearner(learner(source.n_arms, source.dim, horizon=horizon, rng=rng, **options))
    # population (P2B) runs never get here: the runner sends them to _run_population
    assert not isinstance(config, P2BPolicyConfig), "P2B runs on populations, not streams"
    visible = config.visible_features
    return PolicyLearner(build_policy(config, source.n_arms, visible or source.dim, rng), visible)


def dp_learner(kind: str) -> type:
    """The DP LinUCB baseline class of policy kind ``kind``; :class:`InvalidInputError` naming the known kinds
    for any other (a new DP config kind needs its learner here, not a silent fallback)."""
    from privbandits.protocols import dp

    learners = {
        "joint_dp_linucb": dp.JointDPLinUCB,
        "local_dp_linucb": dp.LocalDPLinUCB,
        "shuffle_dp_linucb": dp.ShuffleDPLinUCB,
    }
    if kind not in learners:
        raise InvalidInputError(f"kind: must be one of {', '.join(learners)} for a DP LinUCB policy, got {kind!r}")
    return learners[kind]


def _user_learner(
    config: FCLUBPolicyConfig | _LocalBaselineBase,
    source: EnvironmentSource | ReplaySource,
    horizon: int,
    rng: np.random.Generator,
) -> UserLearner:
    """FCLUB or a local-server baseline; incompatibility() admits them only on environments with users."""
    server_of_user = source.server_of_user
    assert server_of_user is not None, "user learners need an environment with users"
    if isinstance(config, FCLUBPolicyConfig):
        from privbandits.protocols.fclub.driver import FederatedClusteredBandit

        protocol = config.protocol_config(horizon)
        return UserLearner(FederatedClusteredBandit(protocol, server_of_user, source.dim, source.n_arms, rng=rng))
    from privbandits.protocols.fclub.baselines import LocalBaselineBandit

    return UserLearner(LocalBaselineBandit(config.protocol_config(horizon), server_of_user, source.dim, rng))
