"""Lazy exports for a package's ``__init__`` (PEP 562): each public name is imported from its module on first use.

A package declares which module defines each of its public names; importing the package then imports none of
those modules, so ``import privbandits.<package>.<light module>`` (the command line, option models) stays light
while ``from privbandits.<package> import Name`` still works::

    __all__, __getattr__, __dir__ = lazy_exports(globals(), {"Name": "privbandits.package.module"})
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(
    namespace: dict[str, Any], exports: Mapping[str, str]
) -> tuple[list[str], Callable[[str], Any], Callable[[], list[str]]]:
    """``__all__``, ``__getattr__`` and ``__dir__`` of the package whose globals are ``namespace``.

    ``exports`` maps each public name to the module that defines it (absolute, or relative to the package
    with a leading dot). A name is imported on first use and kept in ``namespace``, so later reads are plain
    attribute reads.
    """
    package = namespace["__name__"]
    exports = dict(exports)

    def __getattr__(name: str) -> Any:
        """Import an exported name on first use."""
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, package), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(exports))

    return sorted(exports), __getattr__, __dir__
