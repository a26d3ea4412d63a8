"""The party classes of a P2B deployment (:mod:`privbandits.deploy.p2b.party`): the protocol's parties
(:mod:`privbandits.protocols.p2b.core`) through their extension points, for device hosts whose devices connect on their
own, a shuffler of several hosts with a durable queue, and a server whose models the hosts fetch.

Imported where a party runs, not where a deployment file is read (it loads numpy and the protocol).
"""

from __future__ import annotations

import time
from typing import Any, cast

import numpy as np

from privbandits.comm import Message, ProtocolError
from privbandits.deploy.p2b import rejoin as p2b_rejoin
from privbandits.deploy.p2b.admission import Admission
from privbandits.deploy.p2b.messages import FetchModel, SealedBatch, SealedReport
from privbandits.deploy.p2b.sealing import SEALED_BYTES, Opener, check_sealed, open_batch
from privbandits.protocols.p2b.core import DeviceHost, EncodedBatch, ModelRelease, RawBatch, Server, Shuffler


class HostedDevices(DeviceHost):
    """A device host: over TLS each device's report leaves on a connection of its own (the host's certificate,
    the device's name ``HOST-deviceUSER`` as sender), acknowledged by the shuffler once stored (or refused once
    the batch has closed); in memory on the host's link."""

    refused = 0
    """Reports the shuffler refused because their batch had closed (by size or time)."""

    def send_report(self, user: int, receiver: str, report: Message) -> None:
        if self.network.connection_per_sender:
            if not p2b_rejoin.send_report(self, user, receiver, report, self.network.rejoin_s):
                self.refused += 1  # its batch had closed: the device's report is lost, the device goes on
                return
        else:
            self.send(receiver, report)
        self.sent += 1

    fetched = 0
    """Models fetched so far (the next fetch asks for version fetched + 1)."""

    def receive_model(self, model, server: str):
        self.fetched += 1
        self.send(server, FetchModel(self.fetched))
        release = self.receive(ModelRelease, server)
        return model(release.first, release.second)


