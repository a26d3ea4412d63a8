"""FCLUB's messages and traffic phases (spec ``fclub.md``), split out of :mod:`privbandits.protocols.fclub`,
which re-exports them: the local servers' phase uploads, uploads and download checks, the global server's
renewals, downloads and end-of-detection notices."""

from __future__ import annotations

import numpy as np

from privbandits.comm import Message, message

GLOBAL = "global"
DETECT = "detect"
ASYNC = "async"
PHASE_END = "phase_end"
"""Traffic phase of the global server's end-of-detection notices (:class:`PhaseEnd`)."""
CHECK = "check"
"""Traffic phase of the per-round Eq. 6 checks that count idle downloads (:class:`DownloadCheck`)."""
PRIVACY_UNIT = "one (x, y) pair of a local cluster, against parties outside its server (cluster DP)"


@message("fclub.phase_upload")
class PhaseUpload(Message):
    """Local → global at a phase start: ``(Ṽ, b̃, T̃)`` of one local cluster and its size (Alg. 2 line 5);
    ``last`` marks the server's last phase upload of this detection (the end of its batch)."""

    cluster: int
    size: int
    gram: np.ndarray
    moment: np.ndarray
    count: int
    last: bool


@message("fclub.upload")
class Upload(Message):
    """Local → global when Eq. 5 fires: the upload buffer ``(ΔS, Δu, ΔT)`` (Alg. 3 line 4)."""

    cluster: int
    gram: np.ndarray
    moment: np.ndarray
    count: int


@message("fclub.renewal")
class Renewal(Message):
    """Global → local after a partition change: ``(S^g, u^g, T^g)`` and L' (Alg. 2 lines 11–13)."""

    cluster: int
    gram: np.ndarray
    moment: np.ndarray
    count: int
    sharing: int


@message("fclub.download")
class Download(Message):
    """Global → local when Eq. 6 fires: the download buffer ``(ΔS^{−ℓ}, Δu^{−ℓ}, ΔT^{−ℓ})`` (Alg. 4)."""

    cluster: int
    gram: np.ndarray
    moment: np.ndarray
    count: int


@message("fclub.phase_end")
class PhaseEnd(Message):
    """Global → every local server after the merge (Alg. 2 line 8): ``renewal`` says whether one
    :class:`Renewal` per local cluster of the server was sent (line 13) or none."""

    renewal: bool


@message("fclub.download_check")
class DownloadCheck(Message):
    """Local → global in a round without an upload, with ``rebuild_local_copies`` only: local cluster ``cluster``
    served a user, so the global server checks Eq. 6 for its global cluster's members, as the reference code
    does every round; a check that passes with nothing to download is counted (``idle_downloads``), not sent."""

    cluster: int
