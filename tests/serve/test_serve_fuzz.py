"""The API fuzzed from its own OpenAPI document (schemathesis), bounded in examples: no 5xx, every answer as the
document says, and a refused request changes nothing."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from conftest import Served
from starlette.testclient import TestClient
from toy_roles import Rows

from privbandits.serve.app import build_app
from privbandits.serve.auth import TokenSet, new_token, token_hash
from privbandits.serve.service import DecisionService

EXAMPLES = 15  # per operation and mode (valid by the schema, and not): a few seconds in all


def _fuzz(client: TestClient, token: str, snapshot: Callable[[], tuple], operations_expected: int) -> set[int]:
    """Every operation of ``client``'s app fuzzed from its document; the statuses seen."""
    # imported here, not when the suite is collected (schemathesis and hypothesis: over a second in every worker)
    import schemathesis
    from hypothesis import HealthCheck, given, settings
    from schemathesis.checks import not_a_server_error
    from schemathesis.specs.openapi.checks import (
        content_type_conformance,
        response_schema_conformance,
        status_code_conformance,
    )

    checks = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
    schema = schemathesis.openapi.from_asgi("/v1/openapi.json", client.app)
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) == operations_expected
    statuses: set[int] = set()

    def check(case) -> None:
        before = snapshot()
        for sent in (token, "pbt_wrong"):
            response = case.call(headers={"Authorization": f"Bearer {sent}"})
            case.validate_response(response, checks=checks)
            statuses.add(response.status_code)
            if response.status_code >= 400:
                assert snapshot() == before, (response.status_code, response.text)
            before = snapshot()

    for operation in operations:
        for mode in (schemathesis.GenerationMode.POSITIVE, schemathesis.GenerationMode.NEGATIVE):
            run = settings(
                max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True,
                database=None,
            )(given(case=operation.as_strategy(generation_mode=mode))(check))  # fmt: skip
            run()
    return statuses


@pytest.mark.parametrize("served", ["epsilon-greedy"], indirect=True)
def test_fuzzed_requests_get_documented_answers_and_refusals_change_nothing(served: Served) -> None:
    statuses = _fuzz(served.client, served.token, served.snapshot, 5)
    assert {200, 401, 422} <= statuses, statuses


def test_a_feature_holders_api_fuzzed_the_same_way(tmp_path) -> None:
    service = DecisionService.open(Rows(), tmp_path / "rows.sqlite")
    token = new_token()
    service.store.add_token("app", token_hash(token))
    app = build_app(service, lambda: TokenSet(service.store.token_hashes()))

    def snapshot() -> tuple:
        return service.decider.checkpoint(), service.store.last_seq

    with TestClient(app, raise_server_exceptions=False) as client:
        statuses = _fuzz(client, token, snapshot, 4)  # features, health, ledger, metrics
    service.close()
    assert {200, 401, 422} <= statuses, statuses
