"""Served FCLUB federations for the tests (``privbandits serve`` processes on 127.0.0.1) and the replay of the shipped
deployment's synthetic arrivals against the in-memory run.

Not a test module: ``tests/`` is on ``sys.path`` (pyproject.toml's ``[tool.pytest.ini_options] pythonpath``).
"""

from __future__ import annotations

import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path

import numpy as np
from fclub_deployment import certs, local_copy
from free_ports import free_ports

from privbandits.deploy import entropy
from privbandits.deploy.deployment import Deployment, load_deployment
from privbandits.deploy.fclub.served import serving_role
from privbandits.deploy.fclub.session import _seeds, _server_of_user, config_of, environment_of
from privbandits.protocols.fclub.driver import FederatedClusteredBandit
from privbandits.serve.auth import new_token, token_hash
from privbandits.serve.client import ServeClient
from privbandits.serve.store import EventStore

START_S = 90.0  # three interpreters import numpy, scipy and numba side by side on a busy machine, then link up



def served_copy(
    folder: Path, *, servers: int = 2, horizon: int = 63, fixed_ports: bool = False, **replace: str
) -> Deployment:
    """The shipped FCLUB deployment, reproducible, with ``servers`` local servers, ``horizon`` rounds, free link
    ports and a ``[serve.NAME]`` table for every served party (any free API port, or a fixed free one: a restarted
    party keeps its URL); its certificates made."""
    path = local_copy(folder, servers=servers, **{"horizon = 4095": f"horizon = {horizon}"}, **replace)
    names = ["global"] + [f"local{ell}" for ell in range(servers)]
    ports = iter(free_ports(2 * servers + 3))
    text = re.sub(r"127\.0\.0\.1:0", lambda _: f"127.0.0.1:{next(ports)}", path.read_text())
    text += "".join(f"\n[serve.{name}]\nport = {next(ports) if fixed_ports else 0}\n" for name in names)
    path.write_text(text)
    certs(path)
    return load_deployment(path)


def add_token(spec: Deployment, name: str) -> str:
    """A client token in party ``name``'s store (made before the service starts)."""
    token = new_token()
    store = EventStore(spec.output / f"{name}.serve.sqlite", serving_role(spec, name).identity())
    store.add_token("app", token_hash(token))
    store.close()
    return token


def launch(spec: Deployment, name: str) -> subprocess.Popen:
    """``privbandits serve DEPLOY --as NAME`` started (not yet announced); its API is TLS with the party's own
    certificate, as the deployment gives it."""
    env = os.environ | {"PYTHONPATH": os.pathsep.join(sys.path)}
    command = [sys.executable, "-m", "privbandits", "serve", str(spec.source), "--as", name]
    return subprocess.Popen(command, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, env=env, text=True)


def announced(process: subprocess.Popen, deadline: float) -> str:
    """The URL the service announces once it serves (its links made, the first phase run); its stderr read by a
    thread from then on (a reproducible party prints a warning first, and a pipe left full would block it)."""
    assert process.stderr is not None
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in process.stderr], daemon=True).start()  # type: ignore[union-attr]
    seen = []
    while time.monotonic() < deadline:
        try:
            line = lines.get(timeout=0.5)
        except queue.Empty:
            if process.poll() is not None:
                break
            continue
        seen.append(line)
        if line.startswith("serving "):
            return line.split(" at ")[1].split(";")[0]
    process.kill()
    raise AssertionError(f"the service did not start: {''.join(seen)}")


def serve_all(spec: Deployment) -> tuple[dict[str, subprocess.Popen], dict[str, str]]:
    """Every served party of ``spec`` started side by side (they link up in any order); their processes and URLs."""
    names = ["global", *spec.names("local_server")]
    processes = {name: launch(spec, name) for name in names}
    deadline = time.monotonic() + START_S
    try:
        return processes, {name: announced(process, deadline) for name, process in processes.items()}
    except BaseException:
        stop_all(processes)
        raise


def stop_all(processes: dict[str, subprocess.Popen]) -> dict[str, int]:
    """SIGTERM to each (local servers first), then their exit codes (killed if one lingers)."""
    for process in reversed(list(processes.values())):
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
    codes = {}
    for name, process in processes.items():
        try:
            codes[name] = process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            codes[name] = process.wait()
    return codes


