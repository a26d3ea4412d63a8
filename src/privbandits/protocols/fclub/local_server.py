"""FCLUB's local server ℓ (spec ``fclub.md`` §2.3; Alg. 1–3): its users' raw statistics, the user graph and its local
clusters, each with its synchronized copy, upload buffer and privatizers. The protocol as a whole:
:mod:`privbandits.protocols.fclub`."""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from typing import cast

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components

from privbandits.checkpointed import PARTY, Checkpointed
from privbandits.comm import Network, Party
from privbandits.linear._kernels import cholesky_inverse, shared_ucb_scores
from privbandits.linear.tiebreak import break_ties
from privbandits.privacy.accountant import ledger_epsilons
from privbandits.privacy.ledger import LedgerEntry, PrivacyLedger
from privbandits.privacy.noise import snap_to
from privbandits.privacy.tree_mechanism import REPLACE_SENSITIVITY, TreeMechanism
from privbandits.protocols.fclub.accounting import per_user_epsilons
from privbandits.protocols.fclub.config import Calibration, Lifecycle, Recommendation
from privbandits.protocols.fclub.factorized import FactorizedPrivatizer
from privbandits.protocols.fclub.messages import (
    GLOBAL,
    PRIVACY_UNIT,
    Download,
    DownloadCheck,
    PhaseEnd,
    PhaseUpload,
    Renewal,
    Upload,
)
from privbandits.protocols.fclub.numerics import Repairs, _absorb, _absorb_on_grid, _spd_inverse
from privbandits.protocols.fclub.reference import absorb_own_upload, carried_phase_statistics, reference_trigger_fires


class _LocalCluster:
    """State of one local cluster (ℓ, j) on its server (spec §2.3)."""

    def __init__(self, uid: int, users: np.ndarray, dim: int, with_own_buffer: bool) -> None:
        self.uid, self.users = uid, users
        self.key = frozenset(users.tolist())
        zeros: np.ndarray = np.zeros((dim, dim))
        vector = np.zeros(dim)
        self.S, self.u, self.T = zeros.copy(), vector.copy(), 0
        self.S_inv, self.theta, self.logdet_S = zeros.copy(), vector.copy(), 0.0
        self.raw_S, self.raw_u, self.raw_T = zeros.copy(), vector.copy(), 0
        self.grid_S, self.grid_u = zeros.copy(), vector.copy()  # the buffer's data snapped (sent when privatized)
        self.P, self.p = zeros.copy(), vector.copy()  # privacy part of the upload buffer (sent)
        self.P_trigger = self.P  # what Eq. 5 adds to the buffer (differs only with noise_in_trigger_only)
        self.M_inv, self.M_sign, self.M_logabs, self.sm_steps = zeros.copy(), 1.0, 0.0, 0
        rows = dim if with_own_buffer else 0
        self.R_inv, self.theta_R = np.zeros((rows, rows)), np.zeros(rows)
        self.H, self.h = zeros.copy(), vector.copy()  # tentative perturbation (in the buffer)
        self.H_bar, self.h_bar = zeros.copy(), vector.copy()  # current: the one last sent
        self.H_tilde, self.h_tilde = zeros.copy(), vector.copy()  # historical: phase-start release
        # (factorized privatizers: H̄ and H̃ hold the released noisy totals, not the noise, and H is unused)
        self.tree_ids: dict[str, str] = {}
        self.async_tree: TreeMechanism | FactorizedPrivatizer | None = None
        self.phase_tree: TreeMechanism | FactorizedPrivatizer | None = None
        self.depth = 1
        self.sharing = 1
        self.uploads_since_renewal = 0
        self.shared = False  # shared_statistics_defect: one (S, u) with the global cluster until the phase ends
        self.renewed = False  # holds a synchronized copy from a renewal (carry_synchronized_copies sends it)
        self._beta_key: tuple[int, int] = (-1, -1)
        self.beta = 0.0
        self.member_sums: tuple[np.ndarray, np.ndarray, int] | None = None
        """ΣV_i, Σb_i, ΣT_i over its users, kept between detections while none of them observes (with
        detection every round, most clusters send the same sums round after round)."""


