"""The P2B shuffler's device front end: many device connections at once, each report acknowledged once durable.

Over TLS every device sends its one report on a connection of its own
(:mod:`privbandits.comm.oneshot`); a connection costs a mutual-TLS handshake, most of the work
of a report. With ``protocol.workers = W >= 1`` (default: one per CPU the shuffler may use; the shuffler then
dials every peer, also one that comes back, so its listener takes only devices: see
:mod:`privbandits.deploy.p2b.party`) the
shuffler forks W worker processes once its party links are up (:func:`_serve`) and hands them its
listener; each runs a :class:`~privbandits.comm.tls.gate.Gate` (a non-blocking event loop) that takes
connections and handshakes side by side, and the kernel spreads the connections over the workers.
Forked, they share the listener's TLS context and so its session-ticket key: a device that resumes
its host's TLS 1.3 session (:func:`~privbandits.comm.oneshot.send_own`) resumes at any worker.
A worker screens each connection as the serial front end does
(:func:`~privbandits.comm.oneshot.screen_connection`) and passes its frame to the shuffler process,
whose intake thread (:class:`Front`) decodes it (the workers import no protocol) and decides it:
stored, refused (its batch closed by ``batch_size`` or ``batch_window_s``) or dropped (not a report
of the open batch). Encoded reports are stored in the durable queue in groups: every report that
arrived while the previous group was being committed goes into one transaction
(:meth:`~privbandits.protocols.p2b.queue.ReportQueue.accept_many`, one sync), and each device is
acknowledged only after its group is committed. A report's queue id is a keyed hash of the device's
name (:func:`~privbandits.deploy.p2b.rejoin.report_id`, the serial front end's too), so a device that
sends again after a lost acknowledgement is stored once; once the batch is released the shuffler
forgets that key (its checkpoint keeps an empty one), so no id left in the queue can be linked to a
device.

All device hosts' devices send at once (every host is told :class:`~privbandits.deploy.p2b.party.BatchOpen`
together); the batch is put in the canonical order (device host in deployment order, then user
number, which the device's name ``HOST-deviceUSER`` carries) by the keyed ids only the shuffler holds,
in memory: the queue drops every identity when the batch forms, as before. With ``workers = 0`` the
shuffler process takes the devices itself, host by host, one connection at a time (the serial front
end of issue 17, kept for comparison).

Failures: a worker that dies ends the session (the shuffler names it); a shuffler killed takes its
workers with it (each ends when its pipe to the shuffler closes), so the devices' connections are
refused at once and the other parties see the loss.
"""

from __future__ import annotations

import multiprocessing
import re
import select
import threading
import time
from collections.abc import Collection
from typing import Any

from privbandits.comm import ProtocolError, TlsNetwork, frames
from privbandits.comm.frames import HEADER_BYTES, FrameType
from privbandits.comm.tls.gate import listening
from privbandits.deploy.p2b.rejoin import report_id

STOP = "stop"
"""The message that ends a worker."""
MAX_PENDING = 256
"""Connections each worker authenticates at once (a flood past that drops the oldest pending one)."""
POLL_S = 0.2
"""How often the shuffler, waiting for a host to close the batch, checks its front end."""
_NUMBER = re.compile(r"(\d+)$")


def worker_count(protocol) -> int:
    """The front end's worker processes: ``protocol.workers``; unset, one per CPU this process may use."""
    if protocol.workers is not None:
        return protocol.workers
    from privbandits.deploy.local import usable_cores

    return usable_cores()


def canonical(hosts: list[str], party: str, sender: str) -> tuple[int, int, str]:
    """Where ``sender``'s report goes in the canonical batch: its host's place in the deployment, its user number."""
    number = _NUMBER.search(sender)
    return hosts.index(party), int(number.group(1)) if number else -1, sender


def closed_reason(shuffler) -> str | None:
    """Why the open batch takes no more reports (its size or its window reached), or None."""
    if shuffler.batch_size is not None and shuffler.collected >= shuffler.batch_size:
        return f"the batch is full ({shuffler.batch_size} reports)"
    window = shuffler.batch_window_s
    if window is not None and time.monotonic() - shuffler.opened_at > window:
        return f"the batch closed {window:g} s after it opened"
    return None


