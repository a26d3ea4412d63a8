"""Every party of a deployment on 127.0.0.1, each in its own OS process (for trying a deployment out).

The launcher binds each party's listening socket on 127.0.0.1 (port 0 in the file: an
ephemeral port), writes the resolved deployment (actual ports, absolute paths) to a
temporary folder, and starts ``python -m privbandits.deploy.cli party run RESOLVED --as
NAME --listen-fd FD`` per party with the socket inherited. The active party prints one
``progress t T`` line per round on stdout; the launcher turns them into a progress bar.
If a party fails, the others exit on their own within the deadline (they are told which
peer was lost); any still running after deadline + :data:`GRACE_S` are killed.

All parties share this machine's cores, which separate hosts would not. Two things keep the
parties that exchange messages every round from waiting on the others' work: a protocol's
background roles (``BACKGROUND``: the MPC dealer, whose material runs ahead of the rounds)
start at lower CPU priority (nice +:data:`BACKGROUND_NICE`), so they take the cycles the
online parties leave; and ``pin_cpus`` pins each party to one core, the online parties
first, round-robin in file order, so that two parties answering each other never share a
core while another stands idle.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from privbandits.comm.tls import bind_listener
from privbandits.deploy import zygote
from privbandits.deploy.deployment import Deployment, DeploymentError, parse_address
from privbandits.deploy.party import (
    EXIT_DEPLOYMENT,
    EXIT_HANDSHAKE,
    ListenFailed,
    check_own_files,
    protocol_of,
    reason,
)
from privbandits.deploy.zygote import ForkedProcess, ForkServer

GRACE_S = 5.0
SETUP_EXITS = (EXIT_DEPLOYMENT, EXIT_HANDSHAKE)
"""A party's exit codes that mean the session cannot take place (unusable files or data, links not set up)."""
BACKGROUND_NICE = 10
"""Niceness added to the processes of a protocol's background roles (they run ahead of the rounds)."""


@dataclass
class PartyProcess:
    name: str
    process: subprocess.Popen | ForkedProcess
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
                raise ListenFailed(
                    f"parties.{name}.address: cannot listen on 127.0.0.1:{port} ({reason(exc)})"
                ) from None
            actual = listeners[name].getsockname()[1]
            parties[name] = entry.model_copy(update={"address": f"127.0.0.1:{actual}"})
    except BaseException:
        for listener in listeners.values():
            listener.close()
        raise
    return deployment.model_copy(update={"parties": parties}), listeners


def party_command(path: Path, name: str, *, progress_lines: bool = False, resume: bool = False) -> list[str]:
    """``python -m privbandits.deploy.cli party run PATH --as NAME …`` (the listening socket's ``--listen-fd``
    is added where one is handed over)."""
    command = [sys.executable, "-m", "privbandits.deploy.cli", "party", "run", str(path), "--as", name]
    if resume:
        command.append("--resume")
    if progress_lines:
        command.append("--progress-lines")
    return command


def preload(deployment: Deployment) -> list[str]:
    """The modules every party of ``deployment`` imports: its protocol's party code (its ``party_modules``, with
    those it imports only when a party runs: the fork server imports them once, not each party) and the party
    runner."""
    return ["privbandits.deploy.cli", "privbandits.deploy.party", "privbandits.deploy.console",
            *protocol_of(deployment).party_modules]  # fmt: skip


def child_environment() -> dict[str, str]:
    """One BLAS/OpenMP thread per party process: parties share the machine, and results stay bit-stable."""
    env = dict(os.environ)
    for key in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
        env[key] = "1"
    return env


def _holding(deployment: Deployment, roles: Sequence[str]) -> list[str]:
    """The parties whose role is in ``roles``, role by role, in file order."""
    return [name for role in roles for name in deployment.names(role)]


def background(deployment: Deployment) -> list[str]:
    """The parties whose work runs ahead of the rounds (the MPC dealer): they start at lower priority."""
    return _holding(deployment, deployment.protocol.BACKGROUND)


