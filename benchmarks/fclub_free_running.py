"""FCLUB's free-running schedule against lock-step (issue 34, item 4), on the shipped deployment example
(configs/deploy/fclub.toml: the faithful CDP-FCLUB-DC, 40 users on 5 local servers, every party a process over
mutual TLS, reproducible so that lock-step equals the in-memory run).

1. Regret over seeds: for each seed the session runs lock-step (checked equal to the in-memory run) and
   free-running; the final cumulative regrets of the two schedules are compared by a two-sample
   Mann–Whitney U test and a Kolmogorov–Smirnov test, and by the paired difference (same seed: same users,
   contexts and reward draws). The free-running runs' crossing counts (deploy/fclub/party.py) are summed.
2. Throughput: rounds per second of one free-running session (then one lock-step session) and of the
   in-process run of the same deployment just after it (the in-memory network, fastest of 3 warm runs),
   their ratio (target for free-running ≥ 0.5), and the load average; then its messages per round (by phase) and
   its downloads against the messages that carried them.
3. CPU per round (``--cpu``; not slowed by other work on the machine, unlike 2): each party started as a
   process of its own (``party run``) and its CPU time read when it exits (``os.wait4``), summed over the
   seven parties, at T and at a short session (their difference over the rounds between: start-up left
   out), against the in-process run's CPU per round; the ceiling their ratio puts on the rounds/s ratio
   of 2 when C cores run the parties is C × in-process CPU / processes' CPU. The lowest run's CPU per round is
   also given party by party (where it goes), and the ceiling with a core per party: in-process CPU / the busiest
   party's (the rounds/s of a pipeline whose stages run side by side is bounded by its slowest stage).

    python benchmarks/fclub_free_running.py                 # 10 seeds, T = 4095
    python benchmarks/fclub_free_running.py --seeds 20 --skip-throughput
    python benchmarks/fclub_free_running.py --skip-regret --skip-throughput --cpu --repeat 3
    python benchmarks/fclub_free_running.py --smoke   # T = 62, one seed, two local servers (the code paths only)
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from _fclub_deployment import prepare_session, run_session
from _smoke import parse_args
from scipy import stats

TARGET = 0.5
REFERENCES = 3
SHORT = 62
"""Rounds of the short session whose CPU ``--cpu`` subtracts (the parties' start-up)."""
"""In-process runs after the session; the fastest counts (a stall of this shared machine cannot flatter the ratio)."""


def regret_over_seeds(seeds: range, horizon: int, preset: tuple[str, str], servers: int) -> None:
    lock, free, crossings = [], [], {}
    for seed in seeds:
        got, reference = run_session(horizon, *preset, seed=seed, servers=servers)
        if not np.array_equal(got["regret"], reference.regret):
            raise SystemExit(f"seed {seed}: the lock-step processes' regret differs from the in-memory run's")
        lock.append(float(got["regret"][-1]))
        got, _ = run_session(horizon, *preset, seed=seed, schedule="free-running", servers=servers)
        free.append(float(got["regret"][-1]))
        for result in got["results"].values():
            for key, count in result.get("crossings", {}).items():
                crossings[key] = crossings.get(key, 0) + count
        print(f"  seed {seed:2d}: lock-step {lock[-1]:8.2f}  free-running {free[-1]:8.2f}", flush=True)
    difference = np.subtract(free, lock)
    print(
        f"final cumulative regret over seeds {seeds.start}..{seeds.stop - 1}, T = {horizon}: "
        f"lock-step {statistics.mean(lock):.1f} "
        f"± {statistics.pstdev(lock):.1f}, free-running {statistics.mean(free):.1f} ± {statistics.pstdev(free):.1f} "
        f"(mean ± sd)\n  paired difference free − lock: {difference.mean():+.1f} ± {difference.std():.1f} "
        f"({(difference > 0).sum()} of {len(seeds)} seeds higher)"
    )
    if len(seeds) >= 2:
        u = stats.mannwhitneyu(free, lock, alternative="two-sided")
        ks = stats.ks_2samp(free, lock)
        print(f"  two-sample tests: Mann–Whitney U p = {u.pvalue:.3f}, Kolmogorov–Smirnov p = {ks.pvalue:.3f}")
    print(f"  crossings summed over the free-running runs: {crossings}")


def throughput(horizon: int, preset: tuple[str, str], servers: int) -> None:
    for schedule in ("free-running", "lock-step"):
        got, reference = run_session(horizon, *preset, schedule=schedule, references=REFERENCES, servers=servers)
        networked = got["results"]["users"]["rounds_per_second"]
        in_process = horizon / reference.seconds
        ratio = networked / in_process
        load = ", ".join(f"{value:.2f}" for value in os.getloadavg())
        verdict = f" (target ≥ {TARGET}: {'met' if ratio >= TARGET else 'not met'})"
        verdict = verdict if schedule == "free-running" else ""
        print(
            f"throughput, T = {horizon}, {schedule}: processes {networked:.0f} rounds/s, in one process "
            f"{in_process:.0f} rounds/s (fastest of {REFERENCES} runs just after), ratio {ratio:.2f}{verdict}; "
            f"load average {load} on {os.cpu_count()} CPUs",
            flush=True,
        )
        print(f"  {messages_per_round(got['results'], horizon)}", flush=True)


def messages_per_round(results: dict, horizon: int) -> str:
    """The session's messages per round, by phase (every party's sent traffic), and its downloads against the
    messages that carried them."""
    sent: dict[str, int] = {}
    for name, result in results.items():
        for phase, sender, _, messages, _, _ in result["traffic"]:
            if sender == name:
                sent[phase] = sent.get(phase, 0) + messages
    downloads = sum(result["counts"]["downloads"] for result in results.values() if result["role"] == "local_server")
    carried = sum(row[3] for row in results["global"]["traffic"] if row[0] == "async" and row[1] == "global")
    by_phase = ", ".join(f"{phase} {count / horizon:.2f}" for phase, count in sorted(sent.items()))
    return (f"messages per round {sum(sent.values()) / horizon:.2f} ({by_phase}); {downloads:,} downloads in "
            f"{carried:,} messages")  # fmt: skip


def party_cpu(horizon: int, preset: tuple[str, str], schedule: str, servers: int) -> dict[str, float]:
    """CPU seconds (user + system) of each party of one session, each a ``party run`` process of its own."""
    with tempfile.TemporaryDirectory() as folder:
        path, spec = prepare_session(Path(folder), horizon, *preset, schedule=schedule, servers=servers, own_ports=True)
        command = [sys.executable, "-m", "privbandits.deploy.cli", "party", "run", str(path), "--as"]
        parties = [subprocess.Popen([*command, name], cwd=folder, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL) for name in spec.parties]  # fmt: skip
        seconds, failed = {}, []
        for name, party in zip(spec.parties, parties, strict=True):
            _, status, usage = os.wait4(party.pid, 0)
            party.returncode = os.waitstatus_to_exitcode(status)
            failed += [f"{name} exited {party.returncode}"] if party.returncode else []
            seconds[name] = usage.ru_utime + usage.ru_stime
        if failed:
            raise SystemExit(f"the {schedule} session (T = {horizon}) failed: {', '.join(failed)}")
        return seconds


def in_process_cpu(horizon: int, preset: tuple[str, str], servers: int) -> float:
    """CPU seconds of the in-process run of the same session (the fastest of REFERENCES, after a warm-up)."""
    from privbandits.deploy.fclub.party import run_in_memory

    with tempfile.TemporaryDirectory() as folder:
        _, spec = prepare_session(Path(folder), horizon, *preset, servers=servers)
        run_in_memory(spec)
        times = []
        for _ in range(REFERENCES):
            start = time.process_time()
            run_in_memory(spec)
            times.append(time.process_time() - start)
    return min(times)


def cpu_per_round(horizon: int, preset: tuple[str, str], servers: int, repeat: int) -> None:
    """Section 3 of the module docstring."""
    reference = in_process_cpu(horizon, preset, servers) / horizon
    print(f"CPU per round, T = {horizon}, {servers} local servers: in one process {1e6 * reference:.0f} µs "
          f"(fastest of {REFERENCES} warm runs)", flush=True)  # fmt: skip
    for schedule in ("free-running", "lock-step"):
        per_round, by_party = [], []
        for _ in range(repeat):
            long_run, short_run = party_cpu(horizon, preset, schedule, servers), party_cpu(SHORT, preset, schedule,
                                                                                          servers)  # fmt: skip
            by_party.append({name: (long_run[name] - short_run[name]) / (horizon - SHORT) for name in long_run})
            per_round.append(sum(by_party[-1].values()))
        best = min(per_round)
        cores_given = sorted({2, os.cpu_count() or 1})
        ceilings = ", ".join(f"{cores} cores {cores * reference / best:.2f}" for cores in cores_given)
        print(f"  {schedule}: the {servers + 2} parties' processes "
              + ", ".join(f"{1e6 * value:.0f}" for value in per_round)
              + f" µs ({best / reference:.1f}× in-process); rounds/s ratio ceiling at the lowest: {ceilings}",
              flush=True)  # fmt: skip
        lowest = by_party[per_round.index(best)]
        print("    the lowest, party by party: " + ", ".join(f"{name} {1e6 * value:.0f}" for name, value in
                                                            lowest.items()) + " µs", flush=True)  # fmt: skip
        busiest = max(lowest, key=lowest.__getitem__)
        print(f"    with a core per party ({servers + 2} cores; projection, not measured here): ratio ceiling "
              f"{reference / lowest[busiest]:.2f}, set by the busiest party, {busiest}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=10, help="seeds of the regret comparison")
    parser.add_argument("--first-seed", type=int, default=0, help="the first seed (to run the seeds in parts)")
    parser.add_argument("--rounds", type=int, default=4095, help="T of each session")
    parser.add_argument("--variant", default="cdp-fclub-dc", help="FCLUB variant (the deployment file's variant)")
    parser.add_argument("--preset", default="paper", help="paper or reference (the deployment file's preset)")
    parser.add_argument("--servers", type=int, default=5, choices=range(1, 6), help="local servers (the example's 5)")
    parser.add_argument("--skip-regret", action="store_true", help="skip the comparison over seeds")
    parser.add_argument("--skip-throughput", action="store_true", help="skip the rounds-per-second measurement")
    parser.add_argument("--cpu", action="store_true", help="also the parties' CPU per round (section 3)")
    parser.add_argument("--repeat", type=int, default=3, help="sessions per schedule of the CPU measurement")
    args = parse_args(parser, seeds=1, rounds=124, servers=2, repeat=1)
    if args.cpu and (args.repeat < 1 or args.rounds <= SHORT):
        parser.error(f"--cpu needs --repeat >= 1 and --rounds > {SHORT} (the short session it subtracts), got "
                     f"{args.repeat} and {args.rounds}")  # fmt: skip
    if not args.skip_regret:
        seeds = range(args.first_seed, args.first_seed + args.seeds)
        regret_over_seeds(seeds, args.rounds, (args.variant, args.preset), args.servers)
    if not args.skip_throughput:
        throughput(args.rounds, (args.variant, args.preset), args.servers)
    if args.cpu:
        cpu_per_round(args.rounds, (args.variant, args.preset), args.servers, args.repeat)


if __name__ == "__main__":
    main()