def malformed(report) -> str | None:
    """Why a device's sealed report is malformed (:func:`~privbandits.deploy.p2b.sealing.check_sealed`), or None; any
    other kind of report passes (a raw one is checked when its batch forms)."""
    from privbandits.deploy.p2b.messages import SealedReport
    from privbandits.deploy.p2b.sealing import check_sealed

    return check_sealed(report) if isinstance(report, SealedReport) else None


# -- the serial front end (workers = 0) ---------------------------------------------------------------
def serial_reports(shuffler, host: str, kind: str):
    """``(identity, report, delivery)`` of ``host``'s devices until it closes the batch, taken one connection at a
    time in the shuffler's process (the host is first told to open the batch). A device connection dropped
    half-way loses only its own report; a report for a batch its host has already closed (a restarted host's
    devices replay) is acknowledged and counted in ``shuffler.replayed``, not taken; a message of another kind is
    refused and counted among the network's drops (the session goes on)."""
    from privbandits.comm.oneshot import accept_own, device_waiting
    from privbandits.deploy.p2b.messages import BatchOpen
    from privbandits.protocols.p2b.core import CloseBatch

    network = shuffler.network
    shuffler.send(host, BatchOpen())
    while True:
        if not device_waiting(network, host, network.deadline):
            shuffler.receive(CloseBatch.kind, host)
            shuffler.closed.setdefault(host, set()).add(network.current_phase)
            return
        delivery = accept_own(network, [host])
        if delivery is None:
            continue
        got = delivery.envelope.message
        if delivery.envelope.phase in shuffler.closed.get(host, ()):
            shuffler.replayed += 1
            delivery.ack()
            continue
        if got.kind != kind:  # one bad device never ends the session: dropped, counted and logged, as concurrently
            reason = f"a device of {host!r} sent a {got.kind!r} message; expected {kind!r}"
            network.note_dropped(reason)
            delivery.refuse(reason)
            continue
        refusal = shuffler.admission.check(host, delivery.envelope.sender, getattr(got, "commit", None))
        refusal = refusal or malformed(got)
        if refusal is not None:  # not a device the deployment gives this host, or a malformed report
            network.note_dropped(refusal)
            delivery.refuse(refusal)
            continue
        closed = closed_reason(shuffler)
        if closed is not None:
            delivery.refuse(closed)
            shuffler.refused[-1] += 1
            continue
        shuffler.collected += 1
        yield delivery.envelope.sender, got, delivery


# -- the concurrent front end -------------------------------------------------------------------------
class _Open:
    """The batch the front end takes reports for."""

    def __init__(self, shuffler, phase: str | None, kind: str, durable: bool) -> None:
        self.shuffler, self.phase, self.kind, self.durable = shuffler, phase, kind, durable
        self.held: list[tuple[tuple, object]] = []
        """Reports not stored in the queue (the raw baseline's), with their canonical place."""
        self.ids: dict[str, tuple] = {}
        """The queue id of every stored report, with its canonical place (in memory only)."""
        self.seen: dict[str, float] = {}
        """Per host, when one of its devices last sent."""


