"""The messages a served FCLUB federation adds (:mod:`privbandits.deploy.fclub.serving`): the global clock's ticks and
the barrier before a phase start. The protocol's own messages (phase uploads, uploads, renewals, downloads) and the
deployment's sequencing messages (:class:`~privbandits.deploy.fclub.messages.PhaseStart`,
:class:`~privbandits.deploy.fclub.messages.Applied`, :class:`~privbandits.deploy.fclub.messages.UploadDone`) are
reused as they are.
"""

from __future__ import annotations

from privbandits.comm import Message, message

CLOCK = "clock"
"""Phase of the ticks and the barrier (outside the paper's communication count, as the deployment's sequencing)."""


@message("serve.fclub.tick")
class Tick(Message):
    """Local server → global: it absorbed one reward that made no upload (the global server counts the round)."""


@message("serve.fclub.ticked")
class Ticked(Message):
    """Global → the ticking local server: the round is counted (and the phase start it made due, if any, is over)."""


@message("serve.fclub.quiesce")
class Quiesce(Message):
    """Global → every local server: a phase starts; finish the exchange in flight and wait for the phase."""


@message("serve.fclub.quiet")
class Quiet(Message):
    """Local server → global: nothing more of the old phase follows from this server, which has absorbed ``rewards``
    rewards in all (the global server's clock, rebuilt from these after it restarts or links again)."""

    rewards: int
