"""The benchmark scripts, as a Markdown list read from benchmarks/*.py at build time: each script's command and
the first paragraph of its docstring, so a new script appears on the Performance page without an edit."""

from __future__ import annotations

import ast
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def scripts() -> list[Path]:
    """The runnable scripts (helpers start with an underscore)."""
    return sorted(path for path in BENCHMARKS.glob("*.py") if not path.name.startswith("_"))


def summary(path: Path) -> str:
    """The first paragraph of the script's docstring, on one line."""
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    return " ".join(doc.split("\n\n")[0].split())


def benchmarks_markdown() -> str:
    """One entry per script: its command (and the smoke run every script has), then what it measures."""
    entries = [
        f"### `{path.name}`\n\n```bash\npython benchmarks/{path.name}            # the measurement\n"
        f"python benchmarks/{path.name} --smoke    # tiny sizes: checks that it runs\n```\n\n{summary(path)}\n"
        for path in scripts()
    ]
    return "\n".join(entries)
