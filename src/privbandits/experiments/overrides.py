"""``-o KEY=VALUE`` options: typed by the spec they override, with one-line errors.

Values are read by the type of the field they set: integers, reals, booleans
(``true``/``false``), paths and names as written, lists comma-separated
(``seeds=0,1,2``; brackets are optional), ``none`` for an optional value. An
unknown key names the valid ones and the closest match; a bad value names the
key, what is allowed and what was given.
"""

from __future__ import annotations

import difflib
import math
import re
import types
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError


class OptionError(ValueError):
    """A ``KEY=VALUE`` option that cannot be used; the message is one line."""


Model = TypeVar("Model", bound=BaseModel)

_SEQUENCES = (list, tuple, set, frozenset)
_TRUE, _FALSE = {"true", "yes", "on", "1"}, {"false", "no", "off", "0"}
_NONE = {"none", "null", ""}


def split_assignments(options: list[str] | None) -> dict[str, str]:
    """``["a=1", "b=x,y"]`` as ``{"a": "1", "b": "x,y"}``; a key given twice is refused (which one was meant?)."""
    parsed: dict[str, str] = {}
    for option in options or []:
        key, separator, text = option.partition("=")
        if not separator or not key.strip():
            raise OptionError(f"--option must look like KEY=VALUE (got {option!r})")
        if key.strip() in parsed:
            raise OptionError(
                f"option {key.strip()} is given twice (-o {key.strip()}={parsed[key.strip()]} and -o {option}); "
                "give each key once"
            )
        parsed[key.strip()] = text.strip()
    return parsed


def closest(key: str, allowed: list[str]) -> str:
    """`` (did you mean 'x'?)`` for the closest allowed key, or nothing."""
    match = difflib.get_close_matches(key, allowed, n=1, cutoff=0.6)
    return f"; did you mean {match[0]!r}?" if match else ""


def unknown_key(key: str, allowed: list[str], where: str) -> OptionError:
    return OptionError(f"{where} has no option {key!r}; valid options: {', '.join(allowed)}{closest(key, allowed)}")


def _items(text: str) -> list[str]:
    inner = text.strip()
    if len(inner) >= 2 and inner[0] + inner[-1] in ("()", "[]"):
        inner = inner[1:-1]
    items = [item.strip() for item in inner.split(",")]
    if len(items) > 1 and not items[-1] and all(items[:-1]):  # a trailing comma: "(10,)", or "0," cut short?
        if inner == text.strip():
            raise ValueError("ends with a comma (an item is missing; write one item without the comma)")
        items.pop()
    return [] if not inner.strip() else items


_PLURALS = {"integer": "integers", "number": "numbers", "boolean": "booleans", "text": "texts", "path": "paths"}


def _type_name(annotation: Any) -> str:
    """A short name of an annotation for ``show`` and error messages."""
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Annotated:
        return _type_name(args[0])
    if origin is Literal:
        return " | ".join(repr(a) for a in args)
    if origin in (Union, types.UnionType):
        return " | ".join(dict.fromkeys(_type_name(a) for a in args))
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "table"
    if origin in _SEQUENCES:
        if not args:
            return "list"
        item = _type_name(args[0])
        return f"list of {_PLURALS.get(item, item)}"
    if annotation is type(None):
        return "none"
    return {int: "integer", float: "number", bool: "boolean", str: "text", Path: "path"}.get(
        annotation, getattr(annotation, "__name__", str(annotation))
    )


def type_name(annotation: Any) -> str:
    return _type_name(annotation)


def coerce(text: str, annotation: Any) -> Any:
    """``text`` read as a value of ``annotation``; ValueError says what was expected."""
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Annotated:
        return coerce(text, args[0])
    if origin in (Union, types.UnionType):
        if type(None) in args and text.strip().lower() in _NONE:
            return None
        for arg in (a for a in args if a is not type(None)):
            try:
                return coerce(text, arg)
            except ValueError:
                continue
        raise ValueError(f"must be {_type_name(annotation)}")
    if origin in _SEQUENCES or annotation in _SEQUENCES:
        inner, items = (args[0] if args else str), _items(text)
        try:
            values = [coerce(item, inner) for item in items]
        except ValueError:
            raise ValueError(f"must be a comma-separated {_type_name(annotation)}") from None
        return tuple(values) if (origin or annotation) is tuple else values
    if origin is Literal:
        for value in args:
            if str(value) == text:
                return value
        return text
    return _scalar(text, annotation)


