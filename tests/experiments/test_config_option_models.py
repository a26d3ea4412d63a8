"""The experiment config's MPC, P2B and DP kinds take their protocol's options from its declaration (issue 45): the
typed option models of the generated snapshot hold every declared option but those a run sets, with the declared
types, bounds, defaults and descriptions, and each option set in a config reaches the protocol or learner built
from it, so no option is copied, or dropped, by hand."""

from __future__ import annotations

import typing
from enum import Enum

import numpy as np
import pytest

from privbandits.declared import DPLinUCBOptions, MPCBanditOptions, P2BOptions
from privbandits.experiments.config import (
    JointDPLinUCBConfig,
    LinearGaussianEnvConfig,
    MPCEpsilonGreedyConfig,
    P2BPolicyConfig,
    PlaintextMPCEpsilonGreedyConfig,
    ShuffleDPLinUCBConfig,
)
from privbandits.experiments.config_snapshot import annotation
from privbandits.experiments.sources import build_source
from privbandits.options import REQUIRED, options_of
from privbandits.protocols.dp import PrivateLinUCB, ShuffleDPLinUCB
from privbandits.protocols.mpc_bandit import MPCBanditConfig
from privbandits.protocols.p2b import P2BConfig
from privbandits.validation import Boolean, Choice, Integer, IntegerSequence, NoneOr, Real, Text

MODELS = [
    (MPCBanditOptions, MPCBanditConfig, {"n_arms", "partition"}),
    (P2BOptions, P2BConfig, set()),
    (DPLinUCBOptions, PrivateLinUCB, {"n_arms", "dim", "horizon", "ledger"}),
]


def _plain(value: object) -> object:
    return value.value if isinstance(value, Enum) else value


def _choices(choice: Choice) -> set[object]:
    options = choice.options
    return {_plain(value) for value in options} if isinstance(options, type) else set(options)


@pytest.mark.parametrize(("model", "declarer", "left_out"), MODELS, ids=[m.__name__ for m, _, _ in MODELS])
def test_an_option_model_is_every_declared_option_but_those_a_run_sets(model, declarer, left_out):
    declared = options_of(declarer)
    assert list(model.model_fields) == [name for name in declared if name not in left_out]
    for name, info in model.model_fields.items():
        option = declared[name]
        assert info.description == option.doc
        assert info.is_required() if option.required else _plain(info.default) == _plain(option.default)
        choices = typing.get_args(info.annotation) if typing.get_origin(info.annotation) is typing.Literal else None
        if isinstance(option.constraint, Choice):
            assert set(choices or ()) == _choices(option.constraint)


def test_an_annotation_is_written_from_its_constraint_and_a_sequence_is_refused():
    assert annotation(Choice(("a", "b"))) == "Literal['a', 'b']"
    assert annotation(NoneOr(Real(low=0))) == "float | None"
    assert [annotation(c) for c in (Boolean(), Integer(), Text())] == ["bool", "int", "str"]
    with pytest.raises(TypeError, match="no field type for the constraint IntegerSequence"):
        annotation(IntegerSequence(low=0))


def test_the_experiment_kinds_hold_their_option_models_with_the_configs_own_defaults():
    assert set(MPCBanditOptions.model_fields) <= set(MPCEpsilonGreedyConfig.model_fields)
    assert set(P2BOptions.model_fields) <= set(P2BPolicyConfig.model_fields)
    assert set(DPLinUCBOptions.model_fields) | {"batch_size"} <= set(ShuffleDPLinUCBConfig.model_fields)
    dp = JointDPLinUCBConfig(kind="joint_dp_linucb")
    assert (dp.epsilon, dp.delta) == (1.0, 1e-5)  # the config's defaults: the learners have none
    assert options_of(PrivateLinUCB)["epsilon"].default is REQUIRED
    batch = options_of(ShuffleDPLinUCB)["batch_size"].default
    assert ShuffleDPLinUCBConfig(kind="shuffle_dp_linucb").batch_size == batch == 100


def test_every_p2b_option_set_in_a_config_reaches_the_protocol():
    changed = dict(participation=0.3, negative_rate=0.2, threshold=4, alpha=0.7, early_fraction=0.6,
                   representation="scalar_code", shared_warm_agent=True, tie_break="lowest", omega=0.5)  # fmt: skip
    assert set(changed) == set(P2BOptions.model_fields)
    defaults = P2BConfig()
    assert all(getattr(defaults, name) != value for name, value in changed.items())
    protocol = P2BPolicyConfig(kind="p2b", **changed).protocol_config()
    assert {name: _plain(getattr(protocol, name)) for name in changed} == changed


def test_every_mpc_option_set_in_a_config_reaches_the_protocol_and_the_twin_takes_its_own():
    changed = dict(epsilon=0.2, precision=16, nr_iterations=3, reciprocal_start="linear", truncation="exact",
                   puller="p0", rewarder="p1", binary_rewards=False, mask_encoding="fixed_point",
                   allmax_lookup=True, goldschmidt=True, dealt_exploration=True, fused_input=True)  # fmt: skip
    defaults = MPCBanditConfig()
    assert all(getattr(defaults, name) != value for name, value in changed.items())
    protocol = MPCEpsilonGreedyConfig(kind="mpc_epsilon_greedy", partition=[2, 1, 1], **changed).protocol_config(5, 4)
    assert {name: _plain(getattr(protocol, name)) for name in changed} == changed
    assert (protocol.n_arms, protocol.partition) == (5, (2, 1, 1))
    twin = PlaintextMPCEpsilonGreedyConfig(kind="plaintext_mpc_epsilon_greedy", epsilon=0.2, precision=16)
    assert twin.protocol_config(5, 4) == MPCBanditConfig(n_arms=5, partition=(4, 0), epsilon=0.2, precision=16)


def test_every_dp_option_set_in_a_config_reaches_the_learner():
    changed = dict(epsilon=3.0, delta=1e-3, alpha=0.4, reg=2.0, failure_probability=0.2, shift_regularizer=False,
                   tie_break="random", tie_tolerance=1e-6, calibration="analytic", batch_size=7)  # fmt: skip
    assert set(changed) - {"batch_size"} == set(DPLinUCBOptions.model_fields)
    config = ShuffleDPLinUCBConfig(kind="shuffle_dp_linucb", **changed)
    source = build_source(LinearGaussianEnvConfig(kind="linear_gaussian", dim=3, n_arms=4))
    learner = config.learner(source, 20, np.random.SeedSequence(0)).policy
    got = {name: _plain(getattr(learner, name)) for name in changed if name != "calibration"}
    assert got | {"calibration": _plain(learner.noise_calibration)} == changed
    assert (learner.n_arms, learner.dim, learner.horizon) == (4, 3, 20)