class LocalServer(Party, Checkpointed):
    """Local server ℓ: serves its users, detects local clusters, uploads cluster statistics.

    It learns about the others only from messages: the global statistics from
    :class:`Renewal` and :class:`Download`, whether renewals follow from :class:`PhaseEnd`.

    Parameters
    ----------
    name : str
    network : Network
    users : ndarray of int
        Global ids of the users this server holds (disjoint across servers).
    dim : int
    calibration : Calibration
        The run's public constants (its own instance: nothing is shared with other parties).
    rng : numpy.random.Generator
        The server's own randomness (its privatizers' noise).

    Attributes
    ----------
    ledger : PrivacyLedger
        Every release this server made (privatized, or raw with noise only in the trigger).
    repairs : Repairs
        Its own numerical events.
    """

    SAVED = ("users", "dim", "ledger", "repairs", "rng", "tie_rng", "V", "b", "counts", "graph", "_labels", "_groups",
             "clusters", "cluster_of", "lineage", "release_counts", "_next_uid", "_v", "_eye", "_noisy", "_with_own",
             "_log_upload", "_refresh_every", "_threshold", "_ridge_free", "_ridge", "_grid", "V_grid",
             "b_grid")  # fmt: skip
    """What a resumed deployment's checkpoint holds (:mod:`privbandits.deploy.fclub.resume`)."""
    NOT_SAVED = PARTY | {"cal", "config", "_rows", "_grid_rows", "_factorized"}
    """Its links and configuration (rebuilt from the deployment file: ``_factorized`` is the calibration's), and the
    per-user views of ``V`` and ``b``."""

    def __init__(
        self,
        name: str,
        network: Network,
        users: np.ndarray,
        dim: int,
        calibration: Calibration,
        rng: np.random.Generator,
    ) -> None:
        super().__init__(name, network)
        self.users, self.dim, self.cal, self.config = users, dim, calibration, calibration.config
        self.ledger, self.repairs = PrivacyLedger(), Repairs()
        self.rng, self.tie_rng = rng.spawn(2)
        n = len(users)
        self.V, self.b = np.zeros((n, dim, dim)), np.zeros((n, dim))
        self.counts = [0] * n  # T_i (a list: cheaper than numpy scalars in the round loop)
        self._rows = list(zip(self.V, self.b, strict=True))  # per-user views, made once
        self.graph = ~np.eye(n, dtype=bool)  # G^ℓ_0: the complete graph
        self._labels: np.ndarray | None = None  # its connected components, while it is unchanged
        self._groups: list[tuple[np.ndarray, frozenset[int]]] = []  # each component's users (array and set)
        self.clusters: dict[int, _LocalCluster] = {}
        self.cluster_of: list[_LocalCluster] = []
        self.lineage: list[set[str]] = [set() for _ in range(n)]  # privatizers each user's data went through
        self.release_counts: dict[str, tuple[int, float]] = {}  # privatizer -> (releases, noise std)
        self._next_uid = 0
        self._v = np.zeros(dim)
        self._eye = np.eye(dim)
        self._noisy = self.config.private
        self._factorized = calibration.factorization is not None  # privatizers by the square-root factorization
        self._with_own = self.config.recommendation is Recommendation.WITH_OWN_BUFFER
        self._log_upload = -math.inf if self.config.synchronous else math.log(self.config.upload_threshold)
        self._refresh_every = self.config.refresh_every or math.inf
        self._threshold = self.config.upload_threshold
        self._ridge_free = self.config.ridge_in_recommendation_only
        self._ridge = self.config.ridge * self._eye if self._ridge_free else 0.0  # added where S is inverted
        self._grid = calibration.data_grid  # > 0: privatized uploads, whose data are snapped datum by datum
        rows = n if self._grid else 0
        self.V_grid, self.b_grid = np.zeros((rows, dim, dim)), np.zeros((rows, dim))  # (V_i, b_i) snapped
        self._grid_rows = list(zip(self.V_grid, self.b_grid, strict=True))  # per-user views, made once

    # -- rounds --------------------------------------------------------------------
    def restore(self, state: Mapping[str, object]) -> None:
        """Put back a :meth:`~privbandits.checkpointed.Checkpointed.state` of this server (a resumed deployment's
        checkpoint, :mod:`privbandits.deploy.fclub.resume`) and rebuild the per-user views of ``V`` and ``b``."""
        super().restore(state)
        self._rows = list(zip(self.V, self.b, strict=True))
        self._grid_rows = list(zip(self.V_grid, self.b_grid, strict=True))

    def recommend(self, i: int, contexts: np.ndarray) -> int:
        """Arm of the UCB for this server's user ``i`` on its cluster's statistics (§3.7)."""
        cluster = self.cluster_of[i]
        count = cluster.T + (cluster.raw_T if self._with_own else 0)
        key = (count, cluster.sharing)
        beta = cluster.beta if key == cluster._beta_key else self.cal.beta(count, cluster.sharing, cluster.depth)
        if self._with_own:
            scores = shared_ucb_scores(contexts, cluster.R_inv, cluster.theta_R, beta)
        else:
            scores = shared_ucb_scores(contexts, cluster.S_inv, cluster.theta, beta)
        arm = break_ties(scores, self.config.tie_break, self.tie_rng)  # refuses NaN scores, drawing nothing
        cluster._beta_key, cluster.beta = key, beta  # cached once the round is accepted
        return arm

    def observe(self, i: int, x: np.ndarray, y: float) -> _LocalCluster | None:
        """Update user ``i`` and its cluster's buffer (Alg. 1, Alg. 3 line 1); the cluster if Eq. 5 fires.

        Synchronous variants (U = D → 1⁺) upload every round.
        """
        cluster = self.cluster_of[i]
        self.counts[i] += 1
        cluster.member_sums = None
        V, b = self._rows[i]
        S, u, M_inv, R_inv = cluster.raw_S, cluster.raw_u, cluster.M_inv, cluster.R_inv
        if self._grid:  # the released side too, snapped datum by datum
            V_grid, b_grid = self._grid_rows[i]
            c = _absorb_on_grid(x, y, V, b, S, u, M_inv, self._v, R_inv, cluster.theta_R,
                                self._grid, V_grid, b_grid, cluster.grid_S, cluster.grid_u)  # fmt: skip
        else:
            c = _absorb(x, y, V, b, S, u, M_inv, self._v, R_inv, cluster.theta_R)
        cluster.raw_T += 1
        cluster.sm_steps += 1
        if abs(c) <= 1e-12 or cluster.sm_steps >= self._refresh_every:
            self._refactor_trigger(cluster)
        elif c > 0:
            cluster.M_logabs += math.log(c)
        else:  # M indefinite (noise only in the trigger): det changes sign
            cluster.M_logabs += math.log(-c)
            cluster.M_sign = -cluster.M_sign
        if self._ridge_free:  # Eq. 5 as the reference code computes it
            fires = reference_trigger_fires(cluster.S, cluster.raw_S + cluster.P_trigger, self._threshold)
        else:
            fires = cluster.M_sign > 0 and cluster.M_logabs - cluster.logdet_S >= self._log_upload
        return cluster if fires else None

    def upload(self, cluster: _LocalCluster) -> None:
        """Send the upload buffer, absorb it, and start the next one (Alg. 3 lines 4–10)."""
        gram, moment = (cluster.grid_S, cluster.grid_u) if self._grid else (cluster.raw_S, cluster.raw_u)
        if self._factorized:  # the release, less the one the global server holds, plus the shift: no raw datum
            cluster.H, cluster.h = self._draw(cluster, cluster.async_tree, "async")
            sent = Upload(cluster.uid, cluster.H - cluster.H_bar + cluster.P, cluster.h - cluster.h_bar, cluster.raw_T)
        else:
            sent = Upload(cluster.uid, gram + cluster.P, moment + cluster.p, cluster.raw_T)
        self.send(GLOBAL, sent)
        if self.config.noise_in_trigger_only:
            self._record_raw(cluster)
        elif self._noisy:
            self._record(cluster, "async")
        absorb_own_upload(cluster.S, cluster.u, sent.gram, sent.moment, cluster.shared, self._ridge_free)
        cluster.T += sent.count
        cluster.uploads_since_renewal += 1
        cluster.H_bar, cluster.h_bar = cluster.H, cluster.h
        if self._noisy and not self._factorized:
            cluster.H, cluster.h = self._draw(cluster, cluster.async_tree, "async")
        self._start_buffer(cluster)

    def receive_download(self) -> bool:
        """Absorb one download (Alg. 4) into the cluster's synchronized copy.

        Returns whether the cluster holds the shared copy of ``shared_statistics_defect`` (the reference code
        counts no download for it).
        """
        return self.absorb_download(self.receive(Download, GLOBAL))

    def absorb_download(self, msg: Download) -> bool:
        """:meth:`receive_download` of a download already received (a deployment's that crossed a phase start)."""
        cluster = self.clusters[msg.cluster]
        cluster.S += msg.gram
        cluster.u += msg.moment
        cluster.T += msg.count
        self._refactor(cluster)
        return cluster.shared

    def check_download(self, i: int) -> None:
        """Ask the global server for Eq. 6 on the cluster of user ``i`` (a round without upload; the reference
        code's per-round check, sent only with ``rebuild_local_copies``)."""
        self.send(GLOBAL, DownloadCheck(self.cluster_of[i].uid))

    # -- phase start ---------------------------------------------------------------
    def detect(self, t_phase: int) -> int:
        """Delete edges by Eq. 3, take connected components, send a phase upload per cluster (Alg. 2 lines 3–5).

        The last phase upload says it is the last. Returns how many were sent.
        """
        cfg = self.config
        n = len(self.users)
        counts = np.asarray(self.counts)
        if cfg.detect_clusters and n > 1:
            eye = cfg.ridge * self._eye
            estimates = np.linalg.solve(self.V + eye, self.b[..., None])[..., 0]
            distance = np.linalg.norm(estimates[:, None, :] - estimates[None, :, :], axis=-1)
            width = self.cal.deletion_width(counts)
            delete = distance > width[:, None] + width[None, :]
            if cfg.skip_unseen_users:
                seen = counts > 0
                delete &= seen[:, None] & seen[None, :]
            if (self.graph & delete).any():
                self.graph &= ~delete
                self._labels = None
        if self._labels is None:  # edges are only deleted: the components change only when one is
            _, self._labels = connected_components(csr_matrix(self.graph), directed=False)
            self._groups = [
                (members, frozenset(members.tolist()))
                for members in (np.flatnonzero(self._labels == label) for label in range(int(self._labels.max()) + 1))
            ]
        previous = {c.key: c for c in self.clusters.values()}
        reset = cfg.lifecycle is Lifecycle.RESET_EVERY_PHASE
        cluster_of: list[_LocalCluster | None] = [None] * n
        self.clusters, self.cluster_of = {}, cast(list[_LocalCluster], cluster_of)  # the groups below cover every user
        last = len(self._groups) - 1
        for label, (members, key) in enumerate(self._groups):
            cluster = previous.get(key)
            if cluster is None:
                cluster = _LocalCluster(self._next_uid, members, self.dim, self._with_own)
                self._next_uid += 1
            if self._noisy and (reset or cluster.async_tree is None):
                self._new_trees(cluster, t_phase, reset)
            self.clusters[cluster.uid] = cluster
            for i in members:
                self.cluster_of[i] = cluster
            cluster.shared = False
            sent = self._phase_upload(cluster, label == last)
            if cfg.rebuild_local_copies:
                self._rebuild(cluster, sent)
        return last + 1

    def end_phase(self) -> int:
        """The end of a detection: the global server's :class:`PhaseEnd`, then, if it announces a renewal, one
        :class:`Renewal` per local cluster. Returns how many renewals were received."""
        if not self.receive(PhaseEnd, GLOBAL).renewal:
            return 0
        for _ in range(len(self.clusters)):
            self.receive_renewal()
        return len(self.clusters)

    def _phase_upload(self, cluster: _LocalCluster, last: bool) -> PhaseUpload:
        """Line 4 (draw H̃) and line 5 (send Ṽ = shift·I + H̃ + ΣV_i, b̃ = h̃ + Σb_i, T̃ = ΣT_i)."""
        members = cluster.users
        phase_shift, _ = self.cal.shifts(cluster.depth)
        if self.config.carry_synchronized_copies and cluster.renewed:
            gram, moment, count = carried_phase_statistics(cluster, phase_shift)
            if self._grid:  # released statistics, put on the grid (post-processing) so the sum stays exact
                gram, moment = snap_to(gram, self._grid), snap_to(moment, self._grid)
        else:
            gram, moment, count = self._member_sums(cluster)
            gram, moment = gram + phase_shift * self._eye, moment.copy()  # new arrays: the sums stay this server's
        trigger_only = self.config.noise_in_trigger_only
        if self._noisy and (not trigger_only or self.config.rebuild_local_copies):
            kind, tree = ("async", cluster.async_tree) if cluster.phase_tree is None else ("phase", cluster.phase_tree)
            cluster.H_tilde, cluster.h_tilde = self._draw(cluster, tree, kind)  # the reference's phase-start release
        if self._factorized:  # the release (the members' noisy totals) and the shift: no raw datum
            gram, moment = cluster.H_tilde + phase_shift * self._eye, cluster.h_tilde.copy()
            self._record(cluster, kind)
        elif self._noisy and not trigger_only:
            gram += cluster.H_tilde
            moment += cluster.h_tilde
            self._record(cluster, kind)
        elif self._noisy:
            self._record_raw(cluster)
        sent = PhaseUpload(cluster.uid, len(members), gram, moment, count, bool(last))
        self.send(GLOBAL, sent)
        return sent

    def _member_sums(self, cluster: _LocalCluster) -> tuple[np.ndarray, np.ndarray, int]:
        """ΣV_i, Σb_i (snapped when privatized: exact sums on the grid) and ΣT_i over the cluster's users (kept while
        none of them observes)."""
        if cluster.member_sums is None:
            members = cluster.users
            count = sum(self.counts[i] for i in members)
            V, b = (self.V_grid, self.b_grid) if self._grid else (self.V, self.b)
            cluster.member_sums = (V[members].sum(axis=0), b[members].sum(axis=0), count)
        return cluster.member_sums

    def _rebuild(self, cluster: _LocalCluster, sent: PhaseUpload) -> None:
        """Spec §7.3 (``rebuild_local_copies``): the synchronized copy restarts from the cluster's own phase
        upload (what the global server holds for it) and the buffer is emptied; a renewal, if one follows,
        replaces it. The noise chain restarts at the phase-start release: with noise only in the trigger as
        the reference does (H_now = H_former); with privatized uploads the next H is a fresh release, as after
        a renewal, so the next upload's noise H − H̄ is not zero (restarting at H̃ sent that upload raw)."""
        cluster.S[:] = sent.gram
        cluster.u[:] = sent.moment
        cluster.T, cluster.sharing = sent.count, 1
        if self._noisy:
            cluster.H_bar, cluster.h_bar = cluster.H_tilde, cluster.h_tilde
            if self.config.noise_in_trigger_only:
                cluster.H, cluster.h = cluster.H_tilde, cluster.h_tilde
            elif not self._factorized:
                cluster.H, cluster.h = self._draw(cluster, cluster.async_tree, "async")
        self._start_buffer(cluster)

    def receive_renewal(self) -> None:
        """Lines 13–16: take the global statistics, draw a new H, start the upload buffer (see :meth:`end_phase`)."""
        msg = self.receive(Renewal, GLOBAL)
        cluster = self.clusters[msg.cluster]
        cluster.S[:] = msg.gram
        cluster.u[:] = msg.moment
        cluster.T, cluster.sharing = msg.count, msg.sharing
        cluster.uploads_since_renewal, cluster.renewed = 0, True
        cluster.shared = self.config.shared_statistics_defect
        if self._noisy:
            cluster.H_bar, cluster.h_bar = cluster.H_tilde, cluster.h_tilde
            if not self._factorized:
                cluster.H, cluster.h = self._draw(cluster, cluster.async_tree, "async")
        self._start_buffer(cluster)

    # -- privatizers -----------------------------------------------------------------
    def _new_trees(self, cluster: _LocalCluster, t_phase: int, single: bool) -> None:
        """Fresh privatizers for a cluster: the asynchronous tree, plus a phase-start tree unless ``single``."""
        cluster.depth = self.cal.depth(t_phase)
        cluster.async_tree = self._privatizer(cluster.depth)
        cluster.phase_tree = None if single else self._privatizer(cluster.depth)
        cluster.tree_ids = {}
        for kind, tree in (("async", cluster.async_tree), ("phase", cluster.phase_tree)):
            if tree is not None:
                cluster.tree_ids[kind] = tree_id = f"{self.name}/{cluster.uid}/{kind}@{t_phase}"
                self.release_counts[tree_id] = (0, tree.std)
                for i in cluster.users:
                    self.lineage[i].add(tree_id)

    def _privatizer(self, depth: int) -> TreeMechanism | FactorizedPrivatizer:
        """A fresh privatizer: a depth-ν tree, or the square-root factorization (``continual_release``)."""
        if self.cal.factorization is not None:
            return FactorizedPrivatizer(self.cal.factorization, self.dim + 1, self.rng)
        return TreeMechanism(self.dim + 1, self.cal.noise_std(depth), self.rng)

    def _draw(self, cluster: _LocalCluster, tree: TreeMechanism | FactorizedPrivatizer | None,
              kind: str) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
        """The next release of ``tree``, split into (H, h) (§4.2): the tree's prefix noise, or a factorized
        privatizer's noisy totals of the members' data (:mod:`~privbandits.protocols.fclub.factorized`). Counts
        the events where the noise has ‖H‖_op > ρ."""
        assert tree is not None, "drawn only with noise, where _new_trees made the trees"
        d = self.dim
        if isinstance(tree, FactorizedPrivatizer):
            gram, moment, _ = self._member_sums(cluster)
            total = np.zeros((d + 1, d + 1))
            total[:d, :d], total[:d, d], total[d, :d] = gram, moment, moment
            noise = tree.release(total)
            data = total
        else:
            noise, data = tree.release(), None
        self.release_counts[cluster.tree_ids[kind]] = (tree.releases, tree.std)
        H = np.ascontiguousarray(noise[:d, :d])
        h = np.ascontiguousarray(noise[:d, d - 1 if self.config.reference_h_column else d])
        drawn = H if data is None else H - data[:d, :d]
        if np.abs(np.linalg.eigvalsh(drawn)).max() > self.cal.rho(cluster.depth):
            if self.repairs.rho_exceeded == 0:
                warnings.warn("FCLUB: privatizer noise exceeded the spectral bound ρ (Eq. 7)", stacklevel=2)
            self.repairs.rho_exceeded += 1
        return H, h

    def _record(self, cluster: _LocalCluster, kind: str) -> None:
        """Ledger entry of a privatized release: the paper's per-privatizer claim (ε, δ) (Thm 3), with the one
        accountant's ε of this privatizer's tree so far (its levels used, Gaussians at the effective sensitivity):
        ``accounted_epsilon`` (PLD) and ``rdp_epsilon``."""
        tree_id = cluster.tree_ids[kind]
        releases, std = self.release_counts[tree_id]
        sensitivity = self.cal.effective_sensitivity()
        details = {"privatizer": tree_id, "release": releases, "noise_std": std, "depth": cluster.depth,
                   "snapping_slack": sensitivity - REPLACE_SENSITIVITY,
                   "effective_sensitivity": sensitivity}  # fmt: skip
        noise = self.cal.factorization
        if noise is not None:  # one Gaussian release of C x + z, whatever the releases so far
            details |= {"continual_release": "sqrt_factorization", "column_norm": noise.column_norm,
                        "horizon": noise.horizon, "effective_sensitivity": noise.sensitivity}  # fmt: skip
        details |= ledger_epsilons(self.cal.datum_releases(std, self.cal.compositions(releases)), self.config.delta)
        self.ledger.record(LedgerEntry("fclub.pvt", self.config.epsilon, self.config.delta, PRIVACY_UNIT, details))

    def _record_raw(self, cluster: _LocalCluster) -> None:
        """Ledger entry of an upload sent without noise (noise only in the trigger): no DP guarantee."""
        self.ledger.record(LedgerEntry("fclub.raw_upload", math.inf, None, PRIVACY_UNIT, {"cluster": cluster.uid}))

    def privacy_accounts(self) -> tuple[dict[str, tuple[int, float]], int]:
        """This server's privatizers ``{id: (releases, noise std)}`` and the most tree nodes one of its users'
        data has entered, over every privatizer it went through (composed by
        :meth:`FederatedClusteredBandit.privacy_report`)."""
        levels = {k: self.cal.compositions(releases) for k, (releases, _) in self.release_counts.items()}
        per_datum = max((sum(levels[k] for k in lineage) for lineage in self.lineage), default=0)
        return dict(self.release_counts), per_datum

    def per_user_epsilons(self) -> dict[str, float]:
        """The per-user ε of this server's worst user so far, ``per_user_epsilon`` (PLD) and ``per_user_rdp_epsilon``
        (:class:`~privbandits.protocols.fclub.accounting.PrivacyReport` defines them); ∞ where nothing is privatized."""
        privatizers, per_datum = self.privacy_accounts()
        guaranteed = self.config.private and not self.config.noise_in_trigger_only
        std = min((s for _, s in privatizers.values()), default=0.0) if guaranteed else 0.0
        return per_user_epsilons(self.cal.datum_releases(std, max(per_datum, 1)), self.config.delta)

    # -- factorizations ------------------------------------------------------------------
    def _start_buffer(self, cluster: _LocalCluster) -> None:
        """Privacy part of a fresh upload buffer (``shift·I + H − H̄``, ``h − h̄``), then refactor."""
        _, upload_shift = self.cal.shifts(cluster.depth)
        cluster.raw_S[:] = 0.0
        cluster.raw_u[:] = 0.0
        cluster.grid_S[:] = 0.0
        cluster.grid_u[:] = 0.0
        cluster.raw_T = 0
        if self._factorized:  # the next release's noise comes with its data: the trigger sees the shift alone
            cluster.P = cluster.P_trigger = upload_shift * self._eye
            cluster.p = np.zeros(self.dim)
        elif self._noisy:
            difference = cluster.H - cluster.H_bar
            if self.config.noise_in_trigger_only:
                cluster.P, cluster.p, cluster.P_trigger = np.zeros_like(difference), np.zeros(self.dim), difference
            else:
                cluster.P = cluster.P_trigger = difference + upload_shift * self._eye
                cluster.p = cluster.h - cluster.h_bar
        self._refactor(cluster)

    def _refactor(self, cluster: _LocalCluster) -> None:
        """Exact ``S⁻¹``, ``log det S``, θ̂ = S⁻¹u, and the trigger and recommendation statistics."""
        repair, floor = self.config.pd_repair, self.config.ridge
        cluster.S_inv, cluster.logdet_S = _spd_inverse(cluster.S + self._ridge, repair, floor, self.repairs)
        cluster.theta = cluster.S_inv @ cluster.u
        self._refactor_trigger(cluster)
        if self._with_own:
            R_inv, _ = _spd_inverse(cluster.S + cluster.raw_S + self._ridge, repair, floor, self.repairs)
            cluster.R_inv[:] = R_inv
            cluster.theta_R[:] = R_inv @ (cluster.u + cluster.raw_u)

    def _refactor_trigger(self, cluster: _LocalCluster) -> None:
        """Exact ``M⁻¹`` and ``sign, log|det M|`` for ``M = S + ΔS`` (the numerator of Eq. 5)."""
        cluster.sm_steps = 0
        if not self._noisy and cluster.raw_T == 0:  # M = S
            cluster.M_inv[:] = cluster.S_inv
            cluster.M_sign, cluster.M_logabs = 1.0, cluster.logdet_S
            return
        M = cluster.S + cluster.raw_S + cluster.P_trigger
        logdet = cholesky_inverse(M, cluster.M_inv)
        if logdet == logdet:
            cluster.M_sign, cluster.M_logabs = 1.0, logdet
            return
        cluster.M_sign, cluster.M_logabs = np.linalg.slogdet(M)  # indefinite: noise only in the trigger
        cluster.M_inv = np.linalg.inv(M) if cluster.M_sign != 0 else np.linalg.pinv(M)
