"""Per-user budgets while serving: a decision past its user's budget is refused (403, naming user_budget_epsilon)
and changes nothing; the ledger shows what each user spent; a restart keeps it."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import TIMEOUT_S, Clock, learner
from starlette.testclient import TestClient

from privbandits.privacy.accountant import Release, pld_epsilon
from privbandits.privacy.calibration import analytic_gaussian_std
from privbandits.serve.app import ApiLimits, build_app
from privbandits.serve.auth import TokenSet, new_token, token_hash
from privbandits.serve.budget import BudgetError, with_user_budget
from privbandits.serve.reference import ReferenceDecider
from privbandits.serve.service import DecisionService, ServiceOptions
from privbandits.serve.settings import parse_reference

DELTA = 1e-5
STD = analytic_gaussian_std(1.0, DELTA, 1.0, 3) * 1.001  # three decisions compose to just under ε = 1
ROWS = [[0.5, 0.1], [0.2, 0.9], [0.3, 0.3]]


def _open(path: Path, checkpoint_every: int = 100) -> DecisionService:
    decider = with_user_budget(ReferenceDecider(learner(charged_std=STD)), 1.0, DELTA)
    options = ServiceOptions(reward_timeout_s=TIMEOUT_S, checkpoint_every=checkpoint_every)
    return DecisionService.open(decider, path, options, clock=Clock())


def _client(service: DecisionService) -> TestClient:
    token = new_token()
    service.store.add_token(f"app{service.store.last_seq}", token_hash(token))
    app = build_app(service, lambda: TokenSet(service.store.token_hashes()), ApiLimits(max_body_bytes=4096))
    return TestClient(app, headers={"Authorization": f"Bearer {token}"}, raise_server_exceptions=False)


def _decide(client: TestClient, event: str, user: str):
    return client.post("/v1/decide", json={"event_id": event, "user_id": user, "features": ROWS})


def _snapshot(service: DecisionService) -> tuple:
    rows = service.store._db.execute("SELECT * FROM events ORDER BY event_id").fetchall()
    return service.decider.checkpoint(), service.store.last_seq, rows, service.open_events


@pytest.mark.parametrize("checkpoint_every", [1, 100])
def test_a_decision_past_the_budget_is_refused_and_changes_nothing(tmp_path, checkpoint_every):
    service = _open(tmp_path / "s.sqlite", checkpoint_every)
    with _client(service) as client:
        for i in range(3):
            assert _decide(client, f"a{i}", "alice").status_code == 200
            assert client.post("/v1/reward", json={"event_id": f"a{i}", "reward": 1.0}).status_code == 200
        assert _decide(client, "a0", "alice").status_code == 200  # a repeat is answered, not charged again
        before = _snapshot(service)
        refused = _decide(client, "a3", "alice")
        assert refused.status_code == 403
        error = refused.json()["error"]
        assert error["field"] == "user_budget_epsilon"
        assert "'alice'" in error["message"] and "spent epsilon 0.99" in error["message"]
        assert _snapshot(service) == before  # nothing changed: no event, no charge, no journal entry
        assert _decide(client, "b0", "bob").status_code == 200  # bob's budget is his own
        spent = client.get("/v1/ledger").json()["learner"]["user_budget"]
        three = pld_epsilon([Release.gaussian(STD, 1.0, 3)], DELTA)
        assert spent["epsilon"] == 1.0 and spent["delta"] == DELTA
        one = pld_epsilon([Release.gaussian(STD, 1.0)], DELTA)
        assert spent["spent"] == pytest.approx({"alice": three, "bob": one})
        assert 0.99 < three <= 1.0
        largest = spent["spent"]["alice"]
        assert f'privacy_spent{{parameter="user_epsilon_max"}} {largest!r}' in client.get("/metrics").text
    service.close()
    again = _open(tmp_path / "s.sqlite", checkpoint_every)  # a restart keeps what each user spent
    assert again.decider.ledger()["user_budget"]["spent"] == spent["spent"]
    with _client(again) as client:
        assert _decide(client, "a4", "alice").status_code == 403
    again.close()


def test_a_budget_needs_a_decider_that_releases_per_user(tmp_path):
    with pytest.raises(BudgetError, match="user_budget_epsilon: .*reference-linucb.* releases nothing per user"):
        with_user_budget(ReferenceDecider(learner()), 1.0, DELTA)
    plain = ReferenceDecider(learner())
    assert with_user_budget(plain, None, DELTA) is plain


def test_a_store_written_under_another_budget_is_refused(tmp_path):
    from privbandits.serve.store import StoreError

    _open(tmp_path / "s.sqlite").close()
    other = with_user_budget(ReferenceDecider(learner(charged_std=STD)), 2.0, DELTA)
    with pytest.raises(StoreError):
        DecisionService.open(other, tmp_path / "s.sqlite", ServiceOptions())


def test_the_options_are_declared_in_the_service_table(tmp_path):
    data = {"name": "dev", "service": {"user_budget_epsilon": 2.5, "user_budget_delta": 1e-6},
            "learner": {"n_arms": 3, "dim": 2, "charged_std": 4.0}}  # fmt: skip
    parsed = parse_reference(data, tmp_path)
    assert (parsed.service.user_budget_epsilon, parsed.service.user_budget_delta) == (2.5, 1e-6)
    default = parse_reference({"name": "dev", "learner": {"n_arms": 3, "dim": 2}}, tmp_path)
    assert default.service.user_budget_epsilon is None  # off by default
    identity = ReferenceDecider(learner()).identity()  # no charged_std: the identity stores always had
    assert identity == ReferenceDecider(learner(charged_std=None)).identity() != ReferenceDecider(
        learner(charged_std=1.0)).identity()  # fmt: skip


def test_the_command_line_refuses_a_budget_its_party_cannot_keep(tmp_path):
    import typer

    from privbandits.serve.budget import BudgetedDecider
    from privbandits.serve.cli import load_served

    service = "[service]\nuser_budget_epsilon = 1.0\n"
    path = tmp_path / "dev.toml"
    path.write_text(f'name = "dev"\n{service}[learner]\nn_arms = 3\ndim = 2\ncharged_std = 4.0\n')
    assert isinstance(load_served(path, None).decider, BudgetedDecider)
    path.write_text(f'name = "dev"\n{service}[learner]\nn_arms = 3\ndim = 2\n')
    with pytest.raises(typer.Exit) as exited:
        load_served(path, None)
    assert exited.value.exit_code == 2


def test_a_budgeted_decider_prepares_its_inner_decider_for_the_users_its_budgets_admit():
    """A group's decisions are batched by the inner decider as without budgets, less those already past theirs."""
    import numpy as np

    from privbandits.serve.decider import DecideInput

    inner = ReferenceDecider(learner(charged_std=STD))
    prepared: list = []
    inner.prepare = prepared.extend  # type: ignore[method-assign]
    budgeted = with_user_budget(inner, 1.0, DELTA)
    features = np.asarray(ROWS)
    for i in range(3):
        budgeted.decide(DecideInput(f"a{i}", "alice", features))
    group = [DecideInput("a3", "alice", features), DecideInput("b0", "bob", features)]
    budgeted.prepare(group)
    assert [request.event_id for request in prepared] == ["b0"]
