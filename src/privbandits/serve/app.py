"""The HTTP API of a served party (Starlette): decide and reward (a decider), features (a feature holder), health,
ledger, metrics, the OpenAPI document.

Every request except ``GET /v1/openapi.json`` needs a client token (``Authorization: Bearer``; 401 otherwise). A body
is read with a size limit (413) and a time limit (408: a client too slow to send it), parsed as strict JSON (400:
malformed, or NaN/Infinity, which JSON has not) and validated by the API's models (422 naming the field). Refusals
change nothing and share one body, ``{"error": {"field": ..., "message": ...}}``; an unexpected failure is a 500 with
the same shape and no traceback (the log has it).

The decider and the store are reached only through the service's worker thread, so requests are applied one at a
time in arrival order; the answer is sent after what it acknowledges has committed.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from pydantic import BaseModel, ValidationError
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from privbandits.serve.auth import TokenSet
from privbandits.serve.decider import DecideInput, Decider, Refused
from privbandits.serve.role import FeatureHolder, FeaturePut
from privbandits.serve.schema import (
    DecideRequest,
    DecideResponse,
    FeaturesRequest,
    FeaturesResponse,
    HealthResponse,
    LedgerResponse,
    RewardRequest,
    RewardResponse,
    first_error,
    openapi_document,
)
from privbandits.serve.service import DecisionService

log = logging.getLogger("privbandits.serve")


@dataclass(frozen=True)
class ApiLimits:
    """Bounds on one request: its body's bytes and the seconds a client may take to send it; how often open
    events past their deadline are closed and the token list is re-read."""

    max_body_bytes: int = 64 * 1024
    body_timeout_s: float = 10.0
    sweep_s: float = 1.0


def error_response(status: int, field: str, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    """The one refusal body."""
    return JSONResponse({"error": {"field": field, "message": message}}, status_code=status, headers=headers)


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not JSON (numbers must be finite)")


async def read_json(request: Request, limits: ApiLimits) -> Any:
    """The request's JSON body, or :class:`Refused` (400 malformed, 408 too slow, 413 too large)."""
    declared = request.headers.get("content-length")
    if declared is not None and (not declared.isdigit() or int(declared) > limits.max_body_bytes):
        raise Refused("body", f"must be at most {limits.max_body_bytes} bytes", 413)
    body = bytearray()
    try:
        async with asyncio.timeout(limits.body_timeout_s):
            async for chunk in request.stream():
                body += chunk
                if len(body) > limits.max_body_bytes:
                    raise Refused("body", f"must be at most {limits.max_body_bytes} bytes", 413)
    except TimeoutError:
        raise Refused("body", f"was not received within {limits.body_timeout_s:g} s", 408) from None
    try:
        data = json.loads(body, parse_constant=_reject_constant)
    except (ValueError, UnicodeDecodeError) as exc:  # JSONDecodeError is a ValueError
        raise Refused("body", f"is not valid JSON ({exc})", 400) from None
    except RecursionError:  # deeper than the parser goes (how deep that is depends on the Python)
        raise Refused("body", "is nested too deeply", 400) from None
    if body.count(b"[") + body.count(b"{") > MAX_DEPTH and _too_deep(data):  # fewer brackets: not too deep
        raise Refused("body", "is nested too deeply", 400)
    return data


MAX_DEPTH = 32
"""The deepest nesting of arrays and objects a request body may have (a decide request needs 3)."""


def _too_deep(data: Any) -> bool:
    """Whether ``data`` nests arrays and objects deeper than :data:`MAX_DEPTH` (walked without recursion)."""
    stack = [(data, 1)] if isinstance(data, dict | list) else []  # only containers: a row of numbers is skipped fast
    while stack:
        value, depth = stack.pop()
        if depth > MAX_DEPTH:
            return True
        children = value.values() if isinstance(value, dict) else value
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


def parse(model: type[BaseModel], data: Any) -> Any:
    """``data`` validated as ``model``, or :class:`Refused` (422) naming the first field at fault."""
    if not isinstance(data, dict):
        raise Refused("body", "must be a JSON object", 422)
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        field, message = first_error(exc)
        raise Refused(field, message, 422) from None


def _respond(model: type[BaseModel], content: dict[str, Any]) -> JSONResponse:
    return JSONResponse(model.model_validate(content).model_dump(mode="json"))


Handler = Callable[[Request], Awaitable[Response]]


