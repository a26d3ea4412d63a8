"""`.ci/bounds.py`: the lowest and newest requirement lists that `make test-bounds` installs."""

import importlib.util
import subprocess
import sys
import tomllib

import pytest
from project_paths import ROOT

SCRIPT = ROOT / ".ci" / "bounds.py"


def _bounds():
    spec = importlib.util.spec_from_file_location("ci_bounds", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run(*args):
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True)


def test_lowest_pins_every_declared_dependency_at_its_lower_bound():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    declared = project["dependencies"] + project["optional-dependencies"]["test"]
    pins = _run("lowest").stdout.split()
    assert len(pins) == len({line.split(">=")[0] for line in declared})
    for line in declared:
        name, rest = line.split(">=")
        assert f"{name}=={rest.split(',')[0]}" in pins


def test_newest_is_the_declared_ranges_unchanged():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert _run("newest").stdout.split() == project["dependencies"] + project["optional-dependencies"]["test"]


@pytest.mark.parametrize(
    ("requirement", "pin"),
    [("numpy>=2.0,<3", "numpy==2.0"), ("a.b-c[x,y] >= 1.4.2 , <2", "a.b-c[x,y]==1.4.2"), ("z<3,>=0.1", "z==0.1")],
)
def test_lowest_pin(requirement, pin):
    assert _bounds().lowest_pin(requirement) == pin


@pytest.mark.parametrize("requirement", ["numpy<3", "numpy==2.0", "numpy>=1,>=2"])
def test_a_dependency_without_one_lower_bound_is_refused_by_name(requirement):
    with pytest.raises(SystemExit, match=rf"^bounds: '{requirement}' in pyproject.toml needs exactly one '>=' lower"):
        _bounds().lowest_pin(requirement)


def test_an_unknown_mode_is_refused_with_usage():
    result = _run("oldest")
    assert (result.returncode, result.stdout, result.stderr) == (2, "", "usage: python .ci/bounds.py lowest|newest\n")
