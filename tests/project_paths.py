"""Where the tests find the project's files: one place, whatever folder a test module lives in (tests/ mirrors src/,
so a module's depth says nothing about the project's root).

Not a test module: ``tests/`` is on ``sys.path`` (pyproject.toml's ``[tool.pytest.ini_options] pythonpath``).
"""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parent
"""The tests' folder: its helper modules (``toy_protocol``, ``pg_server``, ...) import by name from here."""
ROOT = TESTS.parent
"""The project's checkout: ``src/``, ``configs/``, ``docs/``, ``benchmarks/``, ``README.md``."""
SHIPPED_DEPLOYMENTS = ROOT / "configs" / "deploy"
"""The shipped deployment files, one per built-in protocol."""
SHARED_DATA = ROOT.parent / "shared" / "data"
"""The offline data sets beside the checkout (``../shared/data``), where a test reads real data when it is there."""
OBD_SAMPLE = SHARED_DATA / "obd" / "random" / "all"
"""The Open Bandit Dataset sample's files (random policy, all campaigns)."""
