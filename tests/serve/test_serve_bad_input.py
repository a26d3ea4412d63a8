"""Bad input at the API: a 4xx with one JSON error naming the field, never a 5xx, and nothing changed."""

from __future__ import annotations

import json

import pytest
from conftest import Served

pytestmark = pytest.mark.parametrize("served", ["epsilon-greedy"], indirect=True)  # refusals precede the policy

GOOD = {"event_id": "e9", "user_id": "u1", "features": [[0.5, 0.1], [0.2, 0.9], [0.3, 0.3]]}


def with_(**changes) -> dict:
    return {key: value for key, value in (GOOD | changes).items() if value is not ...}


DECIDE = [  # body, status, field, message (None: pydantic's own words, not pinned)
    (b'{"event_id": ', 400, "body", None),
    (b"\xff\xfe", 400, "body", None),
    (b'{"event_id":"e9","user_id":"u1","features":[[NaN,1],[0,1],[1,1]]}', 400, "body",
     "is not valid JSON (NaN is not JSON (numbers must be finite))"),
    (b'{"event_id":"e9","user_id":"u1","features":[[1e999,1],[0,1],[1,1]]}', 422, "features[0][0]",
     "Input should be a finite number"),
    (b"[" * 1500 + b"]" * 1500, 400, "body", "is nested too deeply"),
    (b"[" * 33 + b"]" * 33, 400, "body", "is nested too deeply"),  # past MAX_DEPTH, short of any recursion limit
    ([1, 2], 422, "body", "must be a JSON object"),
    ("text", 422, "body", "must be a JSON object"),
    (with_(event_id=...), 422, "event_id", "is required"),
    (with_(color="red"), 422, "color", "is not a field of this request"),
    (with_(event_id=""), 422, "event_id", None),
    (with_(event_id="a b"), 422, "event_id", None),
    (with_(event_id="x" * 129), 422, "event_id", None),
    (with_(event_id=7), 422, "event_id", None),
    (with_(user_id=None), 422, "user_id", None),
    (with_(features="x"), 422, "features", None),
    (with_(features=[]), 422, "features", None),
    (with_(features=[[1, "2"], [0, 1], [1, 1]]), 422, "features[0][1]", "Input should be a valid number"),
    (with_(features=[[True, 2], [0, 1], [1, 1]]), 422, "features[0][0]", "Input should be a valid number"),
    (with_(features=[[1, 2], [0], [1, 1]]), 422, "features", "rows must all have the same length"),
    (with_(features=[[1, 2, 3]] * 3), 422, "features", "rows must have 2 numbers (dim), got 3"),
    (with_(features=[[1, 2]] * 2), 422, "features", "must have 3 rows (one per arm), got 2"),
    (with_(features=[[1e200, 2]] * 3), 422, "features",
     "must be at most 1e150 in absolute value (larger ones overflow the scores)"),
    (with_(arms=[]), 422, "arms", None),
    (with_(arms=[0, 3]), 422, "arms[1]", "must be an arm in [0, 2], got 3"),
    (with_(arms=[1, 1]), 422, "arms", "must not repeat an arm"),
    (with_(arms=[-1]), 422, "arms[0]", None),
    (with_(arms=[1.5]), 422, "arms[0]", None),
    (with_(event_id="e1", features=[[9.0, 9.0]] * 3), 409, "event_id",
     "was already decided for other input (an event id names one event)"),
    (b"{" + b" " * 5000 + b"}", 413, "body", "must be at most 4096 bytes"),
]  # fmt: skip

REWARD = [
    ({"event_id": "nope", "reward": 1.0}, 404, "event_id", "has no decision (a reward follows its event's decision)"),
    ({"event_id": "e0", "reward": 2.0}, 409, "reward",
     "differs from the reward already absorbed for this event (1.0)"),
    ({"event_id": "e1", "reward": "1"}, 422, "reward", None),
    ({"event_id": "e1", "reward": None}, 422, "reward", None),
    ({"event_id": "e1", "reward": [1.0]}, 422, "reward", None),
    ({"event_id": "e1"}, 422, "reward", "is required"),
    (b'{"event_id":"e1","reward":Infinity}', 400, "body", None),
    (b'{"event_id":"e1","reward":-1e400}', 422, "reward", "Input should be a finite number"),
    ({"event_id": "e1", "reward": 1.0, "extra": 1}, 422, "extra", "is not a field of this request"),
]  # fmt: skip


@pytest.fixture
def busy(served: Served) -> Served:
    """A service with state: e0 decided and rewarded, e1 decided and open."""
    for event in ("e0", "e1"):
        assert served.client.post("/v1/decide", json=with_(event_id=event)).status_code == 200
    assert served.client.post("/v1/reward", json={"event_id": "e0", "reward": 1.0}).status_code == 200
    return served


def _post(served: Served, path: str, body, headers=None):
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    return served.client.post(path, content=content, headers={"content-type": "application/json", **(headers or {})})


def _check(response, status: int, field: str, message: str | None) -> None:
    assert response.status_code == status, response.text
    error = response.json()
    assert set(error) == {"error"} and set(error["error"]) == {"field", "message"}
    assert error["error"]["field"] == field
    if message is not None:
        assert error["error"]["message"] == message


@pytest.mark.parametrize(("body", "status", "field", "message"), DECIDE)
def test_a_bad_decide_request_is_refused_and_changes_nothing(busy: Served, body, status, field, message) -> None:
    before = busy.snapshot()
    _check(_post(busy, "/v1/decide", body), status, field, message)
    assert busy.snapshot() == before


@pytest.mark.parametrize(("body", "status", "field", "message"), REWARD)
def test_a_bad_reward_is_refused_and_changes_nothing(busy: Served, body, status, field, message) -> None:
    before = busy.snapshot()
    _check(_post(busy, "/v1/reward", body), status, field, message)
    assert busy.snapshot() == before


@pytest.mark.parametrize("path", ["/v1/decide", "/v1/reward", "/v1/health", "/v1/ledger", "/metrics"])
@pytest.mark.parametrize("credential", [None, "Bearer wrong", "Basic YXBwOnNlY3JldA==", "Bearer ", "bearer"])
def test_without_a_valid_token_every_endpoint_says_401(busy: Served, path: str, credential: str | None) -> None:
    before = busy.snapshot()
    headers = {"authorization": credential} if credential is not None else {}
    client = busy.client
    saved = client.headers.pop("authorization")
    try:
        method = client.post if path.endswith(("decide", "reward")) else client.get
        kwargs = {"json": with_(event_id="new")} if method == client.post else {}
        response = method(path, headers=headers, **kwargs)
    finally:
        client.headers["authorization"] = saved
    _check(response, 401, "authorization", "a valid client token is required (Bearer)")
    assert response.headers["www-authenticate"] == "Bearer"
    assert busy.snapshot() == before


def test_unknown_paths_and_methods_are_json_errors(busy: Served) -> None:
    _check(busy.client.get("/v2/decide"), 404, "path", None)
    _check(busy.client.get("/v1/decide"), 405, "method", None)
    assert busy.client.get("/v1/openapi.json", headers={"authorization": ""}).status_code == 200  # public
