"""FCLUB: federated online clustering of bandits with cluster DP (spec ``fclub.md``).

Liu, Zhao, Yu, Li & Lui, UAI 2022. Parties and messages:

* :class:`LocalServer` ℓ holds its users' raw statistics ``(V_i, b_i, T_i)``,
  which never leave it, the user graph ``G^ℓ`` (edges deleted by Eq. 3; local
  clusters are its connected components) and, per local cluster, the
  synchronized copy ``(S, u, T)``, the upload buffer and the privatizers. At a
  phase start it sends one :class:`PhaseUpload` per local cluster (Alg. 2 line 5);
  in a round it sends an :class:`Upload` when Eq. 5 fires (Alg. 3).
* :class:`GlobalServer` merges local clusters into global clusters by Eq. 4
  (Alg. 2 line 7), keeps the global statistics and one download buffer per local
  cluster, pushes a :class:`Renewal` to every local cluster when the partition
  changes (lines 8–16) and a :class:`Download` when Eq. 6 fires (Alg. 4). It only
  ever sees these messages, which carry opaque cluster ids, sizes and privatized
  (or, in the non-private variants, shifted) cluster sums.
* :class:`FederatedClusteredBandit` wires them on one network and plays rounds.

The message boundary is the only one: a party reads nothing of another party's
objects, and no party shares a mutable object with another. What a party cannot
compute from its own state arrives as a message, so the same party code can run
alone in its own process:

* the global server learns how many phase uploads a server sends from the
  ``last`` flag of its last :class:`PhaseUpload` (the end of the server's batch);
* a local server learns whether renewals follow from the :class:`PhaseEnd` the
  global server sends every server after its merge (phase ``phase_end``);
* with ``rebuild_local_copies`` (asynchronous), the reference code's per-round
  Eq. 6 check is a :class:`DownloadCheck` from the arriving user's local cluster
  (phase ``check``), so the global server counts the idle downloads itself;
* each local server keeps its own privacy ledger of what it released and its own
  :class:`Repairs`; the global server keeps a ledger of the privatized uploads it
  received. :meth:`FederatedClusteredBandit.privacy_report`, ``ledger`` and
  ``repairs`` compose them.

The driver (:class:`FederatedClusteredBandit`) owns the clock and the users'
arrivals, calls each party's handlers in the order a deployment's event loops
would run them, and counts communication from what the parties report having
sent or received.

One communication round of the paper is one message between a local server and
the global server: phase uploads and asynchronous uploads count as uploads,
renewal pushes and asynchronous downloads as downloads (§8 A23). The control
messages above are traffic of their own phases (``phase_end``, ``check``), outside
the paper's count.

Trigger checks cost O(d²) per round: each local cluster keeps ``M⁻¹`` for
``M = S + ΔS`` and ``log det M`` up to date with Sherman–Morrison and the matrix
determinant lemma ``det(M + xxᵀ) = det(M)(1 + xᵀM⁻¹x)``; full factorizations
happen only at uploads, downloads and phase starts. Eq. 6 is evaluated by the
global server, which can compute ``S^ℓ_j = S^g − ΔS^{−ℓ}_j`` (§2.5) itself; its
value changes only when an upload reaches the global cluster, so it is checked
then (equivalent to checking every round).
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from math import isfinite

import numba
import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components

from privbandits.comm import InMemoryNetwork, Network, Party, Traffic
from privbandits.envs.clustered import ClusteredLinearBandit, assign_groups
from privbandits.linear._kernels import (
    cholesky_inverse,
    cholesky_logdet,
    finite_row_norms,
    inverse_step,
    shared_ucb_scores,
)
from privbandits.linear.tiebreak import break_ties
from privbandits.privacy.bounds import DataBounds
from privbandits.privacy.ledger import LedgerEntry, PrivacyLedger
from privbandits.privacy.noise import snap
from privbandits.privacy.tree_mechanism import (
    REPLACE_SENSITIVITY,
    TreeMechanism,
    accounted_delta,
    accounted_epsilon,
)
from privbandits.protocols.fclub_config import (
    Calibration,
    FCLUBConfig,
    Lifecycle,
    MergeRule,
    PDRepair,
    Recommendation,
)
from privbandits.protocols.fclub_messages import (
    ASYNC,
    CHECK,
    DETECT,
    GLOBAL,
    PHASE_END,
    PRIVACY_UNIT,
    Download,
    DownloadCheck,
    PhaseEnd,
    PhaseUpload,
    Renewal,
    Upload,
)
from privbandits.protocols.fclub_reference import (
    absorb_own_upload,
    carried_phase_statistics,
    greedy_merge,
    reference_trigger_fires,
)
from privbandits.validation import (
    CallOrderError,
    Instance,
    Integer,
    InvalidInputError,
    NoneOr,
    check,
    check_finite_array,
    check_index,
    check_reward,
    describe,
    validate,
)


@numba.njit(cache=True)
def _absorb(x, y, V, b, raw_S, raw_u, M_inv, v, R_inv, theta_R):
    """One observation of a round, in place; returns ``c = 1 + xᵀM⁻¹x`` (matrix determinant lemma).

    ``V, b`` (the user) and ``raw_S, raw_u`` (the upload buffer) gain ``xxᵀ, yx``;
    ``M⁻¹ −= (M⁻¹x)(M⁻¹x)ᵀ/c`` (Sherman–Morrison, valid for any invertible M);
    with a non-empty ``R_inv`` the own-buffer recommendation statistics are updated too.
    """
    d = x.shape[0]
    c = 1.0
    for i in range(d):
        s = 0.0
        for j in range(d):
            s += M_inv[i, j] * x[j]
        v[i] = s
        c += x[i] * s
    for i in range(d):
        vi = v[i] / c
        xi = x[i]
        for j in range(d):
            M_inv[i, j] -= vi * v[j]
            xx = xi * x[j]
            V[i, j] += xx
            raw_S[i, j] += xx
        b[i] += y * xi
        raw_u[i] += y * xi
    if R_inv.shape[0] > 0:
        inverse_step(R_inv, theta_R, x, y, R_inv @ x)
    return c


@dataclass
class Repairs:
    """Numerical events (§8 A15): Gram matrices repaired to be positive definite, and
    releases whose noise had ‖H‖_op > ρ (the w.h.p. bound of Eq. 7 failed).

    Each local server keeps its own; ``a + b`` composes them."""

    not_positive_definite: int = 0
    rho_exceeded: int = 0

    def __add__(self, other: Repairs) -> Repairs:
        return Repairs(self.not_positive_definite + other.not_positive_definite, self.rho_exceeded + other.rho_exceeded)


def _spd_inverse(matrix: np.ndarray, repair: PDRepair, floor: float, repairs: Repairs) -> tuple[np.ndarray, float]:
    """(inverse, log det) of a symmetric matrix, repaired first if it is not positive definite."""
    inverse = np.empty_like(matrix)
    logdet = cholesky_inverse(matrix, inverse)
    if logdet == logdet:
        return inverse, logdet
    repairs.not_positive_definite += 1
    w, U = np.linalg.eigh(0.5 * (matrix + matrix.T))
    w = np.maximum(w, floor) if repair is PDRepair.CLIP else w + (floor - w.min())
    return (U / w) @ U.T, float(np.log(w).sum())


def _logdet(matrix: np.ndarray) -> float:
    """``log |det|`` of a symmetric matrix (Cholesky when positive definite, LU otherwise)."""
    logdet = cholesky_logdet(matrix)
    return logdet if logdet == logdet else float(np.linalg.slogdet(matrix)[1])


class _LocalCluster:
    """State of one local cluster (ℓ, j) on its server (spec §2.3)."""

    def __init__(self, uid: int, users: np.ndarray, dim: int, with_own_buffer: bool) -> None:
        self.uid, self.users = uid, users
        self.key = frozenset(users.tolist())
        zeros, vector = np.zeros((dim, dim)), np.zeros(dim)
        self.S, self.u, self.T = zeros.copy(), vector.copy(), 0
        self.S_inv, self.theta, self.logdet_S = zeros.copy(), vector.copy(), 0.0
        self.raw_S, self.raw_u, self.raw_T = zeros.copy(), vector.copy(), 0
        self.P, self.p = zeros.copy(), vector.copy()  # privacy part of the upload buffer (sent)
        self.P_trigger = self.P  # what Eq. 5 adds to the buffer (differs only with noise_in_trigger_only)
        self.M_inv, self.M_sign, self.M_logabs, self.sm_steps = zeros.copy(), 1.0, 0.0, 0
        rows = dim if with_own_buffer else 0
        self.R_inv, self.theta_R = np.zeros((rows, rows)), np.zeros(rows)
        self.H, self.h = zeros.copy(), vector.copy()  # tentative perturbation (in the buffer)
        self.H_bar, self.h_bar = zeros.copy(), vector.copy()  # current: the one last sent
        self.H_tilde, self.h_tilde = zeros.copy(), vector.copy()  # historical: phase-start release
        self.tree_ids: dict[str, str] = {}
        self.async_tree: TreeMechanism | None = None
        self.phase_tree: TreeMechanism | None = None
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


class LocalServer(Party):
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
        self._with_own = self.config.recommendation is Recommendation.WITH_OWN_BUFFER
        self._log_upload = -math.inf if self.config.synchronous else math.log(self.config.upload_threshold)
        self._refresh_every = self.config.refresh_every or math.inf
        self._threshold = self.config.upload_threshold
        self._ridge_free = self.config.ridge_in_recommendation_only
        self._ridge = self.config.ridge * self._eye if self._ridge_free else 0.0  # added where S is inverted

    # -- rounds --------------------------------------------------------------------
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
        c = _absorb(x, y, V, b, cluster.raw_S, cluster.raw_u, cluster.M_inv, self._v, cluster.R_inv, cluster.theta_R)
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
        gram, moment = self._snapped(cluster, cluster.raw_S, cluster.raw_u)
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
        if self._noisy:
            cluster.H, cluster.h = self._draw(cluster, cluster.async_tree, "async")
        self._start_buffer(cluster)

    def receive_download(self) -> bool:
        """Absorb one download (Alg. 4) into the cluster's synchronized copy.

        Returns whether the cluster holds the shared copy of ``shared_statistics_defect`` (the reference code
        counts no download for it).
        """
        return self.absorb_download(self.receive(Download.kind, GLOBAL))

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
        self.clusters, self.cluster_of = {}, [None] * n
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
        if not self.receive(PhaseEnd.kind, GLOBAL).renewal:
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
        else:
            if cluster.member_sums is None:
                count = sum(self.counts[i] for i in members)
                cluster.member_sums = (self.V[members].sum(axis=0), self.b[members].sum(axis=0), count)
            gram, moment, count = cluster.member_sums
            gram, moment = gram + phase_shift * self._eye, moment.copy()  # new arrays: the sums stay this server's
        trigger_only = self.config.noise_in_trigger_only
        if self._noisy and (not trigger_only or self.config.rebuild_local_copies):
            kind, tree = ("async", cluster.async_tree) if cluster.phase_tree is None else ("phase", cluster.phase_tree)
            cluster.H_tilde, cluster.h_tilde = self._draw(cluster, tree, kind)  # the reference's phase-start release
        if self._noisy and not trigger_only:
            gram, moment = self._snapped(cluster, gram, moment)
            gram += cluster.H_tilde
            moment += cluster.h_tilde
            self._record(cluster, kind)
        elif self._noisy:
            self._record_raw(cluster)
        sent = PhaseUpload(cluster.uid, len(members), gram, moment, count, bool(last))
        self.send(GLOBAL, sent)
        return sent

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
            else:
                cluster.H, cluster.h = self._draw(cluster, cluster.async_tree, "async")
        self._start_buffer(cluster)

    def receive_renewal(self) -> None:
        """Lines 13–16: take the global statistics, draw a new H, start the upload buffer (see :meth:`end_phase`)."""
        msg = self.receive(Renewal.kind, GLOBAL)
        cluster = self.clusters[msg.cluster]
        cluster.S[:] = msg.gram
        cluster.u[:] = msg.moment
        cluster.T, cluster.sharing = msg.count, msg.sharing
        cluster.uploads_since_renewal, cluster.renewed = 0, True
        cluster.shared = self.config.shared_statistics_defect
        if self._noisy:
            cluster.H_bar, cluster.h_bar = cluster.H_tilde, cluster.h_tilde
            cluster.H, cluster.h = self._draw(cluster, cluster.async_tree, "async")
        self._start_buffer(cluster)

    # -- privatizers -----------------------------------------------------------------
    def _new_trees(self, cluster: _LocalCluster, t_phase: int, single: bool) -> None:
        """Fresh privatizers for a cluster: the asynchronous tree, plus a phase-start tree unless ``single``."""
        cluster.depth = self.cal.depth(t_phase)
        std = self.cal.noise_std(cluster.depth)
        cluster.async_tree = TreeMechanism(self.dim + 1, std, self.rng)
        cluster.phase_tree = None if single else TreeMechanism(self.dim + 1, std, self.rng)
        cluster.tree_ids = {}
        for kind, tree in (("async", cluster.async_tree), ("phase", cluster.phase_tree)):
            if tree is not None:
                cluster.tree_ids[kind] = tree_id = f"{self.name}/{cluster.uid}/{kind}@{t_phase}"
                self.release_counts[tree_id] = (0, std)
                for i in cluster.users:
                    self.lineage[i].add(tree_id)

    def _snapped(self, cluster: _LocalCluster, gram: np.ndarray, moment: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Statistics about to carry privatized noise, rounded to that noise's grid (``privacy.noise.snap``): the
        noise is a multiple of the grid step, so an unsnapped sum would show the data's bits below it in clear."""
        if not self._noisy or self.config.noise_in_trigger_only:
            return gram, moment
        std = cluster.async_tree.std
        return snap(gram, std), snap(moment, std)

    def _draw(self, cluster: _LocalCluster, tree: TreeMechanism, kind: str) -> tuple[np.ndarray, np.ndarray]:
        """The next release of ``tree``, split into (H, h) (§4.2); counts ‖H‖_op > ρ events."""
        noise = tree.release()
        self.release_counts[cluster.tree_ids[kind]] = (tree.releases, tree.std)
        d = self.dim
        H = np.ascontiguousarray(noise[:d, :d])
        h = np.ascontiguousarray(noise[:d, d - 1 if self.config.reference_h_column else d])
        if np.abs(np.linalg.eigvalsh(H)).max() > self.cal.rho(cluster.depth):
            if self.repairs.rho_exceeded == 0:
                warnings.warn("FCLUB: privatizer noise exceeded the spectral bound ρ (Eq. 7)", stacklevel=2)
            self.repairs.rho_exceeded += 1
        return H, h

    def _record(self, cluster: _LocalCluster, kind: str) -> None:
        """Ledger entry of a privatized release: the paper's per-privatizer claim (ε, δ) (Thm 3)."""
        tree_id = cluster.tree_ids[kind]
        releases, std = self.release_counts[tree_id]
        details = {"privatizer": tree_id, "release": releases, "noise_std": std, "depth": cluster.depth}
        self.ledger.record(LedgerEntry("fclub.pvt", self.config.epsilon, self.config.delta, PRIVACY_UNIT, details))

    def _record_raw(self, cluster: _LocalCluster) -> None:
        """Ledger entry of an upload sent without noise (noise only in the trigger): no DP guarantee."""
        self.ledger.record(LedgerEntry("fclub.raw_upload", math.inf, None, PRIVACY_UNIT, {"cluster": cluster.uid}))

    def privacy_accounts(self) -> tuple[dict[str, tuple[int, float]], int]:
        """This server's privatizers ``{id: (releases, noise std)}`` and the most tree nodes one of its users'
        data has entered, over every privatizer it went through (composed by
        :meth:`FederatedClusteredBandit.privacy_report`)."""
        levels = {k: releases.bit_length() for k, (releases, _) in self.release_counts.items()}
        per_datum = max((sum(levels[k] for k in lineage) for lineage in self.lineage), default=0)
        return dict(self.release_counts), per_datum

    # -- factorizations ------------------------------------------------------------------
    def _start_buffer(self, cluster: _LocalCluster) -> None:
        """Privacy part of a fresh upload buffer (``shift·I + H − H̄``, ``h − h̄``), then refactor."""
        _, upload_shift = self.cal.shifts(cluster.depth)
        cluster.raw_S[:] = 0.0
        cluster.raw_u[:] = 0.0
        cluster.raw_T = 0
        if self._noisy:
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


