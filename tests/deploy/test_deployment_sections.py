"""Contract: every protocol's ``[protocol]`` section refuses bad values when the deployment file loads, in one line
naming the field, the rule and the value (issue 45), for every registered protocol and the test suite's toy.

The cases are derived from each section model's fields (their types and declared bounds), not listed by hand: a
string or a boolean where a number belongs, a number where a boolean or a choice belongs, a non-integral number
where an integer belongs, inf and NaN, a value just past each bound and one far past it, a list too short or too
long, an unknown key and a missing required one. A protocol registered with a shipped deployment file is covered
with nothing added here (``protocol_harness``). The settings every deployment shares (``deadline_s``, ...) are derived
the same way from :class:`~privbandits.deploy.deployment.Deployment`.
"""

from __future__ import annotations

import types
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import annotated_types as at
import pytest
from protocol_harness import NAMES, registered, shipped_files, valid_file, write_file

from privbandits.deploy.deployment import Deployment, DeploymentError, load_deployment
from privbandits.deploy.registry import PROTOCOLS

INF, NAN = float("inf"), float("nan")
FAR = 10**12
"""A value far past an integer's upper bound (these once ended in MemoryError tracebacks, not a refusal)."""


@dataclass(frozen=True)
class Case:
    """Field ``field`` (of ``[protocol]`` or the file's top level) set to ``value`` (None: left out) is refused with
    ``message`` naming the field (``at``: where in it, e.g. ``.0`` for a list's first item)."""

    label: str
    field: str
    value: Any
    message: str
    at: str = ""


def _base(annotation: Any) -> Any:
    """The type an optional field holds when set (``float | None`` → ``float``)."""
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        (inner,) = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
        return inner
    return annotation


def _choices(values: tuple) -> str:
    return ", ".join(map(repr, values[:-1])) + f" or {values[-1]!r}" if len(values) > 1 else repr(values[0])


def _number(kind: type, value: float) -> float | int:
    return int(value) if kind is int else float(value)


def _bounds(name: str, kind: type, metadata: list) -> list[Case]:
    """A value just past each declared bound, and one far past it."""
    cases = []
    for rule in metadata:
        if isinstance(rule, at.Ge | at.Gt):
            bound = rule.ge if isinstance(rule, at.Ge) else rule.gt
            words = "greater than or equal to" if isinstance(rule, at.Ge) else "greater than"
            step = 1 if kind is int else 0.05 * max(1.0, abs(bound))
            near = bound - step if isinstance(rule, at.Ge) else bound
            for label, value in (("just below", near), ("far below", bound - (10 if kind is int else 1.0))):
                value = _number(kind, value)
                cases.append(Case(f"{label} {bound}", name, value, f"Input should be {words} {bound}, got {value!r}"))
        elif isinstance(rule, at.Le | at.Lt):
            bound = rule.le if isinstance(rule, at.Le) else rule.lt
            words = "less than or equal to" if isinstance(rule, at.Le) else "less than"
            step = 1 if kind is int else 0.05 * max(1.0, abs(bound))
            near = bound + step if isinstance(rule, at.Le) else bound
            far = FAR if kind is int else bound + 0.5 * max(1.0, abs(bound))
            for label, value in (("just above", near), ("far above", far)):
                value = _number(kind, value)
                cases.append(Case(f"{label} {bound}", name, value, f"Input should be {words} {bound}, got {value!r}"))
    return cases


