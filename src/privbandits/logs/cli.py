"""``privbandits logs``: convert logged bandit feedback between formats, write a synthetic log (imports only
typer here; numpy and the formats load when a command runs)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, NoReturn

import typer

logs_app = typer.Typer(
    help=(
        "Logged bandit feedback in and out: Open Bandit Pipeline's BanditFeedback (.npz), Vowpal Wabbit's DSJSON "
        "(.dsjson, .jsonl, .json: one decision per line) and the Open Bandit Dataset (a campaign folder). "
        "The format is read from the suffix."
    ),
    no_args_is_help=True,
)


def _fail(message: str) -> NoReturn:
    from rich.console import Console
    from rich.text import Text

    Console(stderr=True).print(Text("error: ", style="bold red") + Text(message), highlight=False, soft_wrap=True)
    raise typer.Exit(code=2)


def _refusals() -> tuple[type[Exception], ...]:
    from privbandits.validation import InvalidInputError

    return (InvalidInputError, ValueError, OSError)


@logs_app.command("convert")
def convert_command(
    source: Annotated[
        Path, typer.Argument(metavar="IN", help="A .npz, .dsjson/.jsonl/.json file, or an OBD campaign folder.")
    ],
    target: Annotated[Path, typer.Argument(metavar="OUT", help="A .npz or .dsjson/.jsonl/.json file to write.")],
) -> None:
    """Read a log and write it in OUT's format (what OUT's format cannot carry is dropped: see docs/logs.md)."""
    from rich.console import Console

    from privbandits.logs.files import load_log, log_format, save_log

    try:
        log_format(target, "OUT")  # a wrong OUT is refused before IN is read
        log = load_log(source, "IN")
        save_log(log, target, "OUT")
    except _refusals() as error:
        _fail(str(error))
    Console().print(f"wrote {target}: {log.n_rounds} rounds, {log.n_actions} actions")


@logs_app.command("synthetic")
def synthetic_command(
    target: Annotated[Path, typer.Argument(metavar="OUT", help="A .npz or .dsjson/.jsonl/.json file to write.")],
    rounds: Annotated[int, typer.Option("--rounds", help="Rounds to log.")] = 1000,
    actions: Annotated[int, typer.Option("--actions", help="Actions to choose among.")] = 5,
    dim: Annotated[int, typer.Option("--dim", help="Context dimension.")] = 4,
    reward: Annotated[str, typer.Option("--reward", help="'linear' (Gaussian noise) or 'logistic' (0/1).")] = "linear",
    policy: Annotated[str, typer.Option("--policy", help="Logging policy: 'softmax' or 'epsilon_greedy'.")] = "softmax",
    seed: Annotated[int, typer.Option("--seed", help="Seed of the draw (contexts, actions, rewards).")] = 0,
) -> None:
    """Write a synthetic log with its ground truth (expected_reward and pi_b; DSJSON keeps pi_b, not the former)."""
    from rich.console import Console

    from privbandits.logs.files import log_format, save_log
    from privbandits.logs.synthetic import synthetic_feedback

    try:
        log_format(target, "OUT")
        log = synthetic_feedback(rounds, actions, dim, reward_type=reward, policy=policy, seed=seed)
        save_log(log, target, "OUT")
    except _refusals() as error:
        _fail(str(error))
    Console().print(f"wrote {target}: {log.n_rounds} rounds, {log.n_actions} actions")