class _GlobalCluster:
    """Global statistics ``(S^g, u^g, T^g)`` of one global cluster and its members (§2.4)."""

    def __init__(self, members: list[tuple[str, int]], gram: np.ndarray, moment: np.ndarray, count: int) -> None:
        self.members, self.S, self.u, self.T = members, gram, moment, count
        self.logdet = _logdet(gram)
        self.shared = False  # shared_statistics_defect: its members hold this (S, u) until the phase ends


class _Member:
    """Global-side record of a local cluster: its global cluster, download buffer and log det S^ℓ_j."""

    def __init__(self, dim: int) -> None:
        self.cluster: _GlobalCluster | None = None
        self.dS, self.du, self.dT = np.zeros((dim, dim)), np.zeros(dim), 0
        self.pending = False
        self.logdet_local = 0.0
        self.local: np.ndarray | None = None  # S^ℓ_j itself, kept when it is not S^g − ΔS^{−ℓ} (rebuild_local_copies)

    def track(self, gram: np.ndarray) -> None:
        """``S^ℓ_j += gram`` where S^ℓ_j is kept explicitly."""
        self.local += gram
        self.logdet_local = _logdet(self.local)


class GlobalServer(Party):
    """The global server: merges local clusters (Eq. 4), keeps global statistics and download buffers.

    It knows the local servers' names and the run's public constants; everything else arrives as
    :class:`PhaseUpload`, :class:`Upload` and :class:`DownloadCheck` messages.

    Attributes
    ----------
    changed_phases : int
        Detections whose partition differed from the previous one.
    idle_downloads : int
        Eq. 6 checks that passed with nothing to download (``rebuild_local_copies``, asynchronous: the
        reference code's count).
    """

    def __init__(self, network: Network, servers: list[str], dim: int, calibration: Calibration) -> None:
        super().__init__(GLOBAL, network)
        self.servers, self.dim, self.cal, self.config = servers, dim, calibration, calibration.config
        self.members: dict[tuple[str, int], _Member] = {}
        self.partition: frozenset[frozenset[tuple[str, int]]] = frozenset()
        self.uploads: dict[tuple[str, int], PhaseUpload] = {}
        self._layout: dict[str, int] | None = None  # local clusters per server at the last merge (MergeRule.REFERENCE)
        self._renewal = False  # whether the last detection renewed (announced by end_phase)
        self._count_idle = self.config.rebuild_local_copies and not self.config.synchronous
        self._private = self.config.private
        self._received: list[tuple[str, str, int]] = []  # (message kind, sender, cluster) of each private upload
        self.changed_phases = 0
        self.idle_downloads = 0

    # -- phase start -----------------------------------------------------------------
    def detect(self, t_phase: int) -> bool:
        """Alg. 2 at the global server: every server's phase uploads, the merge (line 7) and, if the partition
        changed or the options renew at every phase, the renewal (lines 8–16). Returns whether it changed.

        ``t_phase`` is the public clock (the phase schedule of §3.2): it sets the tree depth of the merge test.
        """
        self.receive_phase_uploads()
        partition = self.merge(self.cal.depth(t_phase))
        changed = partition != self.partition
        self.changed_phases += changed
        cfg = self.config
        every_phase = cfg.renew_every_phase or (
            cfg.lifecycle is Lifecycle.RESET_EVERY_PHASE and cfg.private and not cfg.rebuild_local_copies
        )
        self._renewal = changed or every_phase
        if self._renewal:
            self.renew(partition)
        elif cfg.rebuild_local_copies:
            self.renew(partition, push=False)
        else:
            for member in self.members.values():
                member.cluster.shared = False  # the reference's shared arrays last until the phase ends
        return changed

    def end_phase(self) -> None:
        """Tell every local server whether the renewals of :meth:`detect` are waiting for it (:class:`PhaseEnd`)."""
        for server in self.servers:
            self.send(server, PhaseEnd(self._renewal))

    def receive_phase_uploads(self) -> None:
        """Every server's phase uploads, up to the one marked ``last`` (Alg. 2 line 5)."""
        self.uploads = {}
        for server in list(self.servers):
            self.receive_phase_batch(server)

    def receive_phase_batch(self, server: str) -> None:
        """One server's phase uploads, up to the one marked ``last``."""
        while True:
            msg = self.receive(PhaseUpload.kind, server)
            self.uploads[(server, msg.cluster)] = msg
            if self.config.private:  # a release of the server's privatizer (raw with noise only in the trigger)
                self._received.append((msg.kind, server, msg.cluster))
            if msg.last:
                break

    @property
    def ledger(self) -> PrivacyLedger:
        """What this server received from the local servers' privatizers, under the guarantee the run claims:
        ``fclub.pvt`` (ε, δ) per privatized upload, ``fclub.raw_upload`` (∞) with noise only in the trigger."""
        cfg = self.config
        if cfg.noise_in_trigger_only:
            mechanism, epsilon, delta = "fclub.raw_upload", math.inf, None
        else:
            mechanism, epsilon, delta = "fclub.pvt", cfg.epsilon, cfg.delta
        ledger = PrivacyLedger()
        for kind, server, cluster in self._received:
            details = {"received": kind, "from": server, "cluster": cluster}
            ledger.record(LedgerEntry(mechanism, epsilon, delta, PRIVACY_UNIT, details))
        return ledger

    def merge(self, depth: int) -> frozenset[frozenset[tuple[str, int]]]:
        """Global partition P_s: connected components of the Eq. 4 graph over local clusters (§8 A7), or
        every local cluster alone where :attr:`MergeRule.REFERENCE` does not merge."""
        keys = list(self.uploads)
        if self.config.merge_rule is MergeRule.REFERENCE and self.config.synchronous and self.config.detect_clusters:
            return self._greedy_merge(keys, depth)
        if self.config.merge_rule is MergeRule.REFERENCE:
            layout = {server: sum(k[0] == server for k in keys) for server in self.servers}
            alone = bool(self.partition) and all(len(group) == 1 for group in self.partition)
            unchanged, self._layout = alone and layout == self._layout, layout
            if not self.config.detect_clusters or unchanged:  # Homo-DC's merge test always passes
                return frozenset(frozenset([k]) for k in keys)
        elif not self.config.detect_clusters:
            return frozenset([frozenset(keys)])
        grams = np.stack([self.uploads[k].gram for k in keys])
        moments = np.stack([self.uploads[k].moment for k in keys])
        estimates = _solve(grams, moments)
        counts = np.array([self.uploads[k].count for k in keys], dtype=float)
        width = self.cal.merge_width(counts, depth)
        distance = np.linalg.norm(estimates[:, None, :] - estimates[None, :, :], axis=-1)
        edges = distance < width[:, None] + width[None, :]
        if not self.config.merge_same_server:
            server = np.array([k[0] for k in keys])
            edges &= server[:, None] != server[None, :]
            if self.config.merge_rule is MergeRule.REFERENCE and edges[server[:, None] != server[None, :]].all():
                return frozenset(frozenset([k]) for k in keys)  # no pair failed Eq. 4: nothing merges
        elif self.config.merge_rule is MergeRule.REFERENCE and edges.all():
            return frozenset(frozenset([k]) for k in keys)  # no pair failed Eq. 4: nothing merges
        _, labels = connected_components(csr_matrix(edges), directed=False)
        return frozenset(frozenset(k for k, label in zip(keys, labels, strict=True) if label == g) for g in set(labels))

    def _greedy_merge(self, keys: list[tuple[str, int]], depth: int) -> frozenset[frozenset[tuple[str, int]]]:
        """The reference code's FCLUB merge (:func:`~privbandits.protocols.fclub_reference.greedy_merge`)."""
        into = greedy_merge([self.uploads[k].gram.copy() for k in keys], [self.uploads[k].moment.copy() for k in keys],
                            [float(self.uploads[k].count) for k in keys],
                            lambda counts: self.cal.merge_width(counts, depth), _solve)  # fmt: skip
        return frozenset(frozenset(k for k, c in zip(keys, into, strict=True) if c == g) for g in set(into))

    def renew(self, partition: frozenset[frozenset[tuple[str, int]]], push: bool = True) -> None:
        """Lines 11–16: global sums of the phase uploads, pushed to every member; buffers emptied.

        ``push=False`` (``rebuild_local_copies`` without a renewal): the global sums restart from the phase
        uploads but nothing is sent; each local copy is its own phase upload (spec §7.3).
        """
        rebuild = self.config.rebuild_local_copies
        self.partition = partition
        self.members = {}
        for group in sorted(partition, key=sorted):
            members = sorted(group)
            gram = sum(self.uploads[k].gram for k in members)
            moment = sum(self.uploads[k].moment for k in members)
            count = sum(self.uploads[k].count for k in members)
            cluster = _GlobalCluster(members, gram, moment, count)
            cluster.shared = push and self.config.shared_statistics_defect
            for key in members:
                member = self.members[key] = _Member(self.dim)
                member.cluster, member.logdet_local = cluster, cluster.logdet
                if rebuild:
                    member.local = (gram if push else self.uploads[key].gram).copy()
                    member.logdet_local = _logdet(member.local)
                if push:
                    self.send(key[0], Renewal(key[1], gram.copy(), moment.copy(), count, len(members)))

    def receive_upload(self, server: str) -> list[tuple[str, int]]:
        """Alg. 3 lines 4–7 and the test of Alg. 4: absorb an upload, fill the others' buffers.

        Returns the local clusters whose download is due (Eq. 6), for :meth:`send_download`.
        """
        msg = self.receive(Upload.kind, server)
        if self._private:  # a release of the server's privatizer (raw with noise only in the trigger)
            self._received.append((msg.kind, server, msg.cluster))
        key = (server, msg.cluster)
        uploader = self.members[key]
        cluster = uploader.cluster
        if cluster.shared:
            due = self._shared_upload(uploader, msg)
        else:
            due = self._absorb_upload(uploader, msg)
        if self._count_idle:  # downloads change only the due members' S^ℓ: the same count as after them
            self.idle_downloads += self._idle(key, due)
        return due

    def _absorb_upload(self, uploader: _Member, msg: Upload) -> list[tuple[str, int]]:
        """Alg. 3 lines 4–7: the global statistics and the other members' download buffers gain the upload;
        the members whose Eq. 6 holds are due a download."""
        cluster = uploader.cluster
        cluster.S += msg.gram
        cluster.u += msg.moment
        cluster.T += msg.count
        cluster.logdet = _logdet(cluster.S)
        for key in cluster.members:
            member = self.members[key]
            if member is not uploader:
                member.dS += msg.gram
                member.du += msg.moment
                member.dT += msg.count
                member.pending = True
        if uploader.local is not None:
            uploader.track(msg.gram)
        elif uploader.pending:  # S^ℓ = S^g − ΔS^{−ℓ} (§2.5)
            uploader.logdet_local = _logdet(cluster.S - uploader.dS)
        else:
            uploader.logdet_local = cluster.logdet
        log_threshold = math.log(self.config.download_threshold)
        due = []
        for key in cluster.members:
            member = self.members[key]
            if self.config.synchronous:
                fires = member.dT > 0
            else:
                fires = cluster.logdet - member.logdet_local >= log_threshold
            if member.pending and fires:
                due.append(key)
        return due

    def send_download(self, key: tuple[str, int]) -> None:
        """Send a local cluster its download buffer and empty it (Alg. 4)."""
        member = self.members[key]
        self.send(key[0], Download(key[1], member.dS, member.du, member.dT))
        if member.local is None:
            member.logdet_local = member.cluster.logdet
        elif member.cluster.shared:
            member.local, member.logdet_local = member.cluster.S.copy(), member.cluster.logdet
        else:
            member.track(member.dS)
        member.dS, member.du, member.dT = np.zeros((self.dim, self.dim)), np.zeros(self.dim), 0
        member.pending = False

    def _shared_upload(self, uploader: _Member, msg: Upload) -> list[tuple[str, int]]:
        """An upload under ``shared_statistics_defect``: the shared (S, u) gains the buffer twice and every other
        member is sent that at once (in the reference code they hold the same arrays); counts are not shared."""
        cluster = uploader.cluster
        cluster.S += 2.0 * msg.gram
        cluster.u += 2.0 * msg.moment
        cluster.T += msg.count
        cluster.logdet = _logdet(cluster.S)
        if uploader.local is not None:
            uploader.local = cluster.S.copy()
        uploader.logdet_local = cluster.logdet
        due = []
        for key in cluster.members:
            member = self.members[key]
            if member is not uploader:
                member.dS += 2.0 * msg.gram
                member.du += 2.0 * msg.moment
                member.pending = True
                due.append(key)
        return due

    def receive_download_check(self, server: str) -> None:
        """A :class:`DownloadCheck`: count, in ``idle_downloads``, the members of its global cluster that pass
        Eq. 6 with nothing to download (the reference code's per-round check)."""
        msg = self.receive(DownloadCheck.kind, server)
        self.idle_downloads += self._idle((server, msg.cluster), ())

    def _idle(self, key: tuple[str, int], skip) -> int:
        """How many members of ``key``'s global cluster (not in ``skip``) pass Eq. 6 with nothing to download:
        the downloads the reference code counts every round (its check carries an empty buffer)."""
        cluster = self.members[key].cluster
        log_threshold = math.log(self.config.download_threshold)
        return sum(
            1 for k in cluster.members
            if k not in skip and cluster.logdet - self.members[k].logdet_local >= log_threshold
        )  # fmt: skip


