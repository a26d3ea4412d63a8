"""Where a served event's time goes, stage by stage, for a protocol whose served rate misses issue 46's target.

``serve_load.py`` measures the served rate against ``deploy local``'s; this script says why they differ. Every party's
service runs in this process (its role, its event store, its links: mutual TLS on 127.0.0.1), with no HTTP, one
event at a time (decide, then its reward), and each stage of an event is timed where it runs: the decide and the
reward at the deciding party's service, their commits to its store (SQLite, ``synchronous=FULL``), the protocol's
work inside them, and each party's per-round checkpoint (written and fsynced before it acknowledges). Also printed:
the messages and communication rounds the deciding party sent per event, by phase (``serve``: the messages that
drive a served round; the rest: the protocol's own), against what ``deploy local``'s run of the same file sends per
round, and ``deploy local``'s time per round measured in the same run. The parties share one interpreter here (in
``serve_load.py`` each is a process), so the stages' times are upper bounds; their counts are exact.

Targets (``--target``): ``mpc`` (the shipped MPC deployment's shape: blocks 10/10, 10 arms; its environment decides)
and ``fclub`` (the shipped FCLUB federation: the global server and five local servers, reproducible, horizon
``--events``; each event at its user's local server; no message counts).

    .venv/bin/python benchmarks/serve_stages.py --events 300
    .venv/bin/python benchmarks/serve_stages.py --smoke      # seconds
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from _smoke import NOTICE, parse_args
from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "benchmarks")]  # the serving tests' in-process helpers

from privbandits.validation import Integer  # noqa: E402


class Stages:
    """Time spent in each wrapped function, by stage name, summed over calls from any thread."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)
        self.lock = threading.Lock()
        self.only: set[str] | None = None

    @contextmanager
    def wrapped(self, owner: object, name: str, stage: str, thread: str | None = None) -> Iterator[None]:
        """``owner.name`` timed as ``stage`` while inside (only calls from threads whose name starts with
        ``thread``, if given)."""
        original = getattr(owner, name)

        def timed(*args, **kwargs):
            if thread is not None and not threading.current_thread().name.startswith(thread):
                return original(*args, **kwargs)
            started = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                with self.lock:
                    self.seconds[stage] += time.perf_counter() - started
                    self.calls[stage] += 1

        setattr(owner, name, timed)
        try:
            yield
        finally:
            setattr(owner, name, original)

    def clear(self) -> None:
        with self.lock:
            self.seconds.clear()
            self.calls.clear()


def deploy_local(path: Path, party: str) -> tuple[float, list]:
    """``deploy local``'s seconds per round for the file at ``path`` (party ``party``'s timing) and its traffic rows."""
    from serve_load import deploy_local_rate

    rate = deploy_local_rate(path, party)
    result = json.loads((path.parent / "out" / f"{party}.result.json").read_text())
    return 1.0 / rate, result["traffic"]


def sent_per_event(rows: list, party: str, events: int) -> dict[str, tuple[float, float]]:
    """``{phase: (messages, communication rounds)}`` that ``party`` sent per event, from traffic rows."""
    totals: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for phase, sender, _receiver, messages, _size, rounds in rows:
        if sender == party and messages:
            totals[phase][0] += messages / events
            totals[phase][1] = max(totals[phase][1], rounds / events)
    return {phase: (counts[0], counts[1]) for phase, counts in sorted(totals.items())}


