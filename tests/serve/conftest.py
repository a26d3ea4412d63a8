"""Fixtures of the serving tests: a reference service in process, its clock under the test's control."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from privbandits.serve.app import ApiLimits, build_app
from privbandits.serve.auth import TokenSet, new_token, token_hash
from privbandits.serve.reference import ReferenceDecider, ReferenceLearner
from privbandits.serve.service import DecisionService, ServiceOptions

TIMEOUT_S = 60.0


class Clock:
    """A clock the test moves."""

    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Served:
    client: TestClient
    service: DecisionService
    clock: Clock
    token: str
    path: Path

    def snapshot(self) -> tuple:
        """Everything a refused request must leave unchanged: the learner's bytes, the journal, the events."""
        service = self.service
        rows = service.store._db.execute("SELECT * FROM events ORDER BY event_id").fetchall()
        return service.decider.checkpoint(), service.store.last_seq, rows, service.open_events


def learner(policy: str = "linucb", **options) -> ReferenceLearner:
    settings = {"n_arms": 3, "dim": 2, "policy": policy, "seed": 5} | options
    return ReferenceLearner.model_validate(settings)


def open_service(path: Path, settings: ReferenceLearner, clock: Clock, checkpoint_every: int = 100) -> DecisionService:
    options = ServiceOptions(reward_timeout_s=TIMEOUT_S, checkpoint_every=checkpoint_every)
    return DecisionService.open(ReferenceDecider(settings), path, options, clock=clock)


@pytest.fixture(params=["linucb", "epsilon-greedy"])
def served(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Served]:
    clock = Clock()
    path = tmp_path / "party.serve.sqlite"
    service = open_service(path, learner(request.param), clock)
    token = new_token()
    service.store.add_token("app", token_hash(token))
    app = build_app(service, lambda: TokenSet(service.store.token_hashes()), ApiLimits(max_body_bytes=4096))
    with TestClient(app, headers={"Authorization": f"Bearer {token}"}, raise_server_exceptions=False) as client:
        yield Served(client, service, clock, token, path)
    service.close()
