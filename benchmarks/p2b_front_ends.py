"""The P2B shuffler scaled out (issue 34): the same load through the shuffler alone and through its front ends on
one PostgreSQL queue, in the same run.

A throw-away PostgreSQL server is started in a temporary folder (``initdb``/``pg_ctl``, as the tests do, but with
``fsync`` on: each commit costs what it costs in service). The shipped P2B example with ``queue_url`` on it and
``rejoin_s = 0`` is then loaded by ``deploy load --local`` (:func:`~privbandits.deploy.p2b.load.run_load`): once
with the shuffler taking the devices itself (one front-end worker per core), once with ``--fronts``
``shuffler_front`` parties taking them (the cores shared out: ``max(1, cores // F)`` workers each), the shuffler
then only forming the batch. Each prints the accepted reports per second and latency percentiles; both must put
every report in the one released batch. On one machine the front ends share its cores, so the ratio shows what
scaling out costs here, not what more hosts would give.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
from pathlib import Path

from _smoke import parse_args
from shuffler_throughput import users_for

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the tests' throw-away PostgreSQL server (tests/pg_server.py)


def deployment_file(folder: Path, url: str, fronts: int, workers: int, devices: int) -> Path:
    """The shipped example on ephemeral ports with its queue at ``url``, ``fronts`` front ends, ``workers`` and users
    for ``devices`` reports."""
    text = re.sub(r'address = "127\.0\.0\.1:\d+"', 'address = "127.0.0.1:0"',
                  users_for((ROOT / "configs" / "deploy" / "p2b.toml").read_text(), devices))  # fmt: skip
    text = text.replace("deadline_s = 30 ", "deadline_s = 300 ").replace('output = "out"', f'output = "out{fronts}"')
    text = text.replace('name = "p2b"\n', f'name = "p2b"\nqueue_url = "{url}"\nrejoin_s = 0\nworkers = {workers}\n')
    text += "".join(f'\n[parties.front{i}]\nrole = "shuffler_front"\naddress = "127.0.0.1:0"\n' for i in range(fronts))
    path = folder / f"p2b-{fronts}.toml"
    path.write_text(text)
    return path


def measure(folder: Path, url: str, fronts: int, workers: int, devices: int, processes: int, concurrency: int):
    """One load run; its summary, with the released batch's size."""
    from privbandits.deploy.certs import write_bundles
    from privbandits.deploy.deployment import load_deployment
    from privbandits.deploy.local import wait_parties
    from privbandits.deploy.p2b.load import LoadSettings, run_load, start_service

    spec = load_deployment(deployment_file(folder, url, fronts, workers, devices))
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
        sys.exit(f"fronts = {fronts}: {result.counts}, parties {codes}")
    shuffler = json.loads(resolved.result_path("shuffler").read_text())
    return result.summary() | {"released": shuffler["release"]["encoded"]["received"]}


def main() -> None:
    from pg_server import PostgresServer, unavailable

    from privbandits.deploy.local import usable_cores

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--devices", type=int, default=20000, help="reports per run")
    parser.add_argument("--fronts", type=int, default=2, help="front ends of the scaled-out runs")
    parser.add_argument("--repeat", type=int, default=2, help="runs of each, interleaved")
    parser.add_argument("--processes", type=int, default=2, help="load-generator processes")
    parser.add_argument("--concurrency", type=int, default=16, help="connections in flight per process")
    args = parse_args(parser, devices=40, repeat=1, processes=1, concurrency=4)
    if args.fronts < 1 or args.repeat < 1 or args.devices < 1:
        parser.error(f"--fronts, --repeat and --devices must be >= 1, got {args.fronts}, {args.repeat}, {args.devices}")
    if (why := unavailable()) is not None:
        print(f"not measured: {why}")
        return
    cores = usable_cores()
    print(f"P2B shuffler on PostgreSQL (fsync on), {args.devices:,} reports a run, one connection each; {cores} cores; "
          f"load generator: {args.processes} processes x {args.concurrency} connections, unpaced, on the same cores")
    server = PostgresServer.start(fsync=True)
    rates: dict[int, list[float]] = {0: [], args.fronts: []}
    try:
        with tempfile.TemporaryDirectory() as folder:
            for _ in range(args.repeat):
                for fronts in rates:
                    workers = cores if fronts == 0 else max(1, cores // fronts)
                    run = measure(Path(folder), server.database(), fronts, workers, args.devices, args.processes,
                                  args.concurrency)  # fmt: skip
                    who = "the shuffler alone" if fronts == 0 else f"{fronts} front ends"
                    print(f"  {who:<18} (workers = {workers} each): {run['accepted_per_s']:>8,.0f} accepted/s, "
                          f"p50 {run['latency_ms']['p50']:.1f} ms, p99 {run['latency_ms']['p99']:.1f} ms; "
                          f"{run['released']:,} reports in the released batch")  # fmt: skip
                    if run["released"] != args.devices:
                        sys.exit(f"the released batch holds {run['released']} reports, not {args.devices}")
                    rates[fronts].append(run["accepted_per_s"])
    finally:
        server.stop()
    best = {fronts: max(values) for fronts, values in rates.items()}
    print(f"best: {args.fronts} front ends {best[args.fronts]:,.0f}/s against the shuffler alone {best[0]:,.0f}/s: "
          f"{best[args.fronts] / best[0]:.2f} x, on the same {cores} cores (load average after: "
          f"{' '.join(f'{v:.2f}' for v in os.getloadavg())})")  # fmt: skip


if __name__ == "__main__":
    main()
