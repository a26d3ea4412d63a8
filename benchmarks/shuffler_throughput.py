"""Accepted encoded reports per second through the deployed P2B shuffler over mutual TLS (issue 34).

The shuffler and the server run as party processes on 127.0.0.1 (``deploy load --local``); the
load generator (:mod:`privbandits.deploy.p2b.load`) plays both device hosts, its devices sending one
encoded report each on a connection of its own (a mutual-TLS 1.3 handshake per report, resuming the
host's session unless "resumed" says no) from ``--processes`` processes with ``--concurrency``
connections in flight each, unpaced. Measured for the serial front end (``protocol.workers = 0``: the
shuffler process takes one connection at a time, the issue-17 design, the reference of every ratio)
and for the concurrent one with 1, 2 and all cores' worker processes, in the same run, each
``--repeat`` times interleaved (the median run is shown, every run's rate beside it). Each prints its
accepted reports per second, the ratio to the serial front end, latency percentiles, refusals, and the
CPU per accepted report of the service (shuffler with its workers, server) and of the load generator,
sampled from /proc while the load ran. Target (issue 34): >= 2,000 accepted reports/s on a 2-core
machine. The load generator shares the cores with the shuffler and costs about as much per report,
and the machine may be shared with other work: the load averages before and after are printed, and
the rates the measured CPU per report would allow on idle cores (projections).

With ``--service-cores 1,2,4`` (Linux, a machine with more cores than the largest count) the cores are
*given* instead of shared: for each count k the service (shuffler, its k workers, server) is pinned to k
cores and the load generator (this process and one device-driver process per core) to all the others, so
the rate is the service's on k cores, as with devices elsewhere, unless the load generator's cores are
the bottleneck (their CPU use is printed: near 100% of its cores means the service was not saturated).

First, in this process, what sealing a report (issue 48: its action and reward sealed to the server with HPKE) costs
per report against a report in the clear, the reference, in the same run: CPU on the device (make and encode it), on
the shuffler (decode it and queue it) and on the server (decode the released batch and open it), and the bytes of a
report and of its row in the released batch (``--sealing-reports``; ``--sealing-only`` stops there). The deployment's
devices all seal (the load generator seals each report before its clock starts, so the rates below are the
shuffler's with sealed reports).

    .venv/bin/python benchmarks/shuffler_throughput.py              # about a minute on 2 cores
    .venv/bin/python benchmarks/shuffler_throughput.py --sealing-only
    .venv/bin/python benchmarks/shuffler_throughput.py --no-baselines --workers all --service-cores 1,2,4,8
    .venv/bin/python benchmarks/shuffler_throughput.py --smoke      # seconds
"""

from __future__ import annotations

import argparse
import math
import os
import re
import sys
import tempfile
import time
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

from _smoke import parse_args

EXAMPLE = Path(__file__).resolve().parents[1] / "configs" / "deploy" / "p2b.toml"


def users_for(text: str, devices: int) -> str:
    """The deployment file ``text`` with enough users that ``devices`` early users report (the shuffler admits no
    other device: :mod:`privbandits.deploy.p2b.admission`)."""
    return re.sub(r"n_users = \d+", f"n_users = {max(3000, math.ceil((devices + 2) / 0.7) + 1)}", text)


def deployment_file(folder: Path, workers: int, devices: int = 0) -> Path:
    """The shipped P2B example with ephemeral ports, a long deadline (the server waits for the whole load's batch),
    ``workers`` front-end processes (with ``rejoin_s = 0``, as measured before rejoining was possible with it) and
    users for ``devices`` reports."""
    text = re.sub(r'address = "127\.0\.0\.1:\d+"', 'address = "127.0.0.1:0"', users_for(EXAMPLE.read_text(), devices))
    text = text.replace("deadline_s = 30 ", "deadline_s = 300 ")
    text = text.replace('tie_break = "random"', f'tie_break = "random"\nworkers = {workers}\nrejoin_s = 0')
    text = text.replace('output = "out"', f'output = "out{workers}"')
    path = folder / f"p2b-{workers}.toml"
    path.write_text(text)
    return path


def children(pid: int) -> list[int]:
    """``pid``'s child processes, from each of its tasks' ``children`` file (Linux /proc; empty once it has ended,
    or elsewhere)."""
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return []
    found = []
    for task in tasks:
        try:
            found += [int(child) for child in (task / "children").read_text().split()]
        except OSError:
            pass
    return found


