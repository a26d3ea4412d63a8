"""FCLUB in one process: :class:`FederatedClusteredBandit` wires the local servers and the global server on one
network, owns the clock and the users' arrivals, and counts communication from what the parties report;
:func:`run_fclub` plays a seeded run (spec ``fclub.md`` §6.2)."""

from __future__ import annotations

import math
from collections.abc import Callable
from math import isfinite

import numpy as np

from privbandits.comm import InMemoryNetwork, Network, Traffic
from privbandits.envs.clustered import ClusteredLinearBandit, assign_groups
from privbandits.privacy.bounds import DataBounds
from privbandits.privacy.ledger import PrivacyLedger
from privbandits.privacy.tree_mechanism import REPLACE_SENSITIVITY, accounted_delta, accounted_epsilon
from privbandits.protocols.fclub.accounting import Communication, PrivacyReport, per_user_epsilons
from privbandits.protocols.fclub.config import Calibration, FCLUBConfig
from privbandits.protocols.fclub.global_server import GlobalServer
from privbandits.protocols.fclub.local_server import LocalServer
from privbandits.protocols.fclub.messages import ASYNC, CHECK, DETECT, PHASE_END
from privbandits.protocols.fclub.numerics import Repairs
from privbandits.protocols.fclub.rounds import FCLUBOutcome, RoundChecks, check_server_of_user, play
from privbandits.validation import Instance, Integer, InvalidInputError, NoneOr, check, describe, validate