class Front:
    """Worker processes taking device connections on the shuffler's listener, and the intake thread that stores
    their reports in groups (see the module doc). Start with :meth:`start` after the network is linked."""

    def __init__(self, network: TlsNetwork, hosts: list[str], workers: int) -> None:
        self.network, self.hosts, self.workers = network, hosts, workers
        self.processes: list = []
        self.pipes: list = []
        self.open: _Open | None = None
        self.pending: list[tuple] = []
        """Reports for a batch not open yet, each held (its device waiting) up to the deadline."""
        self.shuffler: Any = None
        """The shuffler of the batches opened so far (whose ``closed`` says which each host has closed)."""
        self.lock = threading.Lock()
        self.failure: BaseException | None = None
        self.running = False
        self.thread: threading.Thread | None = None

    def start(self) -> Front:
        """Start the workers on the network's listener (the shuffler process accepts no device itself)."""
        network = self.network
        gate, network.gate = listening(network.gate), None
        # forked: every worker shares the listener's TLS context, and so its session-ticket key (a ticket one
        # worker issued resumes at any); each closes its copies of the party links and of the shuffler's pipes
        context = multiprocessing.get_context("fork")
        settings = (self.hosts, network.local, gate.context, network.handshake_timeout, network.max_frame_bytes)
        links = [network.link(peer).sock for peer in network.parties if peer != network.local]
        try:
            for _ in range(self.workers):
                here, there = context.Pipe()
                inherited = [*links, *self.pipes, here]
                process = context.Process(target=_serve, args=(gate.listener, there, inherited, *settings), daemon=True)
                process.start()
                there.close()
                self.processes.append(process)
                self.pipes.append(here)
        except BaseException:
            self.stop()
            raise
        finally:
            gate.close()  # the workers hold their own copies of the listener
        self.running = True
        self.thread = threading.Thread(target=self._intake, name="p2b-front-intake", daemon=True)
        self.thread.start()
        return self

    # -- one batch (the shuffler's thread) -------------------------------------------------------------
    def collect(self, shuffler, kind: str, durable: bool) -> _Open:
        """Open a batch of ``kind`` for every host's devices at once, and take reports until every host has closed
        it (a host is lost when neither it nor any of its devices sends within the deadline)."""
        from privbandits.deploy.p2b.messages import BatchOpen
        from privbandits.protocols.p2b.core import CloseBatch

        batch = self.opened(shuffler, kind, durable)
        try:
            for host in self.hosts:
                shuffler.send(host, BatchOpen())
            for host in self.hosts:
                self.await_message(host, lambda host=host: batch.seen.get(host, 0.0))
                shuffler.receive(CloseBatch.kind, host)
                shuffler.closed.setdefault(host, set()).add(batch.phase)
        finally:
            self.close()
        return batch

    def opened(self, shuffler, kind: str, durable: bool) -> _Open:
        """A batch of ``kind`` opened here for the network's current phase (``shuffler``: the object counting its
        reports and holding the queue and key: the shuffler, or a front end's stand-in)."""
        batch = _Open(shuffler, self.network.current_phase, kind, durable)
        with self.lock:
            self.open, self.shuffler = batch, shuffler
        return batch

    def close(self) -> None:
        """The open batch takes no more reports: a later one is acknowledged and not taken if its host had closed
        the batch (a restarted host's), else held for a batch to open, up to the deadline (:meth:`_verdict`)."""
        with self.lock:
            self.open = None

    def await_message(self, peer: str, busy_at=lambda: 0.0) -> None:
        """Until a message from ``peer`` waits on its link, raising a failure of the intake thread at once; ``peer``
        is lost when nothing comes within the network's deadline of the later of now and ``busy_at()`` (when one of
        its devices last sent)."""
        link, since = self.network.link(peer), time.monotonic()
        while not (link.queue or link.has_data()):
            if self.failure is not None:
                raise self.failure
            if select.select([link.sock], [], [], POLL_S)[0]:
                return  # bytes on the wire: the message (or the peer's failure), read by the caller
            if time.monotonic() - max(since, busy_at()) > self.network.deadline and not link.has_data():
                raise self.network.lost_peer(
                    peer, f"neither its message nor a device's report within the "
                    f"{self.network.deadline:g} s deadline")  # fmt: skip

    # -- the intake thread ----------------------------------------------------------------------------
    def _intake(self) -> None:
        from multiprocessing.connection import wait

        try:
            while self.running:
                ready = wait(self.pipes, POLL_S)
                arrived = [(pipe, item) for pipe in ready for item in _drain(pipe)]
                if arrived or self.pending:
                    self._decide(arrived)
        except BaseException as exc:  # the shuffler's thread raises it
            self.failure = exc if isinstance(exc, Exception) else RuntimeError(str(exc))

    def _decide(self, arrived: list) -> None:
        """Decide every report that arrived (and those held for a batch not yet open), store the accepted encoded
        ones in one transaction, then answer."""
        from privbandits.comm.oneshot import count_delivered, devices_of, screen_message

        answers: dict = {}
        fresh = []
        for pipe, item in arrived:
            if item[0] == "dropped":
                self.network.note_dropped(item[1])
                continue
            _, token, party, (kind, seq, depth, payload) = item
            frame = frames.Frame(FrameType(kind), seq, depth, payload)
            envelope = screen_message(frame, party, self.network.local)  # decoded here: workers import no protocol
            if isinstance(envelope, str):
                self.network.note_dropped(envelope)
                answers.setdefault(pipe, []).append((token, FrameType.ABORT, envelope, party))
                continue
            count_delivered(self.network, envelope, party, HEADER_BYTES + len(frame.payload))
            fresh.append((time.monotonic(), pipe, token, party, envelope))
        with self.lock:
            batch, storing = self.open, []
            waiting, self.pending = [*self.pending, *fresh], []
            for item in waiting:
                arrived_at, pipe, token, party, envelope = item
                verdict = self._verdict(batch, party, envelope, time.monotonic() - arrived_at)
                if verdict == "wait":
                    self.pending.append(item)
                elif verdict == "store":
                    storing.append((pipe, token, party, envelope))
                else:
                    answers.setdefault(pipe, []).append((token, *verdict))
            if storing:
                assert batch is not None, "a report is stored only into an open batch"
                for pipe, token, verdict in self._store(batch, storing):
                    answers.setdefault(pipe, []).append((token, *verdict))
        for pipe, verdicts in answers.items():
            for _, frame_type, reason, party in verdicts:
                payload = b"" if frame_type is FrameType.CLOSE else frames.json_payload(reason=reason)
                self.network.count_wire("control", self.network.local, devices_of(party), HEADER_BYTES + len(payload))
            pipe.send([(token, frame_type, reason) for token, frame_type, reason, _ in verdicts])

    def _verdict(self, batch: _Open | None, party: str, envelope, waited: float):
        """"store", "wait" (held for its batch, not open yet: a restarted shuffler's devices may come before it
        opens it), or ``(frame type, reason, party)``: acknowledged (raw report, held), refused or dropped."""
        sender, got = envelope.sender, envelope.message
        if batch is None or envelope.phase != batch.phase or got.kind != batch.kind:
            if self.shuffler is not None and envelope.phase in self.shuffler.closed.get(party, ()):
                self.shuffler.replayed += 1  # a restarted host's device, for a batch its host closed: taken before
                return FrameType.CLOSE, "", party
            if (batch is None or envelope.phase != batch.phase) and waited < self.network.deadline:
                return "wait"
            open_now = "no batch is" if batch is None else f"a batch of {batch.kind!r} in phase {batch.phase!r} is"
            reason = f"a device of {party!r} sent a {got.kind!r} message in phase {envelope.phase!r}; {open_now} open"
            self.network.note_dropped(reason)
            return FrameType.ABORT, reason, party
        batch.seen[party] = time.monotonic()
        shuffler = batch.shuffler
        refusal = shuffler.admission.check(party, sender, getattr(got, "commit", None)) or malformed(got)
        if refusal is not None:  # not a device the deployment gives this host, or a malformed report
            self.network.note_dropped(refusal)
            return FrameType.ABORT, refusal, party
        closed = closed_reason(shuffler)
        if closed is not None:
            shuffler.refused[-1] += 1
            return FrameType.ABORT, closed, party
        if shuffler.first_report_at is None:  # the batch's throughput is timed from here
            shuffler.first_report_at = time.perf_counter()
        shuffler.collected += 1
        if batch.durable and shuffler.replaying:  # its batch was released before a restart
            shuffler.duplicates += 1
            return FrameType.CLOSE, "", party
        if batch.durable:
            return "store"
        batch.held.append((canonical(self.hosts, party, sender), got))
        return FrameType.CLOSE, "", party

    def _store(self, batch: _Open, storing: list) -> list:
        """Store ``storing``'s encoded reports in one transaction (one at a time if the group is refused, so a
        forged report is refused alone); each one's answer."""
        from privbandits.validation import InvalidInputError

        shuffler = batch.shuffler
        rows = []
        for *_, envelope in storing:
            rid = report_id(shuffler.key, envelope.sender)
            rows.append((rid, envelope.sender, envelope.message.code, None, None, envelope.message.sealed.tobytes()))
        try:
            new = shuffler.queue.accept_many(rows)
        except InvalidInputError:
            new = []
            for row in rows:
                try:
                    new.append(shuffler.queue.accept_many([row])[0])
                except InvalidInputError as exc:
                    new.append(str(exc))
        answers = []
        for (pipe, token, party, envelope), row, stored in zip(storing, rows, new, strict=True):
            if isinstance(stored, str):  # refused by the queue: not stored, not counted
                shuffler.collected -= 1
                if "already accepted" in stored:  # a second, different report of the device in this batch
                    stored = shuffler.admission.refuse("duplicate", f"a second report of a device of {party!r} "
                                                       f"in this batch: {stored}")  # names the host, not the device
                self.network.note_dropped(f"a device of {party!r}: {stored}")
                answers.append((pipe, token, (FrameType.ABORT, stored, party)))
                continue
            shuffler.duplicates += not stored  # accepted before (a lost acknowledgement, or a restart)
            batch.ids[row[0]] = canonical(self.hosts, party, envelope.sender)
            answers.append((pipe, token, (FrameType.CLOSE, "", party)))
        return answers

    # -- the end --------------------------------------------------------------------------------------
    def stop(self) -> None:
        """Stop the intake thread and the workers (each answers the connections it holds first)."""
        self.running = False
        if self.thread is not None:
            self.thread.join()
        stop_processes(self.pipes, self.processes, STOP, 5)
        for pipe in self.pipes:
            pipe.close()
        self.pipes, self.processes = [], []


