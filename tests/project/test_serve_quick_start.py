"""docs/serve.md's quick start, as pasted: terminal 1's block (service file, token, ``privbandits serve``) and terminal
2's (curl), then the Python client's block and the decision log's export, from an empty folder with bash.

The only change made to the page's text is its port (8750 becomes a free one, so that a busy 8750 cannot fail the
test); ``privbandits`` is this interpreter's (its folder first on PATH). Bounded: the service is stopped with
SIGINT, as Ctrl-C would, and must exit by itself.
"""

from __future__ import annotations

import json
import os
import re
import selectors
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from free_ports import free_port
from project_paths import ROOT

PAGE = ROOT / "docs" / "serve.md"
START_S = 60.0


def _blocks(language: str, heading: str) -> list[str]:
    text = PAGE.read_text()
    section = text[text.index(f"\n{heading}\n") :]
    section = section[: section.index("\n## ", 1)]
    return re.findall(rf"```{language}\n(.*?)```", section, re.S)


def _environment() -> dict[str, str]:
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    return os.environ | {"PATH": path, "PYTHONPATH": os.pathsep.join(sys.path)}


def _wait_for_announcement(service: subprocess.Popen) -> str:
    assert service.stderr is not None
    chooser = selectors.DefaultSelector()
    chooser.register(service.stderr, selectors.EVENT_READ)
    deadline, seen = time.monotonic() + START_S, ""
    while time.monotonic() < deadline and service.poll() is None:
        if chooser.select(0.5):
            line = service.stderr.readline()
            seen += line
            if line.startswith("serving reference"):
                return line
    raise AssertionError(f"the service did not announce itself: {seen}")


@pytest.mark.slow  # four interpreter starts: about 20 s on an idle 2-core machine
@pytest.mark.skipif(shutil.which("curl") is None or shutil.which("bash") is None, reason="needs bash and curl")
def test_the_quick_start_works_as_pasted(tmp_path: Path) -> None:
    port = str(free_port())
    quick_start = "## Quick start (two terminals)"
    terminal_1, terminal_2 = (block.replace("8750", port) for block in _blocks("bash", quick_start))
    (python_block,) = (block.replace("8750", port) for block in _blocks("python", quick_start))
    (export_block,) = _blocks("bash", "## The decision log, for offline evaluation")
    env = _environment()
    service = subprocess.Popen(["bash", "-c", terminal_1], cwd=tmp_path, env=env, text=True,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)  # fmt: skip
    try:
        assert f"at http://127.0.0.1:{port};" in _wait_for_announcement(service)
        curl = subprocess.run(["bash", "-c", terminal_2], cwd=tmp_path, env=env, text=True, capture_output=True,
                              timeout=60, check=True)  # fmt: skip
        decided, rewarded, *metrics = curl.stdout.splitlines()
        assert json.loads(decided)["event_id"] == "e1" and json.loads(decided)["model_version"] == 0
        assert rewarded == '{"event_id":"e1","duplicate":false,"model_version":1}'
        assert "privbandits_serve_rewards_total 1.0" in metrics  # beside its HELP and TYPE lines
        client = subprocess.run([sys.executable, "-c", python_block], cwd=tmp_path, env=env, text=True,
                                capture_output=True, timeout=60, check=True)  # fmt: skip
        arm, propensity, version = client.stdout.splitlines()[0].split()
        assert arm in {"0", "2"} and 0 < float(propensity) <= 1 and version == "1"
        assert "RewardAck(event_id='e2', duplicate=False, model_version=2)" in client.stdout
    finally:
        os.killpg(service.pid, signal.SIGINT)  # Ctrl-C in terminal 1
        assert service.wait(30) in (0, -signal.SIGINT, 128 + signal.SIGINT)
    exported = subprocess.run(["bash", "-c", export_block], cwd=tmp_path, env=env, text=True, capture_output=True,
                              timeout=60, check=True)  # fmt: skip
    assert "wrote decisions.npz: 2 rewarded events, 3 arms" in exported.stderr
    assert (tmp_path / "decisions.npz").stat().st_size > 0
