"""Party processes for tests that start parties one by one: forked from one server that imported the party code
once (``deploy/zygote.py``, as ``deploy local`` does), each still a process of its own running the ``party run``
command line with its own stderr pipe; started with ``python -m privbandits.deploy.cli`` where the platform cannot
fork them. Importing the party code (numpy, numba, TLS) costs each started process more CPU than a short session."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from privbandits.deploy import zygote
from privbandits.deploy.deployment import Deployment
from privbandits.deploy.local import child_environment, preload
from privbandits.deploy.mpc_bandit import party as mpc
from privbandits.deploy.vertical import party as vertical

VERTICAL_AND_MPC = ["privbandits.deploy.cli", "privbandits.deploy.party", "privbandits.deploy.console",
                    *vertical.DEPLOYABLE.party_modules, *mpc.DEPLOYABLE.party_modules]  # fmt: skip
"""What the parties of a vertical or an MPC deployment import (:func:`privbandits.deploy.local.preload`)."""


@contextmanager
def fork_server(spec: Deployment | None = None) -> Iterator[zygote.ForkServer | None]:
    """A fork server preloaded with ``spec``'s party code (None: the vertical and MPC parties'), stopped on exit;
    None where forking is unavailable. Its children run in the current directory and environment (with one BLAS
    thread each, as ``deploy local``'s)."""
    if not zygote.available():
        yield None
        return
    server = zygote.ForkServer(preload(spec) if spec is not None else VERTICAL_AND_MPC, child_environment())
    try:
        yield server
    finally:
        server.close()


@pytest.fixture(scope="module")
def party_server():
    """One fork server for a module's ``start_parties(..., server=party_server)`` calls: the party code is imported
    once a module, not once a session (None where forking is unavailable: each call then starts its parties)."""
    with fork_server() as server:
        yield server


def start(forks: zygote.ForkServer | None, arguments: list[str]):
    """``python -m privbandits.deploy.cli *arguments`` in a process of its own: stdout discarded, stderr a pipe."""
    if forks is not None:
        return forks.start(["-m", "privbandits.deploy.cli", *arguments], capture_stdout=False, listen_fd=None)
    command = [sys.executable, "-m", "privbandits.deploy.cli", *arguments]
    return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def stderr_of(process, timeout: float) -> str:
    """What ``process`` wrote to stderr, once it has ended (a few lines: the pipe never fills)."""
    process.wait(timeout=timeout)
    return process.stderr.read()