def _solve(grams: np.ndarray, moments: np.ndarray) -> np.ndarray:
    """``θ̂ = Ṽ⁻¹ b̃`` per local cluster; least squares for a (numerically) singular Ṽ."""
    try:
        return np.linalg.solve(grams, moments[..., None])[..., 0]
    except np.linalg.LinAlgError:
        return np.stack([np.linalg.lstsq(g, m, rcond=None)[0] for g, m in zip(grams, moments, strict=True)])


@dataclass
class Communication:
    """Messages between local servers and the global server, by kind (§1.4, §8 A23).

    ``total`` is the paper's C(T) with renewal pushes counted as downloads;
    ``reference`` is the reference code's count: asynchronous events plus one per
    phase whose partition changed (synchronous: one per round). The two differ beyond
    that in ``shared_updates`` (downloads that carry the shared copy of
    ``shared_statistics_defect``: the reference code's members hold one array, so it
    counts none) and ``idle_downloads`` (with ``rebuild_local_copies``, rounds where
    Eq. 6 holds for a member of the arriving user's global cluster with nothing to
    download: the reference code checks every round and counts each; the global server
    counts them from :class:`DownloadCheck` messages).

    The driver counts from what the parties report: each local server the phase uploads
    and uploads it sent and the renewals and downloads it received, the global server the
    changed phases and idle downloads.
    """

    phase_uploads: int = 0
    renewals: int = 0
    uploads: int = 0
    downloads: int = 0
    changed_phases: int = 0
    rounds: int = 0
    shared_updates: int = 0
    idle_downloads: int = 0
    synchronous: bool = False

    @property
    def total(self) -> int:
        return self.phase_uploads + self.renewals + self.uploads + self.downloads

    @property
    def reference(self) -> int:
        if self.synchronous:
            return self.rounds
        return self.uploads + self.downloads - self.shared_updates + self.idle_downloads + self.changed_phases


