"""``benchmarks/record.py`` writes a benchmark's output into the generated page, one section per command: a
command recorded again replaces its own section only, and a failing run or a smoke run records nothing."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from project_paths import ROOT

SCRIPT = ROOT / "benchmarks" / "record.py"


@pytest.fixture
def record():
    spec = importlib.util.spec_from_file_location("record_benchmark", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _tree(tmp_path: Path) -> Path:
    (tmp_path / "benchmarks").mkdir()
    (tmp_path / "benchmarks" / "fake.py").write_text(
        "import sys\nif '--fail' in sys.argv: sys.exit(2)\n"
        "if '--smoke' in sys.argv: print('smoke run: tiny', file=sys.stderr)\nprint('ratio', sys.argv[1:])\n"
    )
    return tmp_path


def test_a_command_gets_one_section_and_recording_it_again_replaces_only_that_one(record, tmp_path):
    root, page = _tree(tmp_path), tmp_path / "runs.md"
    assert record.record("fake.py", ["--size", "1"], page, root) == "python benchmarks/fake.py --size 1"
    record.record("fake.py", ["--size", "2"], page, root)
    first = record.sections(page.read_text())
    record.record("fake.py", ["--size", "1"], page, root)
    again = record.sections(page.read_text())
    assert list(again) == ["python benchmarks/fake.py --size 1", "python benchmarks/fake.py --size 2"]
    assert again["python benchmarks/fake.py --size 2"] == first["python benchmarks/fake.py --size 2"]
    assert "ratio ['--size', '1']" in again["python benchmarks/fake.py --size 1"]
    assert page.read_text().startswith(record.PREAMBLE) and "load average" in page.read_text()


@pytest.mark.parametrize(("options", "why"), [(["--fail"], "failed"), (["--smoke"], "mean nothing")])
def test_a_failing_or_smoke_run_records_nothing(record, tmp_path, options, why):
    root, page = _tree(tmp_path), tmp_path / "runs.md"
    with pytest.raises(SystemExit, match=why):
        record.record("fake.py", options, page, root)
    with pytest.raises(SystemExit, match="no benchmark benchmarks/other.py"):
        record.record("other.py", [], page, root)
    assert not page.exists()
