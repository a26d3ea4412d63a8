"""The Deploy page's commands, as written, from where it says to run them (issue 28; the README's Deploy
section moved to docs/deploy.md by issue 33, and the README's deployer example is the same block).

The block is read from docs/deploy.md's "Step by step" and run from an empty folder, as the page says (its first
line copies the shipped deployment there, and the rest use that copy: issue 45 item 6); ``privbandits`` is this
interpreter's ``python -m privbandits.cli`` (the set-up lines and ``deploy local`` run its app in this
process, cheaper than a process each). The ``party run`` line runs one party as written: the other parties
run the same line for their names, each a process forked from one that imported the party code once, so the
session can finish.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

from cli_runner import separate
from forked_parties import fork_server, start, stderr_of
from project_paths import ROOT

from privbandits.cli import app
from privbandits.deploy.deployment import load_deployment


def first_bash_block(path: Path, heading: str) -> list[str]:
    """The commands of the first bash block under ``heading`` (a ``## `` line) of ``path``, comments dropped."""
    text = path.read_text()
    section = text[text.index(f"\n{heading}\n") :]
    section = section[: section.index("\n## ", 1)]
    block = re.search(r"```bash\n(.*?)```", section, re.S).group(1)
    return [line.split("  #")[0].strip() for line in block.splitlines() if line.strip()]


def deploy_block() -> list[str]:
    """The commands of the Deploy page's step-by-step block."""
    return first_bash_block(ROOT / "docs" / "deploy.md", "## Step by step")


def test_the_readme_deployer_example_is_the_block_this_file_runs():
    readme = first_bash_block(ROOT / "README.md", "## For a deployer: every party its own process, over mutual TLS")
    assert readme == deploy_block()


def arguments(line: str) -> list[str]:
    words = shlex.split(line)
    assert words[0] == "privbandits", line
    return words[1:]


def command(line: str) -> list[str]:
    return [sys.executable, "-m", "privbandits.cli", *arguments(line)]


def invoke(line: str):
    """``line`` run in this process by the app that ``python -m privbandits.cli`` runs (stdout and stderr apart)."""
    return separate().invoke(app, arguments(line), env={"COLUMNS": "200"})


def test_the_readme_deploy_block_works_as_written(tmp_path, monkeypatch):
    env = {**os.environ, "COLUMNS": "200"}
    lines = deploy_block()
    assert [shlex.split(line)[1:3] for line in lines] == [
        ["deploy", "certs"], ["deploy", "data"], ["deploy", "local"], ["party", "run"]
    ]  # fmt: skip
    named = shlex.split(lines[0])[3]
    assert {shlex.split(line)[3] for line in lines} == {named}  # one shipped deployment, by name
    monkeypatch.chdir(tmp_path)  # from where the page says to run them: an empty folder
    for line in lines[:3]:  # in this process: the party processes `deploy local` starts are what costs
        done = invoke(line)
        assert done.exit_code == 0, (line, done.stdout, done.stderr)
        assert "no:" not in done.stdout and "mismatch" not in done.stdout
        if line == lines[0]:  # it copied the shipped file here; the later lines use the copy: a shorter session
            copy = tmp_path / f"{named}.toml"
            assert done.stderr.startswith(f"copied the shipped deployment {named} to {copy}")
            copy.write_text(re.sub(r"(?m)^rounds = \d+", "rounds = 20", copy.read_text()))
    path = tmp_path / f"{named}.toml"
    spec = load_deployment(path)
    local = json.loads(spec.result_path(spec.names(spec.protocol.REPORTER)[0]).read_text())
    as_written = shlex.split(lines[-1])[-1]
    others = [lines[-1].replace(f"--as {as_written}", f"--as {name}") for name in spec.parties if name != as_written]
    with fork_server(spec) as forks:  # the others run the same line's `party run` forked, each its own process
        parties = [subprocess.Popen(command(lines[-1]), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                    text=True)]  # fmt: skip
        parties += [start(forks, arguments(line)) for line in others]
        errors = [stderr_of(party, timeout=300) for party in parties]
    assert [party.returncode for party in parties] == [0] * len(parties), errors
    assert errors[0].splitlines()[0].startswith(f"{as_written}: linked to ")
    assert errors[0].splitlines()[-1].endswith(f"; result {spec.result_path(as_written)}")
    again = json.loads(spec.result_path(spec.names(spec.protocol.REPORTER)[0]).read_text())
    assert again["rounds"] == local["rounds"] == spec.protocol.rounds
