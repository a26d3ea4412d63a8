"""A typed Python client of a served party's API (httpx).

::

    from privbandits.serve.client import ServeClient

    with ServeClient("https://127.0.0.1:8750", token, ca="bundles/active/ca.pem", server_name="active") as client:
        decision = client.decide("event-1", "user-7", [[0.1, 0.2], [0.3, 0.4]])
        client.reward("event-1", 1.0)

A refusal raises :class:`ServeError` with the status, the field and the message the service sent. ``decide`` and
``reward`` are safe to retry with the same arguments (the service answers a repeat the same way), so a caller that
lost an answer (a timeout, a dropped connection) sends the same request again.
"""

from __future__ import annotations

import ssl
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

import httpx


class ServeError(RuntimeError):
    """A request the service refused (or could not answer): its HTTP status, the field at fault and the message."""

    def __init__(self, status: int, field: str, message: str) -> None:
        super().__init__(f"{status} {field}: {message}")
        self.status, self.field, self.message = status, field, message


@dataclass(frozen=True)
class Decision:
    """The service's decision for an event (``propensity`` None where the policy is deterministic)."""

    event_id: str
    arm: int
    model_version: int
    propensity: float | None


@dataclass(frozen=True)
class RewardAck:
    """A reward acknowledged (durable, absorbed once; ``duplicate``: it had been sent before)."""

    event_id: str
    duplicate: bool
    model_version: int


@dataclass(frozen=True)
class PutAck:
    """Rows acknowledged (durable, applied; ``duplicate``: the key held these rows already)."""

    key: str
    duplicate: bool
    model_version: int


class ServeClient:
    """The API of one served party (see the module docstring). ``ca``: the CA that signed the service's certificate;
    ``server_name``: the name in it (the party's name) when ``url`` gives an address; ``http``: an httpx client to
    use instead of a new one (e.g. a test's)."""

    def __init__(
        self,
        url: str = "",
        token: str = "",
        *,
        ca: str | Path | None = None,
        server_name: str | None = None,
        timeout_s: float = 30.0,
        http: httpx.Client | None = None,
    ) -> None:
        self._extensions = {} if server_name is None else {"sni_hostname": server_name}
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        if http is None:
            verify: ssl.SSLContext | bool = ssl.create_default_context(cafile=str(ca)) if ca is not None else True
            http = httpx.Client(base_url=url, headers=headers, verify=verify, timeout=timeout_s)
        else:
            http.headers.update(headers)
        self._http = http

    def __enter__(self) -> ServeClient:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> httpx.Response:
        response = self._http.request(method, path, json=body, extensions=self._extensions)
        if response.status_code >= 400:
            try:
                error = response.json()["error"]
                field, message = str(error["field"]), str(error["message"])
            except (ValueError, KeyError, TypeError):
                field, message = "response", response.text[:200]
            raise ServeError(response.status_code, field, message)
        return response

    def decide(
        self, event_id: str, user_id: str, features: Sequence[Sequence[float]], arms: Sequence[int] | None = None
    ) -> Decision:
        """Decide for an event: ``features`` one row per arm or one shared row; ``arms`` the candidates (all)."""
        body: dict[str, Any] = {"event_id": event_id, "user_id": user_id, "features": [list(map(float, row))
                                                                                        for row in features]}
        if arms is not None:
            body["arms"] = [int(arm) for arm in arms]
        data = self._call("POST", "/v1/decide", body).json()
        return Decision(data["event_id"], data["arm"], data["model_version"], data["propensity"])

    def reward(self, event_id: str, reward: float) -> RewardAck:
        """Report an event's reward (again is fine: acknowledged as a duplicate)."""
        data = self._call("POST", "/v1/reward", {"event_id": event_id, "reward": float(reward)}).json()
        return RewardAck(data["event_id"], data["duplicate"], data["model_version"])

    def put_features(self, key: str, features: Sequence[Sequence[float]]) -> PutAck:
        """Put this party's rows under ``key`` (a feature holder: e.g. a user's block, an event's block); the same rows
        again are acknowledged as a duplicate."""
        body = {"key": key, "features": [list(map(float, row)) for row in features]}
        data = self._call("POST", "/v1/features", body).json()
        return PutAck(data["key"], data["duplicate"], data["model_version"])

    def health(self) -> dict[str, Any]:
        """The service in brief: status, decider, model version, open events, uptime."""
        return self._call("GET", "/v1/health").json()

    def ledger(self) -> dict[str, Any]:
        """The privacy spent and the events by status."""
        return self._call("GET", "/v1/ledger").json()

    def metrics(self) -> str:
        """The Prometheus text exposition."""
        return self._call("GET", "/metrics").text

    def openapi(self) -> dict[str, Any]:
        """The API's OpenAPI document."""
        return self._call("GET", "/v1/openapi.json").json()