def stop_processes(pipes, processes, message, wait_s: float) -> None:
    """Send ``message`` down each pipe (one already closed is skipped), give each process ``wait_s`` seconds to
    end, then kill and reap those still running."""
    for pipe in pipes:
        try:
            pipe.send(message)
        except OSError:
            pass
    for process in processes:
        process.join(wait_s)
        if process.is_alive():
            process.kill()
            process.join()


def _drain(pipe) -> list:
    """What the worker at ``pipe`` sent since the last drain: its items (each message a list of them)."""
    items = []
    try:
        while pipe.poll():
            items.extend(pipe.recv())
    except EOFError:
        raise ProtocolError("a worker of the shuffler's device front end ended") from None
    return items


# -- a worker process ---------------------------------------------------------------------------------
class _Watch:
    """The worker's pipe to the shuffler, watched by its gate beside the connections."""

    def __init__(self, pipe) -> None:
        self.sock = pipe

    def has_data(self) -> bool:
        return self.sock.poll()


def _serve(listener, pipe, inherited: list, hosts: Collection[str], local: str, context, timeout: float,
           max_payload: int) -> None:  # fmt: skip
    """A worker: take device connections on ``listener``, screen each one's message, pass it to the shuffler and
    answer the device as the shuffler says; end on :data:`STOP` or when the shuffler's end of ``pipe`` closes
    (it first closes the ``inherited`` sockets and pipes of the shuffler: a shuffler that dies is seen at once)."""
    from privbandits.comm.oneshot import screen_connection
    from privbandits.comm.tls.gate import Gate
    from privbandits.comm.tls.link import Link

    for thing in inherited:
        thing.close()
    gate = Gate(listener, context, timeout=timeout, max_payload=max_payload, max_pending=MAX_PENDING)
    waiting: dict[int, Link]
    watch, waiting, token = _Watch(pipe), {}, 0
    try:
        while True:
            arrival = gate.wait(hosts, None, [watch])
            if arrival is None:
                try:
                    answers = pipe.recv()
                except EOFError:
                    return
                if answers == STOP:
                    return
                for number, frame_type, reason in answers:
                    _answer(waiting.pop(number), frame_type, reason, timeout)
                continue
            items: list[tuple] = []  # this arrival and the others of its pass, in one message
            for came in [arrival, *gate.take_arrived()]:
                problem = screen_connection(came, hosts, timeout)
                if problem is not None:
                    if came.link is not None:
                        came.link.shut()
                    items.append(("dropped", problem))
                    continue
                token += 1
                waiting[token] = came.peer_link
                kind, seq, depth, payload = came.first_frame  # plain values pickle three times faster than a Frame
                items.append(("report", token, came.peer_link.peer, (int(kind), seq, depth, bytes(payload))))
            pipe.send(items)
    except (BrokenPipeError, ConnectionResetError):
        return
    finally:
        for link in waiting.values():
            link.shut()
        gate.close()


def _answer(link, frame_type: FrameType, reason: str, timeout: float) -> None:
    """Acknowledge (CLOSE) or refuse (ABORT, with ``reason``) a device's message, and end its connection."""
    try:
        link.set_timeout(timeout)
        link.send(frame_type, 0, b"" if frame_type is FrameType.CLOSE else frames.json_payload(reason=reason))
    except OSError:
        pass  # it went away after sending: a stored message stays stored
    link.shut()