def family(roots: list[int]) -> dict[int, int]:
    """CPU ticks so far (user + system) of ``roots`` and all their descendants (:func:`children`; a process that
    ended meanwhile is left out)."""
    ticks, todo = {}, list(roots)
    while todo:
        pid = todo.pop()
        if pid in ticks:
            continue
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        ticks[pid] = int(fields[11]) + int(fields[12])
        todo += children(pid)
    return ticks


class CpuSampler:
    """CPU seconds spent by the service (shuffler with its workers, server) and by the load generator (this process
    and its device drivers) between the first and the last :meth:`sample` (the first is taken once the load
    generator has started its processes, so their start-up is left out); a process that ends between two samples
    loses its last tenth of a second."""

    def __init__(self, service: list[int], exclude: set[int]) -> None:
        self.service, self.exclude = service, exclude
        self.first: dict[int, int] | None = None
        self.latest: dict[int, tuple[str, int]] = {}
        self.window: list[float] = []
        """When it sampled."""

    def sample(self) -> None:
        self.window.append(time.monotonic())
        service = family(self.service)
        skip = set(service) | self.exclude
        load = {pid: value for pid, value in family([os.getpid()]).items() if pid not in skip}
        if self.first is None:
            self.first = service | load
        for side, ticks in (("service", service), ("load", load)):
            self.latest.update({pid: (side, value) for pid, value in ticks.items()})

    def seconds(self) -> dict[str, float]:
        spent = {"service": 0, "load": 0}
        for pid, (side, value) in self.latest.items():
            spent[side] += value - (self.first or {}).get(pid, 0)
        hertz = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
        return {side: ticks / hertz for side, ticks in spent.items()}


@dataclass(frozen=True)
class Plan:
    """One measurement: ``workers`` front-end processes (0: the serial front end), TLS session resumption or not,
    ``devices`` reports, and ``given`` cores for the service (0: every process shares all cores)."""

    workers: int
    resume: bool
    devices: int
    given: int = 0

    @property
    def name(self) -> str:
        if self.workers == 0:
            return "serial (workers = 0)"
        return f"workers = {self.workers}" + (f", {self.given} cores" if self.given else "")


def pin(pids: Collection[int], cores: Collection[int]) -> None:
    """Every thread of the processes ``pids`` on ``cores`` (threads and processes they start later inherit it); one
    that ended meanwhile is skipped."""
    for pid in pids:
        try:
            tasks = [int(task.name) for task in Path(f"/proc/{pid}/task").iterdir()]
        except OSError:
            continue
        for task in tasks:
            try:
                os.sched_setaffinity(task, cores)
            except OSError:
                pass


def measure(folder: Path, plan: Plan, processes: int, concurrency: int) -> dict:
    """One load run against a fresh shuffler and server with ``plan.workers`` front-end processes; also the CPU
    seconds per accepted report of the service (shuffler, its workers, server) and of the load generator while it
    ran. With ``plan.given`` cores, the service runs on the first ones of this process's cores and the load
    generator on the rest, one device-driver process per core."""
    from privbandits.deploy.certs import write_bundles
    from privbandits.deploy.deployment import load_deployment
    from privbandits.deploy.local import available_cpus, usable_cores, wait_parties
    from privbandits.deploy.p2b.load import LoadSettings, run_load, start_service

    spec = load_deployment(deployment_file(folder, plan.workers, plan.devices))
    if not spec.bundles.exists():
        write_bundles(spec.bundles, list(spec.parties))
    mine = available_cpus()
    service_cores, load_cores = mine[: plan.given], mine[plan.given :]
    processes = len(load_cores) if plan.given else processes
    load_core_count = len(load_cores) if plan.given else usable_cores()
    resolved, started, listeners = start_service(spec, folder)
    try:
        parties = [party.process.pid for party in started]
        helpers = set(family([os.getpid()])) - set(family(parties)) - {os.getpid()}  # e.g. the fork server
        sampler = CpuSampler(parties, helpers)

        def sample() -> None:
            if plan.given:  # a front-end worker started since is pinned too
                pin(family(parties), service_cores)
            sampler.sample()

        if plan.given:
            pin([os.getpid()], load_cores)  # the device drivers started by run_load inherit it
        settings = LoadSettings(plan.devices, 0.0, processes, concurrency, resume=plan.resume)
        result = run_load(resolved, settings, listeners=listeners, on_progress=lambda done, total: sample())
        codes = wait_parties(started, 60)
    finally:
        if plan.given:
            pin([os.getpid()], mine)
        for party in started:
            if party.process.poll() is None:
                party.process.kill()
    if any(codes.values()) or result.counts["failed"]:
        sys.exit(f"{plan.name}: {result.counts}, parties {codes}: "
                 + "; ".join(p.last_error for p in started if codes[p.name]))  # fmt: skip
    accepted = max(result.counts["accepted"], 1)
    spent = sampler.seconds()
    cpu = {side: seconds / accepted for side, seconds in spent.items()}
    window = sampler.window[-1] - sampler.window[0] if len(sampler.window) > 1 else 0.0
    busy = spent["load"] / (window * load_core_count) if window > 0 else float("nan")
    return result.summary() | {"load": os.getloadavg()[0], "service_cpu": cpu["service"], "load_cpu": cpu["load"],
                               "load_busy": busy}  # fmt: skip


