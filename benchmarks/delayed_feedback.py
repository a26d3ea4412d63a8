"""Regret when rewards come late: each reward ``k`` events after its decision, against immediate feedback (issue 46).

Each problem is replayed through a served party (:func:`privbandits.serve.replay.replay`, the service in process with
its real store), event t's decision asked, then event ``t - k``'s reward sent, for each delay k of ``--delays``, at
the same seeds. Printed: the cumulative regret (mean over ``--seeds``), its ratio to k = 0 (immediate feedback), and
uniform random's regret on the same problem for scale.

Targets (``--target``): ``reference`` (the plaintext reference learners, LinUCB and ε-greedy, on a linear problem
with Bernoulli rewards: how much a learner loses to delay, with no protocol in the way). A protocol's shipped
deployment is replayed the same way through its served parties (``privbandits serve``) once they have serving roles.

    .venv/bin/python benchmarks/delayed_feedback.py                   # about a minute on 2 cores
    .venv/bin/python benchmarks/delayed_feedback.py --delays 0,10,100,1000 --rounds 5000
    .venv/bin/python benchmarks/delayed_feedback.py --smoke           # seconds
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np
from _smoke import NOTICE, integers, parse_args
from rich.console import Console
from rich.table import Table

from privbandits.serve.decider import DecideInput
from privbandits.serve.reference import ReferenceDecider, ReferenceLearner
from privbandits.serve.replay import Replayer, replay
from privbandits.serve.service import DecisionService, ServiceOptions
from privbandits.validation import Integer, IntegerSequence

POLICIES = ("linucb", "epsilon-greedy")


def problem(rounds: int, arms: int, dim: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-arm features, each arm's expected reward (a logistic of a fixed linear score) and Bernoulli draws."""
    rng = np.random.default_rng([seed, 46])
    features = rng.normal(size=(rounds, arms, dim)) / np.sqrt(dim)
    expected = 1 / (1 + np.exp(-3 * features @ rng.normal(size=dim)))
    return features, expected, (rng.random((rounds, arms)) < expected).astype(float)


def served_regret(policy: str, data: tuple[np.ndarray, np.ndarray, np.ndarray], delay: int, seed: int) -> float:
    """The cumulative regret of ``policy`` served in process, rewards ``delay`` events late."""
    features, expected, drawn = data
    settings = ReferenceLearner(policy=policy, n_arms=features.shape[1], dim=features.shape[2], seed=seed)
    with tempfile.TemporaryDirectory() as folder:
        service = DecisionService.open(ReferenceDecider(settings), Path(folder) / "s.sqlite",
                                       ServiceOptions(checkpoint_every=10_000))  # fmt: skip
        replayer = Replayer(
            lambda t: service.decide(DecideInput(f"e{t}", "u", features[t])).arm,
            lambda t, arm: service.reward(f"e{t}", float(drawn[t, arm])) and None,
        )
        try:
            return replay(replayer, expected, delay).cumulative_regret
        finally:
            service.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", choices=["reference"], default="reference", help="what is replayed")
    parser.add_argument("--delays", type=integers, default=(0, 1, 10, 100), help="delays in events, comma-separated")
    parser.add_argument("--rounds", type=int, default=2000, help="events per replay")
    parser.add_argument("--seeds", type=int, default=3, help="seeds per delay")
    parser.add_argument("--arms", type=int, default=5, help="arms")
    parser.add_argument("--dim", type=int, default=5, help="features per arm")
    checks = {"delays": IntegerSequence(low=0, min_length=1), "rounds": Integer(1), "seeds": Integer(1),
              "arms": Integer(2, 1000), "dim": Integer(1, 1000)}  # fmt: skip
    args = parse_args(parser, checks, rounds=60, seeds=1, delays=(0, 5))
    table = Table(title=f"Cumulative regret with rewards k events late ({args.rounds} events, mean of {args.seeds} "
                        "seeds; ratio to k = 0)")  # fmt: skip
    table.add_column("learner")
    for delay in args.delays:
        table.add_column(f"k = {delay}", justify="right")
    table.add_column("uniform random", justify="right")
    datas = [problem(args.rounds, args.arms, args.dim, seed) for seed in range(args.seeds)]
    uniform = np.mean([(expected.max(axis=1) - expected.mean(axis=1)).sum() for _, expected, _ in datas])
    for policy in POLICIES:
        regrets = [np.mean([served_regret(policy, data, delay, seed) for seed, data in enumerate(datas)])
                   for delay in args.delays]  # fmt: skip
        base = regrets[0] if args.delays[0] == 0 else None
        cells = [f"{regret:.1f}" + ("" if base is None else f" ({regret / base:.2f}x)") for regret in regrets]
        table.add_row(policy, *cells, f"{uniform:.1f}")
    Console().print(table)
    if args.smoke:
        Console().print(NOTICE)


if __name__ == "__main__":
    main()
