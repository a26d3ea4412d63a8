"""Helpers of the bad-input tests (issue 14): a state digest of any object, a refusal check, and a command-line
refusal check (one line, exit 2, nothing written; issue 30) with a read-only folder to refuse.

Not a test module: ``tests/`` is on ``sys.path`` under pytest's default import mode.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import subprocess
from collections import deque
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from privbandits.validation import InvalidInputError

NAN, INF = float("nan"), float("inf")


def digest(obj: object) -> str:
    """sha256 over the arrays, scalars and generator states reachable from ``obj``'s attributes (``__dict__`` and
    ``__slots__``), dicts, sequences, sets and queues."""
    h, seen = hashlib.sha256(), set()

    def walk(x: object, depth: int) -> None:
        if isinstance(x, np.ndarray):
            h.update(f"{x.dtype}{x.shape}".encode())
            h.update(np.ascontiguousarray(x).tobytes())
            return
        if x is None or isinstance(x, bool | int | float | str | bytes | np.generic):
            h.update(repr(x).encode())
            return
        if depth > 14 or id(x) in seen:
            return
        seen.add(id(x))
        if isinstance(x, np.random.Generator):
            h.update(repr(x.bit_generator.state).encode())
        elif isinstance(x, dict):
            for key in sorted(x, key=repr):
                h.update(repr(key).encode())
                walk(x[key], depth + 1)
        elif isinstance(x, list | tuple | deque):
            h.update(f"{type(x).__name__}{len(x)}".encode())
            for item in x:
                walk(item, depth + 1)
        elif isinstance(x, set | frozenset):
            h.update(repr(sorted(map(repr, x))).encode())
        else:
            if hasattr(x, "__dict__"):
                walk(vars(x), depth + 1)
            for name in getattr(type(x), "__slots__", ()):
                walk(getattr(x, name, None), depth + 1)

    walk(obj, 0)
    return h.hexdigest()


def rejects(call, name: str, error: type[Exception] = InvalidInputError) -> str:
    """Run a call that must fail with ``error`` naming ``name``; return the message."""
    with pytest.raises(error) as caught:
        call()
    message = str(caught.value)
    assert re.search(re.escape(name), message), f"{name!r} not named in {message!r}"
    return message


def files(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` with a digest of its bytes."""
    return {
        str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def refused(folder: Path, args: list[str], message: str) -> str:
    """``privbandits ARGS`` run in ``folder`` exits 2 with one line holding ``message``, and writes nothing."""
    from privbandits.cli import app

    before = files(folder)
    cwd = os.getcwd()
    os.chdir(folder)
    try:
        result = CliRunner().invoke(app, args)
    finally:
        os.chdir(cwd)
    output = result.output.strip()
    assert result.exit_code == 2, output
    assert isinstance(result.exception, SystemExit) and "Traceback" not in output
    assert output.startswith("error: ") and "\n" not in output and message in output, output
    assert files(folder) == before
    return output


@contextlib.contextmanager
def read_only(folder: Path):
    """``folder`` made read-only: a read-only bind mount as root (permissions do not bind root), else mode 0555."""
    folder.mkdir(exist_ok=True)
    mounted = False
    if os.geteuid() == 0:
        bind = subprocess.run(["mount", "--bind", str(folder), str(folder)], capture_output=True)
        ro = subprocess.run(["mount", "-o", "remount,bind,ro", str(folder)], capture_output=True)
        mounted = bind.returncode == 0
        if ro.returncode:
            with contextlib.suppress(Exception):
                subprocess.run(["umount", str(folder)], capture_output=True)
            pytest.skip("cannot make a read-only folder here (root without mount)")
    else:
        folder.chmod(0o555)
    try:
        if os.access(folder, os.W_OK):
            pytest.skip("cannot make a read-only folder here")
        yield folder
    finally:
        if mounted:
            subprocess.run(["umount", str(folder)], check=True)
        folder.chmod(0o755)
