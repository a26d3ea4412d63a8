"""``privbandits evaluate``: estimate a privbandits policy's value on a log (imports only typer here; numpy and
the estimators load when the command runs).

The policy is fixed: a learner trained on the log's first rounds (``--train-fraction``), then frozen and
evaluated on the remaining rounds (see :mod:`privbandits.evaluation.policies`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, NoReturn

import typer

POLICIES = ("linucb", "lints", "epsilon_greedy", "uniform")


def _fail(message: str) -> NoReturn:
    from rich.console import Console
    from rich.text import Text

    Console(stderr=True).print(Text("error: ", style="bold red") + Text(message), highlight=False, soft_wrap=True)
    raise typer.Exit(code=2)


def _learner(policy: str, n_actions: int, dim: int, seed: int):
    from privbandits.linear.policies import EpsilonGreedy, LinTS, LinUCB, UniformRandom

    if policy == "uniform":
        return UniformRandom(n_actions, rng=seed)
    kind = {"linucb": LinUCB, "lints": LinTS, "epsilon_greedy": EpsilonGreedy}[policy]
    return kind(n_actions, dim, layout="disjoint", rng=seed)


def _split(n_rounds: int, train_fraction: float) -> int:
    if not 0.0 <= train_fraction < 1.0:
        _fail(f"--train-fraction must be in [0, 1), got {train_fraction}")
    n_train = int(n_rounds * train_fraction)
    if n_train == n_rounds:
        _fail(f"--train-fraction {train_fraction} leaves no round of the {n_rounds} to evaluate on")
    return n_train


def evaluate_command(
    log_path: Annotated[Path, typer.Argument(metavar="LOG", help="A .npz, .dsjson/.jsonl/.json log or OBD folder.")],
    policy: Annotated[str, typer.Option("--policy", help="linucb, lints, epsilon_greedy or uniform.")] = "linucb",
    estimators: Annotated[
        str, typer.Option("--estimators", help="Comma-separated: ips, snips, clipped_ips, dm, dr, switch_dr.")
    ] = "ips,snips,clipped_ips,dm,dr,switch_dr",
    seed: Annotated[int, typer.Option("--seed", help="Seed of the learner, the bootstrap and LinTS's draws.")] = 0,
    train_fraction: Annotated[
        float, typer.Option("--train-fraction", help="Share of the first rounds the policy is trained on.")
    ] = 0.5,
    threshold: Annotated[float, typer.Option("--threshold", help="λ of clipped IPS and τ of switch-DR.")] = 100.0,
    interval: Annotated[str, typer.Option("--interval", help="'bootstrap' or 'normal' (SNIPS: bootstrap).")] = (
        "bootstrap"
    ),
    level: Annotated[float, typer.Option("--level", help="Nominal coverage of the intervals.")] = 0.95,
) -> None:
    """Estimate a fixed policy's value on LOG with off-policy estimators: a table of estimates and intervals."""
    from privbandits.evaluation.estimators import evaluate
    from privbandits.evaluation.policies import policy_probabilities, train_on_log
    from privbandits.logs.files import load_log
    from privbandits.validation import InvalidInputError

    if policy not in POLICIES:
        _fail(f"--policy must be one of {', '.join(POLICIES)}, got {policy!r}")
    try:
        log = load_log(log_path, "LOG")
        n_train = _split(log.n_rounds, train_fraction)
        learner = _learner(policy, log.n_actions, log.dim, seed)
        if n_train:
            train_on_log(learner, log.take(slice(0, n_train)), replay=False)
        test = log.take(slice(n_train, log.n_rounds))
        pi_e = policy_probabilities(learner, test, seed=seed)
        methods = [name.strip() for name in estimators.split(",") if name.strip()]
        results = evaluate(test, pi_e, methods, threshold=threshold, interval=interval, level=level, seed=seed)
    except (InvalidInputError, ValueError, OSError) as error:
        _fail(str(error))
    _print(results, policy, n_train, test.n_rounds, level)


def _print(results, policy: str, n_train: int, n_test: int, level: float) -> None:
    from rich.console import Console
    from rich.table import Table

    title = f"{policy}: trained on {n_train} rounds, evaluated on {n_test}"
    table = Table(title=title)
    for column in ("estimator", "estimate", f"{level:.0%} low", f"{level:.0%} high", "interval", "ESS"):
        table.add_column(column, justify="left" if column in ("estimator", "interval") else "right")
    for r in results:
        row = (f"{r.estimate:.4f}", f"{r.low:.4f}", f"{r.high:.4f}", r.interval, f"{r.effective_sample_size:.1f}")
        table.add_row(r.method, *row)
    Console().print(table)
