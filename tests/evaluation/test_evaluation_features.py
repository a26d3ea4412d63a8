"""A DP LinUCB learner as the target policy (evaluation/features.py): its per-arm contexts, its scores computed by
blocks against the direct sum, its probabilities one-hot on what it would select; and a reward model fitted on other
rounds (what DP-DR needs)."""

from __future__ import annotations

import numpy as np
import pytest

from privbandits.evaluation import policy_probabilities, ridge_reward_model, train_on_log
from privbandits.evaluation.features import PerArmPolicy, per_arm_dim
from privbandits.logs import synthetic_feedback
from privbandits.protocols.dp import JointDPLinUCB, LocalDPLinUCB
from privbandits.validation import InvalidInputError

LOG = synthetic_feedback(300, 4, 3, action_dim=5, reward_type="logistic", seed=1)
TRAIN, TEST = LOG.take(slice(0, 150)), LOG.take(slice(150, 300))


def policy(descriptor=None, kind=JointDPLinUCB, **options) -> PerArmPolicy:
    dim = per_arm_dim(LOG.action_context, LOG.dim, descriptor)
    learner = kind(4, dim, epsilon=2.0, delta=1e-5, horizon=150, rng=0, **options)
    wrapped = PerArmPolicy(learner, LOG.action_context, descriptor)
    train_on_log(wrapped, TRAIN, replay=False)
    return wrapped


def test_the_per_arm_context_is_the_action_features_then_their_products_with_the_context():
    wrapped = policy(slice(1, 3))
    x = TEST.context[0]
    phi = wrapped.contexts(x)
    assert phi.shape == (4, 5 + 2 * 3) and wrapped.learner.dim == 11
    for a in range(4):
        c = LOG.action_context[a]
        assert np.array_equal(phi[a], np.concatenate([c, np.outer(c[1:3], x).ravel()]))
    one_hot = PerArmPolicy(JointDPLinUCB(4, 4 + 12, epsilon=1.0, delta=1e-5, horizon=5), None)
    assert np.array_equal(one_hot.contexts(x)[2], np.concatenate([np.eye(4)[2], np.outer(np.eye(4)[2], x).ravel()]))


@pytest.mark.parametrize(("descriptor", "kind"), [(None, JointDPLinUCB), (slice(0, 2), LocalDPLinUCB)])
def test_scores_by_blocks_equal_the_direct_ucb_and_pick_what_the_learner_selects(descriptor, kind):
    wrapped = policy(descriptor, kind, alpha=0.7)
    learner = wrapped.learner
    phi = wrapped.batch(TEST.context)
    direct = phi @ learner.theta + 0.7 * np.sqrt(np.einsum("rad,de,rae->ra", phi, learner.A_inv, phi))
    assert np.allclose(wrapped.scores(TEST.context), direct, rtol=1e-10, atol=1e-12)
    pi = policy_probabilities(wrapped, TEST)
    assert set(np.unique(pi)) == {0.0, 1.0}
    assert [int(row.argmax()) for row in pi[:40]] == [wrapped.select(x) for x in TEST.context[:40]]


def test_the_learner_records_its_own_release_in_the_ledger():
    wrapped = policy()
    (entry,) = wrapped.learner.ledger.entries
    assert entry.mechanism == "dp_linucb.joint.tree" and entry.epsilon == 2.0


def test_a_reward_model_fitted_on_other_rounds_predicts_on_these():
    q_hat = ridge_reward_model(TEST, fit_on=TRAIN)
    assert q_hat.shape == (150, 4)
    assert not np.allclose(q_hat, ridge_reward_model(TEST))  # fitted on other records
    assert np.allclose(ridge_reward_model(TRAIN, fit_on=TRAIN), ridge_reward_model(TRAIN))


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: PerArmPolicy(object(), None), "PerArmPolicy: learner must be a PrivateLinUCB, got object"),
        (lambda: PerArmPolicy(JointDPLinUCB(4, 10, epsilon=1.0, delta=1e-5, horizon=5), np.ones((3, 2))),
         "PerArmPolicy: action_context must have one row per arm (4), got shape (3, 2)"),
        (lambda: PerArmPolicy(JointDPLinUCB(4, 10, epsilon=1.0, delta=1e-5, horizon=5), None),
         "PerArmPolicy: learner.dim must be d_a + |S|·d = 4 + 4·d, got 10"),
        (lambda: per_arm_dim(np.ones((4, 3)), 2, ["a"]), "descriptor must be None, a slice or column indices"),
        (lambda: per_arm_dim(np.ones((4, 3)), 2, slice(3, 5)), "descriptor must select some of action_context's 3"),
        (lambda: policy_probabilities(PerArmPolicy(JointDPLinUCB(4, 5 + 10, epsilon=1.0, delta=1e-5, horizon=5),
                                                   LOG.action_context, [0, 1]), TEST),
         "policy_probabilities: the learner's per-arm contexts need a context of width 5, the log's is 3"),
        (lambda: ridge_reward_model(TEST, fit_on=TEST.take([0, 1]).__class__(
            n_rounds=2, n_actions=4, context=np.zeros((2, 1)), action=[0, 1], reward=[0, 1], pscore=[1, 1])),
         "ridge_reward_model: fit_on must have the log's n_actions and context width (4, 3), got (4, 1)"),
    ],
)  # fmt: skip
def test_bad_input_is_refused_in_one_line(call, message):
    with pytest.raises(InvalidInputError) as caught:
        call()
    assert str(caught.value).startswith(message)
