"""FCLUB deployments from the shipped example (ephemeral ports, fewer local servers) and their checks against the
in-memory run: for the FCLUB deployment's tests (lock-step, free-running, resume, checkpoint format) and those that run
every protocol's.

Not a test module: ``tests/`` is on ``sys.path`` (pyproject.toml's ``[tool.pytest.ini_options] pythonpath``).
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
from deploy_files import reproducible
from project_paths import SHIPPED_DEPLOYMENTS
from typer.testing import CliRunner

from privbandits.comm import InMemoryNetwork
from privbandits.deploy.cli import standalone
from privbandits.deploy.deployment import load_deployment
from privbandits.deploy.fclub.party import outcome, run_in_memory
from privbandits.deploy.fclub.session import upload_digest
from privbandits.protocols.fclub import PhaseUpload, Upload

EXAMPLE = SHIPPED_DEPLOYMENTS / "fclub.toml"
PROTOCOL_PHASES = ("detect", "phase_end", "async", "check")


def local_copy(folder: Path, *, seeded: bool = True, servers: int = 5, **replace: str) -> Path:
    """The shipped example with ephemeral ports (and ``replace``d settings), in ``folder``; ``seeded``: reproducible
    (so it equals the in-memory run); ``servers``: its first local servers only (local0, ...; fewer processes)."""
    text = re.sub(r'address = "127\.0\.0\.1:\d+"', 'address = "127.0.0.1:0"', EXAMPLE.read_text())
    text = reproducible(text) if seeded else text
    for old, new in replace.items():
        assert old in text, old
        text = text.replace(old, new)
    if servers < 5:
        text = text.split(f"[parties.local{servers}]")[0]
    path = folder / "fclub.toml"
    path.write_text(text)
    return path


def certs(path: Path) -> None:
    result = CliRunner().invoke(standalone, ["deploy", "certs", str(path)])
    assert result.exit_code == 0, result.output


def protocol_links(traffic_rows) -> dict[tuple[str, str, str], tuple[int, int]]:
    return {(p, s, r): (m, b) for p, s, r, m, b, _ in traffic_rows if p in PROTOCOL_PHASES}


def uploads_of(network) -> list:
    """``(sender, message)`` of every phase upload and upload the global server received, in order."""
    return [(e.sender, e.message) for e in network.transcript if e.message.kind in (PhaseUpload.kind, Upload.kind)]


def assert_equals_in_memory(spec) -> dict:
    """Regret, communication, counts, ledger, traffic and the global server's uploads: as in memory."""
    got = outcome(spec)
    network = InMemoryNetwork(record=True)
    reference = run_in_memory(spec, network)
    bandit = reference.bandit
    assert np.array_equal(got["regret"], reference.regret)
    assert np.array_equal(got["communication"], reference.communication)
    assert got["counts"] == bandit.communication
    assert [(e.mechanism, e.epsilon, e.details) for e in got["ledger"].entries] == [
        (e.mechanism, e.epsilon, e.details) for e in bandit.ledger.entries
    ]
    results = got["results"]
    processes = {}
    for result in results.values():
        processes |= protocol_links(result["traffic"])
    in_memory = {key: (link.messages, link.bytes) for key, link in bandit.traffic.links.items()}
    assert processes == in_memory
    assert results["global"]["uploads_digest"] == upload_digest(uploads_of(network))
    return got


def local0_in_memory(tmp_path, **edits):
    """local0 of the example (``edits`` applied to the file) over an in-memory network, its local clusters detected
    (the phase uploads wait at the global server, unread): ``(spec, network, users' party, server, index of its
    users)``."""
    from privbandits.comm import Party
    from privbandits.deploy.fclub.session import _calibration, _streams
    from privbandits.protocols.fclub import LocalServer

    spec = load_deployment(local_copy(tmp_path, **edits))
    network = InMemoryNetwork(serialize=True)
    users = Party("users", network)
    Party("global", network)
    members = np.arange(8)  # local0's block
    server = LocalServer("local0", network, members, 10, _calibration(spec), _streams(spec)[1][0])
    with network.phase("detect"):
        server.detect(1)
    return spec, network, users, server, {int(u): i for i, u in enumerate(members)}


SMALL = {"horizon = 4095": "horizon = 511", "n_users = 40": "n_users = 12", "n_clusters = 4": "n_clusters = 2",
         "deadline_s = 10": "deadline_s = 3"}  # fmt: skip


def small(folder, **more: str):
    path = local_copy(folder, servers=2, **SMALL, **more)  # local0 and local1 only
    certs(path)
    return load_deployment(path)
