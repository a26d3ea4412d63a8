"""A load generator for a deployed P2B shuffler: ``privbandits deploy load DEPLOY.toml --devices N --rate R``.

It plays every ``device_host`` party of the deployment against the running shuffler and server
(``party run --as shuffler`` and ``--as server``; with ``--local`` it starts both on 127.0.0.1
itself): each host links to its peers with its own certificate, waits for the shuffler to open the
encoded batch, has its share of the N simulated devices send one random encoded report each on a
connection of its own over mutual TLS (:func:`~privbandits.comm.oneshot.send_own`, exactly as a
deployed host's devices do; where the shuffler has ``shuffler_front`` parties, device ``u`` sends to front end
``u mod F``, and ``--local`` starts them too), closes the batch and fetches the private model. The devices are driven
from ``processes`` processes with ``concurrency`` connections in flight each, at ``rate`` reports per
second in all (0: as fast as they go). It reports the reports accepted per second (from the first
connection to the last answer), the latency of each report (connection to answer) at p50/p90/p99, the
refused ones (their batch had closed) and the failed ones (no answer).
"""

from __future__ import annotations

import itertools
import multiprocessing
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from privbandits.deploy.deployment import Deployment, DeploymentError
from privbandits.deploy.p2b.section import P2BProtocol

OUTCOMES = ("accepted", "refused", "failed")
MOST_DEVICES = 10_000_000
"""The most devices one ``deploy load`` drives (ten times benchmarks/p2b_million.py's)."""


@dataclass(frozen=True)
class LoadSettings:
    """What ``deploy load`` drives: ``devices`` reports at ``rate`` per second (0: unpaced), from ``processes``
    processes with ``concurrency`` connections in flight each; reports drawn with ``seed``; ``resume``: TLS
    session resumption."""

    devices: int
    rate: float = 0.0
    processes: int = 2
    concurrency: int = 16
    seed: int = 0
    resume: bool = True
    """Each host's devices resume its TLS session (:func:`~privbandits.comm.oneshot.send_own`)."""

    def check(self) -> None:
        """One line naming the first bad setting (DeploymentError)."""
        from privbandits.validation import Integer

        allowed = {"devices": Integer(1, MOST_DEVICES, note="simulated devices, one TLS connection each"),
                   "processes": Integer(1), "concurrency": Integer(1), "seed": Integer(0)}  # fmt: skip
        for name, constraint in allowed.items():
            value = getattr(self, name)
            if not constraint.accepts(value):
                raise DeploymentError(f"--{name} must be {constraint}, got {value!r}")
        if not np.isfinite(self.rate) or self.rate < 0:
            raise DeploymentError(f"--rate must be a number of reports per second >= 0 (0: unpaced), got {self.rate!r}")


@dataclass
class LoadResult:
    """The outcome of a load run: counts, seconds from the first connection to the last answer, latencies (s)."""

    devices: int
    counts: dict[str, int]
    seconds: float
    latencies: np.ndarray = field(repr=False)
    errors: list[str] = field(default_factory=list)
    """Why devices failed (the first failure of each driver's job that had one)."""

    @property
    def rate(self) -> float:
        """Accepted reports per second."""
        return self.counts["accepted"] / self.seconds if self.seconds > 0 else 0.0

    def percentiles(self) -> dict[str, float]:
        """p50, p90 and p99 of the answered reports' latencies, in milliseconds."""
        if not len(self.latencies):
            return {"p50": float("nan"), "p90": float("nan"), "p99": float("nan")}
        values = np.percentile(self.latencies, [50, 90, 99]) * 1000
        return dict(zip(("p50", "p90", "p99"), values.tolist(), strict=True))

    def summary(self) -> dict:
        return {"devices": self.devices, **self.counts, "seconds": self.seconds, "accepted_per_s": self.rate,
                "latency_ms": self.percentiles()}  # fmt: skip


def check_deployment(deployment: Deployment[P2BProtocol], settings: LoadSettings) -> None:
    """Refuse (one line) a deployment the load generator cannot drive, or a paced run longer than the server
    waits for the batch."""
    from privbandits.deploy.p2b.party import receive_deadline

    settings.check()
    if deployment.protocol.name != "p2b":
        raise DeploymentError(
            f"protocol: `deploy load` drives a P2B shuffler; this deployment runs {deployment.protocol.name!r}"
        )
    if deployment.protocol.raw_baseline:
        raise DeploymentError("protocol.raw_baseline: `deploy load` sends encoded reports only; set it to false")
    server = deployment.names("server")[0]
    patience = receive_deadline(deployment, server)
    if settings.rate > 0 and settings.devices / settings.rate > patience:
        raise DeploymentError(
            f"--devices {settings.devices} at --rate {settings.rate:g} take {settings.devices / settings.rate:.0f} s; "
            f"the server waits {patience:.0f} s for the batch (raise deadline_s or n_users, or lower --devices)"
        )
    devices_of(deployment, settings.devices)


