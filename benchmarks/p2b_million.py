"""10⁶ device reports through the deployed P2B shuffler into one released batch (issue 34): the time and the peak
memory of each process.

``privbandits deploy load FILE --local --devices N`` on the shipped P2B example with the concurrent front end
(``--workers`` processes, ``rejoin_s = 0``), the SQLite queue and a deadline long enough for the server to wait
for the whole batch: the shuffler and the server are party processes on 127.0.0.1 (forked from one server
process), the load generator plays both device hosts, each device sending one encoded report on a mutual-TLS
connection of its own. It prints what ``deploy load`` printed (accepted reports per second, latency
percentiles, refusals, failures), what the shuffler released (from its result file), the wall time, the load
averages, and each process's peak resident memory (VmHWM, sampled from /proc every second while it ran: a
process is named by its place in the tree: the fork server forks the shuffler, then the server).

    .venv/bin/python benchmarks/p2b_million.py                  # 10^6 devices: about 20 min on 2 busy cores
    .venv/bin/python benchmarks/p2b_million.py --devices 100000
    .venv/bin/python benchmarks/p2b_million.py --smoke          # 300 devices, seconds
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from _smoke import parse_args
from shuffler_throughput import children, deployment_file


def peak_kib(pid: int) -> int:
    """VmHWM of ``pid`` in KiB (0 if it has ended)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    return int(status.split("VmHWM:")[1].split()[0]) if "VmHWM:" in status else 0


class PeakSampler(threading.Thread):
    """Each process of ``root``'s tree: its parent and its peak VmHWM, sampled every second until stopped."""

    def __init__(self, root: int) -> None:
        super().__init__(daemon=True)
        self.root, self.peaks, self.parents, self.running = root, {}, {}, True

    def run(self) -> None:
        while self.running:
            todo = [self.root]
            while todo:
                pid = todo.pop()
                kids = children(pid)
                for kid in kids:
                    self.parents.setdefault(kid, pid)
                todo += kids
                self.peaks[pid] = max(self.peaks.get(pid, 0), peak_kib(pid))
            time.sleep(1.0)

    def named(self) -> list[tuple[str, int]]:
        """(role, peak MiB) per process: the load command, its device drivers, the fork server, the shuffler and the
        server (forked in that order by ``deploy load``'s start_service) and the shuffler's workers."""
        kids = {pid: [k for k, parent in self.parents.items() if parent == pid] for pid in self.peaks}
        names = {self.root: "deploy load (the launcher)"}
        for pid in kids[self.root]:
            forked = kids.get(pid, [])
            if not forked:
                names[pid] = "load generator: device driver process" if self.peaks[pid] > 20_000 else "helper"
                continue
            names[pid] = "fork server (imports the party code once)"
            for party, role in zip(sorted(forked), ("shuffler", "server"), strict=False):  # forked in this order
                names[party] = role
                names.update({worker: f"{role}'s front-end worker" for worker in kids.get(party, [])})
        rows = [(names.get(pid, "other"), kib // 1024) for pid, kib in self.peaks.items() if kib]
        return sorted(rows, key=lambda row: -row[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--devices", type=int, default=1_000_000, help="simulated devices, one report each")
    parser.add_argument("--workers", type=int, default=2, help="the shuffler's front-end processes")
    args = parse_args(parser, devices=300)
    if args.devices < 1 or args.workers < 1:
        parser.error(f"--devices and --workers must be >= 1 (the concurrent front end), got {args.devices} and "
                     f"{args.workers}")  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        path = deployment_file(folder, args.workers, args.devices)
        path.write_text(path.read_text().replace("deadline_s = 300 ", "deadline_s = 3600 "))
        command = [sys.executable, "-m", "privbandits.cli", "deploy"]
        subprocess.run([*command, "certs", str(path)], check=True, capture_output=True, cwd=folder)
        before, start = os.getloadavg(), time.perf_counter()
        load = subprocess.Popen([*command, "load", str(path), "--local", "--devices", str(args.devices),
                                 "--no-progress"], cwd=folder, stdout=subprocess.PIPE, text=True)  # fmt: skip
        sampler = PeakSampler(load.pid)
        sampler.start()
        output, _ = load.communicate()
        sampler.running = False
        seconds = time.perf_counter() - start
        print(output.strip())
        if load.returncode:
            sys.exit(f"deploy load exited {load.returncode}")
        result = json.loads((folder / f"out{args.workers}" / "shuffler.result.json").read_text())
        release = result["release"]["encoded"]
        print(f"shuffler: {result['outcome']}; batches {result['queue']['batches']}, received {release['received']:,}, "
              f"released {release['released']:,}, dropped {release['dropped']:,}; result file "
              f"{(folder / f'out{args.workers}' / 'shuffler.result.json').stat().st_size / 1e6:.1f} MB")  # fmt: skip
    after = os.getloadavg()
    print(f"{args.devices:,} devices, {args.workers} front-end workers, SQLite queue: {seconds:.0f} s in all "
          f"(set-up, load, batch and model); load average {before[0]:.2f} before, {after[0]:.2f} after, "
          f"on {os.cpu_count()} CPUs")  # fmt: skip
    print("peak resident memory (VmHWM) per process:")
    for role, mib in sampler.named():
        print(f"  {role}: {mib:,} MiB")


if __name__ == "__main__":
    main()
