"""One declaration per option: its constraint (type and bounds), default and description together (issue 32).

In the style of scikit-learn's class-level ``_parameter_constraints``, but each entry also carries the
option's default and what it means, so the checks at construction, ``privbandits show``, the experiment
and deployment configs and the README's input-requirement tables all read the same declaration::

    class LinUCB(LinearBandit):
        OPTIONS = declare({"alpha": Option(Real(low=0), 1.0, "exploration weight of the confidence width")})

        def __init__(self, n_arms, dim, *, alpha=1.0, **kwargs):
            LinUCB.OPTIONS.check("LinUCB", {"alpha": alpha})

A frozen dataclass declares each field with :func:`option`, which keeps the :class:`Option` in the field's
metadata (:func:`options_of` reads them back), so the default is written once::

    @dataclass(frozen=True)
    class P2BConfig:
        threshold: int = option(Integer(low=1), 10, "crowd-blending threshold l")

A refusal reads ``"OWNER: NAME must be EXPECTED, got VALUE"`` (:func:`~privbandits.validation.check`'s);
``refusal`` replaces it by a template with the fields ``{owner}`` (``"OWNER: "`` or nothing), ``{name}``,
``{expected}``, ``{constraint}`` (the full phrase), ``{bounds}`` (the range alone) and ``{value}``, where tests
pin an older wording.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any, Generic, TypeVar

from privbandits.validation import Choice, Constraint, Integer, InvalidInputError, Real, Text, describe

__all__ = ["REQUIRED", "UNOWNED", "Option", "Options", "check_fields", "declare", "option", "options_of"]

T = TypeVar("T")


class _Required:
    """The default of an option that has none (the caller must give it)."""

    def __repr__(self) -> str:
        return "REQUIRED"


REQUIRED: Any = _Required()

UNOWNED = "{name} must be {expected}, got {value}"
"""The refusal without the owner's name (the wording of checks that never named it)."""


@dataclass(frozen=True)
class Option(Generic[T]):
    """An option: what values it takes (``constraint``), its ``default`` and a one-line ``doc``."""

    constraint: Constraint[T]
    default: Any = REQUIRED
    doc: str = ""
    refusal: str = ""
    """A template replacing the standard refusal (see the module docstring); empty: the standard one."""

    @property
    def required(self) -> bool:
        return self.default is REQUIRED

    def check(self, value: object, name: str, owner: str | None = None) -> T:
        """``value`` normalised by the constraint; else :class:`InvalidInputError` in this option's wording."""
        constraint = self.constraint
        if constraint.accepts(value):
            return constraint.normalise(value)
        template = self.refusal or "{owner}{name} must be {expected}, got {value}"
        raise InvalidInputError(
            template.format(
                owner=f"{owner}: " if owner else "",
                name=name,
                expected=constraint.expected(value),
                constraint=constraint,
                bounds=getattr(constraint, "bounds", ""),
                value=describe(value),
            )
        )

    def field(self, **changes: Any) -> Any:
        """This option as a pydantic ``Field`` (of a config or deployment-file model): its default, its bounds
        (``ge``/``gt``/``le``/``lt`` from an :class:`~privbandits.validation.Integer` or
        :class:`~privbandits.validation.Real`, also inside :class:`~privbandits.validation.NoneOr`) and its
        description; ``changes`` override any of them (``default=REQUIRED``: the file must give it)."""
        from pydantic import Field

        arguments = self.field_arguments() | changes
        if arguments.get("default") is REQUIRED:
            del arguments["default"]
        return Field(**arguments)

    def field_arguments(self) -> dict[str, Any]:
        """The arguments of :meth:`field`: default (an Enum's by its value, a file's spelling; none when
        required), description and bounds."""
        default = self.default.value if isinstance(self.default, Enum) else self.default
        arguments = {} if self.required else {"default": default}
        return arguments | {"description": self.doc or None, **_bounds_of(self.constraint)}

    def with_default(self, default: object) -> Option[T]:
        """The same option with another default (a subclass's)."""
        return dataclasses.replace(self, default=default)


