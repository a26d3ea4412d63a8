"""The experiments' learner kinds and private learners: each DP kind builds its own learner (never silently the
shuffle model), the learners that measure their privacy are exactly the :class:`PrivateLearner` ones, and a
learner's traffic is reported where it is a :class:`NetworkedLearner`."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from privbandits.experiments.adapters import PolicyLearner, PrivateLearner, private_metrics, traffic_of
from privbandits.experiments.config import LinearGaussianEnvConfig
from privbandits.experiments.registry import POLICY_KINDS
from privbandits.experiments.sources import build_source
from privbandits.linear import EpsilonGreedy, LinTS, LinUCB
from privbandits.protocols.dp import JointDPLinUCB, LocalDPLinUCB, ShuffleDPLinUCB
from privbandits.protocols.fclub.baselines import LocalBaselineBandit
from privbandits.protocols.fclub.driver import FederatedClusteredBandit
from privbandits.protocols.mpc_bandit import PlaintextEpsilonGreedy, PrivateEpsilonGreedy
from privbandits.protocols.vertical.core import VerticalFederatedBandit


def test_each_dp_kind_builds_its_own_learner_and_another_kind_is_refused_naming_the_kinds():
    """Each DP kind's config names its learner (no lookup that could fall back to another); an unknown kind is
    refused by the registry, naming the registered kinds."""
    import numpy as np

    source = build_source(LinearGaussianEnvConfig(kind="linear_gaussian", dim=3, n_arms=4))
    kinds = ("joint_dp_linucb", "local_dp_linucb", "shuffle_dp_linucb")
    learners = [POLICY_KINDS.validate({"kind": kind}).learner(source, 10, np.random.SeedSequence(0)) for kind in kinds]
    assert [type(learner.policy) for learner in learners] == [JointDPLinUCB, LocalDPLinUCB, ShuffleDPLinUCB]
    assert {learner.policy.horizon for learner in learners} == {10}
    with pytest.raises(ValidationError, match=r"Input tag 'central_dp_linucb' .* expected tags: .*'shuffle_dp_linucb'"):
        POLICY_KINDS.validate({"kind": "central_dp_linucb"})


def test_the_private_learners_and_only_they_are_private_learners():
    private = [JointDPLinUCB, LocalDPLinUCB, ShuffleDPLinUCB, FederatedClusteredBandit, PrivateEpsilonGreedy]
    plain = [LinUCB, LinTS, EpsilonGreedy, VerticalFederatedBandit, LocalBaselineBandit, PlaintextEpsilonGreedy]
    assert [issubclass(kind, PrivateLearner) for kind in private + plain] == [True] * 5 + [False] * 6


def test_an_adapter_reports_a_private_learner_s_metrics_and_nothing_for_another():
    import numpy as np

    dp = JointDPLinUCB(3, 2, horizon=10, epsilon=1.0, delta=0.1, rng=np.random.default_rng(0))
    assert PolicyLearner(dp).metrics() == dp.privacy_metrics() == private_metrics(dp)
    assert set(dp.privacy_metrics()) >= {"claimed_epsilon", "claimed_delta", "noise_std"}
    assert PolicyLearner(LinUCB(3, 2)).metrics() == {} == private_metrics(LinUCB(3, 2))


def test_a_learner_whose_parties_exchange_messages_reports_its_traffic_and_another_none():
    import numpy as np

    vertical = VerticalFederatedBandit([2, 2], LinUCB(3, 4), rng=np.random.default_rng(0))
    arm = vertical.select(np.random.default_rng(1).normal(size=(3, 4)))
    assert 0 <= arm < 3 and traffic_of(vertical) is vertical.network.traffic is PolicyLearner(vertical).traffic
    assert traffic_of(vertical).total().messages > 0
    assert traffic_of(LinUCB(3, 4)) is None and PolicyLearner(LinUCB(3, 4)).traffic is None