TARGET = 2000
"""Accepted reports per second on this 2-core machine (issue 34)."""


def _cpu_us(work, count: int) -> float:
    """CPU microseconds per item of ``work()`` (which handles ``count`` items), the best of three runs."""
    best = float("inf")
    for _ in range(3):
        began = time.process_time()
        work()
        best = min(best, time.process_time() - began)
    return best / count * 1e6


def sealing_cost(count: int, folder: Path) -> dict[str, tuple[float, float]]:
    """Per report, unsealed (the issue's report in the clear) against sealed, in this process: the device's CPU to
    make and encode its report, the shuffler's to decode and store it (its SQLite queue, one group commit), the
    server's to decode the released batch (and open each report), and the bytes of a report and of its row in the
    released batch. ``{what: (unsealed, sealed)}``."""
    import numpy as np

    from privbandits.comm import Envelope, decode, encode
    from privbandits.deploy.p2b.messages import SealedBatch, SealedReport
    from privbandits.deploy.p2b.sealing import Opener, new_private_key, open_batch, public_key, seal
    from privbandits.protocols.p2b.core import EncodedBatch, EncodedReport
    from privbandits.protocols.p2b.queue import SqliteReportQueue

    rng = np.random.default_rng(0)
    rows = np.column_stack([rng.integers(0, 32, count), rng.integers(0, 5, count), rng.integers(0, 2, count)]).tolist()
    private = new_private_key()
    public, opener = public_key(private), Opener(private)

    def device(sealed: bool) -> list[bytes]:
        make = (lambda c, a, r: SealedReport(c, seal(public, c, a, r), "0" * 32)) if sealed else EncodedReport
        return [encode(Envelope("hosta-device1", "shuffler", "share_encoded", make(*row))) for row in rows]

    frames = {sealed: device(sealed) for sealed in (False, True)}
    runs = iter(range(1_000_000))

    def shuffler(sealed: bool) -> None:
        with SqliteReportQueue(folder / f"cost-{next(runs)}.sqlite", n_codes=32, n_arms=5) as queue:
            reports = [decode(frame).message for frame in frames[sealed]]
            queue.accept_many([(f"{i:032x}", "hosta-device1", r.code, None, None, r.sealed.tobytes()) if sealed else
                               (f"{i:032x}", "hosta-device1", r.code, r.action, r.reward)
                               for i, r in enumerate(reports)])  # fmt: skip

    codes, actions, rewards = (np.array(column, dtype=np.int64) for column in zip(*rows, strict=True))
    sealed_rows = np.stack([decode(frame).message.sealed for frame in frames[True]])
    batches = {False: encode(Envelope("shuffler", "server", "share_encoded", EncodedBatch(codes, actions, rewards))),
               True: encode(Envelope("shuffler", "server", "share_encoded", SealedBatch(codes, sealed_rows)))}

    def server(sealed: bool) -> None:
        batch = decode(batches[sealed]).message
        if sealed:
            open_batch(opener, batch.codes, batch.sealed, 5)

    return {
        "device: make and encode a report (us CPU)": tuple(_cpu_us(lambda s=s: device(s), count) for s in (0, 1)),
        "shuffler: decode and queue a report (us CPU)": tuple(_cpu_us(lambda s=s: shuffler(s), count) for s in (0, 1)),
        "server: decode (and open) a released report (us CPU)": tuple(
            _cpu_us(lambda s=s: server(s), count) for s in (0, 1)),
        "bytes of a report (message payload)": (EncodedReport(0, 0, 0).payload_bytes(),
                                                decode(frames[True][0]).message.payload_bytes()),
        "bytes of a released report (its batch row)": (3 * 8, 8 + sealed_rows.shape[1]),
    }  # fmt: skip


