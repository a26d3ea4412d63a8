"""FCLUB's global server (spec ``fclub.md`` §2.4; Alg. 2 and 4): merges local clusters into global clusters by
Eq. 4, keeps their statistics and each local cluster's download buffer, pushes renewals and downloads. The protocol
as a whole: :mod:`privbandits.protocols.fclub`."""

from __future__ import annotations

import math
from collections.abc import Collection
from typing import ClassVar

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components

from privbandits.checkpointed import PARTY, Checkpointed
from privbandits.comm import Network, Party
from privbandits.privacy.ledger import LedgerEntry, PrivacyLedger
from privbandits.protocols.fclub.config import Calibration, Lifecycle, MergeRule
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
from privbandits.protocols.fclub.numerics import _logdet
from privbandits.protocols.fclub.reference import greedy_merge


class _GlobalCluster:
    """Global statistics ``(S^g, u^g, T^g)`` of one global cluster and its members (§2.4)."""

    def __init__(self, members: list[tuple[str, int]], gram: np.ndarray, moment: np.ndarray, count: int) -> None:
        self.members, self.S, self.u, self.T = members, gram, moment, count
        self.logdet = _logdet(gram)
        self.shared = False  # shared_statistics_defect: its members hold this (S, u) until the phase ends


class _Member:
    """Global-side record of a local cluster: its global cluster, download buffer and log det S^ℓ_j."""

    def __init__(self, dim: int, cluster: _GlobalCluster) -> None:
        self.cluster = cluster
        self.dS, self.du, self.dT = np.zeros((dim, dim)), np.zeros(dim), 0
        self.pending = False
        self.logdet_local = 0.0
        self.local: np.ndarray | None = None  # S^ℓ_j itself, kept when it is not S^g − ΔS^{−ℓ} (rebuild_local_copies)

    def track(self, gram: np.ndarray) -> None:
        """``S^ℓ_j += gram`` where S^ℓ_j is kept explicitly."""
        assert self.local is not None, "track is called only where S^ℓ_j is kept"
        self.local += gram
        self.logdet_local = _logdet(self.local)


class GlobalServer(Party, Checkpointed):
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

    SAVED: ClassVar[tuple[str, ...]] = ("servers", "dim", "members", "partition", "uploads", "_layout", "_renewal",
                                        "_count_idle", "_private", "_received", "changed_phases", "idle_downloads")
    """What a resumed deployment's checkpoint holds (:mod:`privbandits.deploy.fclub.resume`)."""
    NOT_SAVED = PARTY | {"cal", "config"}
    """Its links and configuration (rebuilt from the deployment file)."""

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
            msg = self.receive(PhaseUpload, server)
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
        """The reference code's FCLUB merge (:func:`~privbandits.protocols.fclub.reference.greedy_merge`)."""
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
            gram = sum((self.uploads[k].gram for k in members), np.zeros((self.dim, self.dim)))
            moment = sum((self.uploads[k].moment for k in members), np.zeros(self.dim))
            count = sum(self.uploads[k].count for k in members)
            cluster = _GlobalCluster(members, gram, moment, count)
            cluster.shared = push and self.config.shared_statistics_defect
            for key in members:
                member = self.members[key] = _Member(self.dim, cluster)
                member.logdet_local = cluster.logdet
                if rebuild:
                    member.local = (gram if push else self.uploads[key].gram).copy()
                    member.logdet_local = _logdet(member.local)
                if push:
                    self.send(key[0], Renewal(key[1], gram.copy(), moment.copy(), count, len(members)))

    def receive_upload(self, server: str) -> list[tuple[str, int]]:
        """Alg. 3 lines 4–7 and the test of Alg. 4: absorb an upload, fill the others' buffers.

        Returns the local clusters whose download is due (Eq. 6), for :meth:`send_download`.
        """
        msg = self.receive(Upload, server)
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
        self.send(key[0], self.take_download(key))

    def take_download(self, key: tuple[str, int]) -> Download:
        """A local cluster's download buffer, emptied: the :class:`Download` to send it (Alg. 4)."""
        member = self.members[key]
        download = Download(key[1], member.dS, member.du, member.dT)
        if member.local is None:
            member.logdet_local = member.cluster.logdet
        elif member.cluster.shared:
            member.local, member.logdet_local = member.cluster.S.copy(), member.cluster.logdet
        else:
            member.track(member.dS)
        member.dS, member.du, member.dT = np.zeros((self.dim, self.dim)), np.zeros(self.dim), 0
        member.pending = False
        return download

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
        msg = self.receive(DownloadCheck, server)
        self.idle_downloads += self._idle((server, msg.cluster), ())

    def _idle(self, key: tuple[str, int], skip: Collection[tuple[str, int]]) -> int:
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
