"""Served P2B parties (``privbandits serve``) on 127.0.0.1 and device agents driving them: for the P2B serving tests.

Not a test module: ``tests/`` is on ``sys.path`` (pyproject.toml's ``[tool.pytest.ini_options] pythonpath``).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
from free_ports import free_port
from p2b_deployment import local_copy
from typer.testing import CliRunner

from privbandits.deploy.cli import standalone
from privbandits.deploy.deployment import Deployment, load_deployment
from privbandits.deploy.p2b.agent import DeviceAgent
from privbandits.deploy.p2b.data import layout, load_host
from privbandits.deploy.p2b.outcome import run_in_memory
from privbandits.deploy.p2b.session import N_STREAMS, encoder_of
from privbandits.linear.population import CodeModel, run_population
from privbandits.protocols.p2b.core import EncodedBatch, ModelRelease

START_S = 180.0  # the interpreter imports numpy, scipy and numba first: slow on a busy machine



def served_copy(folder: Path, n_users: int, threshold: int = 10, **protocol: object) -> Path:
    """The shipped P2B deployment, reproducible, ``n_users`` users, crowd threshold ``threshold``, the shuffler and the
    server on free ports (their APIs on any free port), certificates and the device hosts' data files made; extra
    ``protocol`` settings."""
    changes = {"n_users = 3000": f"n_users = {n_users}", "threshold = 10 ": f"threshold = {threshold} "}
    path = local_copy(folder, raw_baseline=False, **changes)
    text = path.read_text()
    for name in ("shuffler", "server"):
        text = re.sub(rf'(\[parties\.{name}\][^\[]*?address = )"127\.0\.0\.1:0"', rf'\g<1>"127.0.0.1:{free_port()}"',
                      text, flags=re.S)  # fmt: skip
    extra = "".join(f"{key} = {json.dumps(value)}\n" for key, value in protocol.items())
    text = text.replace('name = "p2b"\n', f'name = "p2b"\n{extra}')
    for port in ("port = 8751", "port = 8752"):  # the shipped file's API ports: any free ones here
        assert port in text, port
        text = text.replace(port, "port = 0")
    path.write_text(text)
    runner = CliRunner()
    for command in (["deploy", "certs", str(path)], ["deploy", "data", str(path)]):
        result = runner.invoke(standalone, command)
        assert result.exit_code == 0, result.output
    return path


def token(path: Path, name: str) -> str:
    """A client token for party ``name``'s API (made in its store before it starts)."""
    from privbandits.deploy.p2b.serving import serving_role
    from privbandits.serve.auth import new_token, token_hash
    from privbandits.serve.store import EventStore

    spec = load_deployment(path)
    role = serving_role(spec, name)
    assert role is not None
    secret = new_token()
    store = EventStore(Path(spec.output) / f"{name}.serve.sqlite", role.identity())
    store.add_token("test", token_hash(secret))
    store.close()
    return secret


class Served:
    """A party served as its own process; its API URL and token."""

    def __init__(self, path: Path, name: str, secret: str) -> None:
        self.path, self.name, self.secret = path, name, secret
        env = os.environ | {"PYTHONPATH": os.pathsep.join(sys.path)}
        command = [sys.executable, "-m", "privbandits", "serve", str(path), "--as", name]
        self.process = subprocess.Popen(command, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, env=env,
                                        text=True, cwd=path.parent)  # fmt: skip
        self.url = ""

    def announced(self) -> Served:
        """Wait for the service's announcement (its URL); its stderr is read on a thread of its own meanwhile (a
        selector on the pipe would miss a line already in the reader's buffer)."""
        assert self.process.stderr is not None
        self.lines: list[str] = []
        threading.Thread(target=lambda: self.lines.extend(iter(self.process.stderr.readline, "")), daemon=True).start()
        deadline = time.monotonic() + START_S
        while time.monotonic() < deadline:
            for line in list(self.lines):
                if line.startswith("serving "):
                    self.url = line.split(" at ")[1].split(";")[0]
                    return self
            if self.process.poll() is not None:
                time.sleep(0.2)
                break
            time.sleep(0.05)
        code = self.process.poll()
        self.process.kill()
        why = f"exit code {code}" if code is not None else f"no announcement within {START_S:g} s"
        raise AssertionError(f"{self.name} did not start ({why}): {''.join(self.lines)}")

    def client(self):
        """A :class:`~privbandits.serve.client.ServeClient` of the party's API (TLS, its certificate from the CA)."""
        from privbandits.serve.client import ServeClient

        ca = load_deployment(self.path).parties[self.name].ca
        return ServeClient(self.url, self.secret, ca=ca, server_name=self.name)

    def ledger(self) -> dict:
        with self.client() as client:
            return client.ledger()

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.terminate()
        try:
            return self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            return self.process.wait()