def report_sealing(cost: dict[str, tuple[float, float]], count: int) -> None:
    print(f"sealing (HPKE X25519/HKDF-SHA256/AES-128-GCM, pyhpke), {count:,} reports in this process, the best of "
          "three runs each; unsealed: the issue's report (code, action, reward) in the clear, the reference")
    print(f"{'per report':<54} {'unsealed':>9} {'sealed':>9} {'x unsealed':>10} {'sealing adds':>12}")
    for what, (plain, sealed) in cost.items():
        print(f"{what:<54} {plain:>9,.1f} {sealed:>9,.1f} {sealed / plain:>10.2f} {sealed - plain:>12,.1f}")


def main() -> None:
    from privbandits.deploy.local import usable_cores

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--devices", type=int, default=6000, help="reports per measurement")
    parser.add_argument("--serial-devices", type=int, default=2000, help="reports through the serial front end")
    parser.add_argument("--processes", type=int, default=2, help="load-generator processes")
    parser.add_argument("--concurrency", type=int, default=16, help="connections in flight per process")
    parser.add_argument("--workers", default="1,2,all", help="front-end worker counts to measure (all: every core)")
    parser.add_argument("--repeat", type=int, default=1, help="measure each front end this many times, interleaved")
    parser.add_argument(
        "--no-baselines", action="store_true", help="skip the serial and the no-resumption runs (ratios then n/a)"
    )
    parser.add_argument("--sealing-reports", type=int, default=2000, help="reports of the sealing-cost measurement "
                        "(0: skip it)")  # fmt: skip
    parser.add_argument("--sealing-only", action="store_true", help="measure the sealing cost only (no deployment)")
    parser.add_argument(
        "--service-cores", default="", help="core counts given to the service, the load generator on the others "
        "(e.g. 1,2,4; Linux, fewer than this machine's cores); empty: none"
    )  # fmt: skip
    args = parse_args(parser, devices=12, serial_devices=6, processes=1, concurrency=4, repeat=1, sealing_reports=50)
    if args.sealing_reports:
        with tempfile.TemporaryDirectory() as folder:
            report_sealing(sealing_cost(args.sealing_reports, Path(folder)), args.sealing_reports)
    if args.sealing_only:
        return
    cores = usable_cores()
    counts = sorted({cores if count == "all" else int(count) for count in args.workers.split(",") if count})
    given = service_cores(args.service_cores, cores)
    print(f"P2B shuffler over mutual TLS, one connection per report; {cores} cores here; load generator: "
          f"{args.processes} processes x {args.concurrency} connections, unpaced, on the same cores"
          + (" (with k cores given: one process per other core)" if given else ""))  # fmt: skip
    print(f"load average before: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    plan = [] if args.no_baselines else [Plan(0, False, args.serial_devices), Plan(0, True, args.serial_devices)]
    plan += [Plan(workers, True, args.devices) for workers in counts]
    plan += [Plan(k, True, args.devices, given=k) for k in given]
    plan += [] if args.no_baselines else [Plan(cores, False, args.devices)]
    runs: dict[Plan, list[dict]] = {}
    with tempfile.TemporaryDirectory() as folder:
        for _ in range(args.repeat):
            for each in plan:
                runs.setdefault(each, []).append(measure(Path(folder), each, args.processes, args.concurrency))
    report(runs, cores, args.no_baselines)


def service_cores(text: str, cores: int) -> list[int]:
    """The core counts of ``--service-cores`` (comma-separated integers from 1 to ``cores`` - 1), sorted; exits
    with one line naming the option, the allowed values and the value given otherwise."""
    parts = [part.strip() for part in text.split(",") if part.strip()]
    if not parts:
        return []
    wrong = f"--service-cores takes core counts from 1 to {cores - 1} (this process may run on {cores} cores)"
    if not hasattr(os, "sched_setaffinity"):
        sys.exit(f"--service-cores needs os.sched_setaffinity (Linux); got {text!r} on {sys.platform}")
    if not all(part.isdigit() and 1 <= int(part) < cores for part in parts):
        sys.exit(f"{wrong}, comma-separated; got {text!r}")
    return sorted({int(part) for part in parts})


def median_run(runs: list[dict]) -> dict:
    """The run with the median rate (the lower middle one of an even number)."""
    return sorted(runs, key=lambda run: run["accepted_per_s"])[(len(runs) - 1) // 2]


def report(runs: dict[Plan, list[dict]], cores: int, no_baselines: bool) -> None:
    baseline = [median_run(each) for plan, each in runs.items() if plan.workers == 0 and not plan.resume]
    serial = baseline[0]["accepted_per_s"] if baseline and not no_baselines else float("nan")
    print(f"{'front end':<21} {'resumed':>7} {'accepted/s':>10} {'(each run)':>18} {'x serial':>8} "
          f"{'p50 ms':>7} {'p99 ms':>7} {'refused':>7} {'cpu/report: service':>19} {'load gen':>8} {'busy':>5} "
          f"{'load':>5}")  # fmt: skip
    for plan, each in runs.items():
        run = median_run(each)
        rates = " ".join(f"{r['accepted_per_s']:,.0f}" for r in each)
        print(f"{plan.name:<21} {'yes' if plan.resume else 'no':>7} {run['accepted_per_s']:>10,.0f} {rates:>18} "
              f"{run['accepted_per_s'] / serial:>8.2f} {run['latency_ms']['p50']:>7.1f} "
              f"{run['latency_ms']['p99']:>7.1f} "
              f"{run['refused']:>7} {run['service_cpu'] * 1e6:>16,.0f} us {run['load_cpu'] * 1e6:>5,.0f} us "
              f"{run['load_busy']:>5.0%} {run['load']:>5.2f}")  # fmt: skip
    print(
        "x serial: against the serial front end without resumption (the issue-17 design), this run. cpu/report: "
        "CPU seconds per accepted report of the shuffler (with its workers) and server, and of the load generator "
        "(its host threads and device drivers); busy: the load generator's CPU over its cores' time (k cores given: "
        "the others; near 100%, it, not the service, set the rate). The machine may be shared: a run gets the cores "
        "the others leave."
    )  # fmt: skip
    shared = [plan for plan in runs if plan.workers and not plan.given]
    if shared:
        _shared_verdict(runs, shared, cores)
    given = [plan for plan in runs if plan.given]
    if given:
        rates = ", ".join(f"{plan.given}: {median_run(runs[plan])['accepted_per_s']:,.0f}/s" for plan in given)
        print(f"cores given to the service, the load generator on the others (measured): {rates}")
        two = [median_run(runs[plan])["accepted_per_s"] for plan in given if plan.given == 2]
        if two:
            print(
                f"the service on 2 cores with the devices elsewhere: {two[0]:,.0f} accepted/s = "
                f"{two[0] / TARGET:.2f} x the {TARGET:,}/s target ({'met' if two[0] >= TARGET else 'not met'})"
            )


def _shared_verdict(runs: dict[Plan, list[dict]], shared: list[Plan], cores: int) -> None:
    best_plan = max(shared, key=lambda plan: median_run(runs[plan])["accepted_per_s"])
    best = median_run(runs[best_plan])
    both = best["service_cpu"] + best["load_cpu"]
    print(f"best sharing the cores ({best_plan.name}): {best['accepted_per_s']:,.0f} accepted/s = "
          f"{best['accepted_per_s'] / TARGET:.2f} x the {TARGET:,}/s target on {cores} cores "
          f"({'met' if best['accepted_per_s'] >= TARGET else 'not met'} here; load average after: "
          f"{' '.join(f'{v:.2f}' for v in os.getloadavg())})")  # fmt: skip
    if not best["service_cpu"] or not best["load_cpu"]:  # a run shorter than a clock tick (a smoke run)
        print("CPU-bound rates: not projected, the run was too short to measure its CPU time")
        return
    print(f"CPU-bound rates at its CPU per report (projections, not measurements): {cores} idle cores shared with the "
          f"load generator {cores / both:,.0f}/s; the service alone on {cores} cores (devices elsewhere) "
          f"{cores / best['service_cpu']:,.0f}/s")  # fmt: skip


if __name__ == "__main__":
    main()
