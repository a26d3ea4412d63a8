"""The API fuzzed from its own OpenAPI document (schemathesis), bounded in examples: no 5xx, every answer as the
document says, and a refused request changes nothing."""

from __future__ import annotations

import pytest
from conftest import Served

EXAMPLES = 15  # per operation and mode (valid by the schema, and not): a few seconds in all


@pytest.mark.parametrize("served", ["epsilon-greedy"], indirect=True)
def test_fuzzed_requests_get_documented_answers_and_refusals_change_nothing(served: Served) -> None:
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
    schema = schemathesis.openapi.from_asgi("/v1/openapi.json", served.client.app)
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) == 5

    statuses: set[int] = set()

    def check(case) -> None:
        before = served.snapshot()
        for token in (served.token, "pbt_wrong"):
            response = case.call(headers={"Authorization": f"Bearer {token}"})
            case.validate_response(response, checks=checks)
            statuses.add(response.status_code)
            if response.status_code >= 400:
                assert served.snapshot() == before, (response.status_code, response.text)
            before = served.snapshot()

    for operation in operations:
        for mode in (schemathesis.GenerationMode.POSITIVE, schemathesis.GenerationMode.NEGATIVE):
            run = settings(
                max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True,
                database=None,
            )(given(case=operation.as_strategy(generation_mode=mode))(check))  # fmt: skip
            run()
    assert {200, 401, 422} <= statuses, statuses
