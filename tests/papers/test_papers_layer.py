"""The paper reproductions are a layer on top of the library (issue 32 item 4): nothing outside
``src/privbandits/papers/`` imports it or names it in code, the library finds its catalog through the entry point
group ``privbandits.reproductions``, and the units it moved out of ``privbandits.experiments.papers`` keep their
store keys (``tasks.MOVED``)."""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import tomllib
from importlib.metadata import EntryPoint, entry_points

import pytest
from project_paths import ROOT

from privbandits.experiments import catalog
from privbandits.experiments.catalog import find
from privbandits.experiments.config import ConfigError
from privbandits.experiments.reproduction import Catalog
from privbandits.experiments.store import ResultsStore
from privbandits.experiments.tasks import MOVED, Task, canonical_json, keyed_name, resolve

PACKAGE = ROOT / "src" / "privbandits"
LAYER = "privbandits.papers"
ALLOWED = {("experiments/tasks.py", "string", "privbandits.papers.")}
"""The one place the library may name the layer: the key migration table (its today's prefix)."""


def _docstrings(tree: ast.Module) -> set[int]:
    """ids of the docstring constants (module, classes, functions, and the attribute docstrings after assignments)."""
    found = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if not isinstance(body, list):
            continue
        for index, statement in enumerate(body):
            first = index == 0 and not isinstance(node, ast.If | ast.For | ast.While | ast.With | ast.Try)
            after_assignment = index > 0 and isinstance(body[index - 1], ast.Assign | ast.AnnAssign)
            if (first or after_assignment) and isinstance(statement, ast.Expr):
                if isinstance(statement.value, ast.Constant) and isinstance(statement.value.value, str):
                    found.add(id(statement.value))
    return found


def _absolute(module: str | None, level: int, where: str) -> str:
    """The absolute module of ``from <level dots><module> import ...`` in module ``where``."""
    if level == 0:
        return module or ""
    base = where.split(".")[: -level]
    return ".".join([*base, module] if module else base)


def _in_layer(name: str) -> bool:
    return name == LAYER or name.startswith(LAYER + ".")


def references(source: str, module: str) -> list[tuple[str, str]]:
    """Every import of the papers layer in ``source`` (the text of ``module``), ``("import", statement)``, and
    every string that names it, docstrings apart, ``("string", text)``."""
    tree = ast.parse(source)
    docstrings = _docstrings(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [("import", f"import {alias.name}") for alias in node.names if _in_layer(alias.name)]
        elif isinstance(node, ast.ImportFrom):
            origin = _absolute(node.module, node.level, module)
            if any(_in_layer(name) for name in [origin, *(f"{origin}.{alias.name}" for alias in node.names)]):
                found.append(("import", f"from {origin} import {', '.join(alias.name for alias in node.names)}"))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            if LAYER in node.value or "privbandits/papers" in node.value:
                found.append(("string", node.value))
    return found


def _library_modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE)
        if relative.parts[0] == "papers":
            continue
        name = ".".join(("privbandits", *relative.with_suffix("").parts)).removesuffix(".__init__")
        if path.name == "__init__.py":
            name += ".__init__"  # relative imports in a package resolve against the package itself
        yield relative.as_posix(), name, path.read_text(encoding="utf-8")


def test_the_library_never_imports_or_names_the_papers_layer():
    found = {(relative, *reference) for relative, name, source in _library_modules()
             for reference in references(source, name)}  # fmt: skip
    assert found == ALLOWED
    assert len(list(_library_modules())) > 150  # the scan saw the library


@pytest.mark.parametrize(
    "code",
    [
        "import privbandits.papers.fclub.runs",
        "from privbandits.papers.fclub.runs import Setting",
        "from privbandits import papers",
        "from .. import papers",
        "from ..papers.vertical import configs",
        "def f():\n    from privbandits.papers import catalog",
        "FN = 'privbandits.papers.fclub.runs:simulate'",
        "x = importlib.import_module('privbandits.papers')",
    ],
)
def test_the_scan_finds_every_form_of_reference(code):
    assert references(code, "privbandits.experiments.catalog") != []


def test_the_scan_leaves_other_modules_and_docstrings_alone():
    code = '"""About :mod:`privbandits.papers`."""\nimport privbandits.papersmith\nfrom privbandits import paper\n'
    assert references(code, "privbandits.experiments.catalog") == []


