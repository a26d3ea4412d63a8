"""Every command refuses cleanly (issue 45): each bad input a new user tried is one line naming the input, the
allowed values and the value given, exit code 2, before any work is done (no deployment here is run)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from bad_input import refused

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ROOT / "configs" / "deploy"
DEPLOY_COMMANDS = [["deploy", "certs"], ["deploy", "data"], ["deploy", "hosts"], ["deploy", "load"],
                   ["deploy", "local"], ["party", "run", "--as", "active"]]  # fmt: skip


@pytest.fixture
def work(tmp_path: Path) -> Path:
    """A folder with the shipped deployment files, a folder named like one and a binary file named like one."""
    shutil.copytree(SHIPPED, tmp_path, dirs_exist_ok=True, ignore=shutil.ignore_patterns("certs", "data", "out"))
    (tmp_path / "folder.toml").mkdir()
    (tmp_path / "binary.toml").write_bytes(b"\x00\xff\xfe\x00 not text")
    return tmp_path


def exactly(folder: Path, args: list[str], message: str) -> None:
    """``privbandits ARGS`` in ``folder`` prints exactly ``error: MESSAGE``, exits 2 and writes nothing."""
    assert refused(folder, args, message) == f"error: {message}"


# -------------------------------------------------------------- the deployment file itself


@pytest.mark.parametrize("command", DEPLOY_COMMANDS, ids=" ".join)
def test_a_deployment_path_that_is_a_folder_or_binary_is_one_line(work, command):
    binary = "deployment file binary.toml is not a TOML file: byte 1 is not UTF-8 text (invalid start byte)"
    exactly(work, [*command, "folder.toml"], "deployment file folder.toml is a folder, not a TOML file")
    exactly(work, [*command, "binary.toml"], binary)