class ServeApp:
    """The endpoints over one :class:`DecisionService` and its tokens."""

    def __init__(self, service: DecisionService, tokens: Callable[[], TokenSet], limits: ApiLimits) -> None:
        self.service, self.limits, self._load_tokens = service, limits, tokens
        self.tokens = tokens()

    # -- endpoints -----------------------------------------------------------
    async def decide(self, request: Request) -> Response:
        asked = parse(DecideRequest, await read_json(request, self.limits))
        features = _rows(asked.features)
        arms = None if asked.arms is None else tuple(asked.arms)
        event = await self.service.call(
            self.service.decide, DecideInput(asked.event_id, asked.user_id, features, arms)
        )
        content = {"event_id": event.event_id, "arm": event.arm, "model_version": event.model_version}
        return _respond(DecideResponse, content | {"propensity": event.propensity})

    async def reward(self, request: Request) -> Response:
        asked = parse(RewardRequest, await read_json(request, self.limits))
        outcome = await self.service.call(self.service.reward, asked.event_id, asked.reward)
        content = {"event_id": asked.event_id, "duplicate": outcome.duplicate, "model_version": outcome.model_version}
        return _respond(RewardResponse, content)

    async def features(self, request: Request) -> Response:
        asked = parse(FeaturesRequest, await read_json(request, self.limits))
        outcome = await self.service.call(self.service.put, FeaturePut(asked.key, _rows(asked.features)))
        content = {"key": asked.key, "duplicate": outcome.duplicate, "model_version": outcome.model_version}
        return _respond(FeaturesResponse, content)

    async def health(self, request: Request) -> Response:
        return _respond(HealthResponse, await self.service.call(self.service.health))

    async def ledger(self, request: Request) -> Response:
        return _respond(LedgerResponse, await self.service.call(self.service.ledger))

    async def metrics(self, request: Request) -> Response:
        return Response(self.service.metrics.render(), media_type=self.service.metrics.content_type)

    async def openapi(self, request: Request) -> Response:
        role = self.service.decider
        return JSONResponse(openapi_document(isinstance(role, Decider), isinstance(role, FeatureHolder)))

    # -- around every request ------------------------------------------------
    def guarded(self, endpoint: Handler, name: str, public: bool = False) -> Handler:
        """``endpoint`` behind the token check, with refusals as JSON errors and its latency measured."""

        async def handle(request: Request) -> Response:
            started = time.perf_counter()
            try:
                if not public and self.tokens.client(request.headers.get("authorization")) is None:
                    raise Refused("authorization", "a valid client token is required (Bearer)", 401)
                response = await endpoint(request)
            except Refused as refused:
                self.service.metrics.refused.labels(status=str(refused.status)).inc()
                extra = {"WWW-Authenticate": "Bearer"} if refused.status == 401 else None
                return error_response(refused.status, refused.field, refused.message, extra)
            self.service.metrics.latency.labels(endpoint=name).observe(time.perf_counter() - started)
            return response

        return handle

    async def sweep(self) -> None:
        """Close events past their deadline and re-read the tokens, every ``sweep_s``, until cancelled."""
        while True:
            await asyncio.sleep(self.limits.sweep_s)
            try:
                await self.service.call(self.service.expire_due)
                self.tokens = await self.service.call(self._load_tokens)
            except Exception:  # noqa: BLE001 - a failed sweep is retried next time; the log says why
                log.exception("sweep failed")


def _rows(rows: list[list[float]]) -> np.ndarray:
    """The rows as float64 ``(rows, width)``, or :class:`Refused` naming ``features`` when their lengths differ."""
    if any(len(row) != len(rows[0]) for row in rows):
        raise Refused("features", "rows must all have the same length", 422)
    return np.asarray(rows, dtype=np.float64)


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    field = "method" if exc.status_code == 405 else "path"
    return error_response(exc.status_code, field, str(exc.detail))


async def _server_error(request: Request, exc: Exception) -> Response:
    log.error("request failed", exc_info=exc)
    return error_response(500, "server", "the service failed on this request (its log says why)")


def build_app(
    service: DecisionService, tokens: Callable[[], TokenSet], limits: ApiLimits | None = None, *, owns: bool = False
) -> Starlette:
    """The ASGI app serving ``service``; ``tokens()`` reads the current client tokens (re-read every sweep);
    ``owns``: close the service when the app shuts down (a server's app, whose process may end right after)."""
    api = ServeApp(service, tokens, limits or ApiLimits())

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        sweeper = asyncio.create_task(api.sweep())
        try:
            yield
        finally:
            sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await sweeper
            if owns:
                service.close()

    routes = []
    if isinstance(service.decider, Decider):
        routes += [
            Route("/v1/decide", api.guarded(api.decide, "decide"), methods=["POST"]),
            Route("/v1/reward", api.guarded(api.reward, "reward"), methods=["POST"]),
        ]
    if isinstance(service.decider, FeatureHolder):
        routes.append(Route("/v1/features", api.guarded(api.features, "features"), methods=["POST"]))
    routes += [
        Route("/v1/health", api.guarded(api.health, "health"), methods=["GET"]),
        Route("/v1/ledger", api.guarded(api.ledger, "ledger"), methods=["GET"]),
        Route("/metrics", api.guarded(api.metrics, "metrics"), methods=["GET"]),
        Route("/v1/openapi.json", api.guarded(api.openapi, "openapi", public=True), methods=["GET"]),
    ]
    handlers = {HTTPException: _http_error, Exception: _server_error}
    app = Starlette(routes=routes, lifespan=lifespan, exception_handlers=handlers)  # type: ignore[arg-type]
    app.state.api = api
    return app
