"""The public names of a privbandits package, as mkdocstrings directives, read from the package's source.

A package with lazy exports (``privbandits._lazy.lazy_exports``) declares which module defines each public
name in a dict literal in its ``__init__.py``; one with eager re-exports lists them in ``__all__``. Both are
read with :mod:`ast`, so nothing is imported to find them.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"


def _init(package: str) -> ast.Module:
    return ast.parse((SRC / package.replace(".", "/") / "__init__.py").read_text(encoding="utf-8"))


def _absolute(module: str, package: str) -> str:
    return package + module if module.startswith(".") else module


def exports(package: str) -> dict[str, str]:
    """``{public name: defining module}`` of ``package`` (its lazy-export table, else its ``__all__``)."""
    tree = _init(package)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "lazy_exports":
            table = ast.literal_eval(node.args[1])
            return {name: _absolute(module, package) for name, module in table.items()}
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in node.targets):
            return {name: package for name in ast.literal_eval(node.value)}
    raise ValueError(f"{package} declares no public names (no lazy_exports table and no __all__)")


def api_markdown(package: str) -> str:
    """The package's docstring, then one directive per public name, grouped by defining module."""
    names = exports(package)
    lines = [f"::: {package}", "    options:", "      members: false", "      show_root_heading: false", ""]
    for module in dict.fromkeys(names.values()):
        lines.append(f"## `{module}`\n")
        for name in sorted(n for n, m in names.items() if m == module):
            lines += [f"::: {module}.{name}", "    options:", "      heading_level: 3", ""]
    return "\n".join(lines)
