"""The MPC deployment's parties as ``privbandits serve`` processes on 127.0.0.1, and an application for each: for
the MPC serving tests (replay equivalence, kill tests).

Not a test module: ``tests/`` is on ``sys.path``.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import numpy as np
from free_ports import free_ports
from mpc_deployment import make_deployment

from privbandits.deploy.deployment import Deployment, load_deployment
from privbandits.deploy.mpc_bandit.party import load_computing, load_environment
from privbandits.deploy.mpc_bandit.served import serving_role
from privbandits.serve.auth import new_token, token_hash
from privbandits.serve.store import EventStore

START_S = 90.0  # the interpreter imports numpy, scipy and numba first: slow on a busy machine



def make_served_deployment(folder: Path, *, deadline_s: float = 10.0, **protocol) -> Path:
    """A small MPC deployment (dealer, c0, c1, env) with fixed free ports for the links and a ``[serve.NAME]`` table
    (API port 0) for every party."""
    path = make_deployment(folder, deadline_s=deadline_s, **protocol)
    text = path.read_text().replace("connect_deadline_s = 30", "connect_deadline_s = 20")
    names = list(load_deployment(path).parties)
    for name, port in zip(names, free_ports(len(names)), strict=True):
        section = f"[parties.{name}]\n"
        head, tail = text.split(section)
        text = head + section + tail.replace('address = "127.0.0.1:0"', f'address = "127.0.0.1:{port}"', 1)
    text += "".join(f"\n[serve.{name}]\nport = 0\nreward_timeout_s = 600\n" for name in names)
    path.write_text(text)
    return path


@dataclass
class Served:
    """The parties' processes, their URLs and tokens."""

    path: Path
    spec: Deployment
    tokens: dict[str, str]
    processes: dict[str, subprocess.Popen] = field(default_factory=dict)
    urls: dict[str, str] = field(default_factory=dict)
    logs: dict[str, list[str]] = field(default_factory=dict)
    clients: dict[tuple[str, str], PartyClient] = field(default_factory=dict)

    def start(self, name: str) -> None:
        env = os.environ | {"PYTHONPATH": os.pathsep.join(sys.path)}
        command = [sys.executable, "-m", "privbandits", "serve", str(self.path), "--as", name]
        process = subprocess.Popen(command, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, env=env, text=True)
        self.processes[name] = process
        self.logs[name] = []

    def wait_started(self, name: str) -> None:
        process = self.processes[name]
        assert process.stderr is not None
        selector = selectors.DefaultSelector()
        selector.register(process.stderr, selectors.EVENT_READ)
        deadline = time.monotonic() + START_S
        while time.monotonic() < deadline:
            if selector.select(timeout=0.5):
                line = process.stderr.readline()
                self.logs[name].append(line)
                if line.startswith("serving "):
                    self.urls[name] = line.split(" at ")[1].split(";")[0]
                    os.set_blocking(process.stderr.fileno(), False)
                    return
                if not line and process.poll() is not None:
                    break
        raise AssertionError(f"{name} did not start: {''.join(self.logs[name])}")

    def client(self, name: str) -> PartyClient:
        """An HTTPS client of party ``name``'s API (its certificate, from the deployment's CA, names the party)."""
        key = (name, self.urls[name])
        if key not in self.clients:
            self.clients[key] = PartyClient(self.urls[name], self.tokens[name], self.spec.parties[name].ca, name)
        return self.clients[key]

    def kill(self, name: str) -> None:
        self.processes[name].send_signal(signal.SIGKILL)
        self.processes[name].wait(timeout=30)

    def stop_all(self) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for name, process in self.processes.items():
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            if process.stderr is not None:
                with contextlib.suppress(Exception):
                    self.logs[name].append(process.stderr.read() or "")


@contextlib.contextmanager
def served(path: Path) -> Iterator[Served]:
    """Every party of the deployment at ``path`` served (each with a client token), stopped at the end."""
    spec = load_deployment(path)
    tokens = {}
    for name in spec.parties:
        token = tokens[name] = new_token()
        store = EventStore(spec.output / f"{name}.serve.sqlite", serving_role(spec, name).identity())
        store.add_token("app", token_hash(token))
        store.close()
    running = Served(path, spec, tokens)
    try:
        for name in spec.parties:
            running.start(name)
        for name in spec.parties:
            running.wait_started(name)
        yield running
    finally:
        running.stop_all()