def _scalar(text: str, annotation: Any) -> Any:
    if annotation is bool:
        if text.lower() in _TRUE | _FALSE:
            return text.lower() in _TRUE
        raise ValueError("must be true or false")
    if annotation is int:
        if not re.fullmatch(r"[+-]?\d[\d_]*", text):
            raise ValueError("must be an integer")
        return int(text)
    if annotation is float:
        try:
            return float(text)
        except ValueError:
            raise ValueError("must be a number") from None
    if annotation is Path:
        return Path(text)
    return text


def describe_error(error: Mapping[str, Any], prefix: str = "") -> str:
    """One pydantic error as ``key: what is allowed (got value)``."""
    path = ".".join(str(part) for part in error["loc"] if not str(part).startswith("function-"))
    where = prefix + path if path else prefix.strip() or "(top level)"  # a model-level check has no location
    kind, ctx, given = error["type"], error.get("ctx", {}), error.get("input")
    bounds = {"greater_than": ">", "greater_than_equal": ">=", "less_than": "<", "less_than_equal": "<="}
    if kind in bounds:
        return f"{where}: must be {bounds[kind]} {next(iter(ctx.values()))} (got {given!r})"
    if kind == "literal_error":
        return f"{where}: must be one of {ctx['expected']} (got {given!r})"
    if kind in ("too_short", "too_long"):
        word = "at least" if kind == "too_short" else "at most"
        limit = ctx.get("min_length", ctx.get("max_length"))
        return f"{where}: must have {word} {limit} item(s) (got {ctx.get('actual_length')})"
    if kind == "finite_number":
        return f"{where}: must be a finite number (got {given!r})"
    if kind in ("path_not_file", "path_not_directory", "path_type"):
        what = {"path_not_file": "an existing file", "path_not_directory": "an existing folder"}.get(kind, "a path")
        return f"{where}: must be {what} (got {str(given)!r})"
    if kind == "missing":
        return f"{where}: required"
    if kind == "extra_forbidden":
        return f"{where}: unknown key"
    if kind == "value_error":
        return f"{where}: {error['msg'].removeprefix('Value error, ')}"
    return f"{where}: {error['msg'][0].lower()}{error['msg'][1:]} (got {given!r})"


def validation_message(exc: ValidationError, prefix: str = "") -> str:
    """Every problem of ``exc`` on one line, separated by semicolons."""
    return "; ".join(describe_error(e, prefix) for e in exc.errors(include_url=False))


def typed_overrides(model: type[BaseModel], raw: dict[str, str], where: str) -> dict[str, Any]:
    """``raw`` string options as values of ``model``'s fields (not yet validated)."""
    fields = model.model_fields
    typed = {}
    for key, text in raw.items():
        if key not in fields:
            raise unknown_key(key, list(fields), where)
        try:
            typed[key] = coerce(text, fields[key].annotation)
        except ValueError as exc:
            raise OptionError(f"option {key}: {exc} (got {text!r})") from None
    return typed


def apply_overrides(model: type[Model], base: dict[str, Any], raw: dict[str, str], where: str) -> Model:
    """``model`` validated from ``base`` with ``raw`` options on top; OptionError on any problem."""
    typed = typed_overrides(model, raw, where)
    try:
        return model.model_validate({**base, **typed})
    except ValidationError as exc:
        raise OptionError(validation_message(exc, "option ")) from None


def literal_value(text: str) -> Any:
    """A value without a known type: a number, a boolean, a comma-separated list, or the text itself."""
    if "," in text or (text[:1] + text[-1:]) in ("[]", "()"):
        return [literal_value(item) for item in _items(text)]
    low = text.lower()
    if low in ("true", "false"):
        return low == "true"
    for kind in (int, float):
        try:
            value = kind(text)
        except ValueError:
            continue
        if kind is float and not math.isfinite(value) and low not in ("inf", "-inf", "+inf"):
            continue
        return value
    return text
