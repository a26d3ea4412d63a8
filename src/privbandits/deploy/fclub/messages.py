"""The messages a deployed FCLUB session adds to the protocol's (:mod:`privbandits.protocols.fclub.messages`): the
users' rounds, the rewards, and the sequencing of lock-step (see :mod:`privbandits.deploy.fclub.party`).
"""

from __future__ import annotations

import numpy as np

from privbandits.comm import Message, ProtocolError, message
from privbandits.protocols.fclub.messages import Download

USERS, SCHEDULE, SEQUENCE = "users", "schedule", "sequence"
"""Phases of the deployment's sequencing messages (the in-memory driver's call order), outside the protocol."""


@message("deploy.fclub.arrival")
class Arrival(Message):
    """Users → the user's local server: round ``t``'s user (a global id) and its contexts (K × d)."""

    t: int
    user: int
    contexts: np.ndarray


@message("deploy.fclub.choice")
class Choice(Message):
    """Local server → users: the arm recommended."""

    arm: int


@message("deploy.fclub.feedback")
class Feedback(Message):
    """Users → local server: the reward of the recommended arm."""

    reward: float


@message("deploy.fclub.reward_and_arrival")
class RewardAndArrival(Message):
    """Free-running, users → local server: the reward of the arm it chose in its previous round, then round ``t``'s
    user and contexts (a :class:`Feedback` and an :class:`Arrival` in one message)."""

    reward: float
    t: int
    user: int
    contexts: np.ndarray


@message("deploy.fclub.downloads")
class Downloads(Message):
    """Free-running, global → a local server: the downloads due to its local clusters at once, each what a
    :class:`~privbandits.protocols.fclub.Download` carries (``clusters[j]``, ``grams[j]``, ``moments[j]``,
    ``counts[j]``), in the order they fell due."""

    clusters: np.ndarray
    grams: np.ndarray
    moments: np.ndarray
    counts: np.ndarray

    @classmethod
    def of(cls, downloads: list[Download]) -> Downloads:
        first = downloads[0]
        grams = np.empty((len(downloads), *first.gram.shape))
        moments = np.empty((len(downloads), *first.moment.shape))
        for j, download in enumerate(downloads):  # (np.stack costs more for the few a message carries)
            grams[j], moments[j] = download.gram, download.moment
        clusters = np.array([d.cluster for d in downloads], dtype=np.int64)
        return cls(clusters, grams, moments, np.array([d.count for d in downloads], dtype=np.int64))

    def entries(self, dim: int) -> list[Download]:
        """The downloads carried, checked (a malformed message is refused, naming what is wrong)."""
        k = len(self.clusters)
        shapes = [(self.clusters, (k,), np.int64), (self.grams, (k, dim, dim), np.float64),
                  (self.moments, (k, dim), np.float64), (self.counts, (k,), np.int64)]  # fmt: skip
        for name, (array, shape, dtype) in zip(("clusters", "grams", "moments", "counts"), shapes, strict=True):
            if array.shape != shape or array.dtype != dtype or (dtype == np.float64 and not np.isfinite(array).all()):
                raise ProtocolError(
                    f"downloads: {name} is {array.dtype} of shape {array.shape}; expected finite {np.dtype(dtype)} of "
                    f"shape {shape} ({k} downloads, d = {dim})"
                )
        return [Download(int(c), self.grams[j], self.moments[j], int(self.counts[j])) for j, c in
                enumerate(self.clusters)]  # fmt: skip


@message("deploy.fclub.served")
class Served(Message):
    """Local server → users: round ``t`` is done (its upload confirmed, or its download check answered)."""

    t: int


@message("deploy.fclub.phase_start")
class PhaseStart(Message):
    """Users → the global server and every local server: detection runs before round ``t`` (§3.2)."""

    t: int


@message("deploy.fclub.finish")
class Finish(Message):
    """Users → every party, then each local server → the global server: the session's ``rounds`` are over; free-running,
    the global server's to each local server once all have finished (no more downloads follow)."""

    rounds: int


@message("deploy.fclub.applied")
class Applied(Message):
    """Local server → global: a :class:`~privbandits.protocols.fclub.Download` is applied."""


@message("deploy.fclub.upload_done")
class UploadDone(Message):
    """Global → the uploading local server: the upload is absorbed and every download it caused is applied
    (how many is not said: a local server learns nothing of the other members from it)."""


@message("deploy.fclub.checked")
class Checked(Message):
    """Global → local server: its :class:`~privbandits.protocols.fclub.DownloadCheck` is counted."""


WINDOW = 16
"""Free-running: the most rounds the users have in flight (contexts sent, arm not yet back)."""


NOISE_WARNING = "FCLUB: privatizer noise exceeded"
