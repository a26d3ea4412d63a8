"""The API's bodies (pydantic models, strict: no coercion, no unknown fields, no NaN or infinity) and its OpenAPI
document, generated from those models so the published schema and the checks the service makes are one declaration.

Every refusal has one shape, :class:`ErrorBody`: ``{"error": {"field": ..., "message": ...}}``, the field named as
a path into the request (``features[2][0]``), or ``body``, ``authorization``, ``path`` or ``method`` when the request
as a whole is at fault.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError
from pydantic.json_schema import models_json_schema

from privbandits import __version__

MOST_ROWS = 1024
MOST_WIDTH = 4096
MOST_ARMS = 10_000

EventId = Annotated[str, StringConstraints(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9._:-]+$")]
UserId = Annotated[str, StringConstraints(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9._:@-]+$")]
FiniteFloat = Annotated[float, Field(allow_inf_nan=False)]


class _Body(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", allow_inf_nan=False)


class DecideRequest(_Body):
    """Decide for one event: the application's id for it, its user, its features and the candidate arms."""

    event_id: EventId = Field(description="the application's id for this event; asking again returns the same answer")
    user_id: UserId = Field(description="the user the event is about")
    features: list[Annotated[list[FiniteFloat], Field(min_length=1, max_length=MOST_WIDTH)]] = Field(
        min_length=1, max_length=MOST_ROWS, description="this party's features: one row per arm, or one shared row"
    )
    arms: list[Annotated[int, Field(ge=0)]] | None = Field(
        None, min_length=1, max_length=MOST_ARMS, description="the candidate arms (default: every arm)"
    )


class DecideResponse(_Body):
    """The decision: the arm, the model version that chose it, the arm's propensity where the policy randomises."""

    event_id: str
    arm: int = Field(ge=0)
    model_version: int = Field(ge=0)
    propensity: float | None = Field(description="probability the policy chose this arm; null: deterministic")


class RewardRequest(_Body):
    """The reward of a decided event (late, out of order and twice are fine)."""

    event_id: EventId
    reward: FiniteFloat


class RewardResponse(_Body):
    """A reward acknowledged: durable, absorbed once (``duplicate``: it had been already)."""

    event_id: str
    duplicate: bool
    model_version: int = Field(ge=0)


Key = Annotated[str, StringConstraints(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9._:@-]+$")]


class FeaturesRequest(_Body):
    """Rows a feature holder's application puts: under a key (a user id or an event id: the party's page says
    which); they replace the rows put under it before."""

    key: Key = Field(description="what the rows belong to (a user id or an event id, as the party takes)")
    features: list[Annotated[list[FiniteFloat], Field(min_length=1, max_length=MOST_WIDTH)]] = Field(
        min_length=1, max_length=MOST_ROWS, description="this party's rows: one per arm, or one shared row"
    )


class FeaturesResponse(_Body):
    """Rows kept: durable, applied (``duplicate``: the key held these rows already)."""

    key: str
    duplicate: bool
    model_version: int = Field(ge=0)


class HealthResponse(_Body):
    """The service in brief."""

    status: str
    decider: str
    model_version: int = Field(ge=0)
    open_events: int = Field(ge=0)
    uptime_s: float = Field(ge=0)


class EventCounts(_Body):
    open: int = Field(ge=0)
    rewarded: int = Field(ge=0)
    expired: int = Field(ge=0)


class LedgerResponse(_Body):
    """What the party spent and learnt: the decider's ledger (its form is the protocol's) and the events by status."""

    decider: str
    events: EventCounts
    learner: dict[str, Any]


class ErrorDetail(_Body):
    field: str = Field(description="the request's field at fault, or body/authorization/path/method")
    message: str


class ErrorBody(_Body):
    """Every refusal's body."""

    error: ErrorDetail


def field_path(location: tuple[int | str, ...]) -> str:
    """A pydantic error location as a request path: ``("features", 2, 0)`` is ``features[2][0]``."""
    path = ""
    for part in location:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path or "body"


def first_error(exc: ValidationError) -> tuple[str, str]:
    """The field and message of a validation error's first complaint."""
    error = exc.errors(include_url=False)[0]
    location = tuple(error["loc"])
    if error["type"] == "missing":
        return field_path(location), "is required"
    if error["type"] == "extra_forbidden":
        return field_path(location), "is not a field of this request"
    return field_path(location), str(error["msg"])


MODELS: tuple[type[BaseModel], ...] = (
    DecideRequest, DecideResponse, RewardRequest, RewardResponse, FeaturesRequest, FeaturesResponse, HealthResponse,
    LedgerResponse, ErrorBody,
)  # fmt: skip


def _json(model: type[BaseModel]) -> dict[str, Any]:
    return {"application/json": {"schema": {"$ref": f"#/components/schemas/{model.__name__}"}}}


def _refusals(*statuses: int) -> dict[str, Any]:
    what = {400: "malformed body", 401: "missing or wrong credential", 404: "unknown event", 408: "body too slow",
            409: "conflicts with the event's state", 413: "body too large", 422: "a field is invalid"}  # fmt: skip
    return {str(s): {"description": what[s], "content": _json(ErrorBody)} for s in statuses}


def _operation(summary: str, response: type[BaseModel], request: type[BaseModel] | None, *refusals: int) -> dict:
    operation: dict[str, Any] = {
        "summary": summary,
        "security": [{"bearer": []}],
        "responses": {"200": {"description": "OK", "content": _json(response)}, **_refusals(401, *refusals)},
    }
    if request is not None:
        operation["requestBody"] = {"required": True, "content": _json(request)}
    return operation


def openapi_document(decides: bool = True, holds: bool = False) -> dict[str, Any]:
    """The API's OpenAPI 3.1 document (``GET /v1/openapi.json``): with decide and reward where the party
    ``decides``, with features where it ``holds`` rows its application puts."""
    _, definitions = models_json_schema(
        [(model, "validation" if model.__name__.endswith("Request") else "serialization") for model in MODELS],
        ref_template="#/components/schemas/{model}",
    )
    body_refusals = (400, 408, 409, 413, 422)
    text = {"text/plain": {"schema": {"type": "string"}}}
    metrics_ok = {"200": {"description": "Prometheus text format", "content": text}}
    paths: dict[str, Any] = {}
    if decides:
        paths["/v1/decide"] = {"post": _operation("Decide for one event", DecideResponse, DecideRequest,
                                                  *body_refusals)}
        paths["/v1/reward"] = {"post": _operation("Reward a decided event", RewardResponse, RewardRequest,
                                                  *body_refusals, 404)}
    if holds:
        paths["/v1/features"] = {"post": _operation("Put this party's rows under a key", FeaturesResponse,
                                                    FeaturesRequest, *body_refusals)}
    paths |= {
        "/v1/health": {"get": _operation("The service in brief", HealthResponse, None)},
        "/v1/ledger": {"get": _operation("Privacy spent and events", LedgerResponse, None)},
        "/metrics": {"get": {"summary": "Metrics", "security": [{"bearer": []}],
                             "responses": {**metrics_ok, **_refusals(401)}}},
    }
    return {
        "openapi": "3.1.0",
        "info": {"title": "privbandits serve", "version": __version__,
                 "description": "A served party's application API: decide now, reward later (docs/serve.md)."},
        "paths": paths,
        "components": {
            "schemas": definitions.get("$defs", {}),
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
    }  # fmt: skip
