"""P2B deployments from the shipped example (ephemeral ports, reproducible, the raw baseline on) and the waits of the
kill-and-rejoin tests: for the P2B deployment's tests (SQLite and PostgreSQL queues) and those that run every
protocol's.

Not a test module: ``tests/`` is on ``sys.path`` (pyproject.toml's ``[tool.pytest.ini_options] pythonpath``).
"""

from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path

import pytest
from deploy_files import reproducible
from project_paths import SHIPPED_DEPLOYMENTS
from typer.testing import CliRunner

from privbandits.deploy.cli import standalone
from privbandits.deploy.deployment import load_deployment

EXAMPLE = SHIPPED_DEPLOYMENTS / "p2b.toml"


def local_copy(folder: Path, *, raw_baseline: bool = True, seeded: bool = True, **replace: str) -> Path:
    """The shipped example with ephemeral ports (and ``replace``d settings), in ``folder``: by default reproducible
    (``seeded``, so it equals the in-memory run) and with the raw baseline (off in the shipped file)."""
    text = re.sub(r'address = "127\.0\.0\.1:\d+"', 'address = "127.0.0.1:0"', EXAMPLE.read_text())
    text = reproducible(text) if seeded else text
    if raw_baseline:
        text = text.replace('name = "p2b"\n', 'name = "p2b"\nraw_baseline = true\n')
    for old, new in replace.items():
        assert old in text, old
        text = text.replace(old, new)
    path = folder / "p2b.toml"
    path.write_text(text)
    return path


def _held_reports(path: Path) -> int:
    """Reports accepted by the shuffler's queue and not yet batched (read-only, while the shuffler writes)."""
    import sqlite3

    if not path.exists():
        return 0
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=1.0) as db:
            return db.execute("SELECT COUNT(*) FROM reports WHERE batch_id IS NULL").fetchone()[0]
    except sqlite3.OperationalError:  # the schema is not written yet
        return 0


def _wait_all(parties, limit: float) -> dict[str, int]:
    """Every party's exit code, each waited for until ``limit`` seconds from now (a party still running then is
    killed and the test fails, naming it): no launcher countdown that could kill a slow survivor."""
    stop = time.monotonic() + limit
    for party in parties:
        try:
            party.process.wait(timeout=max(stop - time.monotonic(), 0.1))
        except subprocess.TimeoutExpired:
            for other in parties:
                if other.process.poll() is None:
                    other.process.kill()
            pytest.fail(f"{party.name} still ran {limit:.0f} s on: {''.join(party.stderr)[-2000:]}")
    time.sleep(0.05)  # the stderr readers take the last lines
    return {party.name: party.process.returncode for party in parties}


def _restart_alone(parties, victim: str, workdir: Path, limit: float) -> tuple[dict[str, int], object]:
    """Once the SIGKILLed ``victim`` has ended, restart it alone with --resume and wait for every party (each until
    ``limit`` seconds from now, :func:`_wait_all`); every process still running then is killed. The exit codes and
    the restarted party."""
    import signal

    from privbandits.deploy.local import start_party

    restarted = None
    try:
        assert next(party for party in parties if party.name == victim).process.wait(timeout=60) == -signal.SIGKILL
        restarted = start_party(workdir / "deployment.resolved.toml", victim, resume=True)
        codes = _wait_all([*(party for party in parties if party.name != victim), restarted], limit)
    finally:
        for party in [*parties, *([restarted] if restarted is not None else [])]:
            if party.process.poll() is None:
                party.process.kill()
    return codes, restarted


def deployed(path: Path):
    """``deploy certs``, ``deploy data`` and ``deploy local`` of the file at ``path`` (bundles where it names them)."""
    runner = CliRunner()
    for command in (["deploy", "certs", str(path)], ["deploy", "data", str(path)],
                    ["deploy", "local", str(path), "--no-progress"]):  # fmt: skip
        result = runner.invoke(standalone, command)
        assert result.exit_code == 0, result.output
    return load_deployment(path)
