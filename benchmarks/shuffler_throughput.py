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
    and ``workers`` front-end processes."""
    text = re.sub(r'address = "127\.0\.0\.1:\d+"', 'address = "127.0.0.1:0"', EXAMPLE.read_text())
    text = text.replace("deadline_s = 30 ", "deadline_s = 300 ")
    text = text.replace('tie_break = "random"', f'tie_break = "random"\nworkers = {workers}')
    text = text.replace('output = "out"', f'output = "out{workers}"')
    path = folder / f"p2b-{workers}.toml"
    path.write_text(text)
    return path


def measure(folder: Path, workers: int, devices: int, processes: int, concurrency: int) -> dict:
    """One load run against a fresh shuffler and server with ``workers`` front-end processes."""
    from privbandits.deploy.certs import write_bundles
    from privbandits.deploy.deployment import load_deployment
    from privbandits.deploy.local import wait_parties
    from privbandits.deploy.p2b_load import LoadSettings, run_load, start_service

    spec = load_deployment(deployment_file(folder, workers))
    if not spec.bundles.exists():
        write_bundles(spec.bundles, list(spec.parties))
    resolved, started, listeners = start_service(spec, folder)
    try:
        result = run_load(resolved, LoadSettings(devices, 0.0, processes, concurrency), listeners=listeners)
        codes = wait_parties(started, 60)
    finally:
        for party in started:
            if party.process.poll() is None:
                party.process.kill()
    if any(codes.values()) or result.counts["failed"]:
        sys.exit(f"workers = {workers}: {result.counts}, parties {codes}: "
                 + "; ".join(p.last_error for p in started if codes[p.name]))  # fmt: skip
    return result.summary() | {"load": os.getloadavg()[0]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--devices", type=int, default=6000, help="reports per measurement")
    parser.add_argument("--serial-devices", type=int, default=2000, help="reports through the serial front end")
    parser.add_argument("--processes", type=int, default=2, help="load-generator processes")
    parser.add_argument("--concurrency", type=int, default=16, help="connections in flight per process")
    args = parse_args(parser, devices=60, serial_devices=30, concurrency=4)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    counts = sorted({1, 2, cores})
    print(f"P2B shuffler over mutual TLS, one connection per report; {cores} cores here; load generator: "
          f"{args.processes} processes x {args.concurrency} connections, unpaced")  # fmt: skip
    with tempfile.TemporaryDirectory() as folder:
        runs = {0: measure(Path(folder), 0, args.serial_devices, args.processes, args.concurrency)}
        for workers in counts:
            runs[workers] = measure(Path(folder), workers, args.devices, args.processes, args.concurrency)
    serial = runs[0]["accepted_per_s"]
    print(f"{'front end':<22} {'accepted/s':>11} {'x serial':>9} {'p50 ms':>8} {'p90 ms':>8} {'p99 ms':>8} "
          f"{'refused':>8} {'load':>6}")  # fmt: skip
    for workers, run in runs.items():
        name = "serial (workers = 0)" if workers == 0 else f"workers = {workers}"
        latency = run["latency_ms"]
        print(f"{name:<22} {run['accepted_per_s']:>11,.0f} {run['accepted_per_s'] / serial:>9.2f} "
              f"{latency['p50']:>8.1f} {latency['p90']:>8.1f} {latency['p99']:>8.1f} {run['refused']:>8} "
              f"{run['load']:>6.2f}")  # fmt: skip
    best = max(run["accepted_per_s"] for workers, run in runs.items() if workers)
    print(f"target >= 2,000 accepted reports/s on 2 cores: best {best:,.0f}/s "
          f"({'met' if best >= 2000 else 'not met'} here; loadavg {os.getloadavg()[0]:.2f})")


if __name__ == "__main__":
    main()
