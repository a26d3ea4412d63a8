"""The vertical serving roles without their links: what each refuses (naming the field, the allowed values and the
value given, before anything changes), what the passive party refuses from the active party, and checkpoints that
restore exactly."""

from __future__ import annotations

import numpy as np
import pytest
from vertical_deployment import make_deployment

from privbandits.comm import ProtocolError
from privbandits.deploy.deployment import load_deployment
from privbandits.deploy.vertical.serving import ActiveRole, GeneratorRole, PassiveRole, serving_role
from privbandits.protocols.vertical.core import RoundRequest
from privbandits.serve.decider import DecidedEvent, DecideInput
from privbandits.serve.role import FeaturePut, Refused

# make_deployment: partition [5, 2, 3], 4 arms


@pytest.fixture(scope="module")
def spec(tmp_path_factory):
    return load_deployment(make_deployment(tmp_path_factory.mktemp("vertical"), rounds=20))


def test_each_party_gets_the_role_of_its_kind(spec):
    kinds = {name: type(serving_role(spec, name)) for name in spec.parties}
    assert kinds == {"mask_generator": GeneratorRole, "active": ActiveRole, "passive2": PassiveRole,
                     "passive3": PassiveRole}  # fmt: skip
    assert len({serving_role(spec, name).identity() for name in spec.parties}) == 4


@pytest.mark.parametrize(
    ("request_", "field", "words"),
    [
        (DecideInput("e", "7", np.zeros((4, 4))), "features", "4 rows (one per arm) of 5 numbers"),
        (DecideInput("e", "7", np.zeros((3, 5))), "features", "got 3 rows of 5"),
        (DecideInput("e", "7", np.full((4, 5), np.inf)), "features", "finite"),
        (DecideInput("e", "07", np.zeros((4, 5))), "user_id", "decimal integer in [0, 9223372036854775807]"),
        (DecideInput("e", "alice", np.zeros((4, 5))), "user_id", "got 'alice'"),
        (DecideInput("e", "7", np.zeros((4, 5)), (4,)), "arms[0]", "an arm in [0, 3], got 4"),
        (DecideInput("e", "7", np.zeros((4, 5)), (1, 1)), "arms", "must not repeat"),
    ],
)
def test_the_active_party_refuses_what_it_cannot_decide_before_asking_anyone(spec, request_, field, words):
    active = ActiveRole(spec, "active")
    before = active.checkpoint()
    with pytest.raises(Refused) as refused:
        active.decide(request_)
    assert refused.value.field == field and words in refused.value.message and refused.value.status == 422
    assert active.checkpoint() == before


def test_an_unlinked_active_party_answers_503_naming_the_parties(spec, monkeypatch):
    monkeypatch.setattr("privbandits.deploy.vertical.serving.LINK_WAIT_S", 0.01)
    with pytest.raises(Refused) as refused:
        ActiveRole(spec, "active").decide(DecideInput("e", "7", np.zeros((4, 5))))
    assert (refused.value.field, refused.value.status) == ("parties", 503)


@pytest.mark.parametrize(
    ("put", "field", "words"),
    [
        (FeaturePut("u7", np.zeros((4, 2))), "key", "decimal integer"),
        (FeaturePut("7", np.zeros((4, 3))), "features", "4 rows (one per arm) of 2 numbers"),
        (FeaturePut("7", np.full((4, 2), np.nan)), "features", "finite"),
    ],
)
def test_a_passive_party_refuses_rows_that_are_not_its_block(spec, put, field, words):
    with pytest.raises(Refused) as refused:
        PassiveRole(spec, "passive2").check_put(put, None)
    assert refused.value.field == field and words in refused.value.message


def test_a_passive_party_answers_its_rows_zeros_for_a_user_it_lacks_and_refuses_requests_the_protocol_forbids(spec):
    passive = PassiveRole(spec, "passive2")
    rows = np.arange(8.0).reshape(4, 2)
    passive.apply_put(FeaturePut("7", rows))
    items = np.arange(4)
    np.testing.assert_array_equal(passive._features(RoundRequest(1, 7, items)), rows)
    assert passive._features(RoundRequest(2, 8, items)) is None  # PassiveParty answers zeros
    for request, words in [
        (RoundRequest(2, 7, items), "round 2 after round 2"),
        (RoundRequest(3, 7, np.array([0, 4])), "outside 0..3"),
        (RoundRequest(3, 7, np.array([1, 1])), "repeated"),
        (RoundRequest(3, 7, np.array([0.5])), "integer array"),
        (RoundRequest(3, -1, items), "not a user number"),
    ]:
        with pytest.raises(ProtocolError, match=words):
            passive._features(request)
    assert (passive.answered, passive.unknown) == (2, 1)


def test_checkpoints_restore_exactly(spec):
    passive = PassiveRole(spec, "passive3")
    rng = np.random.default_rng(3)
    for user in (5, 1, 9):
        passive.apply_put(FeaturePut(str(user), rng.normal(size=(4, 3))))
    again = PassiveRole(spec, "passive3")
    again.restore(passive.checkpoint())
    assert again.checkpoint() == passive.checkpoint() and again.model_version == 3
    with pytest.raises(ValueError, match="does not fit"):
        PassiveRole(spec, "passive2").restore(passive.checkpoint())
    active = ActiveRole(spec, "active")
    masked = rng.normal(size=10)
    event = DecidedEvent("e", "7", 2, None, 0, {"masked": masked.tolist(), "mask": "abc"})
    active.absorb(event, 0.5)
    restored = ActiveRole(spec, "active")
    restored.restore(active.checkpoint())
    assert restored.checkpoint() == active.checkpoint() and restored.basis == "abc"
    np.testing.assert_array_equal(restored.learner.theta, active.learner.theta)


def test_the_thompson_propensity_is_the_chosen_arms_share_of_draws():
    from privbandits.deploy.vertical.serving import thompson_propensity
    from privbandits.linear import LinTS

    learner = LinTS(3, 2, v=1.0, layout="shared", tie_break="lowest", rng=0)
    contexts = np.array([[1.0, 0.0], [-1.0, 0.0], [0.0, 0.0]])  # scores μ_1, -μ_1, 0: arm 0 wins half the draws
    rng = np.random.default_rng(1)
    estimate = thompson_propensity(learner, contexts, 0, None, rng, draws=20_000)
    assert abs(estimate - 0.5) < 0.02
    assert (
        thompson_propensity(learner, contexts, 2, None, rng, draws=20_000) < 0.01
    )  # only when μ_1 = 0: never (the one draw counted)
    among = thompson_propensity(learner, contexts, 2, np.array([1, 2]), rng, draws=20_000)  # 2 beats 1 when μ_1 > 0
    assert abs(among - 0.5) < 0.02


def test_serving_a_party_without_its_bundle_is_one_line_and_exit_2(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from privbandits.cli import app

    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["serve", "vertical-vfucb", "--as", "active"])
    assert result.exit_code == 2
    assert "error: bundles (active/ca.pem): CA certificate" in result.output and "does not exist" in result.output