# -- the key migration ----------------------------------------------------------------------------------------
def _historical_key(fn: str, params: dict) -> str:
    """The key as it was computed before the move: the function's name under privbandits.experiments.papers."""
    historical = fn.replace("privbandits.papers.", "privbandits.experiments.papers.", 1)
    return hashlib.sha256(canonical_json({"fn": historical, "params": params}).encode()).hexdigest()[:32]


def test_the_migration_table_maps_the_layer_to_its_old_package_only():
    assert MOVED == {"privbandits.papers.": "privbandits.experiments.papers."}
    assert keyed_name("privbandits.papers.fclub.runs:simulate") == "privbandits.experiments.papers.fclub.runs:simulate"
    assert keyed_name("privbandits.experiments.runner:run_one") == "privbandits.experiments.runner:run_one"
    assert keyed_name("privbandits.papersmith:f") == "privbandits.papersmith:f"
    assert importlib.util.find_spec("privbandits.experiments.papers") is None  # no compatibility package left


@pytest.mark.parametrize("name", ["fclub-table3", "p2b-fig3", "mpc-fig4", "vertical-audit"])
def test_a_moved_unit_keeps_its_historical_key_and_runs_the_moved_function(name, tmp_path):
    reproduction = catalog.REPRODUCTIONS[name]
    tasks = reproduction.tasks(reproduction.parse({}))
    moved = [task for task in tasks if task.fn.startswith("privbandits.papers.")]
    assert moved and len(moved) == len(tasks)
    for task in moved:
        assert task.key == _historical_key(task.fn, dict(task.params))
        function = resolve(task.fn)
        assert callable(function) and function.__module__ == task.fn.partition(":")[0]
    store = ResultsStore(tmp_path / "results.sqlite")
    assert store.put(moved[0], {"value": 1}, 0.5)
    assert store.results([Task(moved[0].fn, moved[0].params)]) == {moved[0].key: {"value": 1}}
    (row,) = store.units_of(keyed_name(moved[0].fn))  # the fn column holds the historical name, as older rows do
    assert row.key == moved[0].key and row.fn.startswith("privbandits.experiments.papers.")


# -- finding the catalog ---------------------------------------------------------------------------------------
def test_the_catalog_is_declared_in_the_metadata_and_found_through_it():
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"][catalog.GROUP]
    assert declared == {"papers": "privbandits.papers.catalog:CATALOG"}
    installed = {point.name: point.value for point in entry_points(group=catalog.GROUP)}
    assert installed == declared, "the installed metadata is stale: reinstall the package (pip install -e .)"
    from privbandits.papers.catalog import CATALOG, ENTRIES

    assert catalog.CATALOGS == (CATALOG,)
    assert list(catalog.REPRODUCTIONS) == [entry.name for entry in ENTRIES] and len(ENTRIES) == 25
    assert set(catalog.CONFIG_REPORTS) == {"vertical-fig4", "vertical-fig6"} <= set(catalog.shipped_configs())


def test_an_entry_point_that_is_not_a_catalog_is_refused_naming_it(monkeypatch):
    bad = EntryPoint(name="bad", value="privbandits.experiments.tasks:MOVED", group=catalog.GROUP)
    monkeypatch.setattr(catalog, "entry_points", lambda group: [bad] if group == catalog.GROUP else [])
    with pytest.raises(TypeError, match=r"entry point bad = 'privbandits.experiments.tasks:MOVED' "
                                        r"\(privbandits.reproductions\) must name a Catalog, got dict"):  # fmt: skip
        catalog.installed_catalogs()


def test_two_reproductions_of_one_name_are_refused():
    entry = catalog.REPRODUCTIONS["p2b-fig3"]
    with pytest.raises(ValueError, match="two installed reproductions are named 'p2b-fig3'"):
        catalog._by_name([entry, entry])
    assert Catalog((entry,)).config_reports == {}


def test_without_a_catalog_a_missing_name_says_to_reinstall(monkeypatch):
    monkeypatch.setattr(catalog, "REPRODUCTIONS", {})
    with pytest.raises(ConfigError, match="no config file or reproduction named 'fclub-fig2'") as raised:
        find("fclub-fig2")
    assert str(raised.value).endswith(f"({catalog.NONE_INSTALLED})")
    assert "vertical-fig4" in str(raised.value)  # the shipped configs are still there
