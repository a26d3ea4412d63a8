"""Where the CPU goes when the vertical deployment is served under load (issue 46, item 7): CPU milliseconds per
event (decide + reward) of each process at ``--clients`` concurrent clients, and what that allows on this machine.

The setting is ``serve_load.py --target vertical``'s: the shipped vertical-vfucb deployment's shape (blocks 40/25/35,
10 arms), every party a ``privbandits serve`` process on 127.0.0.1, the passive parties' rows put first, the clients
(asyncio, httpx, one keep-alive TLS connection each) asking the active party; a first pass over a few events warms the
services up. Each process's CPU time (user + system, from ``/proc``: Linux) is read before and after the timed pass
(``serve_load.measured``, as its levels are).
The reference, measured in the same run, is ``deploy local``'s rounds per second for the same file: the CPU per event
of all the processes together bounds the served rate at ``cores / cpu`` events per second (when nothing else runs),
printed as a share of the reference rate (issue 46's target: 50% at 64 clients).

``--py-spy PATH``: also sample the active party with py-spy (``--gil``: only the thread holding the GIL, i.e. Python
work, not TLS or the disk) and print its functions by share of the samples.

    .venv/bin/python benchmarks/serve_cpu.py --clients 64 --events 1500
    .venv/bin/python benchmarks/serve_cpu.py --smoke
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import os
import subprocess
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

from _smoke import NOTICE, parse_args
from rich.console import Console
from rich.table import Table
from serve_load import Endpoint, Events, deploy_local_rate, drive, measured

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests")]  # the vertical serving tests' process helpers

from privbandits.validation import Integer  # noqa: E402

WARM_EVENTS = 200
LOAD_GENERATOR = "load generator"
"""What :func:`serve_load.cpu_seconds` names this process."""


def top_functions(raw: Path, count: int = 15) -> list[tuple[str, float]]:
    """The functions with the largest share of py-spy's raw samples (where each sample was, its innermost frame)."""
    own: collections.Counter[str] = collections.Counter()
    for line in raw.read_text().splitlines():
        stack, _, samples = line.rpartition(" ")
        if stack:
            function, _, where = stack.split(";")[-1].partition(" (")
            own[f"{function} ({where.rsplit('/', 1)[-1]}"] += int(samples)
    total = sum(own.values()) or 1
    return [(frame, samples / total) for frame, samples in own.most_common(count)]


def measure(args: argparse.Namespace) -> tuple[dict[str, float], float, float, list[tuple[str, float]]]:
    """CPU ms per event of each process, the served events/s, deploy local's rounds/s, the active party's top
    functions (empty without ``--py-spy``)."""
    from vertical_serving import preload_passive, served, served_deployment, wait_linked

    from privbandits.deploy.vertical.party import load_all

    with tempfile.TemporaryDirectory() as folder:
        path, spec = served_deployment(Path(folder), partition=[40, 25, 35], n_arms=10, rounds=args.events, seed=0,
                                       alpha=0.5, reg=1.0, serve_checkpoint_every=100)  # fmt: skip
        baseline = deploy_local_rate(path)
        own = load_all(spec, ["active"])["active"]
        data = Events([str(int(user)) for user in own.users], own.features, own.reward_table)
        warm = Events(data.users[:WARM_EVENTS], data.features[:WARM_EVENTS], data.rewards[:WARM_EVENTS])
        with served(path, spec) as (parties, clients):
            preload_passive(spec, clients)
            wait_linked(clients["active"])
            endpoint = Endpoint(parties["active"].url, clients["active"]._http.headers["Authorization"].split()[1],
                                spec.parties["active"].ca, "active")  # fmt: skip
            asyncio.run(drive(endpoint, args.clients, warm, "warm"))
            spy, raw = None, Path(folder) / "active.txt"
            if args.py_spy:
                spy = subprocess.Popen([args.py_spy, "record", "--pid", str(parties["active"].process.pid), "--gil",
                                        "--nonblocking", "--format", "raw", "-r", "200", "-o", str(raw)],
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
                time.sleep(1.0)  # attached
            processes = {name: party.process.pid for name, party in parties.items()}
            level = measured(partial(asyncio.run, drive(endpoint, args.clients, data, "timed")), processes)
            spent = {name: seconds * 1e3 for name, seconds in level.cpu.items()}
            top = []
            if spy is not None:
                spy.send_signal(2)  # SIGINT: py-spy writes what it sampled
                spy.wait(60)
                top = top_functions(raw) if raw.exists() else []
    return spent, level.rate, baseline, top


def report(spent: dict[str, float], rate: float, baseline: float, top: list, args: argparse.Namespace) -> None:
    console = Console()
    cores = os.cpu_count() or 1
    total = sum(spent.values())
    title = f"CPU per served event, vertical, {args.clients} clients, {args.events} events"
    title += f"; load {os.getloadavg()[0]:.1f}"
    table = Table(title=title)
    for column in ("process", "CPU ms / event", "share"):
        table.add_column(column, justify="right")
    for name, ms in spent.items():
        table.add_row(name, f"{ms:.2f}", f"{ms / total:.0%}")
    table.add_row("all", f"{total:.2f}", "100%")
    console.print(table)
    served = total - spent[LOAD_GENERATOR]
    bound, parties_bound = cores * 1e3 / total, cores * 1e3 / served
    console.print(f"served {rate:,.0f} events/s; deploy local (same file, same run) {baseline:,.0f} rounds/s")
    console.print(f"{cores} cores at {total:.2f} CPU ms per event allow at most {bound:,.0f} events/s = "
                  f"{bound / baseline:.0%} of deploy local's rate; without the load generator ({served:.2f} ms) "
                  f"{parties_bound:,.0f} events/s = {parties_bound / baseline:.0%}")  # fmt: skip
    if top:
        console.print("active party, py-spy --gil samples by innermost function:")
        for frame, share in top:
            console.print(f"  {share:6.1%}  {frame}")
    if args.smoke:
        console.print(NOTICE)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=64, help="concurrent clients")
    parser.add_argument("--events", type=int, default=1500, help="events of the timed pass")
    parser.add_argument("--py-spy", default="", help="py-spy's path: also sample the active party's functions")
    args = parse_args(parser, {"clients": Integer(1, 4096), "events": Integer(1)}, events=40, clients=4)
    report(*measure(args), args)


if __name__ == "__main__":
    main()