def run_mpc(args: argparse.Namespace, stages: Stages) -> tuple[list[tuple[str, float, float]], dict, dict, float]:
    """The MPC stages: ``[(stage, ms per event, calls per event)]``, the environment's traffic per event served and
    in ``deploy local``, and ``deploy local``'s ms per round."""
    from mpc_serving import in_process, make_served_deployment, replayer

    import privbandits.deploy.checkpoint as checkpoint
    import privbandits.deploy.mpc_bandit.serving_environment as environment_module
    import privbandits.serve.store as store_module
    from privbandits.deploy.deployment import load_deployment
    from privbandits.serve.service import DecisionService

    events = args.events
    with tempfile.TemporaryDirectory() as folder:
        path = make_served_deployment(Path(folder), partition=[10, 10], n_arms=10, rounds=events, seed=0,
                                      epsilon=0.1, deadline_s=30.0)  # fmt: skip
        spec = load_deployment(path)
        env = spec.names("environment")[0]
        local_s, local_rows = deploy_local(path, env)
        decider = environment_module.EnvironmentDecider
        timed = [
            (DecisionService, "put", "each computing party's put of its block (its commit), from its application",
             "MainThread"),  # fmt: skip
            (DecisionService, "decide", "decide at the environment's service (all of it)", "MainThread"),
            (decider, "_start_round", "  its round up to the arm (start, ready, go; the MPC argmax)", "MainThread"),
            (store_module.EventStore, "add_decision", "  its commit of the decision", "MainThread"),
            (DecisionService, "reward", "reward at the environment's service (all of it)", "MainThread"),
            (decider, "_close_round", "  its round's close (reward shared, update, acknowledgements)", "MainThread"),
            (checkpoint, "save", "    the environment's round checkpoint (fsync) in it", "MainThread"),
            (store_module.EventStore, "close_event", "  its commit of the reward", "MainThread"),
            (checkpoint, "save", "a computing party's round checkpoint (fsync), before it acknowledges", "mpc-links"),
        ]
        with in_process(path, reward_timeout_s=3600.0) as services:
            events_of = replayer(spec, services)
            events_of.reward(0, events_of.decide(0))  # linked and warm
            network = services[env].decider._party.engine.network
            before = [tuple(row) for row in network.traffic.rows()]
            stages.clear()
            with wrapping(stages, timed):
                started = time.perf_counter()
                for t in range(1, events):
                    events_of.reward(t, events_of.decide(t))
                seconds = time.perf_counter() - started
            rows = subtract(network.traffic.rows(), before)
    played = events - 1
    computing = len(spec.names("computing"))
    share = {stage: played * (computing if "computing party" in stage else 1) for _, _, stage, _ in timed}
    table = [(stage, 1e3 * stages.seconds[stage] / share[stage], stages.calls[stage] / share[stage])
             for _, _, stage, _ in timed]  # fmt: skip
    table.insert(0, ("one event, end to end (decide, then its reward)", 1e3 * seconds / played, 1.0))
    served = sent_per_event(rows, env, played)
    local = sent_per_event([row for row in local_rows if row[0] != "offline"], env, events)
    return table, served, local, 1e3 * local_s


