"""The messages a P2B deployment adds to the protocol's (:mod:`privbandits.protocols.p2b`): a device host's fetch of
a published model and the shuffler's turn given to a host's devices. A module of their own, below
:mod:`privbandits.deploy.p2b`, :mod:`~privbandits.deploy.p2b_parties` and :mod:`~privbandits.deploy.p2b_front`,
which all use them."""

from __future__ import annotations

from privbandits.comm import Message, message


@message("deploy.p2b.fetch_model")
class FetchModel(Message):
    """Device host → server: send me model ``version`` (numbered in the order published: the raw baseline's
    first if it runs, then the private one) once it is published (the server answers with a
    :class:`~privbandits.protocols.p2b.ModelRelease`)."""

    version: int


@message("deploy.p2b.batch_open")
class BatchOpen(Message):
    """Shuffler → a device host: its devices may now send this batch's reports (hosts take turns, in deployment
    order, so the batch's arrival order is canonical)."""