class FederatedClusteredBandit(RoundChecks):
    """CDP-FCLUB-DC (Algorithm 1) and its variants among ``L`` local servers and a global server.

    Parameters
    ----------
    config : FCLUBConfig
    server_of_user : ndarray of int, shape (n_users,)
        The local server of each user (disjoint user sets, §1.1).
    dim, n_arms : int
    rng : numpy.random.Generator
        Seeds each local server's privatizers.
    network : Network, optional
        Defaults to an :class:`~privbandits.comm.InMemoryNetwork`.
    event_hook : callable, optional
        Called with the bandit after every phase detection, upload and download
        (for tests of the §2.5 invariant).
    """

    def __init__(
        self,
        config: FCLUBConfig,
        server_of_user: np.ndarray,
        dim: int,
        n_arms: int,
        *,
        rng: np.random.Generator,
        network: Network | None = None,
        event_hook: Callable[[FederatedClusteredBandit], None] | None = None,
    ) -> None:
        owner = "FederatedClusteredBandit"
        check(config, "config", Instance((FCLUBConfig,)), owner)
        sizes = validate(owner, {"dim": Integer(low=1), "n_arms": Integer(low=1)}, {"dim": dim, "n_arms": n_arms})
        dim, n_arms = sizes["dim"], sizes["n_arms"]
        check(rng, "rng", Instance((np.random.Generator,), "a numpy Generator"), owner)
        check(network, "network", NoneOr(Instance((Network,)), "a fresh in-memory network"), owner)
        if not (event_hook is None or callable(event_hook)):
            raise InvalidInputError(f"{owner}: event_hook must be a callable or None, got {describe(event_hook)}")
        server_of_user = check_server_of_user(server_of_user, owner)
        n_servers = int(server_of_user.max()) + 1
        self.config, self.dim, self.n_arms, self.bounds = config, dim, n_arms, DataBounds(config.private)
        self._n_users, self._shape = len(server_of_user), (n_arms, dim)
        given = (config, dim, len(server_of_user), n_servers)
        self.calibration = Calibration(*given)
        self.network = network if network is not None else InMemoryNetwork()
        self.server_of_user = server_of_user
        names = [f"local{ell}" for ell in range(n_servers)]
        seeds = rng.spawn(n_servers)
        self.servers = [
            LocalServer(name, self.network, np.flatnonzero(server_of_user == ell), dim, Calibration(*given), seeds[ell])
            for ell, name in enumerate(names)
        ]
        self._by_name = dict(zip(names, self.servers, strict=True))
        route = {user: (server, i) for server in self.servers for i, user in enumerate(server.users)}
        self._route = [route[user] for user in range(len(server_of_user))]  # user -> (its server, its index there)
        self.global_server = GlobalServer(self.network, names, dim, Calibration(*given))
        self.communication = Communication(synchronous=config.synchronous)
        self._count_idle = config.rebuild_local_copies and not config.synchronous
        self.event_hook = event_hook
        self.t = 0
        self.phase = 0
        self.phase_starts: list[int] = []
        self._next_phase_start = 1
        self._user = -1
        self._contexts: np.ndarray | None = None
        self._arm = -1

    # -- rounds ------------------------------------------------------------------------------
    def select(self, user: int, contexts: np.ndarray) -> int:
        """Round t: run cluster detection first if t = 2^s − 1 (§3.2), then recommend for ``user``.

        ``user`` in ``[0, n_users)``, ``contexts`` finite of shape ``(n_arms, dim)``; refused before round t starts.
        """
        if not self._passes(user, contexts):
            user, contexts = self._check_select(user, contexts)
        t = self.t + 1
        if t == self._next_phase_start:
            self._check_finite(contexts)  # detection changes state before the scores could test the contexts
            self.t, self.phase = t, self.phase + 1
            self.phase_starts.append(t)
            self._next_phase_start = 2 ** (self.phase + 1) - 1
            self._detect(t)
        elif self.config.detect_every_round:  # the reference code's FCLUB (§7.6)
            self._check_finite(contexts)
            self.t = t
            self._detect(t)
        server, i = self._route[user]
        self._arm = arm = self._recommend(server, i, contexts)
        self.t, self._user, self._contexts = t, user, contexts
        return arm

    def update(self, reward: float) -> None:
        """The reward of the selected arm: user update, CheckUpload and CheckDownload (Alg. 3, 4).

        Once per :meth:`select`, with a finite reward; refused before anything changes.
        """
        if self._contexts is None or not (isinstance(reward, float) and isfinite(reward)):
            reward = self._check_update(reward)
        assert self._contexts is not None, "_check_update refuses an update without a selection"
        server, i = self._route[self._user]
        x, reward = self.bounds.apply(self._contexts[self._arm], reward)  # ‖x‖ ≤ 1, |y| ≤ 1 when private (§4.2)
        self._contexts = None
        cluster = server.observe(i, x, reward)
        self.communication.rounds += 1
        if cluster is None:
            if self._count_idle:
                with self.network.phase(CHECK):
                    server.check_download(i)
                    self.global_server.receive_download_check(server.name)
                self.communication.idle_downloads = self.global_server.idle_downloads  # the global server's count
            return
        network, communication, glob = self.network, self.communication, self.global_server
        with network.phase(ASYNC):
            server.upload(cluster)
            communication.uploads += 1
            due = glob.receive_upload(server.name)
            if self._count_idle:
                communication.idle_downloads = glob.idle_downloads  # the global server's count
            self._event()
            for other in due:
                glob.send_download(other)
                communication.shared_updates += self._by_name[other[0]].receive_download()
                communication.downloads += 1
                self._event()

    def _detect(self, t_phase: int) -> None:
        """Algorithm 2 at t = 2^s − 1 (every round with ``detect_every_round``): local detection and phase
        uploads, the global merge and the renewal if one is due; then the global server's :class:`PhaseEnd`
        tells each local server whether renewals wait for it."""
        communication, glob, network = self.communication, self.global_server, self.network
        with network.phase(DETECT):
            for server in self.servers:
                communication.phase_uploads += server.detect(t_phase)
            communication.changed_phases += glob.detect(t_phase)
        with network.phase(PHASE_END):
            glob.end_phase()
            for server in self.servers:
                communication.renewals += server.end_phase()
        self._event()

    def _event(self) -> None:
        if self.event_hook is not None:
            self.event_hook(self)

    # -- introspection (simulation only: joins what the parties know separately) -------------
    def partition(self) -> frozenset[frozenset[int]]:
        """The global clusters as sets of user ids."""
        users = {(s.name, c.uid): c.users for s in self.servers for c in s.clusters.values()}
        by_name = self._by_name
        return frozenset(
            frozenset(int(by_name[k[0]].users[i]) for k in group for i in users[k])
            for group in self.global_server.partition
        )

    @property
    def ledger(self) -> PrivacyLedger:
        """Every release of the run: the local servers' own ledgers, composed (server by server)."""
        ledger = PrivacyLedger()
        for server in self.servers:
            for entry in server.ledger.entries:
                ledger.record(entry)
        return ledger

    @property
    def repairs(self) -> Repairs:
        """The local servers' numerical events, summed."""
        return sum((server.repairs for server in self.servers), Repairs())

    def privacy_report(self) -> PrivacyReport:
        """The paper's (ε, δ) per privatizer beside the guarantee composed with dp-accounting (RDP), and the
        per-user ε by the one accountant (PLD; :class:`PrivacyReport` defines it).

        Per privatizer: its tree's levels used, as Gaussian mechanisms of sensitivity
        :data:`~privbandits.privacy.tree_mechanism.REPLACE_SENSITIVITY` plus the slack of snapping each datum
        (:meth:`~privbandits.protocols.fclub.config.Calibration.effective_sensitivity`); with the square-root
        factorization its one Gaussian release of ``C x + z`` (``max_levels_per_privatizer`` is then 1, and
        ``max_nodes_per_datum`` counts privatizers). Per datum: every
        node of every privatizer its user's data has gone through (new clusters after a
        split, phase-start trees), composed, for the worst user: the paper does not
        compose across privatizers (§4.5, §8 A9). Composed from each local server's
        :meth:`LocalServer.privacy_accounts` (a user's data never leaves its server).
        """
        cfg = self.config
        notes = []
        accounts = [server.privacy_accounts() for server in self.servers]
        counts = {k: v for privatizers, _ in accounts for k, v in privatizers.items()}
        if not cfg.private:
            notes.append("non-private variant: nothing is privatized")
        if cfg.noise_in_trigger_only:
            notes.append("noise only in the upload trigger: uploads are raw, no DP guarantee (reference code, §7)")
        levels = {k: self.calibration.compositions(releases) for k, (releases, _) in counts.items()}
        guaranteed = cfg.private and not cfg.noise_in_trigger_only  # raw uploads: no guarantee, ε = ∞
        std = min((s for _, s in counts.values()), default=0.0) if guaranteed else 0.0
        worst_tree = max(levels.values(), default=0)
        per_datum = max((worst for _, worst in accounts), default=0)
        sensitivity = self.calibration.release_sensitivity()
        datum = self.calibration.effective_sensitivity()
        snapping = f", {datum:.6g} with the data's snapping" if datum != REPLACE_SENSITIVITY else ""
        if self.calibration.factorization is not None:
            notes.append(f"square-root factorization: one Gaussian release a privatizer, sensitivity {sensitivity:.6g}")
        return PrivacyReport(
            claimed_epsilon=cfg.epsilon if guaranteed else math.inf,
            claimed_delta=cfg.delta,
            privatizers=len(counts),
            releases=sum(r for r, _ in counts.values()),
            max_levels_per_privatizer=worst_tree,
            accounted_epsilon_per_privatizer=accounted_epsilon(std, max(worst_tree, 1), cfg.delta, sensitivity),
            accounted_delta_per_privatizer=accounted_delta(std, max(worst_tree, 1), cfg.epsilon, sensitivity),
            max_nodes_per_datum=per_datum,
            accounted_epsilon_per_datum=accounted_epsilon(std, max(per_datum, 1), cfg.delta, sensitivity),
            accounted_delta_per_datum=accounted_delta(std, max(per_datum, 1), cfg.epsilon, sensitivity),
            **per_user_epsilons(self.calibration.datum_releases(std, max(per_datum, 1)), cfg.delta),
            notes=notes + [f"sensitivity {REPLACE_SENSITIVITY} (replace one (x, y), ‖x‖ ≤ 1, |y| ≤ 1)" + snapping],
        )

    def privacy_metrics(self) -> dict[str, float]:
        """Scalars a run stores (:class:`~privbandits.experiments.adapters.PrivateLearner`): the bytes and messages
        of its network, and when private the claimed ε, the accounted ε per datum (RDP), the per-user ε (PLD) and the
        noise bounds' metrics."""
        total = self.network.traffic.total()
        metrics: dict[str, float] = {"bytes": total.bytes, "messages": total.messages}
        if self.config.private:
            report = self.privacy_report()
            metrics |= {
                "claimed_epsilon": report.claimed_epsilon,
                "accounted_epsilon_per_datum": report.accounted_epsilon_per_datum,
                "per_user_epsilon": report.per_user_epsilon,
            } | self.bounds.metrics()
        return metrics

    @property
    def traffic(self) -> Traffic:
        return self.network.traffic



def run_fclub(
    config: FCLUBConfig,
    env: ClusteredLinearBandit,
    n_servers: int,
    seed: int,
    *,
    event_hook: Callable[[FederatedClusteredBandit], None] | None = None,
    network: Network | None = None,
) -> FCLUBOutcome:
    """Play ``config.horizon`` rounds of ``env`` with users on ``n_servers`` servers in blocks (§6.2).

    The environment and the protocol get independent generators spawned from ``seed``; ``network``
    (default: a fresh in-memory one) carries the parties' messages.
    """
    env_rng, protocol_rng = np.random.default_rng(seed).spawn(2)
    env.reset(env_rng)
    servers = assign_groups(env.n_users, n_servers, remainder_last=True)
    bandit = FederatedClusteredBandit(
        config, servers, env.dim, env.n_arms, rng=protocol_rng, network=network, event_hook=event_hook
    )
    return play(bandit, env, config.horizon)