def placement(deployment: Deployment, cpus: Sequence[int]) -> dict[str, int]:
    """One core per party: the online parties first, then the background ones, round-robin over ``cpus``
    in file order (the MPC example on 2 cores: both computing parties on cores of their own)."""
    if not cpus:
        raise DeploymentError("no CPU to pin the parties to")
    later = set(background(deployment))
    order = [name for name in deployment.parties if name not in later] + [n for n in deployment.parties if n in later]
    return {name: cpus[index % len(cpus)] for index, name in enumerate(order)}


def _place(pid: int, cpu: int | None, nice: int) -> None:
    """Pin process ``pid`` to ``cpu`` (None: leave it) and lower its priority by ``nice``."""
    try:
        if cpu is not None:
            os.sched_setaffinity(pid, {cpu})
        if nice and hasattr(os, "setpriority"):
            os.setpriority(os.PRIO_PROCESS, pid, os.getpriority(os.PRIO_PROCESS, pid) + nice)
    except ProcessLookupError:  # it already ended; its exit code reports why
        pass


def available_cpus() -> list[int]:
    """The cores this process may run on (sorted); empty where the platform cannot pin."""
    if not hasattr(os, "sched_getaffinity"):
        return []
    return sorted(os.sched_getaffinity(0))


def usable_cores() -> int:
    """How many cores this process may run on (the machine's count where the platform cannot pin)."""
    return len(available_cpus()) or os.cpu_count() or 1


def start_parties(
    deployment: Deployment,
    workdir: Path,
    *,
    resume: bool = False,
    pin_cpus: bool = False,
    fork: bool = True,
    server: ForkServer | None = None,
) -> list[PartyProcess]:
    """Start one process per party on 127.0.0.1; the party that learns the decisions (the vertical
    protocol's active party, the MPC protocol's environment) reports progress on stdout.

    Background roles start at lower priority; ``pin_cpus`` pins each party to one core (:func:`placement`).
    ``fork``: fork the parties from one process that imported their code once (:mod:`~privbandits.deploy.zygote`,
    where the platform allows), else start each with ``python -m privbandits.deploy.cli``. ``server``: fork them from
    this running server instead (it must have imported their code), which stays up for more parties."""
    if pin_cpus and not available_cpus():
        raise DeploymentError("pinning parties to cores needs os.sched_setaffinity (Linux); run without pin_cpus")
    for name in deployment.parties:  # every party's files, before any starts (one line naming the field)
        check_own_files(deployment, name)
    cores = placement(deployment, available_cpus()) if pin_cpus else {}
    lower = set(background(deployment))
    resolved, listeners = resolve_local(deployment)
    path = workdir / "deployment.resolved.toml"
    path.write_text(resolved.to_toml())
    active = set(resolved.names(resolved.protocol.REPORTER))
    started = []
    own = server is None
    if own and fork and zygote.available():
        server = ForkServer(preload(resolved), child_environment())
    try:
        for name in resolved.parties:
            fd = listeners[name].fileno()
            party = start_party(path, name, fd, progress_lines=name in active, resume=resume, server=server)
            started.append(party)
            _place(party.process.pid, cores.get(name), BACKGROUND_NICE if name in lower else 0)
    finally:
        if server is not None and own:
            server.done_starting()
        for listener in listeners.values():
            listener.close()  # the children hold their own copies
    return started


def start_party(
    path: Path,
    name: str,
    fd: int | None = None,
    *,
    progress_lines: bool = False,
    resume: bool = False,
    server: ForkServer | None = None,
) -> PartyProcess:
    """Start party ``name`` of the (resolved) deployment file at ``path`` in its own process, on the listening
    socket ``fd`` (None: it binds its own address), its stderr collected. Also how one lost party is restarted
    alone (``resume``) while the others run on. ``server``: fork it from there (:mod:`~privbandits.deploy.zygote`),
    else start ``python -m privbandits.deploy.cli``."""
    command = party_command(path, name, progress_lines=progress_lines, resume=resume)
    process: ForkedProcess | subprocess.Popen[str]
    if server is not None:
        process = server.start(command[1:], capture_stdout=progress_lines, listen_fd=fd)
    else:
        process = subprocess.Popen(
            [*command, *([] if fd is None else ["--listen-fd", str(fd)])],
            stdout=subprocess.PIPE if progress_lines else subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            pass_fds=() if fd is None else (fd,),
            env=child_environment(),
        )
    party = PartyProcess(name, process)
    threading.Thread(target=_collect, args=(process.stderr, party.stderr), daemon=True).start()
    return party


