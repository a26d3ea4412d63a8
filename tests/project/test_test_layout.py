"""The tests' own layout (issue 45): tests/ mirrors src/, each test module's name is unique in the tree (pytest's
default import mode imports it by its name), no test module imports another one (what they share is a helper module
at tests/ root or a conftest fixture), and no test finds the project by counting folders up from itself
(``project_paths`` names them once)."""

from __future__ import annotations

import ast
import re
from collections import Counter

from project_paths import ROOT, TESTS

PACKAGE = ROOT / "src" / "privbandits"
WHOLE_PROJECT = {"project", "papers"}
"""Folders of tests/ for the whole project (the CLI, docs, README, wheel, benchmarks) and the paper reproductions
(src/privbandits/papers is a package too, but its tests are named for the layer)."""


def modules() -> list:
    return sorted(TESTS.rglob("test_*.py"))


def test_every_test_folder_mirrors_a_package_of_src_or_is_the_whole_projects():
    folders = {path.parent.relative_to(TESTS) for path in modules()}
    for folder in folders:
        parts = folder.parts
        if not parts or parts[0] in WHOLE_PROJECT:
            continue
        assert (PACKAGE / folder / "__init__.py").is_file(), f"tests/{folder} mirrors no package of src/privbandits"


def test_every_test_module_name_is_unique_and_no_helper_shares_it():
    names = Counter(path.name for path in modules())
    assert [name for name, count in names.items() if count > 1] == []
    helpers = {path.stem for path in TESTS.glob("*.py")} | {path.name for path in TESTS.iterdir() if path.is_dir()}
    assert not helpers & {path.stem for path in modules()}


def test_no_test_module_imports_another():
    importing = {}
    for path in modules():
        for node in ast.walk(ast.parse(path.read_text())):
            names = [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            if any(name.split(".")[0].startswith("test_") for name in names):
                importing[str(path.relative_to(TESTS))] = names
    assert importing == {}


def test_no_test_counts_folders_up_from_its_own_file():
    counting = re.compile(r"__file__\)(\.resolve\(\))?\.parents?\b")
    found = [str(path.relative_to(TESTS)) for path in TESTS.rglob("*.py")
             if path.name != "project_paths.py" and counting.search(path.read_text())]  # fmt: skip
    assert found == []
