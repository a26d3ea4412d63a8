"""Bad input never corrupts the vertical O3M protocol and always gets a clear error (issue 14).

Each refused call on the protocol (``select``, ``update``, the active party's own steps), with its exact message, the
state it leaves unchanged and the twin it then plays as, is in the refused-calls suite
(tests/protocols/test_refused_calls_keep_state.py); here, construction and the cases particular to secure aggregation.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from bad_input import rejects
from vertical_rounds import PARTITION, D, K, _nan_in_passive, contexts, play, protocol, state

from privbandits.linear import LinUCB
from privbandits.protocols.vertical.core import (
    SingleFeaturePartyWarning,
    VerticalFederatedBandit,
    from_fixed_point,
    to_fixed_point,
)

NAN, INF = float("nan"), float("inf")


# -- construction ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("make", "name"),
    [
        (lambda: VerticalFederatedBandit([5.9, 20.9, 12.9], LinUCB(K, 37)), "partition"),
        (lambda: VerticalFederatedBandit([5.5, 20, 11.5], LinUCB(K, 37)), "[5.5, 20, 11.5]"),
        (lambda: VerticalFederatedBandit([3.0, 4.0], LinUCB(K, 7)), "partition"),
        (lambda: VerticalFederatedBandit([True, 6], LinUCB(K, 7)), "partition"),
        (lambda: VerticalFederatedBandit("34", LinUCB(K, 7)), "partition"),
        (lambda: VerticalFederatedBandit([3, 0, 4], LinUCB(K, 7)), "partition"),
        (lambda: VerticalFederatedBandit([3, 4], "linucb"), "learner"),
        (lambda: VerticalFederatedBandit([3, 4], LinUCB(K, 7), secure_aggregation=1), "secure_aggregation"),
        (lambda: VerticalFederatedBandit([3, 4], LinUCB(K, 7), mask_source="urandom"), "mask_source"),
        (lambda: VerticalFederatedBandit([3, 4], LinUCB(K, 7), rng=3), "rng"),
        (lambda: VerticalFederatedBandit([3, 4], LinUCB(K, 8)), "partition"),
    ],
)
def test_construction_refuses_bad_parameters(make, name):
    rejects(make, name, ValueError)


def test_a_one_feature_passive_party_warns_unless_allowed():
    with pytest.warns(SingleFeaturePartyWarning, match="recovers up to sign"):
        VerticalFederatedBandit([5, 1, 2], LinUCB(K, 8), rng=np.random.default_rng(0))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        VerticalFederatedBandit(
            [5, 1, 2], LinUCB(K, 8), rng=np.random.default_rng(0), allow_single_feature_parties=True
        )
        VerticalFederatedBandit([1, 5, 2], LinUCB(K, 8), rng=np.random.default_rng(0))  # the AP's own block


# -- rounds (the refused calls themselves: the refused-calls suite) --------------------------------
def test_nan_features_under_secure_aggregation_are_refused_not_learnt():
    """The issue's case: NaN became a context of about -8.4e6 that the AP picked and learnt."""
    vf = protocol(secure=True)
    play(vf, range(2))
    theta = vf.theta.copy()
    rejects(lambda: vf.select(_nan_in_passive(contexts(2))), "contexts")
    np.testing.assert_array_equal(vf.theta, theta)
    assert np.abs(vf.active.learner.stats.A_inv).max() <= 1.0


@pytest.mark.parametrize("column", [PARTITION[0], D - 1])  # the first passive party's feature, or the last one's
def test_a_context_too_large_for_secure_aggregation_is_refused_before_any_party_acts(column):
    """The issue's case: the first passive party refused half-way, the second kept a request pending and the round
    counter moved, so 172 of 200 later decisions differed from the twin's. Now: refused first, nothing sent, and
    the learner decides as its twin (and as central LinUCB) for 200 rounds."""
    vf, twin, central = protocol(True), protocol(True), LinUCB(K, D, alpha=0.5)
    play(vf, range(3))
    play(twin, range(3))
    play(central, range(3))
    before, rows = state(vf), vf.traffic.rows()
    big = contexts(3)
    big[1, column] = 5e6  # past 2^22 = 4.19e6, the fixed-point range of a masked value
    message = rejects(lambda: vf.select(big), "contexts")
    assert "2^22" in message and "got 5e+06 for item 1" in message
    assert state(vf) == before
    assert vf.traffic.rows() == rows
    arms = play(vf, range(3, 203))
    assert arms == play(twin, range(3, 203)) == play(central, range(3, 203))


def test_contexts_just_inside_the_secure_aggregation_range_are_served():
    vf = protocol(True)
    near = contexts(0) * 0
    near[0, PARTITION[0]], near[0, D - 1] = 2.0e6, 2.0e6  # Σ_j ‖x^j‖ = 4e6 < 2^22
    vf.update(near, vf.select(near), 1.0)


def test_update_accepts_an_equal_copy_of_the_selected_contexts():
    vf = protocol()
    c = contexts(0)
    vf.update(c.copy(), vf.select(c), 1.0)


@pytest.mark.parametrize("values", [np.array([0.5, NAN]), np.array([INF]), np.array([-1e20]), np.array([2.0**22])])
def test_to_fixed_point_refuses_what_it_cannot_represent(values):
    message = rejects(lambda: to_fixed_point(values), "values")
    assert "2^22" in message  # the limit
    assert "NaN" in message or "|x| up to" in message  # the size given


def test_to_fixed_point_still_round_trips():
    values = np.array([[-3.25, 0.0, 1e-9]])
    np.testing.assert_allclose(from_fixed_point(to_fixed_point(values)), values, atol=2.0**-40)
