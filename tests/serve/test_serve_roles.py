"""The three kinds of served role: a feature holder's puts are journalled, deduplicated, refused without change and
replayed; a role's API follows its kind; its links start after recovery and stop before the last checkpoint."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from starlette.testclient import TestClient
from toy_roles import WIDTH, Quiet, Rows

from privbandits.serve.app import build_app
from privbandits.serve.auth import TokenSet, new_token, token_hash
from privbandits.serve.role import FeaturePut
from privbandits.serve.service import DecisionService, ServiceOptions


def _client(service: DecisionService) -> tuple[TestClient, str]:
    token = new_token()
    service.store.add_token("app", token_hash(token))
    app = build_app(service, lambda: TokenSet(service.store.token_hashes()))
    return TestClient(app, headers={"Authorization": f"Bearer {token}"}, raise_server_exceptions=False), token


@pytest.fixture
def holder(tmp_path: Path) -> Iterator[tuple[TestClient, DecisionService]]:
    service = DecisionService.open(Rows(), tmp_path / "rows.sqlite", ServiceOptions(checkpoint_every=3))
    client, _ = _client(service)
    with client:
        yield client, service
    service.close()


def _put(client: TestClient, key: str, rows) -> dict:
    response = client.post("/v1/features", json={"key": key, "features": rows})
    assert response.status_code == 200, response.text
    return response.json()


def test_a_put_is_kept_and_the_same_rows_again_are_a_duplicate(holder) -> None:
    client, service = holder
    assert _put(client, "u1", [[1.0, 2.0, 3.0]]) == {"key": "u1", "duplicate": False, "model_version": 1}
    assert _put(client, "u1", [[1.0, 2.0, 3.0]]) == {"key": "u1", "duplicate": True, "model_version": 1}
    assert _put(client, "u1", [[1.0, 2.0, 4.0]])["duplicate"] is False  # new rows replace the key's
    np.testing.assert_array_equal(service.decider.rows["u1"], [[1.0, 2.0, 4.0]])
    assert service.store.put_count() == 2


def test_a_refused_put_changes_nothing(holder) -> None:
    client, service = holder
    _put(client, "u1", [[1.0, 2.0, 3.0]])
    before = service.decider.checkpoint(), service.store.last_seq
    for body, field in [
        ({"key": "u1", "features": [[1.0, 2.0]]}, "features"),
        ({"key": "u 1", "features": [[1.0, 2.0, 3.0]]}, "key"),
        ({"key": "u2", "features": [[1.0, 2.0, 3.0], [1.0]]}, "features"),
        ({"key": "u2"}, "features"),
    ]:
        response = client.post("/v1/features", json=body)
        assert response.status_code == 422 and response.json()["error"]["field"] == field, response.text
    assert (service.decider.checkpoint(), service.store.last_seq) == before


def test_puts_are_replayed_after_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "rows.sqlite"
    service = DecisionService.open(Rows(), path, ServiceOptions(checkpoint_every=3))
    rng = np.random.default_rng(4)
    for i in range(7):  # two checkpoints (after 3 and 6 puts), one put after them
        service.put(FeaturePut(f"u{i % 4}", rng.normal(size=(2, WIDTH))))
    expected = service.decider.checkpoint()
    service.store.close()  # as a crash: no last checkpoint, the seventh put only in the journal
    again = DecisionService.open(Rows(), path, ServiceOptions(checkpoint_every=3))
    assert again.decider.checkpoint() == expected
    assert again.decider.calls == ["start after 7 puts"]  # links start once the state is rebuilt
    again.close()
    assert again.decider.calls[-1] == "stop"


def test_each_kind_of_role_publishes_its_own_endpoints(tmp_path: Path) -> None:
    quiet = DecisionService.open(Quiet(), tmp_path / "quiet.sqlite")
    rows = DecisionService.open(Rows(), tmp_path / "rows.sqlite")
    for service, present, absent in [
        (quiet, set(), {"/v1/decide", "/v1/reward", "/v1/features"}),
        (rows, {"/v1/features"}, {"/v1/decide", "/v1/reward"}),
    ]:
        client, _ = _client(service)
        with client:
            paths = set(client.get("/v1/openapi.json").json()["paths"])
            assert present <= paths and not absent & paths
            assert {"/v1/health", "/v1/ledger", "/metrics"} <= paths
            for path in absent:
                response = client.post(path, json={})
                assert response.status_code == 404 and response.json()["error"]["field"] == "path"
            assert client.get("/v1/health").json()["decider"] == service.decider.kind
        service.close()


def test_a_stateless_role_refuses_a_checkpoint_that_holds_state() -> None:
    with pytest.raises(ValueError, match="toy-quiet keeps no state, but the checkpoint holds 3 bytes"):
        Quiet().restore(b"abc")


def test_the_typed_client_puts_rows(holder) -> None:
    from privbandits.serve.client import PutAck, ServeClient, ServeError

    client, service = holder
    typed = ServeClient(http=client)
    assert typed.put_features("u9", [[1, 2, 3]]) == PutAck("u9", False, 1)
    assert typed.put_features("u9", [[1, 2, 3]]) == PutAck("u9", True, 1)
    with pytest.raises(ServeError) as refused:
        typed.put_features("u9", [[1, 2]])
    assert (refused.value.status, refused.value.field) == (422, "features")
