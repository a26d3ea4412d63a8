"""A reference service as its own process (``privbandits serve``) on 127.0.0.1, for the process-level tests."""

from __future__ import annotations

import os
import selectors
import subprocess
import sys
import time
from pathlib import Path

from privbandits.serve.auth import new_token, token_hash
from privbandits.serve.reference import ReferenceDecider, ReferenceLearner
from privbandits.serve.store import EventStore

START_S = 60.0  # the interpreter imports numpy, scipy and numba first: slow on a busy machine


def write_reference(folder: Path, learner: dict, **service) -> Path:
    """A reference service file in ``folder`` (port 0: any free one); its path."""
    lines = ['name = "reference"', "[service]", "port = 0", 'store = "reference.serve.sqlite"']
    lines += [f"{key} = {value!r}" if not isinstance(value, str) else f'{key} = "{value}"'
              for key, value in service.items()]  # fmt: skip
    lines += ["[learner]"] + [f'{key} = "{value}"' if isinstance(value, str) else f"{key} = {value}"
                              for key, value in learner.items()]  # fmt: skip
    path = folder / "reference.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def add_token(folder: Path, learner: dict) -> str:
    """A client token in the service's store (made before the service starts)."""
    token = new_token()
    store = EventStore(folder / "reference.serve.sqlite", ReferenceDecider(ReferenceLearner(**learner)).identity())
    store.add_token("app", token_hash(token))
    store.close()
    return token


def start(service_file: Path, *flags: str) -> tuple[subprocess.Popen, str]:
    """Start ``privbandits serve`` and wait for its announcement; the process and its URL."""
    env = os.environ | {"PYTHONPATH": os.pathsep.join(sys.path)}
    command = [sys.executable, "-m", "privbandits", "serve", str(service_file), *flags]
    process = subprocess.Popen(command, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, env=env, text=True)
    assert process.stderr is not None
    selector = selectors.DefaultSelector()
    selector.register(process.stderr, selectors.EVENT_READ)
    deadline = time.monotonic() + START_S
    seen = []
    while time.monotonic() < deadline:
        if selector.select(timeout=0.5):
            line = process.stderr.readline()
            seen.append(line)
            if line.startswith("serving "):
                return process, line.split(" at ")[1].split(";")[0]
            if not line and process.poll() is not None:
                break
    process.kill()
    raise AssertionError(f"the service did not start: {''.join(seen)}")
