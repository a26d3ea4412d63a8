"""Served events per second and decision latency of ``privbandits serve`` under N concurrent clients (issue 46).

A served party runs as its own ``privbandits serve`` process on 127.0.0.1 (plain HTTP, the development flag: TLS
costs the same per request whatever the protocol, and is measured by tls_handshake.py). This script is the load
generator: ``--clients`` concurrent clients (asyncio, one keep-alive HTTP connection each, httpx) each ask a decide
for an event, then send its reward, for their share of ``--events`` events. For each number of clients it prints
events (decide + reward) per second, the decide latency's median and 99th percentile and their ratio, and the ratio
of served events per second to the **reference rate**, measured in the same run: the same learner's rounds per second
without a service (in process for the reference learner; ``deploy local``'s rounds per second for a protocol's
deployment). Targets (issue 46, on 2 cores): at 64 clients, served events/s >= 50% of the reference rate, and p99
latency <= 3x the median. The load generator shares the cores with the service: the load average is printed.

Targets (``--target``): ``reference`` (the plaintext reference learner, LinUCB with ``--arms`` arms of ``--dim``
features: the service's own cost, the floor of every protocol's; its reference rate is the learner in process),
``vertical`` (the shipped vertical-vfucb deployment's shape: blocks 40/25/35, 10 arms; every party a ``privbandits
serve`` process, the passive parties' rows put first, the clients asking the active party over TLS; its reference
rate is ``deploy local``'s rounds per second for the same file, from the active party's result), ``mpc`` (the
shipped MPC deployment's shape: blocks 10/10, 10 arms, ``--events`` rounds; every party a process, each level's
blocks put at both computing parties first, the clients asking the environment over TLS; reference: the
environment's rounds per second under ``deploy local``) and ``fclub`` (the shipped FCLUB deployment: five local
servers, 40 users, K = d = 10, reproducible, horizon ``--events``; the global server and every local server a
process, event t sent to its user's local server, each client holding a connection to every local server; reference:
the users party's rounds per second under ``deploy local``).

**The MPC environment keeps one event open at a time** (Alg. 1 updates before the next decision): a decide while
another event is open is refused (409). Concurrency cannot raise its rate; it is measured all the same, the clients
queueing as its applications must (:class:`Turns`: a refused decide waits in line and each close lets the first in
line ask again), the refusals counted and printed. Where a target is missed, ``serve_stages.py`` shows where a served
event's time goes.

    .venv/bin/python benchmarks/serve_load.py                      # about a minute on 2 cores
    .venv/bin/python benchmarks/serve_load.py --clients 1,8,64 --events 4000
    .venv/bin/python benchmarks/serve_load.py --smoke              # seconds
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path

import httpx
import numpy as np
from _smoke import NOTICE, integers, parse_args
from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests" / "serve"), str(ROOT / "tests")]  # the serving tests' process helpers

from serve_process import add_token, start, write_reference  # noqa: E402

from privbandits.serve.decider import DecidedEvent, DecideInput  # noqa: E402
from privbandits.serve.reference import ReferenceDecider, ReferenceLearner  # noqa: E402
from privbandits.validation import Integer, IntegerSequence  # noqa: E402


@dataclass(frozen=True)
class Level:
    """One load level's measurement."""

    clients: int
    events: int
    seconds: float
    latencies: list[float]
    busy: int = 0
    """Decides refused because another event was open (MPC: one event at a time), each asked again (:class:`Turns`)."""
    cpu: dict[str, float] = field(default_factory=dict)
    """CPU seconds per event by process (the served parties' and this load generator's), where measured."""

    @property
    def rate(self) -> float:
        return self.events / self.seconds

    def percentile(self, q: float) -> float:
        return float(np.percentile(self.latencies, q))


