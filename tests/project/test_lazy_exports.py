"""The packages' lazy exports (:mod:`privbandits._lazy`): importing a package imports none of the modules its
names come from; each name is the object its module defines, imported on first use and kept."""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys

import pytest

from privbandits._lazy import lazy_exports

LAZY = (
    "privbandits.datasets",
    "privbandits.envs",
    "privbandits.experiments",
    "privbandits.linear",
    "privbandits.logs",
    "privbandits.protocols",
)


def test_importing_a_lazy_package_imports_none_of_its_modules():
    prefixes = tuple(f"{package}." for package in LAZY)
    code = f"import sys; import {', '.join(LAZY)}; print(sorted(m for m in sys.modules if m.startswith({prefixes!r})))"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "[]"


@pytest.mark.parametrize("package", LAZY)
def test_every_export_is_the_object_its_module_defines_and_is_listed(package):
    module = importlib.import_module(package)
    assert module.__all__ == sorted(module.__all__) and set(module.__all__) <= set(dir(module))
    for name in module.__all__:
        value = getattr(module, name)
        assert vars(module)[name] is value  # kept: the next read is a plain attribute read
        defined = getattr(value, "__module__", None)
        if defined is not None and defined.startswith("privbandits."):
            assert getattr(importlib.import_module(defined), name) is value
    with pytest.raises(AttributeError, match=f"module '{package}' has no attribute 'no_such_name'"):
        module.no_such_name  # noqa: B018


@pytest.mark.parametrize("package", LAZY)
def test_lazy_exports_are_the_named_objects_whatever_was_imported_first(package):
    """An export named like one of its package's modules would turn into that module once imported."""
    module = importlib.import_module(package)
    for info in pkgutil.iter_modules(module.__path__):
        importlib.import_module(f"{package}.{info.name}")
    for name in module.__all__:
        assert not isinstance(getattr(module, name), type(module)), f"{package}.{name} is a module"


def test_a_relative_module_resolves_against_the_package_and_an_unknown_name_is_refused():
    namespace = {"__name__": "privbandits"}
    exported, getter, listing = lazy_exports(namespace, {"lazy_exports": "._lazy"})
    assert exported == ["lazy_exports"] and "lazy_exports" in listing() and "lazy_exports" not in namespace
    assert getter("lazy_exports") is lazy_exports and namespace["lazy_exports"] is lazy_exports
    with pytest.raises(AttributeError, match="module 'privbandits' has no attribute 'missing'"):
        getter("missing")
