"""A small vertical O3M deployment served by ``privbandits serve`` (a real process per party on 127.0.0.1), and a
replay client that sends its data files over HTTP: for the vertical serving tests.

Not a test module: ``tests/`` is on ``sys.path`` (pyproject.toml's ``[tool.pytest.ini_options] pythonpath``).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import numpy as np
from free_ports import free_port
from vertical_deployment import NAMES, make_deployment

from privbandits.deploy.deployment import Deployment, load_deployment
from privbandits.deploy.vertical.party import load_all
from privbandits.deploy.vertical.serving import serving_role
from privbandits.serve.auth import new_token, token_hash
from privbandits.serve.client import ServeClient, ServeError
from privbandits.serve.service import DecisionService, ServiceOptions
from privbandits.serve.store import EventStore

START_S = 90.0  # the interpreter imports numpy, scipy and numba first: slow on a busy machine
PASSIVE = ("passive2", "passive3")



def served_deployment(
    folder: Path, *, api_ports: bool = False, serve_checkpoint_every: int = 7, **settings
) -> tuple[Path, Deployment]:
    """:func:`~vertical_deployment.make_deployment`'s four parties (certificates, data) on free ports of 127.0.0.1,
    each party's API on a port of its own choosing (``[serve.NAME] port = 0``), or, ``api_ports``, on a free port
    named in the file (a restarted party's clients find it where it was); each service checkpoints every
    ``serve_checkpoint_every`` journalled changes (often, so that recovery replays from checkpoints)."""
    path = make_deployment(folder, **settings)
    text = path.read_text()
    for _ in NAMES:
        text = text.replace('address = "127.0.0.1:0"', f'address = "127.0.0.1:{free_port()}"', 1)
    for name in NAMES:
        port = free_port() if api_ports else 0
        text += f"\n[serve.{name}]\nport = {port}\nreward_timeout_s = 600\n"
        text += f"checkpoint_every = {serve_checkpoint_every}\n"
    path.write_text(text)
    return path, load_deployment(path)


def add_token(spec: Deployment, name: str) -> str:
    """A client token in party ``name``'s store (made before it serves)."""
    token = new_token()
    store = EventStore(Path(spec.output) / f"{name}.serve.sqlite", serving_role(spec, name).identity())
    store.add_token("app", token_hash(token))
    store.close()
    return token


@dataclass
class Party:
    """One ``privbandits serve`` process: its URL once announced, its stderr lines (drained on a thread)."""

    name: str
    process: subprocess.Popen
    lines: list[str] = field(default_factory=list)
    url: str = ""
    listening: threading.Event = field(default_factory=threading.Event)

    def drain(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.lines.append(line)
            if line.startswith("serving ") and not self.url:
                self.url = line.split(" at ")[1].split(";")[0]
                self.listening.set()
        self.listening.set()  # ended

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.process.returncode

    def kill(self) -> None:
        self.process.kill()
        self.process.wait()


def launch(path: Path, name: str) -> Party:
    env = os.environ | {"PYTHONPATH": os.pathsep.join(sys.path)}
    command = [sys.executable, "-m", "privbandits", "serve", str(path), "--as", name]
    process = subprocess.Popen(command, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, env=env, text=True)
    party = Party(name, process)
    threading.Thread(target=party.drain, daemon=True).start()
    return party


def announced(party: Party) -> Party:
    """``party`` once it listens (AssertionError, the process killed, if it does not within :data:`START_S`)."""
    party.listening.wait(START_S)
    if not party.url:
        party.kill()
        raise AssertionError(f"{party.name} did not start: {''.join(party.lines)}")
    return party


def serve_all(path: Path, names=NAMES) -> dict[str, Party]:
    """Every party of ``names`` as its own process, started together, each announced."""
    started = [launch(path, name) for name in names]
    try:
        return {party.name: announced(party) for party in started}
    except BaseException:
        for party in started:
            party.stop()
        raise


def client(spec: Deployment, party: Party, token: str) -> ServeClient:
    """A client of ``party``'s API: TLS with the party's own certificate (the deployment's CA signed it)."""
    ca = spec.parties[party.name].ca
    return ServeClient(party.url, token, ca=ca, server_name=party.name, timeout_s=60.0)


def put_rows(client: ServeClient, key: str, rows: np.ndarray) -> dict:
    """``POST /v1/features`` (the typed client has no put yet)."""
    return client._call("POST", "/v1/features", {"key": key, "features": rows.tolist()}).json()


def preload_passive(spec: Deployment, clients: dict[str, ServeClient]) -> None:
    """Each passive party's application puts its data file's rows, one user at a time."""
    data = load_all(spec, list(PASSIVE))
    for name in PASSIVE:
        for user, rows in zip(data[name].users.tolist(), data[name].features, strict=True):
            put_rows(clients[name], str(user), rows)


def wait_linked(active: ServeClient, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if active.ledger()["learner"]["linked"]:
            return
        time.sleep(0.1)
    raise AssertionError(f"the active party did not link: {active.ledger()}")


def retried(call, *args, attempts: int = 240):
    """``call(*args)``, again while the service answers 503 (its links being made again) or cannot be reached."""
    for _ in range(attempts - 1):
        try:
            return call(*args)
        except ServeError as exc:
            if exc.status != 503:
                raise
        except httpx.TransportError:
            pass
        time.sleep(0.5)
    return call(*args)


def replay(spec: Deployment, active: ServeClient, rounds: range, arms: list[int] | None = None) -> list[int]:
    """The active party's data file over HTTP: each round's user and own features, then the chosen arm's reward
    (each sent again while the service is away or answers 503); the arms (``arms``, appended as they come)."""
    data = load_all(spec, ["active"])["active"]
    arms = [] if arms is None else arms
    for t in rounds:
        decision = retried(active.decide, f"event-{t}", str(int(data.users[t])), data.features[t].tolist())
        arms.append(decision.arm)
        retried(active.reward, f"event-{t}", float(data.reward_table[t, decision.arm]))
    return arms


def link_failures(party: Party) -> list[str]:
    return [line for line in party.lines if re.search(r"link session ended", line)]


@contextmanager
def served(path: Path, spec: Deployment) -> Iterator[tuple[dict[str, Party], dict[str, ServeClient]]]:
    """Every party served (tokens made first), a client of each; all stopped at the end (SIGTERM: each checkpoints
    and closes its store), clients first (an open keep-alive connection would hold up a graceful stop)."""
    tokens = {name: add_token(spec, name) for name in NAMES}
    parties = serve_all(path)
    clients = {name: client(spec, parties[name], tokens[name]) for name in NAMES}
    try:
        yield parties, clients
    finally:
        for each in clients.values():
            each.close()
        for party in parties.values():  # all at once: each stops in its own time
            if party.process.poll() is None:
                party.process.terminate()
        codes = {party.name: party.stop() for party in parties.values()}
        assert all(code in (0, -signal.SIGTERM) for code in codes.values()), codes


@contextmanager
def services_in_process(spec: Deployment) -> Iterator[dict[str, DecisionService]]:
    """Every party's service in this process (the same roles and stores as ``privbandits serve``, the inter-party
    links mutual TLS over 127.0.0.1), each closed at the end."""
    services: dict[str, DecisionService] = {}
    try:
        for name in NAMES:
            path = Path(spec.output) / f"{name}.serve.sqlite"
            services[name] = DecisionService.open(serving_role(spec, name), path, ServiceOptions(600.0, 7))
        yield services
    finally:
        for service in services.values():  # every party stops at once: none links again after a peer stopped
            service.decider.links.stopping.set()
        for service in services.values():
            service.close()


@contextmanager
def served_in_process(spec: Deployment) -> Iterator[dict[str, ServeClient]]:
    """:func:`services_in_process` with a client of each through the app in process: the quick version of
    :func:`served` (no interpreter to start per party)."""
    from starlette.testclient import TestClient

    from privbandits.serve.app import build_app
    from privbandits.serve.auth import TokenSet

    clients = {}
    with services_in_process(spec) as services:
        try:
            for name, service in services.items():
                token = new_token()
                service.store.add_token("app", token_hash(token))
                app = build_app(service, lambda service=service: TokenSet(service.store.token_hashes()))
                http = TestClient(app, base_url="https://testserver")
                clients[name] = ServeClient(token=token, http=http)
            yield clients
        finally:
            for each in clients.values():
                each.close()