def derived(model: type, valid: dict[str, Any], skip: tuple[str, ...] = ()) -> list[Case]:
    """The refusals derived from ``model``'s fields; ``valid``: a valid section, whose values the cases start from."""
    cases = [Case("unknown key", "no_such_option", 1, "Extra inputs are not permitted, got 1")]
    for name, info in model.model_fields.items():
        if name in skip or info.exclude:
            continue
        kind, metadata = _base(info.annotation), info.metadata
        example = valid.get(name, info.get_default(call_default_factory=True))
        if info.is_required():
            cases.append(Case("missing", name, None, "Field required"))
        if typing.get_origin(kind) is Literal:
            choices = f"Input should be {_choices(typing.get_args(kind))}"
            cases += [Case("not a choice", name, "no-such-choice", f"{choices}, got 'no-such-choice'"),
                      Case("a number for a choice", name, 5, f"{choices}, got 5")]  # fmt: skip
        elif kind is bool:
            cases += [Case("a string for a boolean", name, "no", "Input should be a valid boolean, got 'no'"),
                      Case("a number for a boolean", name, 1, "Input should be a valid boolean, got 1")]  # fmt: skip
        elif kind in (int, float):
            what = "a valid integer" if kind is int else "a valid number"
            text = str(example if example is not None else 1)
            cases += [Case("a string for a number", name, text, f"Input should be {what}, got {text!r}"),
                      Case("a boolean for a number", name, True, f"Input should be {what}, got True")]  # fmt: skip
            if kind is int:
                whole = float(example if example is not None else 1)
                message = f"Input should be a valid integer, got {whole!r}"
                cases.append(Case("a float for an integer", name, whole, message))
            for special in (INF, -INF, NAN):
                message = "Input should be a valid integer" if kind is int else "Input should be a finite number"
                cases.append(Case(f"{special}", name, special, f"{message}, got {special!r}"))
            cases += _bounds(name, kind, metadata)
        elif typing.get_origin(kind) is list:
            (item,) = typing.get_args(kind)
            assert item is int, f"{model.__name__}.{name}: a list of {item} (derive its cases here)"
            good = list(example)
            cases += [Case("a string for a list", name, "1, 2", "Input should be a valid list, got '1, 2'"),
                      Case("a string in a list of integers", name, ["1", *good[1:]],
                           "Input should be a valid integer, got '1'", at=".0")]  # fmt: skip
            for rule in metadata:
                if isinstance(rule, at.MinLen):
                    short = good[: rule.min_length - 1]
                    plural = "s" if rule.min_length != 1 else ""
                    message = f"List should have at least {rule.min_length} item{plural} after validation, not "
                    message += str(len(short))
                    cases.append(Case("too short", name, short, message))
                elif isinstance(rule, at.MaxLen):
                    long = [1] * (rule.max_length + 1)
                    message = f"List should have at most {rule.max_length} items after validation, not {len(long)}"
                    cases.append(Case("too long", name, long, message))
        elif typing.get_origin(kind) is dict:
            cases.append(Case("a string for a table", name, "x", "Input should be a valid dictionary, got 'x'"))
        elif kind is str:
            cases.append(Case("a number for a string", name, 5, "Input should be a valid string, got 5"))
            for rule in metadata:
                if isinstance(rule, at.MinLen) and rule.min_length == 1:
                    cases.append(Case("empty", name, "", "String should have at least 1 character, got ''"))
        elif kind is Path:
            cases.append(Case("a number for a path", name, 5, "Input should be a path (a string), got 5"))
        else:
            raise AssertionError(f"{model.__name__}.{name}: no cases derived for a field of type {kind!r}")
    return cases


def section_cases() -> list:
    params = []
    for name in NAMES:
        with registered(name):
            model = PROTOCOLS.section(name)
        assert model is not None
        for case in derived(model, valid_file(name)["protocol"], skip=("name",)):
            params.append(pytest.param(name, case, id=f"{name}-{case.field}-{case.label}"))
    return params


def refused(folder: Path, data: dict[str, Any], name: str) -> str:
    path = write_file(folder, data)
    with registered(name), pytest.raises(DeploymentError) as caught:
        load_deployment(path)
    message = str(caught.value)
    assert "\n" not in message, message
    return message.removeprefix(f"{path}: ")


def with_value(data: dict[str, Any], case: Case) -> dict[str, Any]:
    if case.value is None:
        del data[case.field]
    else:
        data[case.field] = case.value
    return data


@pytest.mark.parametrize(("name", "case"), section_cases())
def test_a_bad_protocol_value_is_refused_when_the_file_loads_in_one_line_naming_the_field(tmp_path, name, case):
    data = valid_file(name)
    with_value(data["protocol"], case)
    assert refused(tmp_path, data, name) == f"protocol.{case.field}{case.at}: {case.message}"


SESSION = derived(Deployment, valid_file("vertical-o3m"), skip=("protocol", "parties", "ca", "bundles"))


@pytest.mark.parametrize("case", SESSION, ids=[f"{case.field}-{case.label}" for case in SESSION])
def test_a_bad_session_setting_is_refused_when_the_file_loads_in_one_line_naming_it(tmp_path, case):
    data = with_value(valid_file("vertical-o3m"), case)
    assert refused(tmp_path, data, "vertical-o3m") == f"{case.field}{case.at}: {case.message}"


@pytest.mark.parametrize("name", NAMES)
def test_the_valid_file_of_every_protocol_loads(tmp_path, name):
    """What every case above starts from is itself valid: each case's refusal is its one change's."""
    with registered(name):
        spec = load_deployment(write_file(tmp_path, valid_file(name)))
    assert spec.protocol.protocol_name() == name


def test_every_registered_protocol_ships_a_deployment_file_the_suites_start_from():
    """A protocol registered without a shipped file would get no derived cases: it fails here, naming it."""
    assert set(PROTOCOLS.names()) <= set(shipped_files())


def test_the_cases_are_derived_from_the_declared_bounds():
    """Not vacuous: a field's declared bounds give its cases (the toy's ``rounds``: 1 to 20)."""
    from toy_protocol import ToySection

    cases = {case.label: case for case in derived(ToySection, {"rounds": 5}) if case.field == "rounds"}
    assert cases["just below 1"].value == 0 and cases["just above 20"].value == 21
    assert cases["far above 20"].message == "Input should be less than or equal to 20, got 1000000000000"
    assert cases["missing"].message == "Field required"
