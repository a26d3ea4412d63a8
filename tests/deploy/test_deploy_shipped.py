"""A shipped deployment named from any folder (issue 45 item 6): the first command naming it copies the shipped
file into the current folder (one line saying where), every later command finds that copy, so certificates, data
and results go beside the copy, never beside the shipped file; a name that is neither a file nor a shipped
deployment is refused in one line listing the shipped names. Run from the source tree here (tests/project/test_wheel.py
runs the same commands from an installed wheel)."""

from __future__ import annotations

import numpy as np
import pytest
from cli_runner import separate

from privbandits.cli import app
from privbandits.deploy import shipped
from privbandits.deploy.deployment import load_deployment

SHIPPED = shipped.shipped_folder()


def invoke(*arguments: str):
    return separate().invoke(app, list(arguments), env={"COLUMNS": "300"})


@pytest.fixture
def empty(tmp_path, monkeypatch):
    folder = tmp_path / "empty"
    folder.mkdir()
    monkeypatch.chdir(folder)
    return folder


def test_the_shipped_names_are_the_files_in_configs_deploy():
    assert SHIPPED is not None and SHIPPED.parts[-2:] == ("configs", "deploy")
    names = shipped.shipped_deployments()
    assert list(names) == sorted(p.stem for p in SHIPPED.glob("*.toml"))
    assert {"mpc-epsilon-greedy", "vertical-vfucb", "p2b", "fclub"} <= set(names)
    for path in names.values():
        load_deployment(path)  # each one is a valid deployment


def test_the_first_command_copies_the_shipped_file_here_and_later_ones_use_the_copy(empty):
    first = invoke("deploy", "certs", "mpc-epsilon-greedy")
    assert first.exit_code == 0, first.stderr
    copy = empty / "mpc-epsilon-greedy.toml"
    assert copy.read_bytes() == (SHIPPED / "mpc-epsilon-greedy.toml").read_bytes()  # byte-identical: links with it
    said = [line for line in first.stderr.splitlines() if line.startswith("copied the shipped deployment")]
    assert said == [line for line in first.stderr.splitlines() if line] and len(said) == 1
    assert str(copy) in said[0]
    spec = load_deployment(copy)
    assert spec.bundles == empty / "certs" / "mpc" and (spec.bundles / "bank" / "bank.key").is_file()
    # the copy is what runs: an edit of it (fewer rounds) reaches the data the next command writes
    copy.write_text(copy.read_text().replace("\nrounds = 500\n", "\nrounds = 7\n"))
    second = invoke("deploy", "data", "mpc-epsilon-greedy")
    assert second.exit_code == 0, second.stderr
    assert "copied" not in second.stderr and "\nrounds = 7\n" in copy.read_text()
    with np.load(empty / "data" / "bank.npz") as bank:
        assert bank["contexts"].shape == (7, 10)
    # the file's own name works too, and a party finds the copy (and refuses a name that is not one of its parties)
    assert invoke("deploy", "data", "mpc-epsilon-greedy.toml").exit_code == 0
    party = invoke("party", "run", "mpc-epsilon-greedy", "--as", "nobody")
    assert party.exit_code == 2 and "no party named 'nobody'" in party.stderr
    assert sorted(p.name for p in empty.iterdir()) == ["certs", "data", "mpc-epsilon-greedy.toml"]


def test_naming_a_shipped_file_with_its_toml_suffix_copies_it_as_well(empty):
    done = invoke("deploy", "data", "vertical-vfucb.toml")
    assert done.exit_code == 0, done.stderr
    assert (empty / "vertical-vfucb.toml").read_bytes() == (SHIPPED / "vertical-vfucb.toml").read_bytes()
    assert (empty / "data" / "active.npz").is_file()


def test_a_name_that_is_neither_a_file_nor_shipped_lists_the_shipped_names(empty):
    done = invoke("deploy", "certs", "mpc")
    assert done.exit_code == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: deployment file mpc does not exist")
    assert f"(shipped: {', '.join(shipped.shipped_deployments())};" in lines[0]
    assert not any(empty.iterdir())  # nothing copied, nothing written


def test_a_checkout_path_where_there_is_none_says_to_name_the_deployment_alone(empty):
    done = invoke("deploy", "local", "configs/deploy/p2b.toml")
    assert done.exit_code == 2
    assert done.stderr.strip().splitlines() == [
        "error: deployment file configs/deploy/p2b.toml does not exist; name the shipped deployment alone: "
        "`privbandits deploy certs p2b` copies it to ./p2b.toml"
    ]
    assert not any(empty.iterdir())


def test_a_folder_or_a_copy_that_cannot_be_written_is_one_line(empty):
    (empty / "box").mkdir()
    done = invoke("deploy", "data", "box")
    assert done.exit_code == 2 and done.stderr.strip().splitlines() == [
        "error: deployment file box is a folder; give the deployment file (TOML)"
    ]
    (empty / "fclub.toml").mkdir()  # where the copy would go
    done = invoke("party", "run", "fclub", "--as", "global")
    lines = done.stderr.strip().splitlines()
    assert done.exit_code == 2 and len(lines) == 1
    assert lines[0].startswith(f"error: cannot copy the shipped deployment fclub to {empty / 'fclub.toml'} (")


def test_resolve_returns_an_existing_file_as_it_is(empty):
    own = empty / "sub" / "mine.toml"
    own.parent.mkdir()
    own.write_text("whatever")
    assert shipped.resolve(own) == own
    heard: list[str] = []
    assert shipped.resolve("p2b", heard.append) == shipped.resolve("p2b", heard.append) == shipped.Path("p2b.toml")
    assert len(heard) == 1 and "p2b" in heard[0]