def _problem(events: int, arms: int, dim: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Each event's per-arm features and the reward of each arm (Bernoulli of a fixed linear score)."""
    rng = np.random.default_rng(seed)
    features = rng.normal(size=(events, arms, dim)) / np.sqrt(dim)
    theta = rng.normal(size=dim)
    rewards = (rng.random((events, arms)) < 1 / (1 + np.exp(-features @ theta))).astype(float)
    return features, rewards


def reference_rate(learner: ReferenceLearner, features: np.ndarray, rewards: np.ndarray) -> float:
    """The reference learner's rounds per second in process (decide, then absorb the reward), no service; timed
    after a first pass over the events has warmed it up (as the service is warmed up by the levels before)."""
    for _warm_then_timed in range(2):
        decider = ReferenceDecider(learner)
        started = time.perf_counter()
        for t in range(len(features)):
            decision = decider.decide(DecideInput(f"e{t}", "u", features[t]))
            event = DecidedEvent(f"e{t}", "u", decision.arm, decision.propensity, 0, decision.event_state)
            decider.absorb(event, float(rewards[t, decision.arm]))
    return len(features) / (time.perf_counter() - started)


@dataclass(frozen=True)
class Events:
    """What the clients send: each event's user, features (the served party's own) and every arm's reward."""

    users: list[str]
    features: np.ndarray
    rewards: np.ndarray
    route: list[int] | None = None
    """Each event's endpoint, an index into the endpoints driven (None: the first for every event)."""


@dataclass(frozen=True)
class Endpoint:
    """Where the clients send it: the party's URL, a token, and for TLS the CA and the name in its certificate."""

    url: str
    token: str
    ca: Path | None = None
    server_name: str | None = None


@dataclass
class Turns:
    """The clients' view of a party that keeps one event open at a time (the MPC environment), as its applications
    must treat it: one line, first come first served. A decide joins the back of the line while others wait in it; a
    decide refused (409) because another event is open waits in line (at its front if it had been let through
    already); each close lets the first in line ask (at once if a close came since its decide was sent)."""

    closes: int = 0
    refused: int = 0
    line: deque[asyncio.Future] = field(default_factory=deque)

    def closed(self) -> None:
        self.closes += 1
        while self.line:
            waiter = self.line.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return

    async def wait(self, front: bool = False) -> None:
        waiter = asyncio.get_running_loop().create_future()
        self.line.appendleft(waiter) if front else self.line.append(waiter)
        await waiter


async def _post(http: httpx.AsyncClient, path: str, body: dict, extensions: dict) -> httpx.Response:
    """``POST path`` sent again if the server closed the keep-alive connection as it went out (its idle timeout: a
    client's connection to one of several parties may sit idle that long); the API is idempotent by event id."""
    for attempt in range(3):
        try:
            return await http.post(path, json=body, extensions=extensions)
        except httpx.RemoteProtocolError:
            if attempt == 2:
                raise
    raise AssertionError("unreachable")


async def _decide(http: httpx.AsyncClient, body: dict, extensions: dict, turns: Turns | None) -> httpx.Response:
    """``POST /v1/decide``; with ``turns``, in line (:class:`Turns`) and asked again while refused for an open event."""
    if turns is not None and turns.line:
        await turns.wait()
    for attempt in itertools.count():
        seen = 0 if turns is None else turns.closes
        answer = await _post(http, "/v1/decide", body, extensions)
        if turns is None or answer.status_code != 409 or "still open" not in answer.text:
            return answer
        turns.refused += 1
        if turns.closes == seen:
            await turns.wait(front=attempt > 0)
    raise AssertionError("unreachable")


async def _client(https: list[httpx.AsyncClient], mine: range, run: str, data: Events, latencies: list[float],
                  extensions: list[dict], turns: Turns | None) -> None:  # fmt: skip
    for t in mine:
        at = 0 if data.route is None else data.route[t]
        http, extension = https[at], extensions[at]
        started = time.perf_counter()
        body = {"event_id": f"{run}-{t}", "user_id": data.users[t], "features": data.features[t].tolist()}
        answer = await _decide(http, body, extension, turns)
        latencies.append(time.perf_counter() - started)
        answer.raise_for_status()
        arm = answer.json()["arm"]
        acked = await _post(http, "/v1/reward", {"event_id": f"{run}-{t}", "reward": float(data.rewards[t, arm])},
                            extension)  # fmt: skip
        acked.raise_for_status()
        if turns is not None:
            turns.closed()


def _http(endpoint: Endpoint) -> tuple[httpx.AsyncClient, dict]:
    """One keep-alive connection to ``endpoint`` and the request extensions it needs (TLS: the party's name)."""
    limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
    verify: ssl.SSLContext | bool = True if endpoint.ca is None else ssl.create_default_context(cafile=endpoint.ca)
    extensions = {} if endpoint.server_name is None else {"sni_hostname": endpoint.server_name}
    http = httpx.AsyncClient(base_url=endpoint.url, headers={"Authorization": f"Bearer {endpoint.token}"},
                             limits=limits, timeout=120.0, verify=verify)  # fmt: skip
    return http, extensions


async def drive(endpoint: Endpoint | list[Endpoint], clients: int, data: Events, run: str,
                one_open: bool = False) -> Level:  # fmt: skip
    """``clients`` concurrent clients over the events of ``data`` (event t to client t mod clients), each with a
    connection to every endpoint (event t goes to ``data.route[t]``); ``one_open``: the party keeps one event open at a
    time (:class:`Turns`)."""
    endpoints = endpoint if isinstance(endpoint, list) else [endpoint]
    events = len(data.users)
    latencies: list[float] = []
    turns = Turns() if one_open else None
    connections = [[_http(each) for each in endpoints] for _ in range(clients)]
    started = time.perf_counter()
    try:
        await asyncio.gather(*(_client([http for http, _ in mine], range(i, events, clients), run, data, latencies,
                                       [extension for _, extension in mine], turns)
                               for i, mine in enumerate(connections)))  # fmt: skip
    finally:
        await asyncio.gather(*(http.aclose() for mine in connections for http, _ in mine))
    return Level(clients, events, time.perf_counter() - started, latencies, 0 if turns is None else turns.refused)


def run_reference(args: argparse.Namespace) -> tuple[list[Level], float]:
    """Serve the reference learner and drive it at each level; its levels and the in-process reference rate."""
    settings = {"n_arms": args.arms, "dim": args.dim, "policy": "linucb", "seed": 1}
    features, rewards = _problem(args.events, args.arms, args.dim)
    baseline = reference_rate(ReferenceLearner(**settings), features, rewards)
    data = Events([f"u{t % 97}" for t in range(args.events)], features, rewards)
    levels = []
    with tempfile.TemporaryDirectory() as folder:
        service_file = write_reference(Path(folder), settings, reward_timeout_s=3600, checkpoint_every=1000)
        token = add_token(Path(folder), settings)
        process, url = start(service_file, "--dev-plain-http")
        try:
            for clients in args.clients:
                levels.append(asyncio.run(drive(Endpoint(url, token), clients, data, f"c{clients}")))
        finally:
            process.terminate()
            process.wait(30)
    return levels, baseline


def deploy_local_rate(path: Path, party: str = "active") -> float:
    """``deploy local``'s rounds per second for the deployment at ``path`` (party ``party``'s own timing: the one that
    plays the rounds, the vertical active party, the MPC environment, the FCLUB users party)."""
    command = [sys.executable, "-m", "privbandits", "deploy", "local", str(path)]
    subprocess.run(command, check=True, capture_output=True, env=os.environ | {"PYTHONPATH": os.pathsep.join(sys.path)})
    result = json.loads((path.parent / "out" / f"{party}.result.json").read_text())
    return result["rounds_per_second"] if "rounds_per_second" in result else 1.0 / result["seconds_per_round"]


def run_vertical(args: argparse.Namespace) -> tuple[list[Level], float]:
    """Serve the vertical deployment's four parties and drive its active party at each level; ``deploy local``'s
    rate for the same file first."""
    from vertical_serving import preload_passive, served, served_deployment, wait_linked

    from privbandits.deploy.vertical.party import load_all

    with tempfile.TemporaryDirectory() as folder:
        path, spec = served_deployment(Path(folder), partition=[40, 25, 35], n_arms=10, rounds=args.events, seed=0,
                                       alpha=0.5, reg=1.0, serve_checkpoint_every=100)  # fmt: skip  # as shipped
        baseline = deploy_local_rate(path)
        deploy_local_cpu(path)
        own = load_all(spec, ["active"])["active"]
        data = Events([str(int(user)) for user in own.users], own.features, own.reward_table)
        levels = []
        with served(path, spec) as (parties, clients):
            preload_passive(spec, clients)
            wait_linked(clients["active"])
            active = parties["active"]
            endpoint = Endpoint(active.url, clients["active"]._http.headers["Authorization"].split()[1],
                                spec.parties["active"].ca, "active")  # fmt: skip
            processes = {name: party.process.pid for name, party in parties.items()}
            for count in args.clients:
                levels.append(measured(partial(asyncio.run, drive(endpoint, count, data, f"c{count}")), processes))
    return levels, baseline


def deploy_local_cpu(path: Path) -> None:
    """Print ``deploy local``'s CPU per round by party, from its parties' results (those that time it)."""
    spent = {}
    for result in sorted((path.parent / "out").glob("*.result.json")):
        seconds = json.loads(result.read_text()).get("cpu_seconds_per_round")
        if seconds is not None:
            spent[result.name.split(".")[0]] = seconds
    if spent:
        each = ", ".join(f"{name} {seconds * 1e3:.2f}" for name, seconds in spent.items())
        Console().print(f"deploy local, CPU ms per round by process: {each} (total {sum(spent.values()) * 1e3:.2f})")


def cpu_seconds(processes: dict[str, int]) -> dict[str, float]:
    """CPU seconds (user + system) each process of ``{name: pid}`` has used so far (Linux's /proc), and this one's
    as ``load generator``; empty where /proc is not there."""
    ticks = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    used = {}
    try:
        for name, pid in processes.items():
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            used[name] = (int(fields[11]) + int(fields[12])) / ticks
    except OSError:
        return {}
    return {**used, "load generator": time.process_time()}


def measured(level: Callable[[], Level], processes: dict[str, int]) -> Level:
    """``level()`` with the CPU each process used over it, per event."""
    before = cpu_seconds(processes)
    done = level()
    after = cpu_seconds(processes)
    if before and after:
        done = replace(done, cpu={name: (after[name] - before[name]) / done.events for name in after})
    return done


async def put_blocks(endpoint: Endpoint, rows: dict[str, np.ndarray], connections: int = 8) -> None:
    """``POST /v1/features`` of every ``{key: row}`` to ``endpoint`` (a feature holder), over ``connections``
    concurrent connections."""
    keys = list(rows)

    async def put(http: httpx.AsyncClient, extensions: dict, mine: list[str]) -> None:
        for key in mine:
            body = {"key": key, "features": [rows[key].tolist()]}
            (await http.post("/v1/features", json=body, extensions=extensions)).raise_for_status()

    https = [_http(endpoint) for _ in range(connections)]
    try:
        await asyncio.gather(*(put(http, extensions, keys[i::connections])
                               for i, (http, extensions) in enumerate(https)))  # fmt: skip
    finally:
        await asyncio.gather(*(http.aclose() for http, _ in https))


def run_mpc(args: argparse.Namespace) -> tuple[list[Level], float]:
    """Serve the MPC deployment's four parties (dealer, two computing parties, the environment) and drive the
    environment at each level, each level's blocks put at both computing parties first; ``deploy local``'s rate for
    the same file first. The environment keeps one event open at a time: a decide refused (409) while another event
    is open is asked again once a reward closed one (:class:`Turns`), so concurrency cannot raise the rate."""
    from mpc_serving import make_served_deployment, served, synthetic

    from privbandits.deploy.deployment import load_deployment

    with tempfile.TemporaryDirectory() as folder:
        path = make_served_deployment(Path(folder), partition=[10, 10], n_arms=10, rounds=args.events, seed=0,
                                      epsilon=0.1, deadline_s=30.0)  # fmt: skip
        spec = load_deployment(path)
        environment, computing = spec.names("environment")[0], spec.names("computing")
        baseline = deploy_local_rate(path, environment)
        deploy_local_cpu(path)
        blocks, rewards = synthetic(spec)
        data = Events(["u"] * args.events, np.zeros((args.events, 1, 1)), rewards)
        levels = []
        with served(path) as running:
            ends = {name: Endpoint(running.urls[name], running.tokens[name], spec.parties[name].ca, name)
                    for name in [environment, *computing]}  # fmt: skip
            for count in args.clients:
                for name in computing:
                    rows = {f"c{count}-{t}": blocks[name][t] for t in range(args.events)}
                    asyncio.run(put_blocks(ends[name], rows))
                level = partial(asyncio.run, drive(ends[environment], count, data, f"c{count}", one_open=True))
                levels.append(measured(level, {name: process.pid for name, process in running.processes.items()}))
    return levels, baseline


def run_fclub(args: argparse.Namespace) -> tuple[list[Level], float]:
    """Serve the FCLUB deployment's global server and five local servers and drive the local servers at each level
    (event t to its user's local server), the synthetic arrivals of ``deploy``'s users party; ``deploy local``'s rate
    for the same file (reproducible, horizon ``--events``) first."""
    from fclub_serving import add_token, arrivals, owner_of, serve_all, served_copy, stop_all

    with tempfile.TemporaryDirectory() as folder:
        spec = served_copy(Path(folder), servers=5, horizon=args.events)
        baseline = deploy_local_rate(Path(spec.source), "users")
        names = spec.names("local_server")
        tokens = {name: add_token(spec, name) for name in ["global", *names]}
        rounds, owner = arrivals(spec), owner_of(spec)
        users = [user for user, _, _ in rounds]
        contexts, drawn = np.array([row[1] for row in rounds]), np.array([row[2] for row in rounds])
        data = Events([str(user) for user in users], contexts, drawn, [names.index(owner[user]) for user in users])
        processes, urls = serve_all(spec)
        try:
            ends = [Endpoint(urls[name], tokens[name], spec.parties[name].ca, name) for name in names]
            pids = {name: process.pid for name, process in processes.items()}
            levels = [measured(partial(asyncio.run, drive(ends, count, data, f"c{count}")), pids)
                      for count in args.clients]  # fmt: skip
        finally:
            stop_all(processes)
    return levels, baseline


def report(levels: list[Level], baseline: float, args: argparse.Namespace) -> None:
    console = Console()
    title = f"Served events/s, target {args.target!r} ({args.events} events per level); load {os.getloadavg()[0]:.1f}"
    table = Table(title=title)
    for column in ("clients", "events/s", "p50 ms", "p99 ms", "p99/p50", "vs reference", "targets (64 clients)"):
        table.add_column(column, justify="right")
    for level in levels:
        p50, p99 = level.percentile(50), level.percentile(99)
        share, spread = level.rate / baseline, p99 / p50
        judged = "" if level.clients != 64 or args.smoke else (
            f"rate {'met' if share >= 0.5 else 'missed'}, p99 {'met' if spread <= 3 else 'missed'}")
        table.add_row(str(level.clients), f"{level.rate:,.0f}", f"{p50 * 1e3:.2f}", f"{p99 * 1e3:.2f}",
                      f"{spread:.1f}", f"{share:.0%}", judged)  # fmt: skip
    console.print(table)
    for level in levels:
        if level.busy:
            console.print(f"{level.clients} clients: {level.busy} decides refused (409) while another event was open, "
                          "each asked again in line after a close (one event open at a time)")  # fmt: skip
    for level in levels:
        if level.cpu:
            spent = ", ".join(f"{name} {seconds * 1e3:.2f}" for name, seconds in level.cpu.items())
            total, wall = sum(level.cpu.values()) * 1e3, level.seconds / level.events * 1e3
            console.print(f"{level.clients} clients, CPU ms per event by process: {spent} (total {total:.2f}; wall "
                          f"{wall:.2f})")  # fmt: skip
    median = statistics.median(latency for level in levels for latency in level.latencies)
    what = "the learner without a service" if args.target == "reference" else "deploy local, the same file"
    console.print(f"reference rate ({what}, same run): {baseline:,.0f} rounds/s; "
                  f"median decide latency over all levels {median * 1e3:.2f} ms")
    if args.smoke:
        console.print(NOTICE)


TARGETS = {"reference": run_reference, "vertical": run_vertical, "mpc": run_mpc, "fclub": run_fclub}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", choices=sorted(TARGETS), default="reference", help="what is served")
    parser.add_argument("--clients", type=integers, default=(1, 8, 64), help="concurrent clients, comma-separated")
    parser.add_argument("--events", type=int, default=3000, help="events per load level")
    parser.add_argument("--arms", type=int, default=10, help="arms (reference target)")
    parser.add_argument("--dim", type=int, default=8, help="features per arm (reference target)")
    checks = {"clients": IntegerSequence(low=1, min_length=1), "events": Integer(1), "arms": Integer(2, 1000),
              "dim": Integer(1, 4096)}  # fmt: skip
    args = parse_args(parser, checks, events=60, clients=(1, 4))
    levels, baseline = TARGETS[args.target](args)
    report(levels, baseline, args)


if __name__ == "__main__":
    main()
