"""FCLUB runs for the tests: a small bandit played to a horizon, and a run on a network that notes, for every upload,
which raw statistics of its sender it equals (the message-boundary tests and the FCLUB deployment's).

Not a test module: ``tests/`` is on ``sys.path`` (pyproject.toml's ``[tool.pytest.ini_options] pythonpath``).
"""

from __future__ import annotations

import numpy as np

from privbandits.comm import InMemoryNetwork
from privbandits.envs.clustered import ClusteredLinearBandit, assign_groups
from privbandits.privacy.noise import grid_step
from privbandits.protocols.fclub import FederatedClusteredBandit, PhaseUpload, Upload, play
from privbandits.protocols.fclub.config import FCLUBConfig


class SnoopingNetwork(InMemoryNetwork):
    """Serializes every message and, for each upload, notes which raw statistics of its sender it equals.

    The raw statistics are read from the sender's state at the moment of sending (a test may look inside a
    party): every user's ``(V_i, b_i)``, every local cluster's sums over its users, and every upload buffer.
    """

    def __init__(self) -> None:
        super().__init__(serialize=True)
        self.bandit: FederatedClusteredBandit | None = None
        self.uploads: list[tuple[str, list[str]]] = []
        self.off_grid: list[str] = []
        """Privatized uploads with an entry off the grid of their cluster's noise (its sub-grid bits are data's)."""

    def _deliver(self, envelope, depth):
        message = envelope.message
        if message.kind in (PhaseUpload.kind, Upload.kind):
            self.uploads.append((message.kind, self._raw_matches(envelope.sender, message)))
            self._check_grid(envelope.sender, message)
        super()._deliver(envelope, depth)

    def _check_grid(self, sender: str, message) -> None:
        server = next(s for s in self.bandit.servers if s.name == sender)
        tree = server.clusters[message.cluster].async_tree
        if tree is not None:
            step = grid_step(tree.std)  # the data grid (every tree of these runs has the same depth)
            units = np.concatenate([message.gram.ravel(), message.moment]) / step  # the shifts are on it too
            if not np.array_equal(units, np.round(units)):
                self.off_grid.append(f"{message.kind} of cluster {message.cluster} from {sender}")

    def _raw_matches(self, sender: str, message) -> list[str]:
        server = next(s for s in self.bandit.servers if s.name == sender)
        raw = [(f"user {i}", server.V[i], server.b[i]) for i in range(len(server.users))]
        for cluster in server.clusters.values():
            users = cluster.users
            raw.append((f"cluster {cluster.uid}", server.V[users].sum(axis=0), server.b[users].sum(axis=0)))
            raw.append((f"buffer {cluster.uid}", cluster.raw_S, cluster.raw_u))
        off = ~np.eye(server.dim, dtype=bool)  # the Gram matrix's diagonal carries the public shift
        return [
            name for name, gram, moment in raw
            if np.allclose(message.moment, moment, rtol=0, atol=1e-6)
            or np.allclose(message.gram[off], gram[off], rtol=0, atol=1e-6)
        ]  # fmt: skip


def snooped_run(config: FCLUBConfig, seed: int, env: ClusteredLinearBandit, n_servers: int) -> SnoopingNetwork:
    """:func:`run_fclub`'s run (same seeds, same server blocks) on a :class:`SnoopingNetwork` that records."""
    network = SnoopingNetwork()
    network.record = True
    env_rng, protocol_rng = np.random.default_rng(seed).spawn(2)
    env.reset(env_rng)
    servers = assign_groups(env.n_users, n_servers, remainder_last=True)
    network.bandit = FederatedClusteredBandit(config, servers, env.dim, env.n_arms, rng=protocol_rng, network=network)
    play(network.bandit, env, config.horizon)
    return network


def _bandit(horizon: int) -> tuple[FederatedClusteredBandit, ClusteredLinearBandit]:
    env = ClusteredLinearBandit(n_users=12, n_clusters=2, dim=5, n_arms=6)
    env.reset(np.random.default_rng(3))
    config = FCLUBConfig(horizon=horizon, private=True, epsilon=1.0)
    servers = np.repeat([0, 1], 6)
    bandit = FederatedClusteredBandit(config, servers, 5, 6, rng=np.random.default_rng(4))
    play(bandit, env, horizon)
    return bandit, env
