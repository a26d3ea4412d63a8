"""Validation errors as one readable line each: the key path, what is allowed, what was given.

Pydantic's error locations inside the tagged unions carry the ``kind`` tag; :func:`_split_location`
drops it from the path and uses it to find the class whose keys an "unknown key" line lists.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel
from pydantic_core import ErrorDetails

from privbandits.experiments.config.base import by_kind
from privbandits.experiments.config.environments import ENVIRONMENT_CONFIGS
from privbandits.experiments.config.experiment import ExperimentConfig
from privbandits.experiments.registry import POLICY_KINDS


def _tags(section: object) -> dict[str, type[BaseModel]]:
    """The models of a tagged section by their ``kind`` (the policies' as registered now); none for another."""
    if section == "environment":
        return dict(by_kind(ENVIRONMENT_CONFIGS))
    return dict(POLICY_KINDS.by_kind()) if section == "policies" else {}


_TYPE_NAMES = {
    "int": "an integer",
    "float": "a number",
    "bool": "a boolean",
    "string": "a string",
    "list": "a list",
    "dict": "a table",
    "model": "a table",
}


def _split_location(loc: tuple[Any, ...]) -> tuple[str, type[BaseModel]]:
    """Readable key path of a pydantic error and the schema class owning its last key.

    Pydantic inserts the discriminator value (e.g. ``'linucb'``) into locations
    inside tagged unions; it is dropped from the path and used to find the class.
    """
    model: type[BaseModel]
    path, model = "", ExperimentConfig
    tags = _tags(loc[0]) if loc else {}
    for i, part in enumerate(loc):
        if i > 0 and part in tags and (loc[i - 1] == "environment" or isinstance(loc[i - 1], int)):
            model = tags[part]
        elif isinstance(part, int):
            path += f"[{part}]"
        else:
            path += f".{part}" if path else str(part)
    return path or "(top level)", model


def _describe(error: ErrorDetails) -> str:
    """One line per validation problem: the key, what is allowed, what was given."""
    raw_loc = tuple(error["loc"])
    where, model = _split_location(raw_loc)
    kind, ctx, given = error["type"], error.get("ctx", {}), error.get("input")
    if kind == "extra_forbidden":
        return f"{where}: unknown key; allowed keys: {', '.join(model.model_fields)}"
    if kind == "missing":
        return f"{where}: required key is missing"
    if kind in ("union_tag_invalid", "union_tag_not_found"):
        allowed = ", ".join(repr(tag) for tag in _tags(raw_loc[0]))
        got = f" (got {ctx['tag']!r})" if "tag" in ctx else " (got nothing)"
        return f"{where}.kind: must be one of {allowed}{got}"
    if kind == "literal_error":
        return f"{where}: must be one of {ctx['expected']} (got {given!r})"
    bounds = {"greater_than": ">", "greater_than_equal": ">=", "less_than": "<", "less_than_equal": "<="}
    if kind in bounds:
        return f"{where}: must be {bounds[kind]} {next(iter(ctx.values()))} (got {given!r})"
    if kind == "string_pattern_mismatch":
        return f"{where}: must match {ctx['pattern']} (got {given!r})"
    if kind == "too_short":
        return f"{where}: must have at least {ctx['min_length']} item(s) (got {ctx['actual_length']})"
    if kind == "finite_number":
        return f"{where}: must be a finite number (got {given!r})"
    if kind in ("int_from_float", "int_parsing"):
        return f"{where}: must be an integer (got {given!r})"
    type_name = kind.split("_")[0]
    if type_name in _TYPE_NAMES:
        return f"{where}: must be {_TYPE_NAMES[type_name]} (got {given!r})"
    if kind == "value_error":
        message = error["msg"].removeprefix("Value error, ")
        if not raw_loc:
            return message
        field, separator, rest = message.partition(": ")
        if separator and field in model.model_fields:  # a model validator naming one of its fields
            return f"{where}.{field}: {rest}"
        return f"{where}: {message}"
    return f"{where}: {error['msg'].lower()}"