def _bounds_of(constraint: Constraint[Any]) -> dict[str, float]:
    """Pydantic's bound arguments for a numeric constraint or a :class:`~privbandits.validation.Text`'s length
    (nothing for the others)."""
    constraint = getattr(constraint, "inner", constraint)  # NoneOr: its inner constraint's bounds
    if isinstance(constraint, Text):
        return {"min_length": constraint.min_length} if constraint.min_length else {}
    if not isinstance(constraint, Integer | Real):
        return {}
    low_open, high_open = getattr(constraint, "low_open", False), getattr(constraint, "high_open", False)
    bounds = {}
    if constraint.low is not None:
        bounds["gt" if low_open else "ge"] = constraint.low
    if constraint.high is not None:
        bounds["lt" if high_open else "le"] = constraint.high
    return bounds


class Options(Mapping[str, Option[Any]]):
    """An object's declared options, in the order they are checked."""

    def __init__(self, options: Mapping[str, Option[Any]]) -> None:
        self._options = dict(options)

    def __getitem__(self, name: str) -> Option[Any]:
        return self._options[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._options)

    def __len__(self) -> int:
        return len(self._options)

    def __repr__(self) -> str:
        return f"Options({self._options!r})"

    def check(self, owner: str | None, values: Mapping[str, object]) -> dict[str, Any]:
        """Every declared option that ``values`` holds, normalised, in declaration order; or the first refusal."""
        return {name: option.check(values[name], name, owner) for name, option in self.items() if name in values}

    def defaults(self) -> dict[str, Any]:
        """The default of every option that has one."""
        return {name: option.default for name, option in self.items() if not option.required}

    def only(self, *names: str) -> Options:
        """These options alone, in the given order."""
        return Options({name: self[name] for name in names})

    def __or__(self, other: Mapping[str, Option[Any]]) -> Options:
        return Options({**self._options, **other})


def declare(options: Mapping[str, Option[Any]]) -> Options:
    """``options`` as an :class:`Options` (the form a class keeps in ``OPTIONS``)."""
    return Options(options)


_KEY = "privbandits.option"


def option(constraint: Constraint[T], default: Any = REQUIRED, doc: str = "", refusal: str = "") -> Any:
    """A dataclass field declared by an :class:`Option` (kept in the field's metadata; see :func:`options_of`)."""
    declared = Option(constraint, default, doc, refusal)
    if declared.required:
        return dataclasses.field(metadata={_KEY: declared})
    return dataclasses.field(default=default, metadata={_KEY: declared})


def options_of(owner: type | object) -> Options:
    """The declared options of a class (or of an instance's class): its dataclass fields declared with
    :func:`option`, else its ``OPTIONS``."""
    cls = owner if isinstance(owner, type) else type(owner)
    if dataclasses.is_dataclass(cls):
        declared = {f.name: f.metadata[_KEY] for f in dataclasses.fields(cls) if _KEY in f.metadata}
        if declared:
            return Options(declared)
    found = getattr(cls, "OPTIONS", None)
    if not isinstance(found, Options):
        raise TypeError(f"{cls.__name__} declares no options")
    return found


def check_fields(
    instance: object, owner: str | None = None, *, adopt: tuple[str, ...] = (), choices: bool = False
) -> None:
    """Check every declared field of a frozen dataclass ``instance`` (in ``__post_init__``); then store the
    normalised value of the fields named in ``adopt`` and, with ``choices``, of every :class:`Choice` field (as
    its Enum member). The others keep the value given: a config's store key is of its fields as given."""
    declared = options_of(instance)
    checked = declared.check(owner, vars(instance))
    for name, declaration in declared.items():
        if name in adopt or choices and isinstance(declaration.constraint, Choice):
            object.__setattr__(instance, name, checked[name])
