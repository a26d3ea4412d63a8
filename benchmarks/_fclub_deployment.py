"""The shipped FCLUB deployment example (configs/deploy/fclub.toml) run as processes on 127.0.0.1, for the
benchmarks that time it or compare its schedules (network_latency.py, fclub_free_running.py)."""

from __future__ import annotations

import re
import socket
import sys
import tempfile
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[1] / "configs" / "deploy" / "fclub.toml"


def example_text(horizon: int, variant: str, preset: str, *, seed: int = 0, schedule: str = "lock-step",
                 servers: int = 5) -> str:  # fmt: skip
    """The example with ephemeral ports, ``horizon``, ``variant``, ``preset``, ``seed`` and ``schedule``,
    reproducible (the local servers' noise from the seed, so the lock-step run equals the in-memory one);
    ``servers``: its first local servers only (local0, ...)."""
    text = re.sub(r'address = "127\.0\.0\.1:\d+"', 'address = "127.0.0.1:0"', EXAMPLE.read_text())
    text = text.split(f"[parties.local{servers}]")[0]
    text = re.sub(r"horizon = \d+", f"horizon = {horizon}", text)
    text = re.sub(r'^variant = "[^"]*"', f'variant = "{variant}"', text, flags=re.M)
    text = re.sub(r'^preset = "[^"]*"', f'preset = "{preset}"', text, flags=re.M)
    text = re.sub(r"^seed = \d+", f'seed = {seed}\nschedule = "{schedule}"', text, flags=re.M)
    return "reproducible = true\n" + text


def prepare_session(folder: Path, horizon: int, variant: str, preset: str, *, seed: int = 0,
                    schedule: str = "lock-step", servers: int = 5, own_ports: bool = False):  # fmt: skip
    """Write the session's deployment file (:func:`example_text`) and its bundles into ``folder``: ``(path, spec)``.
    ``own_ports``: a free port per party instead of ephemeral ones, for parties started one by one."""
    from privbandits.deploy.certs import write_bundles
    from privbandits.deploy.deployment import load_deployment

    def free_port(_) -> str:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            return f'"127.0.0.1:{probe.getsockname()[1]}"'

    text = example_text(horizon, variant, preset, seed=seed, schedule=schedule, servers=servers)
    path = Path(folder) / "fclub.toml"
    path.write_text(re.sub(r'"127\.0\.0\.1:0"', free_port, text) if own_ports else text)
    spec = load_deployment(path)
    write_bundles(spec.bundles, list(spec.parties))
    return path, spec


def run_session(horizon: int, variant: str, preset: str, *, seed: int = 0, schedule: str = "lock-step",
                references: int = 1, servers: int = 5):  # fmt: skip
    """Run the session (its first ``servers`` local servers) as processes; ``(outcome, in-memory reference run)``:
    the fastest of ``references`` runs just after it (the first pays for loading the compiled kernels, as each party
    process does before it links up)."""
    from privbandits.deploy.fclub.party import outcome, run_in_memory
    from privbandits.deploy.local import run_local

    with tempfile.TemporaryDirectory() as folder:
        _, spec = prepare_session(Path(folder), horizon, variant, preset, seed=seed, schedule=schedule, servers=servers)
        codes, processes = run_local(spec)
        if any(codes.values()):
            sys.exit("; ".join(f"{p.name}: {p.last_error}" for p in processes if codes[p.name]))
        return outcome(spec), min((run_in_memory(spec) for _ in range(references)), key=lambda run: run.seconds)
