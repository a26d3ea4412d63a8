"""The P2B shuffler scaled out: front ends on other hosts sharing one PostgreSQL report queue (issue 34).

A deployment may give the shuffler ``shuffler_front`` parties. Each is a process of the shuffler's own (its
operator's, on a host of its choosing) that takes device connections with the concurrent front end
(:class:`~privbandits.deploy.p2b.front.Front`, ``protocol.workers`` processes each) and stores every encoded
report in the queue the shuffler uses (``protocol.queue_url``: a SQLite file cannot be shared across hosts),
acknowledging a device once its report is durable there. Device ``u`` of any host sends to front end
``u mod F`` (:func:`front_of`, fronts in deployment order), so every host's devices are spread over all of them.

The ``shuffler`` party then takes no device itself: it sequences the batch and forms it
(:class:`RemoteFronts`, in the place of its own front end):

1. it sends each front end :class:`~privbandits.deploy.p2b.messages.FrontOpen` with its report-id key, and
   waits for every :class:`~privbandits.deploy.p2b.messages.FrontReady`;
2. it tells every device host :class:`~privbandits.deploy.p2b.messages.BatchOpen`; each host closes the batch
   (:class:`~privbandits.protocols.p2b.core.CloseBatch`, on its party link to the shuffler) once every one of its
   devices' reports is acknowledged, so by then each is in the queue;
3. once every host has closed it, it sends each front end
   :class:`~privbandits.deploy.p2b.messages.FrontClose` (a report arriving later is a restarted host's:
   acknowledged, not taken) and reads back
   :class:`~privbandits.deploy.p2b.messages.FrontClosed` (what each took);
4. it forms the batch in the queue, atomically, as with its own front end
   (:meth:`~privbandits.protocols.p2b.queue.ReportQueue.close_batch`: every held report, identities dropped),
   and orders it canonically by the keyed ids (every device's id is computable from the key,
   :func:`~privbandits.deploy.p2b.rejoin.canonical_order`), so the released batch is the one front end's.

Trust: the front ends are the shuffler. They see each device's identity next to its report as the shuffler does,
and hold its report-id key (in memory, on their mutual-TLS link; each forgets it when the batch closes, the
shuffler when it releases the batch). They send nothing to the server.

Links: a front end links with the shuffler only (:func:`linked_peers`), and dials it
(:func:`~privbandits.deploy.p2b.party.link_order`: its listener, held by its workers, takes only devices). A front end,
the shuffler or a host restarted alone with ``--resume`` (``rejoin_s > 0``) rejoins as in one process: a front end
holds nothing of its own (the shuffler's link sends its messages again, the queue keeps what it took). The front
ends stay up until every host has sent :class:`~privbandits.deploy.p2b.messages.HostDone`
(:meth:`RemoteFronts.finish`), so a host restarted after the release finds them and its devices' reports are
acknowledged and not taken (counted as ``replayed_reports``).

Limits, each refused when the file is loaded: front ends need ``queue_url`` and ``workers`` unset or at least 1
(the concurrent front end, as in one process), no ``raw_baseline`` (raw reports are not queued) and neither
``batch_size`` nor ``batch_window_s`` (a limit counted across hosts is not built).
"""

from __future__ import annotations

import json
import time

from privbandits.comm import Party, TlsNetwork
from privbandits.deploy.deployment import Deployment
from privbandits.deploy.p2b.admission import Admission
from privbandits.deploy.p2b.messages import (
    BatchOpen,
    FrontClose,
    FrontClosed,
    FrontDone,
    FrontOpen,
    FrontReady,
    HostDone,
)
from privbandits.deploy.p2b.section import P2BProtocol
from privbandits.deploy.p2b.session import KINDS, phases

ROLE = "shuffler_front"
END = "end"
"""The phase of the end of the session: each host is done, the front ends may close."""


def linked_peers(deployment: Deployment[P2BProtocol], name: str) -> list[str] | None:
    """The party links: with front ends, a front end links with the shuffler only (the devices' connections need
    none) and the others with every party but the front ends; without, every party with every other."""
    fronts, shuffler = deployment.names(ROLE), deployment.names("shuffler")[0]
    if not fronts:
        return None
    if name in fronts:
        return [shuffler]
    return [peer for peer in deployment.parties if peer != name and (peer not in fronts or name == shuffler)]


def front_of(fronts: tuple[str, ...], user: int, shuffler: str) -> str:
    """Where device ``user`` sends its report: front end ``user mod F``, or the shuffler without front ends."""
    return fronts[user % len(fronts)] if fronts else shuffler


