"""Checkpoint files of party processes: the decision log beside each checkpoint."""

from __future__ import annotations

import stat

import pytest

from privbandits.deploy.checkpoint import DecisionLog
from privbandits.deploy.deployment import DeploymentError


def test_the_log_appends_only_new_decisions_and_a_resume_cuts_it_to_the_checkpoint(tmp_path):
    """Decisions are appended at each checkpoint (only those not yet written), before the checkpoint
    that counts them; resuming from an earlier checkpoint, or after a torn append, cuts the rest."""
    log = DecisionLog(tmp_path / "checkpoints" / "active.decisions")
    log.start()
    assert stat.S_IMODE(log.path.stat().st_mode) == 0o600 and log.path.stat().st_size == 0
    decisions = [3, 1, 4]
    log.append(decisions)
    decisions += [1, 5]
    log.append(decisions)
    log.append(decisions)  # nothing new: nothing written
    assert log.path.stat().st_size == 5 * 8
    with open(log.path, "ab") as handle:
        handle.write(b"\x09\x00\x00")  # a crash in the middle of the next append
    resumed = DecisionLog(log.path)
    assert resumed.restore(3) == [3, 1, 4]  # the previous checkpoint's count
    assert log.path.stat().st_size == 3 * 8
    resumed.append([3, 1, 4, 2, 6])
    assert DecisionLog(log.path).restore(5) == [3, 1, 4, 2, 6]


def test_a_log_shorter_than_its_checkpoint_is_refused(tmp_path):
    log = DecisionLog(tmp_path / "env.decisions")
    log.start()
    log.append([0, 1])
    with pytest.raises(DeploymentError, match=r"env\.decisions holds 2 decisions; the checkpoint counts 3$"):
        DecisionLog(log.path).restore(3)
    with pytest.raises(DeploymentError, match=r"holds 0 decisions; the checkpoint counts 1$"):
        DecisionLog(tmp_path / "missing.decisions").restore(1)
    fresh = DecisionLog(tmp_path / "fresh.decisions")
    assert fresh.restore(0) == [] and fresh.path.stat().st_size == 0  # resumed at round 0: an empty log
