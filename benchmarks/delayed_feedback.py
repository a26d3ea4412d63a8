"""Regret when rewards come late: each reward ``k`` events after its decision, against immediate feedback (issue 46).

Each problem is replayed through served parties in process (:func:`privbandits.serve.replay.replay`), event t's
decision asked, then event ``t - k``'s reward sent, for each delay k of ``--delays``, at the same seeds. Printed: the
cumulative regret (mean over ``--seeds``), its ratio to k = 0 (immediate feedback), and uniform random's regret on the
same problem for scale.

Targets (``--target``):

* ``reference``: the plaintext reference learners, LinUCB and ε-greedy, on a linear problem with Bernoulli rewards,
  through a :class:`~privbandits.serve.service.DecisionService` (how much a learner loses to delay, with no protocol
  in the way).
* ``vertical``: the shipped vertical-vfucb deployment's problem (blocks 40/25/35, 10 arms, ``deploy data``'s users
  of ``seed`` = the run's seed), every party's service in this process (the links mutual TLS on 127.0.0.1), the
  passive parties' rows put first, the active party asked through its API; regret from the file's expected rewards.
* ``mpc``: the shipped MPC deployment's problem (blocks 10/10, 10 arms), every party's service in process, each
  computing party's block put before its event's decide. The environment keeps one event open at a time (Alg. 1
  updates before the next decision), so a decide with a reward still owed is refused (409): k > 0 cannot be played,
  and the table says so. Regret from the drawn rewards (the file keeps no expected ones).
* ``fclub``: the shipped FCLUB deployment (five local servers, 40 users, K = d = 10; reproducible), its synthetic
  arrivals decided by each user's local server (the roles in process, linked to the global server by mutual TLS);
  a reward is absorbed k events of the whole federation later; regret from the environment's expected rewards. Two
  rows: the shipped ``paper`` preset (every upload privatized) and the ``reference`` preset (the reference code's:
  noise only in the upload trigger, so the learner learns at this horizon).
* ``p2b``: the shipped P2B deployment's devices, each a :class:`~privbandits.deploy.p2b.agent.DeviceAgent` deciding
  in process on its own state, no report sent. Two rows: the early devices, cold (no model fetched), and the late
  ones, warm from the private model the in-memory run publishes (what ``deploy local``'s server publishes, handed to
  each device as its fetch would: the shuffler and the server are not run). Delay here is in **that device's own
  events**: a device plays ``interactions`` (10) rounds, so k >= 10 means it learns nothing from its own rewards
  before its last decision. Regret from the drawn 0/1 rewards.

    .venv/bin/python benchmarks/delayed_feedback.py                   # about a minute on 2 cores
    .venv/bin/python benchmarks/delayed_feedback.py --target fclub --delays 0,10,100
    .venv/bin/python benchmarks/delayed_feedback.py --smoke           # seconds
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from _smoke import NOTICE, integers, parse_args
from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests")]  # the serving tests' in-process helpers (each protocol's roles, linked)

from privbandits.serve.decider import DecideInput, Refused  # noqa: E402
from privbandits.serve.reference import ReferenceDecider, ReferenceLearner  # noqa: E402
from privbandits.serve.replay import Replayer, replay, service_replayer  # noqa: E402
from privbandits.serve.service import DecisionService, ServiceOptions  # noqa: E402
from privbandits.validation import Integer, IntegerSequence  # noqa: E402

POLICIES = ("linucb", "epsilon-greedy")
Regret = float | str
"""A replay's cumulative regret, or why it could not be played."""


@dataclass(frozen=True)
class Problem:
    """What a replay is scored on: each event's expected (or drawn) reward of every arm."""

    expected: np.ndarray

    @property
    def uniform(self) -> float:
        """Uniform random's expected cumulative regret."""
        return float((self.expected.max(axis=1) - self.expected.mean(axis=1)).sum())


def scored(replayer: Replayer, problem: Problem, delay: int) -> Regret:
    """The replay's cumulative regret, or the refusal that stopped it (a protocol that cannot take the delay)."""
    try:
        return replay(replayer, problem.expected, delay).cumulative_regret
    except Refused as refused:
        return f"refused ({refused.status}): {refused.message}"


