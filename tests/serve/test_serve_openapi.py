"""The published OpenAPI document describes the real responses: each status documented, each body valid."""

from __future__ import annotations

import jsonschema
from conftest import Served

from privbandits.serve.schema import openapi_document


def _validate(document: dict, path: str, method: str, response) -> None:
    operation = document["paths"][path][method]
    status = str(response.status_code)
    assert status in operation["responses"], f"{method.upper()} {path} answered an undocumented {status}"
    content = operation["responses"][status]["content"]
    if "application/json" in content:
        schema = {**content["application/json"]["schema"], "components": document["components"]}
        jsonschema.Draft202012Validator(schema).validate(response.json())
    else:
        assert response.headers["content-type"].startswith("text/plain")


def test_real_responses_match_the_published_schema(served: Served) -> None:
    client = served.client
    document = client.get("/v1/openapi.json").json()
    assert document == openapi_document() and document["openapi"].startswith("3.1")
    jsonschema.Draft202012Validator.check_schema(document["components"]["schemas"]["DecideRequest"])
    rows = [[0.5, 0.1], [0.2, 0.9], [0.3, 0.3]]
    calls = [
        ("post", "/v1/decide", {"event_id": "e1", "user_id": "u", "features": rows}),
        ("post", "/v1/decide", {"event_id": "e1", "user_id": "u", "features": rows}),
        ("post", "/v1/decide", {"event_id": "e1", "user_id": "u", "features": rows[::-1]}),
        ("post", "/v1/decide", {"event_id": "e2", "user_id": "u", "features": [[1.0]]}),
        ("post", "/v1/decide", b"{"),
        ("post", "/v1/decide", b"x" * 5000),
        ("post", "/v1/reward", {"event_id": "e1", "reward": 1.0}),
        ("post", "/v1/reward", {"event_id": "e1", "reward": 1.0}),
        ("post", "/v1/reward", {"event_id": "e1", "reward": 3.0}),
        ("post", "/v1/reward", {"event_id": "e9", "reward": 1.0}),
        ("post", "/v1/reward", {"event_id": "e1", "reward": "x"}),
        ("get", "/v1/health", None),
        ("get", "/v1/ledger", None),
        ("get", "/metrics", None),
    ]
    statuses = set()
    for method, path, body in calls:
        if method == "get":
            response = client.get(path)
        elif isinstance(body, bytes):
            response = client.post(path, content=body)
        else:
            response = client.post(path, json=body)
        _validate(document, path, method, response)
        statuses.add(response.status_code)
        unauthenticated = client.request(method, path, headers={"authorization": "Bearer no"})
        _validate(document, path, method, unauthenticated)
    assert statuses == {200, 400, 404, 409, 413, 422}
