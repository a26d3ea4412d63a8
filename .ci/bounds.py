"""Requirements at the edges of the ranges that pyproject.toml declares.

    python .ci/bounds.py lowest   -> one ``name==LOWER`` line per dependency (runtime + the test extra)
    python .ci/bounds.py newest   -> the declared ranges as they are, for ``pip install --upgrade``

The lists are derived from pyproject.toml every time, never copied: a bound changed there is the
bound tested. A dependency without a ``>=`` lower bound is an error (nothing to test at the low end).
Standard library only, so it runs with any python3 >= 3.11 before a virtual environment exists.
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"
EXTRAS = ("test",)
_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)(\[[^\]]*\])?\s*(.*)$")


def declared(pyproject: Path = PYPROJECT) -> list[str]:
    """The runtime dependencies and those of EXTRAS, in declaration order, without duplicates."""
    project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    lines = list(project["dependencies"])
    for extra in EXTRAS:
        lines += project["optional-dependencies"][extra]
    seen: set[str] = set()
    unique = []
    for line in lines:
        name = _NAME.match(line).group(1).lower()
        if name not in seen:
            seen.add(name)
            unique.append(line)
    return unique


def lowest_pin(requirement: str) -> str:
    """``numpy>=2.0,<3`` -> ``numpy==2.0``."""
    match = _NAME.match(requirement.split(";")[0])
    name, extras, specifiers = match.group(1), match.group(2) or "", match.group(3)
    lower = [spec.strip()[2:].strip() for spec in specifiers.split(",") if spec.strip().startswith(">=")]
    if len(lower) != 1:
        raise SystemExit(f"bounds: {requirement!r} in pyproject.toml needs exactly one '>=' lower bound")
    return f"{name}{extras}=={lower[0]}"


def main(argv: list[str]) -> int:
    if len(argv) != 1 or argv[0] not in ("lowest", "newest"):
        print("usage: python .ci/bounds.py lowest|newest", file=sys.stderr)
        return 2
    requirements = declared()
    if argv[0] == "lowest":
        requirements = [lowest_pin(r) for r in requirements]
    print("\n".join(requirements))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