def synthetic(spec: Deployment) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """The data file's blocks (each computing party's) and rewards (the environment's), as `deploy data` wrote them."""
    blocks = {name: load_computing(spec, name).contexts for name in spec.names("computing")}
    return blocks, load_environment(spec, spec.names("environment")[0]).rewards


class PartyClient:
    """A served party's API over TLS (the application's side), answers as they come (status and JSON)."""

    def __init__(self, url: str, token: str, ca: Path, name: str) -> None:
        headers = {"Authorization": f"Bearer {token}"}
        context = ssl.create_default_context(cafile=str(ca))
        self.http = httpx.Client(base_url=url, headers=headers, verify=context, timeout=120.0)
        self.extensions = {"sni_hostname": name}

    def post(self, path: str, body: dict) -> httpx.Response:
        return self.http.post(path, json=body, extensions=self.extensions)

    def get(self, path: str) -> httpx.Response:
        return self.http.get(path, extensions=self.extensions)


def put_block(client: PartyClient, event: str, row: np.ndarray) -> httpx.Response:
    return client.post("/v1/features", {"key": event, "features": [[float(x) for x in row]]})


def decide(client: PartyClient, event: str) -> httpx.Response:
    return client.post("/v1/decide", {"event_id": event, "user_id": "u", "features": [[0.0]]})


def reward(client: PartyClient, event: str, value: float) -> httpx.Response:
    return client.post("/v1/reward", {"event_id": event, "reward": float(value)})


@contextlib.contextmanager
def in_process(path: Path, **options) -> Iterator[dict]:
    """Every party's service (its role, its store under the deployment's output, its links: mutual TLS on 127.0.0.1)
    in this process, without the HTTP layer: ``{name: DecisionService}``, closed at the end. ``options``: the
    services' :class:`~privbandits.serve.service.ServiceOptions` and ``clock``."""
    from privbandits.serve.service import DecisionService, ServiceOptions

    clock = options.pop("clock", time.time)

    spec = load_deployment(path)
    services: dict = {}
    try:
        for name in spec.parties:
            store = spec.output / f"{name}.serve.sqlite"
            role = serving_role(spec, name)
            services[name] = DecisionService.open(role, store, ServiceOptions(**options), clock=clock)
        yield services
    finally:
        for service in services.values():  # every party stops at once: none links again after a peer stopped
            service.decider.stopping.set()
        for service in services.values():
            service.close()


def replayer(spec: Deployment, services: dict):
    """A :class:`~privbandits.serve.replay.Replayer` of the data file through :func:`in_process`'s services: event t
    (id ``e{t}``) is each computing party's block of round t put at its service, then the environment's decide; its
    reward the data file's reward of the arm chosen."""
    from privbandits.serve.decider import DecideInput
    from privbandits.serve.replay import Replayer
    from privbandits.serve.role import FeaturePut

    blocks, rewards = synthetic(spec)
    environment = services[spec.names("environment")[0]]

    def decide(t: int) -> int:
        for name in spec.names("computing"):
            services[name].put(FeaturePut(f"e{t}", blocks[name][t][None, :]))
        return until_linked(environment.decide, DecideInput(f"e{t}", "u", np.zeros((1, 1)))).arm

    return Replayer(decide, lambda t, arm: environment.reward(f"e{t}", float(rewards[t, arm])) and None)


def until_linked(call, *args, limit_s: float = 60.0):
    """``call(*args)``, again while it is refused with 503 (the parties are linking), within ``limit_s``."""
    from privbandits.serve.role import Refused

    stop = time.monotonic() + limit_s
    while True:
        try:
            return call(*args)
        except Refused as refused:
            if refused.status != 503 or time.monotonic() > stop or "has no block" in refused.message:
                raise
            time.sleep(0.2)