@dataclass
class PrivacyReport:
    """Guarantees of a run: the paper's per-privatizer claim next to dp-accounting's numbers.

    ``accounted_epsilon_*`` are at the claimed δ, ``accounted_delta_*`` at the claimed ε.
    """

    claimed_epsilon: float
    claimed_delta: float
    privatizers: int
    releases: int
    max_levels_per_privatizer: int
    accounted_epsilon_per_privatizer: float
    accounted_delta_per_privatizer: float
    max_nodes_per_datum: int
    accounted_epsilon_per_datum: float
    accounted_delta_per_datum: float
    notes: list[str] = field(default_factory=list)


def check_server_of_user(server_of_user: np.ndarray, owner: str) -> np.ndarray:
    """The users' local servers as int64: a non-empty 1-D array of integers >= 0 that uses every server index
    0..L-1 (a server without users has nothing to run)."""
    array = np.asarray(server_of_user)
    if array.ndim != 1 or array.size == 0:
        raise InvalidInputError(
            f"{owner}: server_of_user must be a non-empty 1-D array (one server index per user), "
            f"got {describe(server_of_user)} of shape {array.shape}"
        )
    if array.dtype.kind not in "iu" or array.min() < 0:
        raise InvalidInputError(
            f"{owner}: server_of_user must hold integers >= 0, got {describe(server_of_user)} (dtype {array.dtype})"
        )
    missing = np.setdiff1d(np.arange(array.max() + 1), array)
    if missing.size:
        raise InvalidInputError(
            f"{owner}: server_of_user must use every server index 0..L-1 = 0..{array.max()} at least once, "
            f"got none for {describe(missing.tolist())}"
        )
    return array.astype(np.int64)


