"""Shared pieces of the experiment-config schema: the error type, strict models, data-file paths, kinds.

Every config model is frozen and strict (:class:`_Strict`); a field repeating a protocol's option takes its
default, bounds and description from the declaration (:func:`declared`); list fields also take tuples
(:data:`Listed`); a data-file field is checked with :func:`existing_path`, and the offline data's
default files are found with :func:`_shared`; :func:`by_kind` maps ``kind`` tags to their classes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar, get_args

from pydantic import BaseModel, BeforeValidator

from privbandits.declared import declared as declared  # re-exported: the config's fields read it
from privbandits.strict import StrictModel


class ConfigError(ValueError):
    """A config file that cannot be used; the message lists every problem."""


class _Strict(StrictModel):
    """The base of every config model (:class:`privbandits.strict.StrictModel`, as the deployment files')."""


def _listed(value: Any) -> Any:
    """A tuple as a list: strict list fields still take Python tuples (``seeds=(0, 1)``)."""
    return list(value) if isinstance(value, tuple) else value


Listed = BeforeValidator(_listed)


# -- data files -----------------------------------------------------------------
def _shared(*parts: str) -> Path:
    """``parts`` in the offline data (:func:`~privbandits.datasets.cache.shared_data_dir`), named even if absent."""
    from privbandits.datasets.cache import SHARED_ENV, shared_data_dir  # not at import: the command line stays light

    return (shared_data_dir() or Path(f"${SHARED_ENV}")).joinpath(*parts)


def existing_path(value: str, what: str = "file or folder") -> str:
    """``value`` as an absolute path; ValueError naming it when nothing is there."""
    if not value:
        raise ValueError(f"must name a {what} (got '')")
    path = Path(value).expanduser()
    if what == "folder" and not path.is_dir() or what == "file" and not path.is_file() or not path.exists():
        raise ValueError(f"no such {what}: {value!r}")
    return str(path.resolve())


Model = TypeVar("Model", bound=BaseModel)


def by_kind(models: tuple[type[Model], ...]) -> dict[str, type[Model]]:
    """Config classes keyed by their ``kind`` tag, in declaration order."""
    return {get_args(model.model_fields["kind"].annotation)[0]: model for model in models}
