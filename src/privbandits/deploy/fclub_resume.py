"""Checkpoints and ``--resume`` for a deployed FCLUB session (:mod:`privbandits.deploy.fclub`).

Every party saves its state at each phase start t = 2^s − 1 once the detection is over: the users right
after they send :class:`~privbandits.deploy.fclub.PhaseStart` (every earlier round answered), a local
server once its renewals are in and before it serves round t, the global server once it has sent its
:class:`~privbandits.protocols.fclub.PhaseEnd` and renewals. Nothing is in flight between the parties at
those points (in either schedule: the phase start is a barrier), so the parties' checkpoints of the same
phase form one consistent state of the session. Each is its own file, ``checkpoints/NAME.tT.npz``, written
atomically with mode 0600 and the deployment's digest (:mod:`privbandits.deploy.checkpoint`); a local
server's holds its users' raw statistics and its generators' states (its privatizers' noise), so it stays
on that server's host, as its bundle does.

Resumed (``--resume``: every party restarts, since a link does not reconnect), each party tells the users
which phases it holds (:class:`Saved`), the users pick the latest phase every party holds and announce it
(:class:`ResumeAt`), and every party loads that phase's checkpoint (traffic counters included) and goes on
from round t; the users replay their environment to round t (it is drawn from the file's seed). A party
killed between two phase starts thus costs the rounds since the last phase start every party saved, and in
lock-step the session ends as the uninterrupted one would (tests/test_deploy_fclub_resume.py).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from privbandits.comm import Message, TlsNetwork, message
from privbandits.deploy import checkpoint, snapshot
from privbandits.deploy.deployment import Deployment, DeploymentError, FCLUBProtocol

RESUME = "resume"
"""Phase of the messages by which resumed parties agree on the phase to go on from."""


@message("deploy.fclub.saved")
class Saved(Message):
    """A resumed party → the users: the phase starts whose checkpoint it holds."""

    phases: np.ndarray


@message("deploy.fclub.resume_at")
class ResumeAt(Message):
    """Users → every party, in a resumed session: go on from the checkpoint of the phase starting at round ``t``."""

    t: int


NOT_SAVED = frozenset({"network", "endpoint", "_sender", "cal", "config"})
"""A party object's attributes a checkpoint leaves out: its links and its configuration (rebuilt from the file)."""


def attributes(party: object, skip: frozenset[str] = NOT_SAVED) -> dict[str, object]:
    """The attributes of ``party`` a checkpoint holds."""
    return {key: value for key, value in vars(party).items() if key not in skip}


def is_phase_start(t: int) -> bool:
    """Whether round ``t`` starts a phase (t = 2^s − 1; not the per-round detections of the synchronous FCLUB)."""
    return t >= 1 and (t + 1) & t == 0


def _path(deployment: Deployment[FCLUBProtocol], name: str, t: int):
    path = deployment.checkpoint_path(name)
    return path.with_name(f"{path.stem}.t{t}{path.suffix}")


def saved_phases(deployment: Deployment[FCLUBProtocol], name: str) -> list[int]:
    """The phase starts whose checkpoint party ``name`` holds, in order."""
    path = deployment.checkpoint_path(name)
    found = path.parent.glob(f"{path.stem}.t*{path.suffix}") if path.parent.is_dir() else ()
    return sorted(int(p.name[len(path.stem) + 2 : -len(path.suffix)]) for p in found)


def start_afresh(deployment: Deployment[FCLUBProtocol], name: str) -> None:
    """A fresh session: party ``name``'s checkpoints of an earlier one go."""
    for t in saved_phases(deployment, name):
        _path(deployment, name, t).unlink(missing_ok=True)


def save(
    deployment: Deployment[FCLUBProtocol], name: str, t: int, state: dict[str, object], network: TlsNetwork
) -> None:
    """Party ``name``'s ``state`` at the phase start ``t``, with its traffic counters, atomically."""
    arrays, tree = snapshot.encode(state)
    meta = {"digest": deployment.protocol_digest(), "t": t, "state": tree,
            "traffic": network.traffic.rows(), "received": network.received.rows()}  # fmt: skip
    checkpoint.save(_path(deployment, name, t), arrays, meta)


def load(deployment: Deployment[FCLUBProtocol], name: str, t: int, network: TlsNetwork) -> dict[str, Any]:
    """Party ``name``'s state at the phase start ``t``; its traffic counters are added to ``network``'s."""
    path = _path(deployment, name, t)
    saved = checkpoint.load(path)
    if saved is None:
        raise DeploymentError(f"no checkpoint at {path} to resume from (start the session afresh)")
    arrays, meta = saved
    if meta.get("digest") != deployment.protocol_digest():
        raise DeploymentError(f"{path} was written for another deployment (its digest differs)")
    for ledger, rows in ((network.traffic, meta["traffic"]), (network.received, meta["received"])):
        for phase, sender, receiver, messages, size, rounds in rows:
            counts = ledger.links[(phase, sender, receiver)]
            counts.messages += messages
            counts.bytes += size
            counts.rounds += rounds
    return snapshot.decode(arrays, meta["state"])


def agree(deployment: Deployment[FCLUBProtocol], name: str, party) -> int:
    """The phase start every party goes on from: each tells the users what it holds, the users choose the latest
    all hold and tell each; :class:`DeploymentError` if there is none (the session must start afresh)."""
    users = deployment.names("users")[0]
    network = party.network
    with network.phase(RESUME):
        if name != users:
            party.send(users, Saved(np.array(saved_phases(deployment, name), dtype=np.int64)))
            t = party.receive(ResumeAt, users).t
        else:
            common = set(saved_phases(deployment, name))
            others = [other for other in deployment.parties if other != users]
            for other in others:
                common &= set(party.receive(Saved, other).phases.tolist())
            t = max(common, default=0)
            for other in others:
                party.send(other, ResumeAt(t))
    if t == 0:
        raise DeploymentError("no phase start whose checkpoint every party holds: start the session afresh")
    return t
