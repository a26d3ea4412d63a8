"""The privacy filter: a per-user budget composed by PLD, refusing a release past it and changing nothing then."""

from __future__ import annotations

import pytest

from privbandits.privacy.accountant import Release, pld_epsilon
from privbandits.privacy.calibration import analytic_gaussian_std
from privbandits.privacy.filter import BudgetExceeded, PrivacyFilter

DELTA = 1e-5


def test_charges_compose_up_to_the_budget_and_the_next_is_refused_naming_it():
    # σ for which exactly 4 releases compose to ε just under 1 (the analytic Gaussian, a hair more noise)
    release = Release.gaussian(analytic_gaussian_std(1.0, DELTA, 1.0, 4) * 1.001, 1.0)
    budget = PrivacyFilter(1.0, DELTA)
    spent = [budget.charge("alice", release) for _ in range(4)]
    assert spent == sorted(spent) and 0.99 < spent[-1] <= 1.0
    assert spent[-1] == pytest.approx(pld_epsilon([Release.gaussian(release.scale, 1.0, 4)], DELTA), rel=1e-6)
    state = budget.state()
    with pytest.raises(BudgetExceeded, match=r"user_budget_epsilon = 1 .*'alice'.*spent epsilon 0\.99") as refused:
        budget.charge("alice", release)
    assert refused.value.user == "alice" and refused.value.spent == pytest.approx(spent[-1])
    assert refused.value.asked == pytest.approx(pld_epsilon([release], DELTA)) and refused.value.total > 1.0
    assert budget.state() == state and budget.spent("alice") == spent[-1]  # nothing changed
    assert budget.charge("bob", release) == spent[0]  # another user's budget is their own
    assert budget.spent_by_user() == {"alice": spent[-1], "bob": spent[0]}
    assert budget.spent("carol") == 0.0


def test_a_release_that_alone_passes_the_budget_is_refused_and_laplace_composes_too():
    budget = PrivacyFilter(0.5, DELTA, name="report_budget")
    with pytest.raises(BudgetExceeded, match="report_budget"):
        budget.charge("u", Release.laplace(1.0, 1.0))  # ε = 1 > 0.5
    assert budget.state() == {}
    once = budget.charge("u", Release.laplace(4.0, 1.0))  # ε = 1/4 (pure; PLD at δ > 0 a little less)
    assert 0.2 < once <= 0.25 + 1e-3
    assert once < budget.charge("u", [Release.laplace(4.0, 1.0)]) <= 0.5 + 1e-3


def test_state_round_trips_and_bad_state_changes_nothing():
    budget = PrivacyFilter(2.0, DELTA)
    budget.charge("u", [Release.gaussian(3.0, 1.0, 2), Release.laplace(5.0, 1.0)])
    again = PrivacyFilter(2.0, DELTA)
    again.restore(budget.state())
    assert again.spent_by_user() == budget.spent_by_user()
    with pytest.raises(ValueError, match="not a filter's state"):
        again.restore({"u": [["cauchy", 1.0, 1.0, 1]]})
    assert again.spent_by_user() == budget.spent_by_user()


@pytest.mark.parametrize("epsilon, delta", [(0.0, DELTA), (float("inf"), DELTA), (1.0, 0.0), (1.0, 1.0)])
def test_a_budget_must_be_a_budget(epsilon, delta):
    with pytest.raises(ValueError, match="epsilon|delta"):
        PrivacyFilter(epsilon, delta)
