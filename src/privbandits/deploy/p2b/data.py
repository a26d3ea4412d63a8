"""A P2B deployment's data: each device host's block of users, its data file, and the synthetic users.

Device host j holds the j-th contiguous block of the early users and the j-th block of the late
users (:func:`layout`), so the shuffler's canonical batch order (hosts in file order, each host's
reports in order) is the in-memory order (users ascending).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from privbandits.deploy.deployment import Deployment, DeploymentError
from privbandits.deploy.files import read_arrays, write_private_npz
from privbandits.deploy.p2b.section import P2BProtocol

if TYPE_CHECKING:  # imported where the data is read
    from privbandits.datasets.interactions import UserInteractions


def p2b_protocol(deployment: Deployment[P2BProtocol]) -> P2BProtocol:
    """The deployment's P2B protocol (refused, naming the protocol, for another one)."""
    if not isinstance(deployment.protocol, P2BProtocol):
        raise DeploymentError(f"not a P2B deployment: protocol {deployment.protocol.name!r}")
    return deployment.protocol


_ARRAYS = ("early_contexts", "early_rewards", "late_contexts", "late_rewards")


# -- layout, data files ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Block:
    """One device host's users: ``early`` and ``late`` ranges in the early and late populations."""

    early: range
    late: range
    n_early: int
    """Early users of all hosts together (the participation draws are over all of them)."""


def layout(deployment: Deployment[P2BProtocol]) -> dict[str, Block]:
    """Each device host's contiguous block of early and of late users (``np.array_split`` sizes, file order)."""
    protocol = deployment.protocol
    n_early = int(protocol.early_fraction * protocol.n_users)
    hosts = deployment.names("device_host")
    early = np.array_split(np.arange(n_early), len(hosts))
    late = np.array_split(np.arange(protocol.n_users - n_early), len(hosts))
    return {
        name: Block(range(int(e[0]), int(e[-1]) + 1), range(int(lt[0]), int(lt[-1]) + 1), n_early)
        for name, e, lt in zip(hosts, early, late, strict=True)
    }


def synthetic_population(protocol: P2BProtocol):
    """The synthetic benchmark's users (spec §5.1) of ``data_seed``: every host's, early then late."""
    from privbandits.envs.p2b_synthetic import p2b_synthetic_interactions

    return p2b_synthetic_interactions(
        protocol.n_users,
        protocol.interactions,
        protocol.dim,
        protocol.n_actions,
        mapping=protocol.mapping,
        seed=protocol.data_seed,
    )


def write_synthetic_data(deployment: Deployment[P2BProtocol]) -> dict[str, Path]:
    """Each device host's file: its users of the synthetic benchmark (spec §5.1), nothing of the others'."""
    protocol = p2b_protocol(deployment)
    early, late = synthetic_population(protocol).split(protocol.early_fraction)
    written = {}
    for name, block in layout(deployment).items():
        e, lt = slice(block.early.start, block.early.stop), slice(block.late.start, block.late.stop)
        written[name] = write_private_npz(
            deployment.data_file(name),
            early_contexts=early.contexts[e],
            early_rewards=np.asarray(early.rewards[e], dtype=np.int8),
            late_contexts=late.contexts[lt],
            late_rewards=np.asarray(late.rewards[lt], dtype=np.int8),
        )
    return written


@dataclass(frozen=True)
class HostData:
    """A device host's users (early and late), checked against the deployment's layout."""

    early: UserInteractions
    late: UserInteractions
    block: Block


def load_host(deployment: Deployment[P2BProtocol], name: str) -> HostData:
    """Read and check device host ``name``'s file: shapes against the layout, 0/1 rewards, finite contexts."""
    from privbandits.datasets.interactions import UserInteractions
    from privbandits.validation import InvalidInputError

    protocol, block = p2b_protocol(deployment), layout(deployment)[name]
    path = deployment.data_file(name)
    arrays = read_arrays(path, "device host", _ARRAYS, " (write one with `deploy data`)")
    t, d, k = protocol.interactions, protocol.dim, protocol.n_actions
    parts = []
    for part, users in (("early", len(block.early)), ("late", len(block.late))):
        contexts, rewards = arrays[f"{part}_contexts"], arrays[f"{part}_rewards"]
        for key, value, shape in (
            (f"{part}_contexts", contexts, (users, t, d)),
            (f"{part}_rewards", rewards, (users, t, k)),
        ):
            if value.shape != shape:
                raise DeploymentError(
                    f"{path}: {key} must have shape {shape} (this host's {part} users, interactions, "
                    f"{'dim' if 'contexts' in key else 'n_actions'}), got {value.shape}"
                )
        try:
            parts.append(
                UserInteractions(contexts, rewards, name=f"p2b-{name}-{part}", source=f"synthetic ({path.name})")
            )
        except InvalidInputError as exc:
            raise DeploymentError(f"{path}: {part} users: {exc}") from None
    return HostData(parts[0], parts[1], block)