def arrivals(spec: Deployment) -> list[tuple[int, np.ndarray, np.ndarray]]:
    """The users party's synthetic rounds (drawn from the file's seed, as ``deploy`` draws them): each round's user,
    its K × d contexts and every arm's reward."""
    return arrivals_expected(spec)[0]


def arrivals_expected(spec: Deployment) -> tuple[list[tuple[int, np.ndarray, np.ndarray]], np.ndarray]:
    """:func:`arrivals` and every round's expected reward of each arm (T × K), for the regret."""
    env = environment_of(spec)
    env.reset(np.random.default_rng(_seeds(spec)[0]))
    rounds, expected = [], []
    for _ in range(spec.protocol.horizon):
        contexts, means = env.next_round()
        rounds.append((env.user, contexts.copy(), env.rewards().copy()))
        expected.append(np.array(means, dtype=np.float64))
    return rounds, np.array(expected)


def in_memory_arms(spec: Deployment) -> list[int]:
    """The arms of the in-memory run (:func:`~privbandits.deploy.fclub.party.run_in_memory`'s, reproducible)."""
    env = environment_of(spec)
    environment, protocol = _seeds(spec)
    env.reset(np.random.default_rng(environment))
    bandit = FederatedClusteredBandit(config_of(spec), _server_of_user(spec), env.dim, env.n_arms,
                                      rng=entropy.generator(spec, None, protocol))  # fmt: skip
    arms = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(spec.protocol.horizon):
            contexts, _expected = env.next_round()
            arms.append(bandit.select(env.user, contexts))
            bandit.update(env.reward(arms[-1]))
    return arms


def client(spec: Deployment, name: str, url: str, token: str = "") -> ServeClient:
    """A client of party ``name``'s API: TLS, its certificate checked against the deployment's CA."""
    return ServeClient(url, token, ca=spec.parties[name].ca, server_name=name, timeout_s=60)


def phase_starts(horizon: int) -> list[int]:
    """The rounds t = 2^s − 1 up to ``horizon`` (§3.2)."""
    return [2**s - 1 for s in range(1, horizon.bit_length() + 1) if 2**s - 1 <= horizon]


def owner_of(spec: Deployment) -> list[str]:
    """Each user's local server."""
    names = spec.names("local_server")
    return [names[ell] for ell in _server_of_user(spec)]


class InProcess:
    """Every served role of ``spec`` in this process (their links real mutual TLS on 127.0.0.1, each started on a
    thread of its own, since each waits for the others), driven by direct calls rather than HTTP."""

    def __init__(self, spec: Deployment) -> None:
        self.spec = spec
        self.roles = {name: serving_role(spec, name) for name in ["global", *spec.names("local_server")]}
        threads = [threading.Thread(target=role.start) for role in self.roles.values()]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=START_S)

    def play(self, rounds, first: int = 0) -> list[int]:
        """Each round's decision at its user's local server, its reward absorbed right after; the arms."""
        from privbandits.serve.decider import DecidedEvent, DecideInput

        owner, arms = owner_of(self.spec), []
        for t, (user, contexts, rewards) in enumerate(rounds, start=first):
            role = self.roles[owner[user]]
            decision = role.decide(DecideInput(f"round-{t + 1}", str(user), contexts))
            event = DecidedEvent(f"round-{t + 1}", str(user), decision.arm, None, 0, decision.event_state)
            role.absorb(event, float(rewards[decision.arm]))
            arms.append(decision.arm)
        return arms

    def replayer(self, rounds):
        """A :class:`~privbandits.serve.replay.Replayer` of ``rounds`` (:func:`arrivals`): event t (id ``round-{t+1}``)
        decided by its user's local server, its reward absorbed there when the replay sends it."""
        from privbandits.serve.decider import DecideInput
        from privbandits.serve.replay import decider_replayer

        owner = owner_of(self.spec)
        return decider_replayer(lambda t: self.roles[owner[rounds[t][0]]],
                                lambda t: DecideInput(f"round-{t + 1}", str(rounds[t][0]), rounds[t][1]),
                                lambda t, arm: rounds[t][2][arm])  # fmt: skip

    def stop(self) -> None:
        for role in reversed(list(self.roles.values())):
            role.stop()