def run_fclub(args: argparse.Namespace, stages: Stages) -> tuple[list[tuple[str, float, float]], dict, dict, float]:
    """The FCLUB stages (the shipped federation: the global server and five local servers, reproducible, horizon
    ``--events``; each event decided and rewarded at its user's local server's service), and ``deploy local``'s ms per
    round (the users party's timing)."""
    from concurrent.futures import ThreadPoolExecutor

    from fclub_serving import arrivals, owner_of, served_copy

    import privbandits.serve.store as store_module
    from privbandits.deploy.fclub.serve_global import ServedGlobalServer
    from privbandits.deploy.fclub.serve_local import ServedLocalServer
    from privbandits.deploy.fclub.served import serving_role
    from privbandits.serve.decider import DecideInput
    from privbandits.serve.service import DecisionService, ServiceOptions

    events = args.events
    with tempfile.TemporaryDirectory() as folder:
        spec = served_copy(Path(folder), servers=5, horizon=events)
        local_s, _ = deploy_local(Path(spec.source), "users")
        names = ["global", *spec.names("local_server")]

        def open_one(name: str) -> DecisionService:  # each waits for the others to link
            return DecisionService.open(serving_role(spec, name), spec.output / f"{name}.serve.sqlite",
                                        ServiceOptions(3600.0, 100))  # fmt: skip

        with ThreadPoolExecutor(len(names)) as pool:
            services = dict(zip(names, pool.map(open_one, names), strict=True))
        rounds, owner = arrivals(spec), owner_of(spec)

        def play(t: int) -> None:
            user, contexts, drawn = rounds[t]
            service = services[owner[user]]
            arm = service.decide(DecideInput(f"e{t}", str(user), contexts)).arm
            service.reward(f"e{t}", float(drawn[arm]))

        timed = [
            (DecisionService, "decide", "decide at the user's local server's service (all of it)", "MainThread"),
            (ServedLocalServer, "decide", "  its arm: the UCB on the user's cluster's statistics", "MainThread"),
            (store_module.EventStore, "add_decision", "  its commit of the decision", "MainThread"),
            (DecisionService, "reward", "reward at the local server's service (all of it)", "MainThread"),
            (ServedLocalServer, "absorb", "  its absorb: the update and the exchange with the global server",
             "MainThread"),  # fmt: skip
            (ServedLocalServer, "_exchange", "    the exchange with the global server in it", "MainThread"),
            (store_module.EventStore, "close_event", "  its commit of the reward", "MainThread"),
            (store_module.EventStore, "write_checkpoint", "  its learner's checkpoint (every 100 changes)",
             "MainThread"),  # fmt: skip
            (ServedGlobalServer, "_phase_start", "the global server's phase starts (t = 2^s - 1), all parties", None),
        ]
        try:
            play(0)  # linked and warm
            stages.clear()
            with wrapping(stages, timed):
                started = time.perf_counter()
                for t in range(1, events):
                    play(t)
                seconds = time.perf_counter() - started
        finally:
            for name in reversed(names):
                services[name].close()
    played = events - 1
    table = [(stage, 1e3 * stages.seconds[stage] / played, stages.calls[stage] / played) for _, _, stage, _ in timed]
    table.insert(0, ("one event, end to end (decide, then its reward)", 1e3 * seconds / played, 1.0))
    return table, {}, {}, 1e3 * local_s


def wrapping(stages: Stages, timed: list) -> ExitStack:
    """Every ``(owner, name, stage, thread)`` of ``timed`` wrapped at once."""
    stack = ExitStack()
    for owner, name, stage, thread in timed:
        stack.enter_context(stages.wrapped(owner, name, stage, thread))
    return stack


def subtract(rows: list, before: list) -> list:
    """Traffic rows less what ``before`` held (the warm-up event)."""
    earlier = {row[:3]: row[3:] for row in before}
    out = []
    for row in rows:
        old = earlier.get(tuple(row[:3]), (0, 0, 0))
        out.append((*row[:3], *(now - then for now, then in zip(row[3:], old, strict=True))))
    return out


TARGETS = {"mpc": run_mpc, "fclub": run_fclub}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", choices=sorted(TARGETS), default="mpc", help="which protocol's served event")
    parser.add_argument("--events", type=int, default=300, help="events decided and rewarded, one at a time")
    args = parse_args(parser, {"events": Integer(2)}, events=12)
    stages = Stages()
    table, served, local, local_ms = TARGETS[args.target](args, stages)
    console = Console()
    out = Table(title=f"Where a served {args.target} event's time goes ({args.events - 1} events, one at a time, every "
                      "party in this process)")  # fmt: skip
    for column, justify in (("stage", "left"), ("ms per event", "right"), ("calls per event", "right")):
        out.add_column(column, justify=justify)  # type: ignore[arg-type]
    for stage, ms, calls in table:
        out.add_row(stage, f"{ms:.2f}", f"{calls:.1f}")
    console.print(out)
    sent = Table(title="Messages the deciding party sent per event (communication rounds), by phase")
    for column in ("phase", "served", "deploy local"):
        sent.add_column(column, justify="right" if column != "phase" else "left")
    for phase in sorted(set(served) | set(local)):
        if max(served.get(phase, (0, 0))[0], local.get(phase, (0, 0))[0]) < 0.05:
            continue  # the session's setup, once
        cells = [f"{c[0]:.1f} ({c[1]:.1f})" if c else "-" for c in (served.get(phase), local.get(phase))]
        sent.add_row(phase, *cells)
    if served or local:
        console.print(sent)
    console.print(f"deploy local, the same file, same run: {local_ms:.2f} ms per round (its parties in processes)")
    if args.smoke:
        console.print(NOTICE)


if __name__ == "__main__":
    main()
