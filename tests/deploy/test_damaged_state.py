"""Damaged state files are refused whole, in one line naming the file, never half-used (issue 48): a checkpoint or
entropy file (truncated, emptied, bytes changed: the archive's CRC-32 catches it), a decision log holding no
arms, a SQLite report queue whose pages are damaged; an MPC party whose latest checkpoint is damaged resumes from
its previous one."""

from __future__ import annotations

import tomllib
from pathlib import Path

import numpy as np
import pytest
from project_paths import SHIPPED_DEPLOYMENTS

from privbandits.deploy import checkpoint
from privbandits.deploy.checkpoint import DamagedState, DecisionLog
from privbandits.deploy.deployment import parse_deployment
from privbandits.deploy.mpc_bandit.party import save_state, saved_states
from privbandits.protocols.p2b.queue import SqliteReportQueue
from privbandits.validation import InvalidInputError

AFRESH = "restore it or move it away to start the session afresh"


def saved(path: Path) -> Path:
    checkpoint.save(path, {"a": np.arange(4096, dtype=np.int64)}, {"digest": "d", "round": 3})
    return path


def damage(path: Path, how: str) -> None:
    data = bytearray(path.read_bytes())
    if how == "truncated":
        data = data[: len(data) // 2]
    elif how == "empty":
        data = bytearray()
    else:  # bytes changed inside the array's member
        data[len(data) // 3 : len(data) // 3 + 64] = bytes(64)
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("how", ["truncated", "empty", "changed"])
def test_a_damaged_checkpoint_is_refused_in_one_line_naming_it(tmp_path, how):
    path = saved(tmp_path / "party.npz")
    assert checkpoint.load(path)[1]["round"] == 3
    damage(path, how)
    with pytest.raises(DamagedState) as refused:
        checkpoint.load(path)
    message = str(refused.value)
    assert message.startswith(f"{path} is damaged (") and message.endswith(AFRESH) and "\n" not in message


def test_a_checkpoint_that_is_no_archive_or_has_no_meta_is_damaged(tmp_path):
    (tmp_path / "noise.npz").write_bytes(np.random.default_rng(0).bytes(1000))
    np.savez(tmp_path / "bare.npz", a=np.arange(3))
    for name in ("noise.npz", "bare.npz"):
        with pytest.raises(DamagedState, match=f"{tmp_path / name} is damaged"):
            checkpoint.load(tmp_path / name)
    assert checkpoint.load(tmp_path / "missing.npz") is None  # none at all is not damage


def test_a_decision_log_holding_no_arms_is_refused_and_left_as_it_was(tmp_path):
    log = DecisionLog(tmp_path / "party.decisions")
    log.start()
    log.append([0, 1, 2, 1])
    assert DecisionLog(log.path).restore(3, n_arms=3) == [0, 1, 2]
    log.path.write_bytes(np.random.default_rng(1).bytes(8 * 4))
    before = log.path.read_bytes()
    with pytest.raises(DamagedState) as refused:
        DecisionLog(log.path).restore(3, n_arms=3)
    assert str(refused.value) == f"{log.path} is damaged: it holds decisions that are no arm of 0..2"
    assert log.path.read_bytes() == before  # refused before it is cut


def test_a_report_queue_with_a_damaged_page_is_refused_when_it_opens(tmp_path):
    path = tmp_path / "queue.sqlite"
    SqliteReportQueue(path, n_codes=8, n_arms=3).close()
    data = bytearray(path.read_bytes())
    data[2 * 4096 : 3 * 4096] = bytes([0x5A]) * 4096  # a table's page (quick_check finds it; opening alone did not)
    path.write_bytes(bytes(data))
    with pytest.raises(InvalidInputError) as refused:
        SqliteReportQueue(path, n_codes=8, n_arms=3)
    message = str(refused.value)
    assert message.startswith(f"SqliteReportQueue: path {str(path)!r} is not a report queue: ") and "\n" not in message


@pytest.fixture
def mpc(tmp_path):
    data = tomllib.loads((SHIPPED_DEPLOYMENTS / "mpc-epsilon-greedy.toml").read_text())
    return parse_deployment(data, tmp_path)


def test_an_mpc_party_whose_latest_checkpoint_is_damaged_resumes_from_the_previous(mpc, capsys):
    name = mpc.names("computing")[0]
    save_state(mpc, name, 5, {"x": np.arange(3)}, {})
    save_state(mpc, name, 10, {"x": np.arange(4)}, {})
    assert sorted(saved_states(mpc, name)) == [5, 10]
    damage(mpc.checkpoint_path(name), "truncated")
    states = saved_states(mpc, name)
    assert sorted(states) == [5] and states[5][0]["x"].tolist() == [0, 1, 2]
    assert f"{name}: {mpc.checkpoint_path(name)} is damaged" in capsys.readouterr().err
    previous = mpc.checkpoint_path(name).with_name(f"{mpc.checkpoint_path(name).stem}.previous.npz")
    damage(previous, "empty")
    with pytest.raises(DamagedState):
        saved_states(mpc, name)


@pytest.mark.parametrize("how", ["truncated", "empty", "changed"])
def test_a_damaged_p2b_server_key_is_refused_when_the_server_resumes(tmp_path, how):
    """The P2B server's HPKE key file (issue 48's sealed reports) is a checkpoint like the others: written fresh, read
    back on --resume, refused whole once damaged."""
    from privbandits.deploy.p2b.sealing import server_key

    path = tmp_path / "server.key.npz"
    key = server_key(path, resume=False, digest="d")
    assert server_key(path, resume=True, digest="d") == key and path.stat().st_mode & 0o777 == 0o600
    damage(path, how)
    with pytest.raises(DamagedState, match=f"^{path} is damaged"):
        server_key(path, resume=True, digest="d")
