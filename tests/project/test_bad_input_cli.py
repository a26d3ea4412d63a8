"""Bad input through the command line (issue 30): each case is one line naming the value, exit code 2, no
traceback, and nothing written; file-system problems are found before any computing."""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

import pytest
from bad_input import read_only, refused
from typer.testing import CliRunner

from privbandits.cli import app
from privbandits.protocols.mpc_bandit import MPCBanditConfig
from privbandits.validation import InvalidInputError

runner = CliRunner()
TINY = """
name = "tiny-bad-cli"
description = "bad input"
horizon = 30
seeds = [0]
[environment]
kind = "linear_gaussian"
dim = 3
n_arms = 2
[[policies]]
kind = "random"
"""


@pytest.fixture
def work(tmp_path: Path) -> Path:
    """A folder with a tiny config, a finished store of it, another program's SQLite file and a plain file."""
    (tmp_path / "tiny.toml").write_text(TINY)
    done = runner.invoke(app, ["run", str(tmp_path / "tiny.toml"), "--store", str(tmp_path / "r.sqlite"),
                               "--out", str(tmp_path / "out"), "--no-progress"])  # fmt: skip
    assert done.exit_code == 0, done.output
    with contextlib.closing(sqlite3.connect(tmp_path / "other.sqlite")) as other:
        other.execute("CREATE TABLE people (name TEXT)")
        other.commit()
    (tmp_path / "afile").write_text("not a folder")
    (tmp_path / "afolder").mkdir()
    return tmp_path


CASES = [
    (["run", "tiny.toml", "--store", "afolder"], "--store must be a file (got 'afolder', an existing folder)"),
    (["run", "tiny.toml", "--store", "afile/r.sqlite"], "'afile' is a file, not a folder"),
    (["run", "tiny.toml", "--out", "afile"], "--out must be a folder (got 'afile', an existing file)"),
    (["report", "--store", "afolder"], "--store 'afolder' is a folder; give the results file"),
    (["report", "--store", "r.sqlite", "--book", "afolder"], "--book must be a file (got 'afolder', an"),
    (["site", "--store", "r.sqlite", "--out", "afile"], "--out must be a folder (got 'afile', an existing file)"),
    (["run", "tiny.toml", "--store", "other.sqlite"], "other.sqlite is an SQLite database but not a privbandits "
     "results store (it has the tables people)"),  # fmt: skip
    (["report", "--store", "other.sqlite"], "not a privbandits results store"),
    (["run", "tiny.toml", "-o", "horizon=10", "-o", "horizon=20"], "option horizon is given twice (-o horizon=10 "
     "and -o horizon=20)"),  # fmt: skip
    (["run", "tiny.toml", "-o", "seeds=0,"], "option seeds: ends with a comma"),
    (["run", "vertical-fig4", "-o", "seeds=0,"], "option seeds: ends with a comma"),
    (["run", "tiny.toml", "--ray-address", "10.0.0.1:6379"], "--ray-address is used only with --executor ray"),
    (["data", "list", "--cache", "afile"], "--cache must be a folder (got 'afile', an existing file)"),
    (["data", "fetch", "mnist5k", "--cache", "afile"], "--cache must be a folder (got 'afile', an existing file)"),
]


@pytest.mark.parametrize(("args", "message"), CASES)
def test_bad_input_is_one_line_exit_2_and_nothing_written(work, args, message):
    refused(work, args, message)


def test_a_binary_toml_file_is_named(work):
    (work / "binary.toml").write_bytes(b"\x00\xff\xfe\x00 not text")
    refused(work, ["run", "binary.toml"], "binary.toml is not a TOML file: byte 1 is not UTF-8 text")
    refused(work, ["show", "binary.toml"], "binary.toml is not a TOML file")


def test_a_damaged_store_is_refused_before_any_computing(work):
    with contextlib.closing(sqlite3.connect(work / "r.sqlite")) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        page = db.execute("PRAGMA page_size").fetchone()[0]
    data = bytearray((work / "r.sqlite").read_bytes())
    data[page : page + 40] = b"\xde\xad" * 20  # the header of the second page: a b-tree page
    (work / "r.sqlite").write_bytes(bytes(data))
    for args in (["run", "tiny.toml", "--store", "r.sqlite"], ["report", "--store", "r.sqlite"]):
        refused(work, args, "results store r.sqlite is damaged (database disk image is malformed)")


def test_read_only_places_are_refused_before_any_computing(work):
    (work / "ro").mkdir()
    (work / "ro" / "r.sqlite").write_bytes((work / "r.sqlite").read_bytes())
    with read_only(work / "ro"):
        refused(work, ["run", "tiny.toml", "--store", "ro/new.sqlite"], "--store 'ro/new.sqlite' cannot be written")
        refused(work, ["run", "tiny.toml", "--store", "ro/r.sqlite"], "--store 'ro/r.sqlite' cannot be written")
        refused(work, ["report", "--store", "ro/r.sqlite"], "cannot be written")
        refused(work, ["run", "tiny.toml", "--out", "ro/out"], "--out 'ro/out' cannot be written: 'ro' is read-only")
        refused(work, ["site", "--store", "r.sqlite", "--out", "ro/site"], "--out 'ro/site' cannot be written")
        refused(work, ["report", "--store", "r.sqlite", "--book", "ro/book.md"], "--book 'ro/book.md' cannot be")
        refused(work, ["data", "fetch", "mnist5k", "--cache", "ro/cache"], "--cache 'ro/cache' cannot be written")


def test_a_float_precision_is_named_as_not_an_integer():
    """It said 'must be in [1, 26]' of 20.0."""
    with pytest.raises(InvalidInputError, match=r"precision must be an integer in \[1, 26\], got 20\.0"):
        MPCBanditConfig(n_arms=3, partition=(2, 2), precision=20.0)