# -- reference ---------------------------------------------------------------------------------------------------------
def reference_problem(rounds: int, arms: int, dim: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-arm features, each arm's expected reward (a logistic of a fixed linear score) and Bernoulli draws."""
    rng = np.random.default_rng([seed, 46])
    features = rng.normal(size=(rounds, arms, dim)) / np.sqrt(dim)
    expected = 1 / (1 + np.exp(-3 * features @ rng.normal(size=dim)))
    return features, expected, (rng.random((rounds, arms)) < expected).astype(float)


def reference_runs(args: argparse.Namespace) -> dict[str, Callable[[int, int], tuple[Regret, float]]]:
    """Each reference learner's replay at (delay, seed): its regret and uniform's."""
    rounds = args.rounds or 2000

    def run(policy: str, delay: int, seed: int) -> tuple[Regret, float]:
        features, expected, drawn = reference_problem(rounds, args.arms, args.dim, seed)
        settings = ReferenceLearner(policy=policy, n_arms=args.arms, dim=args.dim, seed=seed)
        with tempfile.TemporaryDirectory() as folder:
            service = DecisionService.open(ReferenceDecider(settings), Path(folder) / "s.sqlite",
                                           ServiceOptions(checkpoint_every=10_000))  # fmt: skip
            try:
                replayer = service_replayer(service, lambda t: DecideInput(f"e{t}", "u", features[t]),
                                            lambda t, arm: drawn[t, arm])  # fmt: skip
                return scored(replayer, Problem(expected), delay), Problem(expected).uniform
            finally:
                service.close()

    return {policy: lambda delay, seed, policy=policy: run(policy, delay, seed) for policy in POLICIES}


# -- vertical ----------------------------------------------------------------------------------------------------------
def vertical_run(args: argparse.Namespace, delay: int, seed: int) -> tuple[Regret, float]:
    """The shipped vertical problem of ``seed`` through every party's service in process, rewards ``delay`` late."""
    from vertical_serving import preload_passive, served_deployment, served_in_process, wait_linked

    from privbandits.deploy.vertical.party import load_all

    with tempfile.TemporaryDirectory() as folder:
        _, spec = served_deployment(Path(folder), partition=[40, 25, 35], n_arms=10, rounds=args.rounds or 500,
                                    seed=seed, alpha=0.5, reg=1.0)  # fmt: skip
        own = load_all(spec, ["active"])["active"]
        assert own.expected_rewards is not None
        problem = Problem(own.expected_rewards)
        with served_in_process(spec) as clients:
            preload_passive(spec, clients)
            wait_linked(clients["active"])
            active = clients["active"]
            replayer = Replayer(
                lambda t: active.decide(f"e{t}", str(int(own.users[t])), own.features[t].tolist()).arm,
                lambda t, arm: active.reward(f"e{t}", float(own.reward_table[t, arm])) and None,
            )
            return scored(replayer, problem, delay), problem.uniform


# -- MPC ---------------------------------------------------------------------------------------------------------------
def mpc_run(args: argparse.Namespace, delay: int, seed: int) -> tuple[Regret, float]:
    """The shipped MPC problem of ``seed`` through every party's service in process, rewards ``delay`` late."""
    from mpc_serving import in_process, make_served_deployment, replayer, synthetic

    from privbandits.deploy.deployment import load_deployment

    with tempfile.TemporaryDirectory() as folder:
        path = make_served_deployment(Path(folder), partition=[10, 10], n_arms=10, rounds=args.rounds or 500,
                                      seed=seed, epsilon=0.1, deadline_s=30.0)  # fmt: skip
        spec = load_deployment(path)
        problem = Problem(synthetic(spec)[1])
        with in_process(path, reward_timeout_s=3600.0) as services:
            return scored(replayer(spec, services), problem, delay), problem.uniform


# -- FCLUB -------------------------------------------------------------------------------------------------------------
def fclub_run(args: argparse.Namespace, delay: int, seed: int, preset: str = "paper") -> tuple[Regret, float]:
    """The shipped FCLUB federation's arrivals of ``seed`` through its roles in process, rewards ``delay`` late (in
    events of the whole federation); ``preset``: the file's (``paper``) or ``reference``."""
    from fclub_serving import InProcess, arrivals_expected, served_copy

    changes = {"\nseed = 0 ": f"\nseed = {seed} ", 'preset = "paper"': f'preset = "{preset}"'}
    with tempfile.TemporaryDirectory() as folder:
        spec = served_copy(Path(folder), servers=5, horizon=args.rounds or 4095, **changes)
        rounds, expected = arrivals_expected(spec)
        federation = InProcess(spec)
        try:
            return scored(federation.replayer(rounds), Problem(expected), delay), Problem(expected).uniform
        finally:
            federation.stop()


# -- P2B ---------------------------------------------------------------------------------------------------------------
def p2b_device(agent, contexts: np.ndarray, drawn: np.ndarray, delay: int) -> tuple[Regret, float]:
    """One device's rounds through its agent, its rewards ``delay`` of its own events late; its regret, uniform's."""
    problem = Problem(np.asarray(drawn, dtype=np.float64))
    replayer = Replayer(lambda t: agent.decide(contexts[t], event_id=f"e{t}").arm,
                        lambda t, arm: agent.reward(f"e{t}", int(drawn[t, arm])) and None)  # fmt: skip
    try:
        return scored(replayer, problem, delay), problem.uniform
    finally:
        agent.close()


def p2b_run(args: argparse.Namespace, delay: int, seed: int, part: str = "early") -> tuple[Regret, float]:
    """The shipped P2B deployment's first ``--devices`` devices of ``part`` (every one by default) of ``seed``, each a
    device agent in process, each device's rewards ``delay`` of its own events late; the regrets summed. The early
    devices start cold; the late ones warm, from the private model that the in-memory run (what ``deploy local``
    equals) publishes, handed to each as its fetch from the server would."""
    from p2b_deployment import local_copy

    from privbandits.deploy.deployment import load_deployment
    from privbandits.deploy.p2b import agent as agents
    from privbandits.deploy.p2b.data import layout, load_host, write_synthetic_data

    seeds = {"\ndata_seed = 0 ": f"\ndata_seed = {seed} ", "\nseed = 0 ": f"\nseed = {seed} "}
    with tempfile.TemporaryDirectory() as folder, published_model(part) as publish:
        spec = load_deployment(local_copy(Path(folder), raw_baseline=False, **seeds))
        write_synthetic_data(spec)
        publish(spec)
        store, regret, uniform = Path(folder) / "devices.sqlite", 0.0, 0.0
        n_early = int(spec.protocol.early_fraction * spec.protocol.n_users)
        first = 0 if part == "early" else n_early
        devices = [(host, local, first + user) for host, block in layout(spec).items()
                   for local, user in enumerate(getattr(block, part))]  # fmt: skip
        hosts = {host: getattr(load_host(spec, host), part) for host in spec.names("device_host")}
        for host, local, user in devices[: args.devices or None]:
            agent = agents.DeviceAgent(spec, host, user, store, fetch_model=part == "late", auto_report=False)
            played, baseline = p2b_device(agent, hosts[host].contexts[local], hosts[host].rewards[local], delay)
            if isinstance(played, str):
                return played, baseline
            regret, uniform = regret + played, uniform + baseline
        return regret, uniform


@contextmanager
def published_model(part: str) -> Iterator[Callable]:
    """For the late devices, ``publish(spec)`` makes the in-memory run's private model what a device's fetch from the
    server returns (the agents' ``fetch_model``, put back at the end); for the early ones, nothing."""
    from privbandits.deploy.p2b import agent as agents

    original, held = agents.fetch_model, {}

    def publish(spec) -> None:
        if part == "late":
            from p2b_serving import reference

            from privbandits.deploy.p2b.messages import ServedModel

            model = reference(spec)[2]
            held["model"] = ServedModel(1, model.first, model.second)

    agents.fetch_model = lambda deployment, host, timeout=10.0: held.get("model")  # type: ignore[assignment]
    try:
        yield publish
    finally:
        agents.fetch_model = original


PROTOCOLS = {"vertical": ("vfucb", vertical_run), "mpc": ("private ε-greedy", mpc_run),
             "fclub": ("cdp-fclub-dc", fclub_run), "p2b": ("device agents", p2b_run)}  # fmt: skip


def runs(args: argparse.Namespace) -> dict[str, Callable[[int, int], tuple[Regret, float]]]:
    """The target's learners, each ``(delay, seed) -> (its regret, uniform's)``."""
    if args.target == "reference":
        return reference_runs(args)
    label, run = PROTOCOLS[args.target]
    if args.target == "p2b":  # the early devices start cold, the late ones warm from the private model
        return {f"{label}, {part} devices ({'cold' if part == 'early' else 'warm'})":
                lambda delay, seed, part=part: p2b_run(args, delay, seed, part)
                for part in ("early", "late")}  # fmt: skip
    if args.target == "fclub":  # the shipped preset, and the reference code's (noise only in the upload trigger)
        return {f"{label}, {preset} preset{' (shipped)' if preset == 'paper' else ''}":
                lambda delay, seed, preset=preset: fclub_run(args, delay, seed, preset)
                for preset in ("paper", "reference")}  # fmt: skip
    return {label: lambda delay, seed: run(args, delay, seed)}


def cell(regrets: list[Regret], base: Regret | None) -> str:
    """The mean regret over seeds and its ratio to k = 0, or the refusal."""
    refused = [regret for regret in regrets if isinstance(regret, str)]
    if refused:
        return refused[0].split(":")[0] + " *"
    mean = float(np.mean(regrets))
    return f"{mean:.1f}" + ("" if not isinstance(base, float) else f" ({mean / base:.2f}x)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", choices=["reference", *PROTOCOLS], default="reference", help="what is replayed")
    parser.add_argument("--delays", type=integers, default=(0, 10, 100), help="delays in events, comma-separated")
    parser.add_argument("--rounds", type=int, default=0, help="events per replay (0: the target's own: 2000 for "
                        "reference, the shipped file's rounds or horizon for a protocol)")  # fmt: skip
    parser.add_argument("--seeds", type=int, default=3, help="seeds per delay (the data's seed for a protocol)")
    parser.add_argument("--arms", type=int, default=5, help="arms (reference)")
    parser.add_argument("--dim", type=int, default=5, help="features per arm (reference)")
    parser.add_argument("--devices", type=int, default=0, help="early devices replayed (p2b; 0: every one)")
    checks = {"delays": IntegerSequence(low=0, min_length=1), "rounds": Integer(0), "seeds": Integer(1),
              "arms": Integer(2, 1000), "dim": Integer(1, 1000), "devices": Integer(0)}  # fmt: skip
    args = parse_args(parser, checks, rounds=60, seeds=1, delays=(0, 5), devices=5)
    what = "events" if args.target != "p2b" else "of each device's own events"
    table = Table(title=f"Cumulative regret, target {args.target!r}, with rewards k {what} late (mean of {args.seeds} "
                        "seeds; ratio to k = 0)")  # fmt: skip
    table.add_column("learner")
    for delay in args.delays:
        table.add_column(f"k = {delay}", justify="right")
    table.add_column("uniform random", justify="right")
    notes: list[str] = []
    for label, run in runs(args).items():
        played = [[run(delay, seed) for seed in range(args.seeds)] for delay in args.delays]
        regrets = [[regret for regret, _ in row] for row in played]
        measured = args.delays[0] == 0 and not any(isinstance(regret, str) for regret in regrets[0])
        base = float(np.mean(regrets[0])) if measured else None
        uniform = float(np.mean([uniform for _, uniform in played[0]]))
        table.add_row(label, *[cell(row, base) for row in regrets], f"{uniform:.1f}")
        notes += sorted({regret for row in regrets for regret in row if isinstance(regret, str)})
    Console().print(table)
    for note in dict.fromkeys(notes):
        Console().print(f"* {note}")
    if args.smoke:
        Console().print(NOTICE)


if __name__ == "__main__":
    main()