class CanonicalShuffler(Shuffler):
    """The shuffler of several device hosts: a batch is every host's reports up to its CloseBatch,
    taken host by host in deployment order (canonical), then shuffled with the shuffler's own stream."""

    def __init__(self, *args, hosts: list[str], queue=None, key: bytes = b"", batch_id: int = 0,
                 batch_size: int | None = None, batch_window_s: float | None = None, front=None,
                 order: dict[str, int] | None = None, forget_key=lambda: b"", admission: Admission | None = None,
                 **kwargs):  # fmt: skip
        super().__init__(*args, **kwargs)
        self.hosts, self.queue, self.key, self.batch_id, self.order = hosts, queue, key, batch_id, order or {}
        self.admission = admission if admission is not None else Admission({})
        """The devices whose reports it takes (over TLS; none unless given)."""
        self.batch_size, self.batch_window_s, self.front = batch_size, batch_window_s, front
        self.forget_key = forget_key
        self.collected, self.opened_at = 0, 0.0  # the open batch's reports, and when it opened
        self.refused: list[int] = []
        """Per batch, the reports refused after it closed (by size or time)."""
        self.released: list[Message] = []
        self.batch_ids: list[int] = []
        self.first_report_at: float | None = None
        """When the open batch's first report arrived (``time.perf_counter``)."""
        self.closed: dict[str, set[str]] = {}
        """Per host, the phases whose batch it has closed."""
        self.duplicates = self.replayed = 0
        """Reports received again: in the open batch (or its queue), and for a batch already closed."""
        self.replaying = False
        """Whether the open batch was released before a restart (every report of it is then a duplicate)."""

    def collect_batch(self, kind: str) -> list[Message]:
        """The protocol's extension point: every host's devices' reports of ``kind`` (through the queue for
        sealed ones), in the canonical order, until each host closes the batch or it closes by size or time."""
        durable = self.queue is not None and kind == SealedReport.kind
        self.first_report_at = None
        self.collected, self.opened_at = 0, time.monotonic()
        self.refused.append(0)
        # released before a restart: its key may be gone, so every report resent for it is taken as a duplicate
        self.replaying = durable and self.queue.released(self.batch_id)
        if self.front is not None:  # every host's devices at once, stored in groups
            batch = self.front.collect(self, kind, durable)
            held = [report for _, report in sorted(batch.held, key=lambda item: item[0])]
            places = batch.ids
        else:
            held, places = self._collect_serially(kind, durable)
        ids = {rid: rank for rank, rid in enumerate(sorted(places, key=places.get))}  # canonical ranks
        if not durable:
            return held
        # the batch is formed in the queue (identities and arrival order dropped there); put back in the
        # canonical order (host by host, users ascending) by the keyed ids only this shuffler computes, those
        # a restarted shuffler's queue held from before too. One whose batch was formed before the stop gets
        # that same batch back
        batch = self.queue.close_batch(self.batch_id)
        self.batch_ids.append(batch.batch_id)
        rows = zip(batch.report_ids, batch.codes, batch.sealed, strict=True)
        last = len(self.order) + len(ids)
        rank = {rid: self.order.get(rid, len(self.order) + ids.get(rid, last)) for rid in batch.report_ids}
        return [sealed_report(code, sealed) for _, code, sealed in sorted(rows, key=lambda row: rank[row[0]])]

    def release_sealed(self, server: str) -> None:
        """The encoded batch as sealed reports: shuffled and thresholded by their codes alone (the protocol's
        :meth:`~privbandits.protocols.p2b.core.Shuffler.blend`), their contents forwarded sealed."""
        release_sealed(self, server)

    def _collect_serially(self, kind: str, durable: bool) -> tuple[list, dict]:
        """Each host's devices in turn (over TLS one connection at a time, ``workers = 0``), each encoded report
        persisted with its sender's identity before it is acknowledged; in memory from the hosts' links. The
        reports not queued, and each queued one's canonical place (host, user) by its id."""
        from privbandits.deploy.p2b.front import canonical

        held: list = []
        places: dict[str, tuple] = {}
        seen: set[str] = set()  # the devices heard in this batch (over TLS each sends one report)
        for host in self.hosts:
            index = 0
            for identity, received, delivery in self._reports(host, kind):
                if self.first_report_at is None:  # the batch's throughput is timed from here
                    self.first_report_at = time.perf_counter()
                if (delivery is not None and identity in seen) or self.replaying:
                    self.duplicates += 1  # sent again (its acknowledgement lost, or its host restarted)
                elif durable:  # persisted with its sender's identity before anything else happens to it
                    device = identity if delivery is not None else f"{host}/{index}"  # in memory: by index
                    report_id = p2b_rejoin.report_id(self.key, device)
                    places[report_id] = canonical(self.hosts, host, device) if delivery else (0, len(places), "")
                    if not self.queue.accept_sealed(report_id, identity, received.code, received.sealed.tobytes()):
                        self.duplicates += 1  # accepted before a restart (or in the batch already formed)
                    index += 1
                else:
                    held.append(received)
                seen.add(identity)
                if delivery is not None:
                    delivery.ack()  # stored: the device may go
        return held, places

    def _reports(self, host: str, kind: str):
        """``(identity, report, delivery)`` of ``host``'s devices until it closes the batch: over TLS each from
        its device's own connection (:func:`~privbandits.deploy.p2b.front.serial_reports`), in memory from the
        host's link."""
        from privbandits.deploy.p2b.front import serial_reports
        from privbandits.protocols.p2b.core import CloseBatch

        if self.network.connection_per_sender:
            yield from serial_reports(self, host, kind)
            return
        while (got := self.receive_one_of((kind, CloseBatch.kind), host)).kind != CloseBatch.kind:
            yield host, got, None

    def send(self, receiver: str, message: Message) -> None:
        if isinstance(message, SealedBatch | RawBatch):
            self.released.append(message)
        super().send(receiver, message)
        if self.queue is not None and isinstance(message, SealedBatch):
            self._mark_released()

    def _mark_released(self) -> None:
        """The encoded batch went out: marked released in the queue, and the report-id key forgotten (nothing
        left that could link a batched report's id to its device; a replay needs it no more)."""
        self.queue.mark_released(self.batch_ids[-1])
        self.key, self.order = self.forget_key(), {}

    def replay(self, kind: str, server: str, saved: tuple) -> None:
        """A batch this shuffler released before it was restarted (``saved``: the batch, its release details,
        ledger rows and refusals, from its checkpoint): each host opens and closes it again, its devices'
        reports acknowledged and not taken, and the batch goes to the server again (skipped there if it has
        it)."""
        batch, details, rows, refused = saved
        self.first_report_at, self.collected = None, 0
        self.refused.append(refused)
        if self.front is not None:  # the front end (or ends) acknowledges them
            self.front.collect(self, kind, False)
            self.replayed += self.collected
        else:
            for host in self.hosts:
                for _, _, delivery in self._reports(host, kind):
                    self.replayed += 1
                    delivery.ack()
        if isinstance(batch, SealedBatch):
            self.batch_ids.append(self.batch_id)
        self.send(server, batch)
        self.last_release = dict(details)
        self.ledger.record_rows(rows)


