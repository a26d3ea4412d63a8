"""Every party of a deployment on 127.0.0.1, each in its own OS process (for trying a deployment out).

The launcher binds each party's listening socket on 127.0.0.1 (port 0 in the file: an
ephemeral port), writes the resolved deployment (actual ports, absolute paths) to a
temporary folder, and starts ``python -m privbandits.deploy.cli party run RESOLVED --as
NAME --listen-fd FD`` per party with the socket inherited. The active party prints one
``progress t T`` line per round on stdout; the launcher turns them into a progress bar.
If a party fails, the others exit on their own within the deadline (they are told which
peer was lost); any still running after deadline + 5 s are killed.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path

from privbandits.comm.tls import bind_listener
from privbandits.deploy.deployment import Deployment, DeploymentError, parse_address

GRACE_S = 5.0


@dataclass
class PartyProcess:
    name: str
    process: subprocess.Popen
    stderr: list[str] = field(default_factory=list)

    @property
    def last_error(self) -> str:
        lines = [line for line in self.stderr if line.strip()]
        return lines[-1].strip() if lines else ""


def resolve_local(deployment: Deployment) -> tuple[Deployment, dict]:
    """Bind every party's listener on 127.0.0.1 and return the deployment with the actual ports."""
    listeners, parties = {}, {}
    try:
        for name, entry in deployment.parties.items():
            _, port = parse_address(entry.address)
            try:
                listeners[name] = bind_listener("127.0.0.1", port)
            except OSError as exc:
                raise DeploymentError(f"parties.{name}.address: cannot listen on 127.0.0.1:{port} ({exc})") from None
            actual = listeners[name].getsockname()[1]
            parties[name] = entry.model_copy(update={"address": f"127.0.0.1:{actual}"})
    except BaseException:
        for listener in listeners.values():
            listener.close()
        raise
    return deployment.model_copy(update={"parties": parties}), listeners


def party_command(
    path: Path, name: str, fd: int | None = None, *, progress_lines: bool = False, resume: bool = False
) -> list[str]:
    command = [sys.executable, "-m", "privbandits.deploy.cli", "party", "run", str(path), "--as", name]
    if resume:
        command.append("--resume")
    if fd is not None:
        command += ["--listen-fd", str(fd)]
    if progress_lines:
        command.append("--progress-lines")
    return command


def child_environment() -> dict[str, str]:
    """One BLAS/OpenMP thread per party process: parties share the machine, and results stay bit-stable."""
    env = dict(os.environ)
    for key in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
        env[key] = "1"
    return env


def start_parties(deployment: Deployment, workdir: Path, *, resume: bool = False) -> list[PartyProcess]:
    """Start one process per party on 127.0.0.1; the party that learns the decisions (the vertical
    protocol's active party, the MPC protocol's environment) reports progress on stdout."""
    resolved, listeners = resolve_local(deployment)
    path = workdir / "deployment.resolved.toml"
    path.write_text(resolved.to_toml())
    active = set(resolved.names(resolved.protocol.REPORTER))
    started = []
    try:
        for name in resolved.parties:
            fd = listeners[name].fileno()
            process = subprocess.Popen(
                party_command(path, name, fd, progress_lines=name in active, resume=resume),
                stdout=subprocess.PIPE if name in active else subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
                pass_fds=(fd,),
                env=child_environment(),
            )
            started.append(PartyProcess(name, process))
    finally:
        for listener in listeners.values():
            listener.close()  # the children hold their own copies
    for party in started:
        threading.Thread(target=_collect, args=(party.process.stderr, party.stderr), daemon=True).start()
    return started


def _collect(stream, lines: list[str]) -> None:
    for line in stream:
        lines.append(line)


def survivable(deployment: Deployment) -> list[str]:
    """The parties whose loss the others survive (FCLUB's local servers): their failure starts no countdown."""
    return [name for role in getattr(deployment.protocol, "SURVIVABLE", ()) for name in deployment.names(role)]


def wait_parties(
    parties: list[PartyProcess],
    deadline_s: float,
    on_progress: Callable[[int, int], None] | None = None,
    survivable: Collection[str] = (),
) -> dict[str, int]:
    """Wait for every party; after the first failure give the rest deadline + 5 s, then kill them.

    A failure of a ``survivable`` party (one the protocol goes on without) starts no countdown."""
    active = next((party for party in parties if party.process.stdout is not None), None)
    if active is not None:

        def read_progress() -> None:
            for line in active.process.stdout:
                parts = line.split()
                if len(parts) == 3 and parts[0] == "progress" and on_progress is not None:
                    on_progress(int(parts[1]), int(parts[2]))

        reader = threading.Thread(target=read_progress, daemon=True)
        reader.start()
    failed_at = None
    while True:
        codes = {party.name: party.process.poll() for party in parties}
        if all(code is not None for code in codes.values()):
            break
        if failed_at is None and any(code not in (None, 0) for name, code in codes.items() if name not in survivable):
            failed_at = time.monotonic()
        if failed_at is not None and time.monotonic() - failed_at > deadline_s + GRACE_S:
            for party in parties:
                if party.process.poll() is None:
                    party.process.kill()
                    party.stderr.append(f"killed by the launcher {deadline_s + GRACE_S:g} s after the first failure")
        time.sleep(0.02)
    if active is not None:
        reader.join(2.0)
    for party in parties:
        party.process.wait()
    time.sleep(0.05)  # let the stderr readers take the last lines
    return {party.name: party.process.returncode for party in parties}


def run_local(
    deployment: Deployment, *, resume: bool = False, on_progress: Callable[[int, int], None] | None = None
) -> tuple[dict[str, int], list[PartyProcess]]:
    """Start every party on 127.0.0.1 and wait for them; exit codes per party, and the processes."""
    with tempfile.TemporaryDirectory(prefix="privbandits-local-") as workdir:
        parties = start_parties(deployment, Path(workdir), resume=resume)
        try:
            codes = wait_parties(parties, deployment.deadline_s, on_progress, survivable(deployment))
        except BaseException:
            for party in parties:
                if party.process.poll() is None:
                    party.process.kill()
            raise
    return codes, parties