def devices_of(deployment: Deployment[P2BProtocol], devices: int) -> list[range]:
    """Each host's devices: the first of its early users (only those the shuffler admits,
    :mod:`~privbandits.deploy.p2b.admission`), ``devices`` in all split as :func:`split` does; refused (one line)
    past a host's block."""
    from privbandits.deploy.p2b.data import layout

    blocks = list(layout(deployment).values())
    shares = [len(share) for share in split(devices, len(blocks))]
    if any(share > len(block.early) for share, block in zip(shares, blocks, strict=True)):
        n_early = blocks[0].n_early
        raise DeploymentError(
            f"--devices must be at most the {n_early} early users the deployment gives its device hosts (the shuffler "
            f"admits no other device), got {devices} (raise n_users or early_fraction, or lower --devices)"
        )
    return [block.early[:share] for share, block in zip(shares, blocks, strict=True)]


def split(total: int, parts: int) -> list[range]:
    """``range(total)`` in ``parts`` contiguous blocks, the first ones one longer."""
    bounds = np.linspace(0, total, parts + 1).round().astype(int)
    return [range(int(a), int(b)) for a, b in itertools.pairwise(bounds)]


# -- the device drivers (processes) ------------------------------------------------------------------
def _drive(pipe, tallies, slot: int, addresses, credentials, concurrency: int, resume: bool) -> None:
    """A driver process: for each job ``(host, receivers, users, rate, deadline, seed, n_codes, n_actions, sealing)``
    (sealing: the server's public key and the host's commitment) from
    ``pipe``, the devices ``users`` of ``host`` send one report each, ``concurrency`` at once, device ``u`` to
    ``receivers[u mod len(receivers)]`` (the shuffler, or its front ends); answers the latencies (NaN: no answer)
    and outcome codes. Ends on None."""
    from privbandits.comm import TlsNetwork
    from privbandits.deploy.p2b.messages import SealedReport
    from privbandits.deploy.p2b.sealing import seal  # each device's report sealed before the clock starts
    from privbandits.deploy.p2b.session import SHARE_ENCODED
    from privbandits.protocols.p2b import core  # noqa: F401 - its messages, imported before the clock starts

    pipe.send("ready")
    while (job := pipe.recv()) is not None:
        host, receivers, users, rate, deadline, seed, n_codes, n_actions, (public, commit) = job
        network = TlsNetwork(host, addresses, credentials[host], peers=[], deadline=deadline)  # devices: no party link
        rng = np.random.default_rng([seed, users.start])
        reports = np.column_stack([rng.integers(0, n_codes, len(users)), rng.integers(0, n_actions, len(users)),
                                   rng.integers(0, 2, len(users))]).tolist()  # fmt: skip
        reports = [SealedReport(code, seal(public, code, action, reward), commit) for code, action, reward in reports]
        latencies, outcomes = np.full(len(users), np.nan), np.zeros(len(users), dtype=np.int8)
        with network.phase(SHARE_ENCODED):
            errors: list[str] = []
            out = (latencies, outcomes, tallies, slot, errors)
            _send_all(network, receivers, users, reports, (rate, concurrency, resume), out)
        pipe.send((latencies, outcomes, errors))