def sealed_report(code: int, sealed: bytes | None) -> SealedReport:
    """A queued report as the device sent it (its sealed content, or none: refused when the batch forms)."""
    return SealedReport(int(code), np.frombuffer(sealed or b"", dtype=np.uint8))


def release_sealed(shuffler: Shuffler, server: str) -> None:
    """``shuffler``'s encoded batch of sealed reports (every one checked first: a malformed one refuses the batch
    whole, as the protocol's shuffler does), shuffled and thresholded by code, sent to ``server`` as a
    :class:`SealedBatch`; its release recorded (the smallest crowd of the codes released)."""
    from privbandits.validation import InvalidInputError

    reports = cast("list[SealedReport]", shuffler.collect_batch(SealedReport.kind))
    codes = shuffler.codes_of(reports)
    for report in reports:
        problem = check_sealed(report)
        if problem is not None:
            raise InvalidInputError(f"a sealed report's {problem}")
    rows = [np.asarray(report.sealed, dtype=np.uint8) for report in reports]
    sealed = np.stack(rows) if rows else np.empty((0, SEALED_BYTES), dtype=np.uint8)
    chosen = shuffler.blend(codes)
    shuffler.send(server, SealedBatch(codes[chosen], sealed[chosen]))
    shuffler.record_release(len(reports), codes[chosen])


class PublishingServer(Server):
    """The server of a deployment: batches only from the shuffler; models, versioned 1, 2, ... in the order
    published, to each device host that fetches them."""

    def __init__(self, *args, shuffler: str, hosts: list[str], opener: Opener | None = None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.shuffler, self.hosts, self.opener = shuffler, hosts, opener
        self.releases: list[tuple[np.ndarray, np.ndarray]] = []
        self.batches: dict[str, EncodedBatch | RawBatch] = {}
        """What it received (the encoded batch as opened), by kind."""
        self.unopened = 0
        """Released reports whose sealed content did not open (dropped, counted, logged)."""

    def receive(self, kind: str | type[Message], sender: str | None = None) -> Any:  # typed as Party.receive is
        """From the shuffler: an encoded batch arrives sealed and is opened here (the released reports only)."""
        if kind in (EncodedBatch, EncodedBatch.kind) and self.opener is not None:
            sealed = super().receive(SealedBatch, self.shuffler)
            batch, self.unopened = open_batch(self.opener, sealed.codes, sealed.sealed, self.n_arms)
            self.batches["encoded"] = batch
            return batch
        got = super().receive(kind, self.shuffler if sender is None else sender)
        if isinstance(got, RawBatch):
            self.batches["raw"] = got
        return got

    def publish(self, model, first: np.ndarray, second: np.ndarray, audience: str) -> None:
        """The protocol's extension point: the release is kept for the hosts' fetches (:meth:`serve`)."""
        self.published.append(model)
        self.releases.append((first, second))

    def serve(self, version: int) -> None:
        """Answer every host's fetch of model ``version`` (published)."""
        for host in self.hosts:
            asked = super().receive(FetchModel, host).version
            if asked != version:
                raise ProtocolError(f"{host!r} fetched model version {asked}; version {version} is published")
            self.send(host, ModelRelease(*self.releases[version - 1]))