def serve(path: Path, *names: str) -> list[Served]:
    """Parties ``names`` served, each its own process, started side by side; once each has announced its URL."""
    started = [Served(path, name, token(path, name)) for name in names]
    try:
        return [party.announced() for party in started]
    except BaseException:
        for party in started:
            party.stop()
        raise


def wait_model(spec: Deployment, version: int, limit: float = 60.0):
    """The server's model once it has published ``version`` (fetched as a device of the first host)."""
    from privbandits.deploy.p2b.agent import fetch_model

    host, stop = spec.names("device_host")[0], time.monotonic() + limit
    while time.monotonic() < stop:
        model = fetch_model(spec, host, timeout=10)
        if model is not None and model.version >= version:
            return model
        time.sleep(0.1)
    raise AssertionError(f"the server published no model version {version} within {limit:g} s")


def reference(spec):
    """What ``deploy local`` gives (reproducible): the in-memory run, its private batch and model, and every user's
    arms as the device hosts play them (early users cold, late users warm from the private model)."""
    outcome, network = run_in_memory(spec)
    sent = [envelope.message for envelope in network.transcript]
    batch = next(message for message in sent if isinstance(message, EncodedBatch))
    model = [message for message in sent if isinstance(message, ModelRelease)][-1]  # the private one (after the raw)
    protocol, encoder = spec.protocol, encoder_of(spec.protocol)
    hosts = [load_host(spec, name) for name in spec.names("device_host")]
    streams = [np.random.default_rng(child) for child in np.random.SeedSequence(protocol.seed).spawn(N_STREAMS)]
    arms = {}
    for part, stream, start in (("early", 6, CodeModel.cold(protocol.n_actions, protocol.n_codes)),
                                ("late", 8, CodeModel(model.first, model.second))):  # fmt: skip
        contexts = np.concatenate([getattr(h, part).contexts for h in hosts])
        table = np.concatenate([getattr(h, part).reward_table for h in hosts])
        codes = encoder.encode(contexts.reshape(-1, protocol.dim)).reshape(contexts.shape[:2])
        log = run_population(start, codes, table, rng=streams[stream], alpha=protocol.alpha,
                             tie_break=protocol.tie_break)  # fmt: skip
        arms[part] = log.arms
    return outcome, batch, model, arms


def play(spec, store: Path, part: str, agents: dict | None = None, **options) -> dict[int, list[int]]:
    """Replay ``part``'s users (early or late) of every host through DeviceAgents, all created first (so every early
    device starts cold, as the deployment's do), then each event decided and its reward sent right after; the arms by
    user (index in the part). ``options``: the agents' (e.g. ``timeout_s``)."""
    n_early, created, arms = int(spec.protocol.early_fraction * spec.protocol.n_users), {}, {}
    for host in spec.names("device_host"):
        data, block = load_host(spec, host), layout(spec)[host]
        for local, user in enumerate(getattr(block, part)):
            device = DeviceAgent(spec, host, user if part == "early" else n_early + user, store, **options)
            created[user] = (device, getattr(data, part), local)
    for user, (device, users_of, local) in created.items():
        arms[user] = []
        for round in range(spec.protocol.interactions):
            decision = device.decide(users_of.contexts[local, round])
            device.reward(decision.event_id, int(users_of.rewards[local, round, decision.arm]))
            arms[user].append(decision.arm)
        if agents is not None:
            agents[user] = device
        else:
            device.close()
    return arms
