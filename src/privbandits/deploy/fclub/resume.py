"""Checkpoints and ``--resume`` for a deployed FCLUB session (:mod:`privbandits.deploy.fclub.party`).

Every party saves its state at each phase start t = 2^s − 1 once the detection is over: the users right
after they send :class:`~privbandits.deploy.fclub.messages.PhaseStart` (every earlier round answered), a local
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
lock-step the session ends as the uninterrupted one would (tests/deploy/fclub/test_deploy_fclub_resume.py).

What a checkpoint holds of each party object is what its class declares
(:class:`~privbandits.checkpointed.Checkpointed`: ``SAVED``, and ``NOT_SAVED`` for its links and configuration);
restoring refuses a checkpoint whose fields differ, naming the file and the fields. Checkpoints are written in
:data:`FORMAT` 2 (each object's declared state); those of format 1, written before the classes declared it (each
object whole, or every attribute but the links and configuration, the party's name included), still load: their
fields are the declared ones and the name, which is dropped.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from privbandits.checkpointed import Checkpointed, StateMismatch
from privbandits.comm import Message, TlsNetwork, message
from privbandits.deploy import checkpoint, snapshot
from privbandits.deploy.deployment import Deployment, DeploymentError
from privbandits.deploy.fclub.section import FCLUBProtocol

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


FORMAT = 2
"""The checkpoints' format: 2, each party object's declared state; 1 (no ``format`` in the file), written before."""


class Loaded(dict):
    """A party's checkpoint of one phase start, decoded: its values by name, the file's ``path`` and ``legacy``
    (format 1). :meth:`restore` puts its saved objects' states back."""

    def __init__(self, values: Mapping[str, Any], path: Path, legacy: bool) -> None:
        super().__init__(values)
        self.path, self.legacy = path, legacy

    def restore(self, into: Mapping[str, Checkpointed]) -> None:
        """Each object of ``into`` restored from the value of its name; :class:`DeploymentError` naming the file and
        the fields when they are not those the object's class declares (nothing of that object changed)."""
        for key, target in into.items():
            if key not in self:
                raise DeploymentError(f"{self.path} holds no {key!r} (it holds {sorted(self)}): start afresh")
            state = self[key]
            if not isinstance(state, dict):  # format 1 saved some objects whole
                state = dict(snapshot.attributes(state))
            if self.legacy:  # format 1 held a party's name too
                state = {name: value for name, value in state.items() if name not in target.NOT_SAVED}
            try:
                target.restore(state)
            except StateMismatch as exc:
                raise DeploymentError(f"{self.path} ({key!r}): {exc}; start the session afresh") from None


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
    """Party ``name``'s ``state`` at the phase start ``t`` (of each :class:`Checkpointed` object, its declared state),
    with its traffic counters, atomically."""
    arrays, tree = snapshot.encode({key: _saved(value) for key, value in state.items()})
    meta = {"format": FORMAT, "digest": deployment.protocol_digest(), "t": t, "state": tree,
            "traffic": network.traffic.rows(), "received": network.received.rows()}  # fmt: skip
    checkpoint.save(_path(deployment, name, t), arrays, meta)


def _saved(value: object) -> object:
    return value.state() if isinstance(value, Checkpointed) else value


def load(deployment: Deployment[FCLUBProtocol], name: str, t: int, network: TlsNetwork) -> Loaded:
    """Party ``name``'s state at the phase start ``t``; its traffic counters are added to ``network``'s."""
    path = _path(deployment, name, t)
    saved = checkpoint.load(path)
    if saved is None:
        raise DeploymentError(f"no checkpoint at {path} to resume from (start the session afresh)")
    arrays, meta = saved
    if meta.get("digest") != deployment.protocol_digest():
        raise DeploymentError(f"{path} was written for another deployment (its digest differs)")
    if meta.get("format", 1) not in (1, FORMAT):
        raise DeploymentError(f"{path} has checkpoint format {meta['format']!r}; this version reads 1 and {FORMAT}")
    for ledger, rows in ((network.traffic, meta["traffic"]), (network.received, meta["received"])):
        for phase, sender, receiver, messages, size, rounds in rows:
            counts = ledger.links[(phase, sender, receiver)]
            counts.messages += messages
            counts.bytes += size
            counts.rounds += rounds
    return Loaded(snapshot.decode(arrays, meta["state"]), path, legacy="format" not in meta)


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
