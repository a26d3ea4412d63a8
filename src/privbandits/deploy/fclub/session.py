"""What every party of a deployed FCLUB session reads of the deployment: the protocol section, the environment, the
algorithm's configuration and calibration, each party's randomness, the schedule, and the helpers the roles share.
"""

from __future__ import annotations

import hashlib

import numpy as np

from privbandits.comm import PeerLost, ProtocolError
from privbandits.deploy import entropy
from privbandits.deploy.deployment import Deployment, DeploymentError
from privbandits.deploy.fclub.section import FCLUBProtocol
from privbandits.envs.clustered import ClusteredLinearBandit, assign_groups
from privbandits.protocols.fclub.config import Calibration
from privbandits.protocols.fclub.messages import PhaseUpload, Upload


def _protocol(deployment: Deployment[FCLUBProtocol]) -> FCLUBProtocol:
    protocol = deployment.protocol
    if not isinstance(protocol, FCLUBProtocol):
        raise DeploymentError(f"protocol.name must be 'fclub' here, got {protocol.name!r}")
    return protocol


def environment_of(deployment: Deployment[FCLUBProtocol]) -> ClusteredLinearBandit:
    """The users' synthetic environment (spec §6.2), as the experiments build it from the same sizes."""
    protocol = _protocol(deployment)
    return ClusteredLinearBandit(protocol.n_users, protocol.n_clusters, protocol.dim, protocol.n_arms,
                                 construction=protocol.construction)  # fmt: skip


def config_of(deployment: Deployment[FCLUBProtocol]):
    """The algorithm's :class:`~privbandits.protocols.fclub.config.FCLUBConfig` (the experiments' presets)."""
    return _protocol(deployment).fclub_config()


def _seeds(deployment: Deployment[FCLUBProtocol]) -> tuple[np.random.SeedSequence, np.random.SeedSequence]:
    """The environment's seed and the protocol's, spawned from ``protocol.seed`` as
    :func:`~privbandits.protocols.fclub.run_fclub` does (the protocol's used only in reproducible mode)."""
    environment, protocol = np.random.SeedSequence(_protocol(deployment).seed).spawn(2)
    return environment, protocol


def _streams(deployment: Deployment[FCLUBProtocol]) -> tuple[np.random.Generator, list[np.random.Generator]]:
    """The environment's generator and each local server's in reproducible mode, as ``run_fclub``."""
    environment, protocol = _seeds(deployment)
    servers = protocol.spawn(len(deployment.names("local_server")))
    return np.random.default_rng(environment), [np.random.default_rng(seed) for seed in servers]


def local_rng(deployment: Deployment[FCLUBProtocol], name: str) -> np.random.Generator:
    """Local server ``name``'s generator (its privatizers' noise, its tie-breaks): OS entropy, or in
    reproducible mode ``run_fclub``'s."""
    servers = deployment.names("local_server")
    return entropy.generator(deployment, name, _seeds(deployment)[1].spawn(len(servers))[servers.index(name)])


def _server_of_user(deployment: Deployment[FCLUBProtocol]) -> np.ndarray:
    return assign_groups(_protocol(deployment).n_users, len(deployment.names("local_server")), remainder_last=True)


def _calibration(deployment: Deployment[FCLUBProtocol]):
    protocol = _protocol(deployment)
    return Calibration(config_of(deployment), protocol.dim, protocol.n_users, len(deployment.names("local_server")))


IDLE = 4.0
"""The global server and the local servers wait this many ``deadline_s`` for whatever comes next (longer than the
users wait for a local server), so a local server that stalls mid-round is named by the users, who go on without
it, rather than ending the session; nothing at all within it means the users, who keep the clock, are lost."""


def _next(party, wanted: tuple[str, ...], deployment: Deployment[FCLUBProtocol]) -> tuple[str, str]:
    """``party.peek(wanted)`` from any peer, waiting :data:`IDLE` deadlines; the users are named if nothing comes."""
    with party.network.patience(IDLE * deployment.deadline_s):
        try:
            return party.peek(wanted)
        except PeerLost as exc:
            if exc.peer != "any":
                raise
            users = deployment.names("users")[0]
            raise PeerLost(
                f"lost peer {users!r} in {exc.round}: no message from any peer within "
                f"{IDLE * deployment.deadline_s:g} s (the users keep the clock)",
                peer=users,
                round=exc.round,
            ) from None


def free_running(deployment: Deployment[FCLUBProtocol]) -> bool:
    """Whether the file's ``protocol.schedule`` is ``free-running``."""
    return _protocol(deployment).schedule == "free-running"


def _check_sender(name: str, sender: str, kind: str, expected: str) -> None:
    if sender != expected:
        raise ProtocolError(f"{name!r} takes {kind!r} messages only from {expected!r}, got one from {sender!r}")


def upload_digest(uploads) -> str:
    """A SHA-256 chain over ``(sender, message)`` phase uploads and uploads, in order (what the global server received;
    a chain, so that a checkpoint can carry it on)."""
    digest = ""
    for sender, msg in uploads:
        digest = chain_upload(digest, sender, msg)
    return digest


def chain_upload(digest: str, sender: str | None, msg: PhaseUpload | Upload) -> str:
    """The chain ``digest`` (hex) extended by one phase upload or upload."""
    step = hashlib.sha256(f"{digest}|{msg.kind}|{sender}|{msg.cluster}|{msg.count}|".encode())
    step.update(np.ascontiguousarray(msg.gram).tobytes())
    step.update(np.ascontiguousarray(msg.moment).tobytes())
    return step.hexdigest()