def _collect(stream, lines: list[str]) -> None:
    for line in stream:
        lines.append(line)


def survivable(deployment: Deployment) -> list[str]:
    """The parties whose loss the others survive (FCLUB's local servers): their failure starts no countdown."""
    return _holding(deployment, deployment.protocol.SURVIVABLE)


def patience(deployment: Deployment) -> float:
    """Seconds the other parties may take to stop after one fails: the receive deadline (a stalled peer), or the
    time they wait for a lost peer to come back (its protocol's ``rejoin`` hook), the longer."""
    rejoin = protocol_of(deployment).rejoin(deployment)
    return max(deployment.deadline_s, 0.0 if rejoin is None else rejoin[0])


def wait_parties(
    parties: list[PartyProcess],
    deadline_s: float,
    on_progress: Callable[[int, int], None] | None = None,
    survivable: Collection[str] = (),
) -> dict[str, int]:
    """Wait for every party; after the first failure give the rest deadline + :data:`GRACE_S`, then kill them.

    A failure of a ``survivable`` party (one the protocol goes on without) starts no countdown; the end of every
    other party does (a survivable party stalled, e.g. stopped, would otherwise be waited for forever). A party
    that exits with a set-up code (:data:`SETUP_EXITS`: its files, data or links are unusable) means the
    session cannot take place: the rest get :data:`GRACE_S`, not the deadline, to say so themselves before they are
    killed."""
    active = next((party for party in parties if party.process.stdout is not None), None)
    if active is not None and (stdout := active.process.stdout) is not None:  # not None: active was picked so

        def read_progress() -> None:
            for line in stdout:
                parts = line.split()
                if len(parts) == 3 and parts[0] == "progress" and on_progress is not None:
                    on_progress(int(parts[1]), int(parts[2]))

        reader = threading.Thread(target=read_progress, daemon=True)
        reader.start()
    failed_at, allowance, why, killed = None, deadline_s + GRACE_S, "", set()
    while True:
        codes = {party.name: party.process.poll() for party in parties}
        if all(code is not None for code in codes.values()):
            break
        essential = [code for name, code in codes.items() if name not in survivable]
        failed = [(name, code) for name, code in codes.items() if code not in (None, 0) and name not in survivable]
        if failed_at is None and (failed or None not in essential):  # or only survivable parties still run
            failed_at, why = time.monotonic(), f"killed by the launcher {allowance:g} s after the first failure"
            if not failed:
                why = f"killed by the launcher {allowance:g} s after every other party ended"
        setup = next(((name, code) for name, code in failed if code in SETUP_EXITS), None)
        if setup is not None and allowance > GRACE_S:  # the others may still say why they stop, briefly
            allowance, why = GRACE_S, f"stopped by the launcher {GRACE_S:g} s after {setup[0]!r} exited {setup[1]}"
        if failed_at is not None and time.monotonic() - failed_at >= allowance:
            for party in parties:
                if party.process.poll() is None and party.name not in killed:
                    party.process.kill()
                    party.stderr.append(why)
                    killed.add(party.name)
        time.sleep(0.02)
    if active is not None:
        reader.join(2.0)
    exits = {party.name: party.process.wait() for party in parties}
    time.sleep(0.05)  # let the stderr readers take the last lines
    return exits


def run_local(
    deployment: Deployment,
    *,
    resume: bool = False,
    on_progress: Callable[[int, int], None] | None = None,
    pin_cpus: bool = False,
) -> tuple[dict[str, int], list[PartyProcess]]:
    """Start every party on 127.0.0.1 and wait for them; exit codes per party, and the processes.

    ``pin_cpus``: pin each party's process to one core (:func:`placement`)."""
    with tempfile.TemporaryDirectory(prefix="privbandits-local-") as workdir:
        parties = start_parties(deployment, Path(workdir), resume=resume, pin_cpus=pin_cpus)
        try:
            codes = wait_parties(parties, patience(deployment), on_progress, survivable(deployment))
        except BaseException:
            for party in parties:
                if party.process.poll() is None:
                    party.process.kill()
            raise
    return codes, parties
