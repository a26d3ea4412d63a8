"""Accepted encoded reports per second through the deployed P2B shuffler over mutual TLS (issue 34).

The shuffler and the server run as party processes on 127.0.0.1 (``deploy load --local``); the
load generator (:mod:`privbandits.deploy.p2b_load`) plays both device hosts, its devices sending one
encoded report each on a connection of its own (a full mutual-TLS 1.3 handshake per report) from
``--processes`` processes with ``--concurrency`` connections in flight each, unpaced. Measured for the
serial front end (``protocol.workers = 0``: the shuffler process takes one connection at a time, the
issue-17 design) and for the concurrent one with 1, 2 and all cores' worker processes, in the same run;
each prints its accepted reports per second, the ratio to the serial front end, latency percentiles and
refusals. Target (issue 34): >= 2,000 accepted reports/s on a 2-core machine. The load generator shares
the machine with the shuffler (its handshakes cost about as much as the shuffler's), so on one machine
the rate is bounded by both; the load average (``os.getloadavg``) is printed beside each measurement.

    .venv/bin/python benchmarks/shuffler_throughput.py              # about a minute on 2 cores
    .venv/bin/python benchmarks/shuffler_throughput.py --smoke      # seconds
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
from pathlib import Path

from _smoke import parse_args

EXAMPLE = Path(__file__).resolve().parents[1] / "configs" / "deploy" / "p2b.toml"


def deployment_file(folder: Path, workers: int) -> Path:
    """The shipped P2B example with ephemeral ports, a long deadline (the server waits for the whole load's batch)
    and ``workers`` front-end processes (with ``rejoin_s = 0``: the concurrent front end excludes rejoining)."""
    text = re.sub(r'address = "127\.0\.0\.1:\d+"', 'address = "127.0.0.1:0"', EXAMPLE.read_text())
    text = text.replace("deadline_s = 30 ", "deadline_s = 300 ")
    text = text.replace('tie_break = "random"', f'tie_break = "random"\nworkers = {workers}\nrejoin_s = 0')
    text = text.replace('output = "out"', f'output = "out{workers}"')
    path = folder / f"p2b-{workers}.toml"
    path.write_text(text)
    return path


def tree_cpu(pids: list[int]) -> float:
    """CPU seconds so far of the live processes ``pids`` and all their descendants (Linux /proc; NaN elsewhere)."""
    try:
        parents = {}
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                parents[int(entry.name)] = (int(fields[1]), int(fields[11]) + int(fields[12]))
    except OSError:
        return float("nan")
    todo, seen, ticks = list(pids), set(), 0
    while todo:
        pid = todo.pop()
        if pid in seen or pid not in parents:
            continue
        seen.add(pid)
        ticks += parents[pid][1]
        todo += [child for child, (parent, _) in parents.items() if parent == pid]
    return ticks / os.sysconf("SC_CLK_TCK")


def measure(folder: Path, workers: int, devices: int, processes: int, concurrency: int, resume: bool) -> dict:
    """One load run against a fresh shuffler and server with ``workers`` front-end processes; also the CPU seconds
    per accepted report of the shuffler and server processes (with the shuffler's workers) while the load ran."""
    from privbandits.deploy.certs import write_bundles
    from privbandits.deploy.deployment import load_deployment
    from privbandits.deploy.local import wait_parties
    from privbandits.deploy.p2b_load import LoadSettings, run_load, start_service

    spec = load_deployment(deployment_file(folder, workers))
    if not spec.bundles.exists():
        write_bundles(spec.bundles, list(spec.parties))
    resolved, started, listeners = start_service(spec, folder)
    try:
        pids, marks = [party.process.pid for party in started], []

        def mark(done: int, total: int) -> None:  # the first call comes once linked, before any report
            if not marks or done == total:
                marks.append(tree_cpu(pids))

        result = run_load(resolved, LoadSettings(devices, 0.0, processes, concurrency, resume=resume),
                          listeners=listeners, on_progress=mark)  # fmt: skip
        service = marks[-1] - marks[0]
        codes = wait_parties(started, 60)
    finally:
        for party in started:
            if party.process.poll() is None:
                party.process.kill()
    if any(codes.values()) or result.counts["failed"]:
        sys.exit(f"workers = {workers}: {result.counts}, parties {codes}: "
                 + "; ".join(p.last_error for p in started if codes[p.name]))  # fmt: skip
    accepted = max(result.counts["accepted"], 1)
    return result.summary() | {"load": os.getloadavg()[0], "service_cpu": service / accepted}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--devices", type=int, default=6000, help="reports per measurement")
    parser.add_argument("--serial-devices", type=int, default=2000, help="reports through the serial front end")
    parser.add_argument("--processes", type=int, default=2, help="load-generator processes")
    parser.add_argument("--concurrency", type=int, default=16, help="connections in flight per process")
    parser.add_argument("--workers", default="1,2,all", help="front-end worker counts to measure (all: every core)")
    parser.add_argument(
        "--no-baselines", action="store_true", help="skip the serial and the no-resumption runs (ratios then n/a)"
    )
    args = parse_args(parser, devices=12, serial_devices=6, processes=1, concurrency=4)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    counts = sorted({cores if count == "all" else int(count) for count in args.workers.split(",")})
    print(f"P2B shuffler over mutual TLS, one connection per report; {cores} cores here; load generator: "
          f"{args.processes} processes x {args.concurrency} connections, unpaced")  # fmt: skip
    plan = [] if args.no_baselines else [(0, False, args.serial_devices), (0, True, args.serial_devices)]
    plan += [(workers, True, args.devices) for workers in counts]
    plan += [] if args.no_baselines else [(cores, False, args.devices)]
    with tempfile.TemporaryDirectory() as folder:
        runs = [(workers, resume, measure(Path(folder), workers, devices, args.processes, args.concurrency, resume))
                for workers, resume, devices in plan]  # fmt: skip
    serial = float("nan") if args.no_baselines else runs[0][2]["accepted_per_s"]
    print(f"{'front end':<21} {'resumed':>7} {'accepted/s':>10} {'x serial':>8} {'p50 ms':>7} {'p90 ms':>7} "
          f"{'p99 ms':>7} {'refused':>7} {'shuffler cpu/report':>19} {'=> /s on':>8} {'load':>5}")  # fmt: skip
    for workers, resume, run in runs:
        name = "serial (workers = 0)" if workers == 0 else f"workers = {workers}"
        latency, cpu = run["latency_ms"], run["service_cpu"]
        print(f"{name:<21} {'yes' if resume else 'no':>7} {run['accepted_per_s']:>10,.0f} "
              f"{run['accepted_per_s'] / serial:>8.2f} {latency['p50']:>7.1f} {latency['p90']:>7.1f} "
              f"{latency['p99']:>7.1f} {run['refused']:>7} {cpu * 1e6:>16,.0f} us {cores / cpu:>5,.0f}/s "
              f"{run['load']:>5.2f}")  # fmt: skip
    best = max(run["accepted_per_s"] for workers, _, run in runs if workers)
    print(f"x serial: against the serial front end without resumption (the issue-17 design), this run. "
          f"'=> /s on {cores}': {cores} cores / the shuffler's and server's CPU per report, the rate if they had the "
          "cores to themselves and the devices were elsewhere (an extrapolation: the load generator shared the cores "
          "here, costing about as much per report)")  # fmt: skip
    print(f"target >= 2,000 accepted reports/s on 2 cores: best measured {best:,.0f}/s "
          f"({'met' if best >= 2000 else 'not met'} here; loadavg {os.getloadavg()[0]:.2f})")


if __name__ == "__main__":
    main()