def _send_all(network, receivers: list[str], users: range, reports: list, pace: tuple, out) -> None:
    from privbandits.comm.oneshot import send_own

    latencies, outcomes, tallies, slot, errors = out
    rate, concurrency, resume = pace
    counter, lock, start = itertools.count(), threading.Lock(), time.perf_counter()

    def device() -> None:
        while True:
            with lock:
                index = next(counter)
            if index >= len(users):
                return
            if rate > 0:
                time.sleep(max(0.0, start + index / rate - time.perf_counter()))
            began = time.perf_counter()
            try:
                user = users[index]
                outcome = 0 if send_own(network, f"{network.local}-device{user}", receivers[user % len(receivers)],
                                        reports[index], resume=resume) else 1  # fmt: skip
                latencies[index] = time.perf_counter() - began
            except Exception as exc:  # noqa: BLE001 - no answer (PeerLost, or the connection failed): counted
                outcome = 2
                if not errors:
                    errors.append(f"{type(exc).__name__}: {exc}")
            outcomes[index] = outcome
            tallies[3 * slot + outcome] += 1

    threads = [threading.Thread(target=device, daemon=True) for _ in range(min(concurrency, len(users)))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


class Drivers:
    """``processes`` device-driver processes (spawned once, given one job per host as its batch opens)."""

    def __init__(self, deployment: Deployment[P2BProtocol], settings: LoadSettings) -> None:
        from privbandits.comm import TlsCredentials

        self.settings = settings
        credentials = {name: TlsCredentials(entry.ca, entry.certificate, entry.key)
                       for name, entry in deployment.parties.items() if entry.role == "device_host"}  # fmt: skip
        context = multiprocessing.get_context("spawn")
        self.tallies = context.RawArray("q", 3 * settings.processes)
        self.pipes, self.processes = [], []
        for slot in range(settings.processes):
            here, there = context.Pipe()
            args = (there, self.tallies, slot, deployment.addresses(), credentials, settings.concurrency,
                    settings.resume)
            process = context.Process(target=_drive, args=args, daemon=True)
            process.start()
            there.close()
            self.pipes.append(here)
            self.processes.append(process)
        for pipe in self.pipes:
            if pipe.recv() != "ready":
                raise DeploymentError("a device-driver process of `deploy load` failed to start")
        self.lock = threading.Condition()
        self.turns: list[str] = []
        """The hosts whose jobs went out, in order: each driver answers its jobs in that order, so each host's
        thread reads the pipes only at its turn (two threads reading one pipe would mix their answers)."""
        self.errors: list[str] = []
        """The first failure of each job that had one (why a device got no answer)."""

    def run(self, host: str, receivers: list[str], users: range, deadline: float,
            protocol, sealing: tuple) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
        """Drive ``users`` of ``host`` over every process (the rate shared out), each sending to its receiver
        (see :func:`_drive`); their latencies and outcomes."""
        blocks = split(len(users), len(self.pipes))
        rate = self.settings.rate / len(self.pipes)
        with self.lock:  # one host's jobs go out together
            for pipe, block in zip(self.pipes, blocks, strict=True):
                job = (host, receivers, users[block.start : block.stop], rate, deadline, self.settings.seed,
                       protocol.n_codes, protocol.n_actions, sealing)  # fmt: skip
                pipe.send(job)
            self.turns.append(host)
            self.lock.wait_for(lambda: self.turns[0] == host)
        try:  # only this thread reads the pipes now
            answers = [pipe.recv() for pipe in self.pipes]
        except EOFError:
            codes = [process.exitcode for process in self.processes]
            raise DeploymentError(f"a device-driver process ended (exit codes {codes})") from None
        finally:
            with self.lock:
                self.turns.pop(0)
                self.lock.notify_all()
        self.errors += [error for answer in answers for error in answer[2]]
        return np.concatenate([a[0] for a in answers]), np.concatenate([a[1] for a in answers])

    def done(self) -> int:
        """Reports answered or failed so far (all processes)."""
        return int(sum(self.tallies))

    def close(self) -> None:
        from privbandits.deploy.p2b.front import stop_processes

        stop_processes(self.pipes, self.processes, None, 10)


# -- the hosts (threads of this process) -------------------------------------------------------------
def _play_host(deployment: Deployment[P2BProtocol], network, users: range, drivers: Drivers, out: dict) -> None:
    """One device host: wait for the batch to open, drive its devices, close the batch, fetch the model."""
    from privbandits.comm import Party
    from privbandits.deploy.p2b.admission import commitment
    from privbandits.deploy.p2b.messages import HostCommit, HostDone, ServerKey
    from privbandits.deploy.p2b.party import BatchOpen, FetchModel
    from privbandits.deploy.p2b.scaleout import END, ROLE
    from privbandits.deploy.p2b.session import COMMIT, SHARE_ENCODED
    from privbandits.protocols.p2b.core import CloseBatch, ModelRelease

    party = Party(network.local, network)
    shuffler, server = deployment.names("shuffler")[0], deployment.names("server")[0]
    out["commit"] = commitment(np.random.SeedSequence(), network.local)  # simulated devices: no seed to keep
    with network.phase(COMMIT):
        party.send(shuffler, HostCommit(out["commit"]))
        out["public"] = party.receive(ServerKey, server).public  # what its devices seal to
    with network.phase(SHARE_ENCODED):
        party.receive(BatchOpen.kind, shuffler)
        out["start"] = time.perf_counter()
        receivers = deployment.names(ROLE) or [shuffler]  # the front ends, where it has them
        sealing = (out["public"], out["commit"])
        out["latencies"], out["outcomes"] = drivers.run(network.local, receivers, users, network.deadline,
                                                        deployment.protocol, sealing)  # fmt: skip
        out["end"] = time.perf_counter()
        party.send(shuffler, CloseBatch())
        party.send(server, FetchModel(1))
        party.receive(ModelRelease.kind, server)
    if deployment.names(ROLE):
        with network.phase(END):
            party.send(shuffler, HostDone())  # the shuffler's front ends may close
    network.close()


def run_load(deployment: Deployment[P2BProtocol], settings: LoadSettings, *, listeners: dict | None = None,
             on_progress=None) -> LoadResult:  # fmt: skip
    """Play every device host of ``deployment`` with ``settings.devices`` simulated devices against its running
    shuffler and server (``listeners``: the hosts' bound listening sockets, e.g. from ``deploy load --local``).
    ``on_progress(done, total)`` is called about ten times a second."""
    from privbandits.deploy.p2b.party import PER_REPORT_S, link_order, receive_deadline
    from privbandits.deploy.p2b.scaleout import linked_peers
    from privbandits.deploy.party import network_for

    check_deployment(deployment, settings)
    hosts = deployment.names("device_host")
    parties = {name: entry.model_copy(update={"data": None}) if name in hosts else entry
               for name, entry in deployment.parties.items()}  # fmt: skip
    deployment = deployment.model_copy(update={"parties": parties})  # the hosts' users are simulated here
    deadline = receive_deadline(deployment, hosts[0]) + PER_REPORT_S * settings.devices
    drivers = Drivers(deployment, settings)
    try:
        order = link_order(deployment)
        networks = [network_for(deployment, h, (listeners or {}).get(h), deadline=deadline, order=order,
                                peers=linked_peers(deployment, h)) for h in hosts]  # fmt: skip
        _threads([network.connect for network in networks])
        outs: list[dict] = [{} for _ in hosts]
        blocks = devices_of(deployment, settings.devices)
        plays = [lambda n=n, b=b, o=o: _play_host(deployment, n, b, drivers, o)
                 for n, b, o in zip(networks, blocks, outs, strict=True)]  # fmt: skip
        _threads(plays, None if on_progress is None else lambda: on_progress(drivers.done(), settings.devices))
    finally:
        drivers.close()
    outcomes = np.concatenate([out["outcomes"] for out in outs])
    latencies = np.concatenate([out["latencies"] for out in outs])
    counts = {name: int((outcomes == code).sum()) for code, name in enumerate(OUTCOMES)}
    seconds = max(out["end"] for out in outs) - min(out["start"] for out in outs)
    return LoadResult(settings.devices, counts, seconds, latencies[~np.isnan(latencies)], drivers.errors)


def _threads(targets, tick=None) -> None:
    """Run each of ``targets`` in a thread of its own; the first exception is raised once all have ended."""
    errors: list[BaseException] = []

    def guarded(target) -> None:
        try:
            target()
        except BaseException as exc:  # noqa: BLE001 - handed to the caller
            errors.append(exc)

    threads = [threading.Thread(target=guarded, args=(target,), daemon=True) for target in targets]
    for thread in threads:
        thread.start()
    while any(thread.is_alive() for thread in threads):
        if tick is not None:
            tick()
        time.sleep(0.1)
    if tick is not None:
        tick()
    if errors:
        raise errors[0]


# -- a local shuffler and server ---------------------------------------------------------------------
def start_service(deployment: Deployment[P2BProtocol], workdir: Path):
    """Start the shuffler, its front ends (if any) and the server on 127.0.0.1 (ephemeral ports where the file says
    0) as party processes,
    forked from one process that imported their code once where the platform allows (as ``deploy local``); the
    resolved deployment, the processes, and the hosts' listening sockets (for :func:`run_load`)."""
    from privbandits.deploy import zygote
    from privbandits.deploy.local import child_environment, preload, resolve_local, start_party

    resolved, listeners = resolve_local(deployment)
    path = workdir / "deployment.resolved.toml"
    path.write_text(resolved.to_toml())
    started = []
    server = zygote.ForkServer(preload(resolved), child_environment()) if zygote.available() else None
    try:
        for name in (*resolved.names("shuffler"), *resolved.names("server"), *resolved.names("shuffler_front")):
            listener = listeners.pop(name)
            with listener:  # the child holds its own copy
                started.append(start_party(path, name, listener.fileno(), server=server))  # its stderr collected
    except BaseException:
        for party in started:
            party.process.kill()
        for listener in listeners.values():
            listener.close()
        raise
    finally:
        if server is not None:
            server.done_starting()
    return resolved, started, listeners