class RemoteFronts:
    """The shuffler's sequencing of its front ends, in the place of its own front end (see the module doc): the
    interface :class:`~privbandits.deploy.p2b.roles.CanonicalShuffler` uses (:meth:`collect`, :meth:`stop`)."""

    def __init__(self, fronts: list[str], hosts: list[str]) -> None:
        self.fronts, self.hosts = fronts, hosts

    def collect(self, shuffler, kind: str, durable: bool):
        """Open the batch at every front end and for every host, and wait until every host has closed it; the
        front ends' counts are added to the shuffler's. Returns the batch as the shuffler's front end does (no
        reports held, no canonical places: the shuffler orders the queue's batch by every device's id)."""
        from privbandits.deploy.p2b.front import _Open
        from privbandits.protocols.p2b.core import CloseBatch

        batch = _Open(shuffler, shuffler.network.current_phase, kind, durable)
        opening = FrontOpen(report_kind=kind, key=shuffler.key.hex(), store=durable and not shuffler.replaying,
                            commits=json.dumps(shuffler.admission.commits))  # fmt: skip
        for front in self.fronts:
            shuffler.send(front, opening)
        for front in self.fronts:
            shuffler.receive(FrontReady, front)
        shuffler.first_report_at = time.perf_counter()  # timed from the hosts' turn (front ends see the reports)
        for host in self.hosts:
            shuffler.send(host, BatchOpen())
        for host in self.hosts:
            shuffler.receive(CloseBatch.kind, host)
            shuffler.closed.setdefault(host, set()).add(batch.phase)
        for front in self.fronts:
            shuffler.send(front, FrontClose())
        for front in self.fronts:
            closed = shuffler.receive(FrontClosed, front)
            shuffler.collected += closed.collected
            shuffler.duplicates += closed.duplicates if durable else 0  # a replay's are counted as replayed
        return batch

    def finish(self, shuffler) -> None:
        """Once every host is done (:class:`~privbandits.deploy.p2b.messages.HostDone`: none of its devices will
        send again, even a restarted host's), tell each front end it may close."""
        with shuffler.network.phase(END):
            for host in self.hosts:
                shuffler.receive(HostDone, host)
            for front in self.fronts:
                shuffler.send(front, FrontDone())

    def stop(self) -> None:
        """Nothing runs here (each front end stops itself at the end of its session)."""


class _Intake:
    """A front end's stand-in for the shuffler in its :class:`~privbandits.deploy.p2b.front.Front`: the queue and
    key it stores with, and the counts of the open batch."""

    batch_size = batch_window_s = None  # refused with front ends (see the module doc)

    def __init__(self, queue, opening: FrontOpen, closed: dict[str, set[str]], admission: Admission) -> None:
        self.queue, self.key, self.kind = queue, bytes.fromhex(opening.key), opening.report_kind
        self.admission = admission
        admission.commits = json.loads(opening.commits)
        """The devices whose reports it takes (the shuffler's admission, :mod:`~privbandits.deploy.p2b.admission`)."""
        self.replaying = not opening.store  # acknowledged and counted as duplicates, not stored
        self.closed = closed
        """Per host, the phases whose batch has closed (a report for one is a restarted host's: acknowledged)."""
        self.collected = self.duplicates = self.replayed = 0
        self.refused = [0]
        self.opened_at, self.first_report_at = time.monotonic(), None


def run_front(deployment: Deployment[P2BProtocol], name: str, network: TlsNetwork, resume: bool = False) -> dict:
    """Front end ``name``'s part: for each batch the shuffler opens, take its devices' reports into the shared
    queue until the shuffler closes it. Restarted (``resume``), it holds nothing of its own: the shuffler's link
    sends its messages again, and the queue keeps the reports taken before."""
    from privbandits.deploy.p2b.front import Front, worker_count
    from privbandits.protocols.p2b.queue import open_report_queue

    protocol = deployment.protocol
    shuffler = deployment.names("shuffler")[0]
    party = Party(name, network)
    front = Front(network, deployment.names("device_host"), max(worker_count(protocol), 1)).start()
    queue = None
    admission = Admission.of(deployment)
    took: dict[str, dict[str, int]] = {}
    closed: dict[str, set[str]] = {}
    try:
        for phase in phases(protocol):
            with network.phase(phase):
                opening = party.receive(FrontOpen, shuffler)
                if queue is None:  # the shuffler has made it by now
                    assert protocol.queue_url is not None, "checked when the file was loaded"
                    queue = open_report_queue(protocol.queue_url, schema=shuffler, n_codes=protocol.n_codes,
                                              n_arms=protocol.n_actions)  # fmt: skip
                took[KINDS[phase]] = _take_batch(party, front, shuffler, _Intake(queue, opening, closed, admission))
            for host in deployment.names("device_host"):  # the shuffler closes a batch once every host has
                closed.setdefault(host, set()).add(phase)
        with network.phase(END):  # taking devices until every host is done (a restarted one replays)
            front.await_message(shuffler)
            party.receive(FrontDone, shuffler)
        network.close(timeout=None)
    finally:
        front.stop()
        if queue is not None:
            queue.close()
    replayed = front.shuffler.replayed if front.shuffler is not None else 0
    stored = sum(counts["collected"] - counts["duplicates"] for counts in took.values())
    return {
        "party": name,
        "role": ROLE,
        "outcome": f"stored {stored} device reports in the shuffler's queue",
        "took": took,
        "replayed_reports": replayed,
        "refused_devices": admission.refused,
        "resumed": resume,
        "ledger": [],
    }


def _take_batch(party: Party, front, shuffler: str, intake: _Intake) -> dict[str, int]:
    """One batch at a front end: opened, taken until the shuffler closes it, its counts sent back (and returned);
    the report-id key is forgotten."""
    batch = front.opened(intake, intake.kind, durable=True)
    party.send(shuffler, FrontReady())
    try:
        front.await_message(shuffler, lambda: max(batch.seen.values(), default=0.0))
        party.receive(FrontClose, shuffler)
    finally:
        front.close()
    intake.key = b""  # forgotten: nothing here links a queued id to its device any more
    party.send(shuffler, FrontClosed(collected=intake.collected, duplicates=intake.duplicates))
    return {"collected": intake.collected, "duplicates": intake.duplicates}