FLOAT64 = np.dtype(np.float64)
"""Native float64 (numpy caches it, so ``dtype is FLOAT64`` is the fast test)."""


class RoundChecks:
    """The per-round contract of the clustered-users bandits (FCLUB and its local baselines), checked before
    any state changes: ``select(user, contexts)`` with ``user`` in ``[0, n_users)`` and finite float contexts of
    shape ``(n_arms, dim)``, then exactly one ``update(reward)`` with a finite reward.

    Finiteness costs no pass of its own on most rounds: the scoring kernel
    (:func:`~privbandits.linear._kernels.shared_ucb_scores`) gives NaN for a row whose squared norm
    is not finite, the tie-break refuses NaN scores before it draws anything, and :meth:`_recommend`
    then checks the contexts, so the error names the caller's input, not the statistics. Rounds
    that change state before scoring (FCLUB's cluster detection) test the contexts first
    (:meth:`_check_finite`).
    """

    _n_users: int
    _shape: tuple[int, int]
    _contexts: np.ndarray | None

    def _passes(self, user: object, contexts: object) -> bool:
        """The common round's fast test (about 0.2 µs): a Python int user in range and C float64 contexts of the
        fixed shape (finiteness: see the class). Anything else goes to :meth:`_check_select`, which converts or
        names it."""
        return (
            type(user) is int
            and 0 <= user < self._n_users
            and type(contexts) is np.ndarray
            and contexts.shape == self._shape
            and contexts.dtype is FLOAT64
        )

    def _check_select(self, user: int, contexts: np.ndarray) -> tuple[int, np.ndarray]:
        """``(user, contexts)`` as a Python int and finite float64 contexts, or an error naming the argument."""
        if not (type(user) is int and 0 <= user < self._n_users):
            user = int(check_index(user, self._n_users, "user", "n_users"))
        try:
            shape, kind = contexts.shape, contexts.dtype.char
        except AttributeError:
            raise InvalidInputError(
                f"contexts must be a float array of shape (n_arms, dim) = {self._shape}, got {describe(contexts)}"
            ) from None
        if shape != self._shape:
            raise InvalidInputError(f"contexts have shape {shape}; expected (n_arms, dim) = {self._shape}")
        if kind != "d":
            check_finite_array(contexts, "contexts")  # names a non-numeric dtype
            contexts = contexts.astype(np.float64)
        self._check_finite(contexts)
        return user, contexts

    @staticmethod
    def _check_finite(contexts: np.ndarray) -> None:
        """Float64 contexts of the right shape whose every row has a finite squared norm, or an error naming them."""
        if not finite_row_norms(contexts):
            check_finite_array(contexts, "contexts")  # raises, naming the entry
            raise InvalidInputError(
                f"contexts are too large: a row's squared norm overflows float64 (max |x_i| = "
                f"{np.abs(contexts).max():g})"
            )

    def _recommend(self, server, i: int, contexts: np.ndarray) -> int:
        """``server.recommend(i, contexts)``, which reads but changes nothing before its tie-break refuses a NaN
        score; a refused score is blamed on the contexts when they are at fault (see the class)."""
        try:
            return server.recommend(i, contexts)
        except ValueError:
            self._check_finite(contexts)
            raise

    def _check_update(self, reward: float) -> float:
        if self._contexts is None:
            raise CallOrderError("update(reward) needs a select(user, contexts) first: one update per selected round")
        if not (isinstance(reward, float) and isfinite(reward)):
            reward = check_reward(reward)
        return reward


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
        sizes = (config, dim, len(server_of_user), n_servers)
        self.calibration = Calibration(*sizes)
        self.network = network if network is not None else InMemoryNetwork()
        self.server_of_user = server_of_user
        names = [f"local{ell}" for ell in range(n_servers)]
        seeds = rng.spawn(n_servers)
        self.servers = [
            LocalServer(name, self.network, np.flatnonzero(server_of_user == ell), dim, Calibration(*sizes), seeds[ell])
            for ell, name in enumerate(names)
        ]
        self._by_name = dict(zip(names, self.servers, strict=True))
        self._route = [None] * len(server_of_user)  # user -> (its server, its index there)
        for server in self.servers:
            for i, user in enumerate(server.users):
                self._route[user] = (server, i)
        self.global_server = GlobalServer(self.network, names, dim, Calibration(*sizes))
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
        """The paper's (ε, δ) per privatizer beside the guarantee composed with dp-accounting (RDP).

        Per privatizer: its tree's levels used, as Gaussian mechanisms of sensitivity
        :data:`~privbandits.privacy.tree_mechanism.REPLACE_SENSITIVITY`. Per datum: every
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
        levels = {k: releases.bit_length() for k, (releases, _) in counts.items()}
        guaranteed = cfg.private and not cfg.noise_in_trigger_only  # raw uploads: no guarantee, ε = ∞
        std = min((s for _, s in counts.values()), default=0.0) if guaranteed else 0.0
        worst_tree = max(levels.values(), default=0)
        per_datum = max((worst for _, worst in accounts), default=0)
        return PrivacyReport(
            claimed_epsilon=cfg.epsilon if guaranteed else math.inf,
            claimed_delta=cfg.delta,
            privatizers=len(counts),
            releases=sum(r for r, _ in counts.values()),
            max_levels_per_privatizer=worst_tree,
            accounted_epsilon_per_privatizer=accounted_epsilon(std, max(worst_tree, 1), cfg.delta),
            accounted_delta_per_privatizer=accounted_delta(std, max(worst_tree, 1), cfg.epsilon),
            max_nodes_per_datum=per_datum,
            accounted_epsilon_per_datum=accounted_epsilon(std, max(per_datum, 1), cfg.delta),
            accounted_delta_per_datum=accounted_delta(std, max(per_datum, 1), cfg.epsilon),
            notes=notes + [f"sensitivity {REPLACE_SENSITIVITY} (replace one (x, y), ‖x‖ ≤ 1, |y| ≤ 1)"],
        )

    @property
    def traffic(self) -> Traffic:
        return self.network.traffic


@dataclass
class FCLUBOutcome:
    """One run: cumulative pseudo-regret and communication per round, and what was measured."""

    regret: np.ndarray
    communication: np.ndarray
    seconds: float
    bandit: object

    @property
    def ms_per_round(self) -> float:
        return 1000.0 * self.seconds / len(self.regret)


def play(bandit, env: ClusteredLinearBandit, horizon: int) -> FCLUBOutcome:
    """Play ``horizon`` rounds of a reset ``env`` with a clustered-users bandit.

    ``bandit`` has ``select(user, contexts)``, ``update(reward)`` and a
    :class:`Communication` as ``communication``; the clock covers the rounds only.
    """
    regret, comm = np.empty(horizon), np.empty(horizon, dtype=np.int64)
    counts = bandit.communication
    start = time.perf_counter()
    for t in range(horizon):
        contexts, expected = env.next_round()
        arm = bandit.select(env.user, contexts)
        bandit.update(env.reward(arm))
        regret[t] = expected.max() - expected[arm]
        comm[t] = counts.total
    seconds = time.perf_counter() - start
    return FCLUBOutcome(np.cumsum(regret), comm, seconds, bandit)


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
