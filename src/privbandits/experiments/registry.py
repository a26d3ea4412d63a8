"""Policy kinds as plug-ins: the registry of the kinds an experiment config's ``[[policies]]`` tables name.

A policy kind is its config model: a pydantic model deriving from
:class:`~privbandits.experiments.config.kind.PolicyKindConfig` whose ``kind`` field is a one-value ``Literal`` (the
kind's name, written there once). The model declares the kind's options, how it builds its learner from a run's
round source (``learner``) or runs on a population (``population_metrics``), which environments it cannot serve
(``environment_problem``) and what it adds to a run's store key (``noise_key``: the DP noise it draws). The registry
(:data:`POLICY_KINDS`) holds the models by kind: the experiment config's policies validate through it
(:meth:`PolicyKindRegistry.validate`, a tagged union of the registered models), the runner rebuilds a run's policy
from its stored spec through it, ``privbandits list`` and ``show`` list it, and an unknown kind is refused with the
registered ones listed.

The built-in kinds register where they are declared (``@POLICY_KINDS.register`` on their classes in
:mod:`privbandits.experiments.config.policies`, imported the first time the registry is asked); an installed
package declares its own as an entry point (group :data:`ENTRY_POINTS`), found at the first kind the registry does
not know; a test registers its own for a while with :meth:`PolicyKindRegistry.extended`. Light to import: the
command line reads it before numpy.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar, Union, get_args, get_origin

from pydantic import BaseModel, Field, TypeAdapter

if TYPE_CHECKING:
    from privbandits.experiments.config.kind import PolicyKindConfig

Model = TypeVar("Model", bound=type[BaseModel])


def kind_of(model: type[BaseModel]) -> str:
    """The kind a config model is tagged with: its ``kind`` field's one ``Literal`` value."""
    field = model.model_fields.get("kind")
    values = get_args(field.annotation) if field is not None and get_origin(field.annotation) is Literal else ()
    if len(values) != 1 or not isinstance(values[0], str):
        raise TypeError(f"{model.__name__} is no policy kind: it needs a field kind: Literal['NAME']")
    return values[0]


class PolicyKindRegistry:
    """Policy config models by kind, in registration order (the built-in kinds first)."""

    def __init__(self, builtins: str | None = None, entry_points: str | None = None) -> None:
        self._models: dict[str, type[PolicyKindConfig]] = {}
        self._builtins = builtins  # the module registering the built-in kinds: imported when first asked
        self._group = entry_points  # installed packages' kinds: discovered at the first unknown kind
        self._adapter: TypeAdapter[Any] | None = None

    def _load_builtins(self) -> None:
        module, self._builtins = self._builtins, None
        if module is not None:
            importlib.import_module(module)

    def _discover(self) -> None:
        """Register, once, the kinds installed packages declare as entry points of the group (each
        ``NAME = "module:attribute"``, the config model of kind NAME)."""
        self._load_builtins()
        group, self._group = self._group, None
        if group is None:
            return
        from importlib.metadata import entry_points

        for point in entry_points(group=group):
            if point.name not in self._models:
                model = point.load()
                if not (isinstance(model, type) and issubclass(model, BaseModel)) or kind_of(model) != point.name:
                    raise TypeError(f"entry point {point.name} = {point.value!r} ({group}) is not its kind's model")
                self.register(model)

    def register(self, model: Model) -> Model:
        """Register config model ``model`` under its kind (so it decorates the class that declares it); refused
        (``ValueError``) if that kind is taken."""
        self._load_builtins()
        kind = kind_of(model)
        if kind in self._models:
            raise ValueError(f"policy kind {kind!r} is already registered (registered: {', '.join(self._models)})")
        self._models[kind] = model  # type: ignore[assignment]  # a PolicyKindConfig (its model's base)
        self._adapter = None
        return model

    def unregister(self, kind: str) -> None:
        """Forget kind ``kind``; ``KeyError`` naming the registered ones if there is none."""
        if kind not in self._models:
            raise KeyError(f"no policy kind {kind!r} is registered (registered: {', '.join(self._models)})")
        del self._models[kind]
        self._adapter = None

    @contextmanager
    def extended(self, *models: type[BaseModel]) -> Iterator[PolicyKindRegistry]:
        """Register ``models`` for the ``with`` block, then forget them (e.g. a test's own kind)."""
        added: list[str] = []
        try:
            for model in models:
                self.register(model)
                added.append(kind_of(model))
            yield self
        finally:
            for kind in added:
                self.unregister(kind)

    def names(self) -> tuple[str, ...]:
        """The registered kinds, in registration order (installed plug-ins' last)."""
        self._discover()
        return tuple(self._models)

    def models(self) -> tuple[type[PolicyKindConfig], ...]:
        """The registered config models, in registration order."""
        self._discover()
        return tuple(self._models.values())

    def by_kind(self) -> dict[str, type[PolicyKindConfig]]:
        """The registered config models by kind, in registration order."""
        self._discover()
        return dict(self._models)

    def model(self, kind: object) -> type[PolicyKindConfig] | None:
        """The config model of kind ``kind``; None if no kind of that name is registered."""
        if not isinstance(kind, str):
            return None
        if kind not in self._models:
            self._discover()
        return self._models.get(kind)

    def validate(self, value: object) -> PolicyKindConfig:
        """``value`` (a mapping or a config) validated by the model its ``kind`` names: pydantic's errors of a
        tagged union (``union_tag_invalid`` for an unknown kind, the kind in the location of a field's error)."""
        if isinstance(value, dict):
            self.model(value.get("kind"))  # an unknown kind: look for installed ones first
        if self._adapter is None:
            self._adapter = TypeAdapter(self._union())
        return self._adapter.validate_python(value)

    def from_spec(self, value: dict) -> PolicyKindConfig:
        """The policy of a stored run spec: a ``LATER`` field it leaves out is at its ``LATER`` value (what the run
        computed when it was stored), even where the field's default has changed since (DP LinUCB's calibration)."""
        model = self.model(value.get("kind"))
        later = getattr(model, "LATER", {}) if model is not None else {}
        return self.validate({**later, **value})

    def _union(self) -> Any:
        """The tagged union of the models registered so far (the built-in kinds are always among them: never a
        union of one); installed kinds are looked for only when a config names a kind not among them."""
        self._load_builtins()
        return Annotated[Union[tuple(self._models.values())], Field(discriminator="kind")]  # noqa: UP007


ENTRY_POINTS = "privbandits.policy_kinds"
"""The entry-point group an installed package declares its policy kinds in (``NAME = "module:Model"``)."""

POLICY_KINDS = PolicyKindRegistry("privbandits.experiments.config.policies", ENTRY_POINTS)
"""The experiment config's policy kinds: the built-in ones (registered by
:mod:`privbandits.experiments.config.policies`), those installed packages declare (:data:`ENTRY_POINTS`) and any
registered since."""
