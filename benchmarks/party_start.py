"""CPU a short local deployment spends starting its parties: forked from one pre-imported process, or each
started with ``python -m privbandits.deploy.cli`` (``deploy local``; ``privbandits.deploy.zygote``).

The shipped MPC deployment (``configs/deploy/mpc-epsilon-greedy.toml``: dealer, two computing parties and the
environment) is copied to a temporary folder with ``rounds`` set to ``--rounds`` (default 1, so that starting,
importing and linking up are most of the work), given development certificates and synthetic data, and run
``--repeat`` times each way, alternating. Each session's CPU is the parties' own (user + system, from the
operating system's accounting of the processes reaped), its wall time from start to the last exit; the medians
and their ratio are printed.

Run ``python benchmarks/party_start.py [--rounds 1] [--repeat 5]``.
"""

from __future__ import annotations

import argparse
import re
import resource
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from _smoke import parse_args
from typer.testing import CliRunner

from privbandits.deploy.cli import standalone
from privbandits.deploy.deployment import load_deployment
from privbandits.deploy.local import start_parties, wait_parties

SHIPPED = Path(__file__).resolve().parents[1] / "configs" / "deploy" / "mpc-epsilon-greedy.toml"


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def prepared(folder: Path, rounds: int) -> Path:
    """The shipped MPC deployment in ``folder`` with ``rounds`` rounds, its certificates and data written."""
    path = folder / SHIPPED.name
    shutil.copy(SHIPPED, path)
    path.write_text(re.sub(r"(?m)^rounds = \d+", f"rounds = {rounds}", path.read_text()))
    runner = CliRunner()
    for command in ("certs", "data"):
        done = runner.invoke(standalone, ["deploy", command, str(path)])
        if done.exit_code != 0:
            raise SystemExit(f"deploy {command} failed: {done.output}")
    return path


def session(path: Path, fork: bool) -> tuple[float, float]:
    """One session: the parties' CPU seconds and its wall seconds."""
    spec = load_deployment(path)
    before, start = _children_cpu(), time.perf_counter()
    with tempfile.TemporaryDirectory() as workdir:
        codes = wait_parties(start_parties(spec, Path(workdir), fork=fork), spec.deadline_s)
    wall = time.perf_counter() - start
    if set(codes.values()) != {0}:
        raise SystemExit(f"a party failed: {codes}")
    deadline = time.monotonic() + 5.0  # forked parties are reaped by their server, which we reap once it ends
    while time.monotonic() < deadline and _children_cpu() == before:
        time.sleep(0.05)
    time.sleep(0.2)
    return _children_cpu() - before, wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=1, help="rounds of the session (default 1)")
    parser.add_argument("--repeat", type=int, default=5, help="sessions each way, alternating (default 5)")
    args = parse_args(parser, repeat=1)
    with tempfile.TemporaryDirectory() as folder:
        path = prepared(Path(folder), args.rounds)
        runs: dict[bool, list[tuple[float, float]]] = {True: [], False: []}
        for _ in range(args.repeat):
            for fork in (False, True):
                runs[fork].append(session(path, fork))
    cpu = {fork: statistics.median(c for c, _ in got) for fork, got in runs.items()}
    wall = {fork: statistics.median(w for _, w in got) for fork, got in runs.items()}
    print(f"MPC deployment, 4 parties, {args.rounds} round(s), median of {args.repeat} sessions each way")
    print(f"  started (python -m): CPU {cpu[False]:.2f} s, wall {wall[False]:.2f} s")
    print(f"  forked (one import): CPU {cpu[True]:.2f} s, wall {wall[True]:.2f} s")
    print(f"  CPU ratio started/forked: {cpu[False] / max(cpu[True], 1e-9):.2f}x")


if __name__ == "__main__":
    main()
