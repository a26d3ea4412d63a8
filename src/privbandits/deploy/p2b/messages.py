"""The messages a P2B deployment adds to the protocol's (:mod:`privbandits.protocols.p2b.core`): a device host's fetch
of a published model, the shuffler's turn given to a host's devices, and the shuffler's sequencing of its front ends.
A module of their own, below :mod:`privbandits.deploy.p2b.party`, :mod:`~privbandits.deploy.p2b.roles`,
:mod:`~privbandits.deploy.p2b.front` and :mod:`~privbandits.deploy.p2b.scaleout`, which all use them."""

from __future__ import annotations

import numpy as np

from privbandits.comm import Message, message


@message("deploy.p2b.fetch_model")
class FetchModel(Message):
    """Device host → server: send me model ``version`` (numbered in the order published: the raw baseline's
    first if it runs, then the private one) once it is published (the server answers with a
    :class:`~privbandits.protocols.p2b.core.ModelRelease`)."""

    version: int


@message("deploy.p2b.host_commit")
class HostCommit(Message):
    """Device host → shuffler, first of all: ``digest``, its commitment to the coins of this session (a digest of its
    root seed, :func:`~privbandits.deploy.p2b.admission.commitment`). A host restarted without its state commits to
    another one, and its link's replay check ends the session naming it (:mod:`~privbandits.deploy.p2b.admission`)."""

    digest: str


@message("deploy.p2b.server_key")
class ServerKey(Message):
    """Server → each device host, first of all: ``public``, the server's HPKE public key (X25519, raw) that the
    host's devices seal their reports to (:mod:`~privbandits.deploy.p2b.sealing`)."""

    public: np.ndarray


@message("deploy.p2b.sealed_report")
class SealedReport(Message):
    """Device → shuffler: one encoded interaction, its ``code`` (the crowd id the shuffler thresholds on) in the clear
    and its ``(action, reward)`` ``sealed`` to the server (uint8, :data:`~privbandits.deploy.p2b.sealing.SEALED_BYTES`;
    the code is the sealing's associated data); ``commit``: its host's commitment to the session's coins
    (:class:`HostCommit`; empty for a served device, which has no host session)."""

    code: int
    sealed: np.ndarray
    commit: str = ""


@message("deploy.p2b.sealed_batch")
class SealedBatch(Message):
    """Shuffler → server: the anonymised, shuffled, thresholded reports: their ``codes`` and ``sealed`` contents
    ((n, SEALED_BYTES) uint8), row by row; the server opens each into an
    :class:`~privbandits.protocols.p2b.core.EncodedBatch`."""

    codes: np.ndarray
    sealed: np.ndarray


@message("deploy.p2b.batch_open")
class BatchOpen(Message):
    """Shuffler → a device host: its devices may now send this batch's reports (hosts take turns, in deployment
    order, so the batch's arrival order is canonical)."""


@message("deploy.p2b.front_open")
class FrontOpen(Message):
    """Shuffler → each of its front ends (``shuffler_front`` parties, :mod:`~privbandits.deploy.p2b.scaleout`):
    take the devices' reports of ``report_kind`` for the batch now open. ``key`` is the shuffler's report-id key
    (hex; the front ends are the shuffler's own processes, on its mutual-TLS links); ``store``: into the shared
    queue, else acknowledged and not taken (a batch released before a restart); ``commits``: each host's commitment
    (JSON), which its devices' reports must carry."""

    report_kind: str
    key: str
    store: bool
    commits: str = "{}"


@message("deploy.p2b.front_ready")
class FrontReady(Message):
    """Front end → shuffler: the batch is open here (the shuffler then tells the device hosts)."""


@message("deploy.p2b.front_close")
class FrontClose(Message):
    """Shuffler → each front end: every host has closed the batch; take no more reports for it."""


@message("deploy.p2b.front_closed")
class FrontClosed(Message):
    """Front end → shuffler: the batch closed here, with what it took: reports ``collected`` (stored, or
    acknowledged and not taken), ``duplicates`` of them (sent again, or not taken). Connections it dropped are in
    its result's ``dropped``."""

    collected: int
    duplicates: int


@message("deploy.p2b.host_done")
class HostDone(Message):
    """Device host → shuffler, with front ends only: its late users have played; none of its devices will send
    again unless it is restarted (the shuffler then keeps its front ends up until every host is done)."""


@message("deploy.p2b.front_done")
class FrontDone(Message):
    """Shuffler → each front end: every host is done; the front end may close."""


# -- served (``privbandits serve``, :mod:`~privbandits.deploy.p2b.serving`) ------------------------------------------
@message("deploy.p2b.served_model")
class ServedModel(Message):
    """Server → a device that fetched (:class:`FetchModel`, version 0: the latest) on a connection of its own: the
    published model ``version`` (1, 2, ... in the order published), as the two arrays of a
    :class:`~privbandits.protocols.p2b.core.ModelRelease`."""

    version: int
    first: np.ndarray
    second: np.ndarray
    public: np.ndarray
    """The server's HPKE public key, that the device seals its reports to."""


@message("deploy.p2b.numbered_batch")
class NumberedBatch(Message):
    """Shuffler → server on a connection of its own: released batch ``number`` (0, 1, ...), the arrays of a
    :class:`SealedBatch`. The server acknowledges it once stored (a batch sent again after a lost acknowledgement is
    acknowledged and not taken again)."""

    number: int
    codes: np.ndarray
    sealed: np.ndarray
