"""The private protocols, one package each: its parties exchanging messages, its in-memory driver, its options.

vertical
    Vertical federated LinUCB / LinTS with orthogonal masks (VFUCB, VFTS): :class:`VerticalFederatedBandit`.
p2b
    P2B, on-device bandits through encode–shuffle–analyze: :class:`P2BConfig` and
    :func:`~privbandits.protocols.p2b.core.simulate` (giving a :class:`P2BOutcome`); the shuffler's durable
    report queue (``p2b.queue``: SQLite, PostgreSQL).
fclub
    FCLUB, federated online clustering of bandits with cluster DP: :class:`FCLUBConfig`,
    :class:`FederatedClusteredBandit` and :func:`run_fclub` (giving an :class:`FCLUBOutcome`); its messages,
    the baselines that never leave a local server (CLUB, SCLUB, per-user LinUCB) and the reference code's
    behaviours outside the paper's algorithm.
mpc_bandit
    The secure multi-party ε-greedy bandit (MPC paper Alg. 1): :class:`MPCBanditConfig`,
    :class:`PrivateEpsilonGreedy` and its float64 twin :class:`PlaintextEpsilonGreedy`.
dp
    The standard DP linear bandits (joint, local and shuffle DP LinUCB), as baselines.

Each protocol's deployment (its parties as processes) is the package of the same name under
:mod:`privbandits.deploy`. The names above load lazily, so ``import privbandits.protocols`` imports none of the
protocols.
"""

from __future__ import annotations

from privbandits._lazy import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(
    globals(),
    {
        "VerticalFederatedBandit": "privbandits.protocols.vertical.core",
        "P2BConfig": "privbandits.protocols.p2b.config",
        "P2BOutcome": "privbandits.protocols.p2b.core",
        "FCLUBConfig": "privbandits.protocols.fclub.config",
        "FCLUBOutcome": "privbandits.protocols.fclub.rounds",
        "FederatedClusteredBandit": "privbandits.protocols.fclub.driver",
        "run_fclub": "privbandits.protocols.fclub.driver",
        "MPCBanditConfig": "privbandits.protocols.mpc_bandit",
        "PlaintextEpsilonGreedy": "privbandits.protocols.mpc_bandit",
        "PrivateEpsilonGreedy": "privbandits.protocols.mpc_bandit",
    },
)
