"""``privbandits evaluate``: estimate privbandits policies' values on a log, in the clear or with differential
privacy, into the results store (imports only typer here; numpy, the estimators and the store load when it runs).

Each policy is fixed: trained on the log's first rounds (``--train-fraction``), then frozen and evaluated on the
remaining rounds (see :mod:`privbandits.evaluation.policies`). With ``--epsilon`` the estimates are the DP ones
(:mod:`privbandits.evaluation.private`), within that budget for the whole command; ``--over-epsilon`` measures the
DP estimators' error against the non-private ones over a list of ε.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer

POLICIES = ("linucb", "lints", "epsilon_greedy", "uniform", "dp_linucb")
PLAINTEXT_ESTIMATORS = "ips,snips,clipped_ips,dm,dr,switch_dr"
PRIVATE_ESTIMATORS = "ips,snips,dr"


def _fail(message: str) -> NoReturn:
    from rich.console import Console
    from rich.text import Text

    Console(stderr=True).print(Text("error: ", style="bold red") + Text(message), highlight=False, soft_wrap=True)
    raise typer.Exit(code=2)


def _numbers(text: str, option: str, count: int | None = None) -> tuple[float, ...]:
    """Comma-separated finite reals (``count`` of them when given), else a one-line refusal naming ``option``."""
    try:
        values = tuple(float(part) for part in text.split(","))
    except ValueError:
        _fail(f"{option} must be comma-separated numbers, got {text!r}")
    if not all(math.isfinite(v) for v in values) or (count is not None and len(values) != count):
        what = f"{count} finite numbers" if count else "finite numbers"
        _fail(f"{option} must be {what} separated by commas, got {text!r}")
    return values


def _descriptor(text: str | None) -> list[int] | None:
    if text is None:
        return None
    start, _, stop = text.partition(":")
    if not (start.isdigit() and stop.isdigit() and int(start) < int(stop)):
        _fail(f"--descriptor must be START:STOP, column indices of the log's action_context, got {text!r}")
    return [int(start), int(stop)]


def _policies(positional: list[str] | None) -> tuple[str, ...]:
    chosen = tuple(dict.fromkeys(positional or [])) or ("linucb",)
    for policy in chosen:
        if policy not in POLICIES:
            _fail(f"POLICY must be one of {', '.join(POLICIES)}, got {policy!r}")
    return chosen


def _clipping(delta, weight_clip, reward_range, interval_share) -> dict[str, Any]:
    """The DP estimators' options (checked): δ, λ, the reward range and the interval's share."""
    from privbandits.validation import InvalidInputError, Real, check

    low, high = _numbers(reward_range, "--reward-range", 2)
    try:
        check(delta, "--delta", Real(low=0, high=1, high_open=True, note="0 = pure ε-DP, Laplace noise"))
        check(weight_clip, "--weight-clip", Real(low=0, low_open=True))
        check(interval_share, "--interval-share", Real(low=0, high=1, low_open=True, high_open=True))
    except InvalidInputError as error:
        _fail(str(error))
    if not low < high:
        _fail(f"--reward-range must be LOW,HIGH with LOW < HIGH, got {reward_range!r}")
    return {"delta": delta, "weight_clip": weight_clip, "reward_range": [low, high], "interval_share": interval_share}


def _privacy(epsilon, clipping: dict[str, Any], reproducible: bool, sweeping: bool) -> dict[str, Any] | None:
    from privbandits.validation import InvalidInputError, Real, check

    if epsilon is None:
        if (clipping["delta"] and not sweeping) or reproducible:
            _fail("--delta and --reproducible set the DP estimates' budget and noise: give --epsilon with them "
                  "(--delta also sets --over-epsilon's noise)")  # fmt: skip
        return None
    try:
        check(epsilon, "--epsilon", Real(low=0, low_open=True, note="the whole command's budget"))
    except InvalidInputError as error:
        _fail(str(error))
    return {"epsilon": epsilon, **clipping, "reproducible": reproducible}


def _estimators(text: str | None, private: bool) -> tuple[str, ...]:
    from privbandits.evaluation.estimators import ESTIMATORS

    names = tuple(n.strip() for n in (text or (PRIVATE_ESTIMATORS if private else PLAINTEXT_ESTIMATORS)).split(","))
    allowed = PRIVATE_ESTIMATORS.split(",") if private else ESTIMATORS
    bad = [name for name in names if name not in allowed]
    if bad or not names or len(set(names)) < len(names):
        what = "with --epsilon, DP versions exist of" if private else "methods must be among"
        _fail(f"--estimators: {what} {', '.join(allowed)} (each once), got {text!r}")
    return names


def _check_run(log_path: Path, train_fraction: float, store: Path, out: Path, repeats: int) -> None:
    from privbandits.experiments.writable import PathError, check_writable

    if not 0.0 <= train_fraction < 1.0:
        _fail(f"--train-fraction must be in [0, 1), got {train_fraction}")
    if repeats < 2:
        _fail(f"--repeats must be >= 2 (releases per ε), got {repeats}")
    if not log_path.exists():
        _fail(f"LOG {str(log_path)!r} does not exist")
    try:
        check_writable(store, "--store", folder=False)
        check_writable(out, "--out", folder=True)
    except PathError as error:
        _fail(str(error))


def evaluate_command(
    log_path: Annotated[Path, typer.Argument(metavar="LOG", help="A .npz, .dsjson/.jsonl/.json log or OBD folder.")],
    policies: Annotated[
        list[str] | None, typer.Argument(metavar="POLICY...", help=f"{', '.join(POLICIES)} (default: linucb).")
    ] = None,
    estimators: Annotated[
        str | None,
        typer.Option("--estimators", help=f"Comma-separated (default {PLAINTEXT_ESTIMATORS}; DP {PRIVATE_ESTIMATORS})"),
    ] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the learners, the bootstrap and LinTS's draws.")] = 0,
    train_fraction: Annotated[
        float, typer.Option("--train-fraction", help="Share of the first rounds the policy is trained on.")
    ] = 0.5,
    threshold: Annotated[float, typer.Option("--threshold", help="λ of clipped IPS and τ of switch-DR.")] = 100.0,
    interval: Annotated[str, typer.Option("--interval", help="'bootstrap' or 'normal' (SNIPS: bootstrap).")] = (
        "bootstrap"
    ),
    level: Annotated[float, typer.Option("--level", help="Nominal coverage of the intervals.")] = 0.95,
    epsilon: Annotated[
        float | None, typer.Option("--epsilon", help="DP estimates within this ε for the whole command.")
    ] = None,
    delta: Annotated[float, typer.Option("--delta", help="Their δ (0: pure ε-DP, Laplace noise).")] = 0.0,
    weight_clip: Annotated[float, typer.Option("--weight-clip", help="λ of the DP estimators.")] = 100.0,
    reward_range: Annotated[str, typer.Option("--reward-range", help="LOW,HIGH rewards are clipped to.")] = "0,1",
    interval_share: Annotated[
        float, typer.Option("--interval-share", help="Share of each DP estimate's budget for its interval.")
    ] = 0.2,
    reproducible: Annotated[
        bool, typer.Option("--reproducible", help="DP noise from --seed: tests and demos only (not secret).")
    ] = False,
    policy_epsilon: Annotated[float, typer.Option("--policy-epsilon", help="dp_linucb's ε (training rounds).")] = 1.0,
    policy_delta: Annotated[float, typer.Option("--policy-delta", help="dp_linucb's δ.")] = 1e-5,
    descriptor: Annotated[
        str | None, typer.Option("--descriptor", help="START:STOP: action_context columns dp_linucb crosses with x.")
    ] = None,
    over_epsilon: Annotated[
        str | None, typer.Option("--over-epsilon", help="Comma-separated ε: the DP estimators' error over ε.")
    ] = None,
    repeats: Annotated[int, typer.Option("--repeats", help="Seeded releases per ε of --over-epsilon.")] = 200,
    store: Annotated[Path, typer.Option("--store", help="SQLite results store (created if missing).")] = Path(
        "results/results.sqlite"
    ),
    out: Annotated[Path, typer.Option("--out", help="Folder for evaluation.md/.json (and dp-error.png).")] = Path(
        "results/evaluation"
    ),
    force: Annotated[bool, typer.Option("--force", help="Recompute stored units (a DP unit spends again).")] = False,
) -> None:
    """Estimate fixed policies' values on LOG with off-policy estimators, in the clear or with DP (--epsilon): a table
    of estimates and intervals per policy, each run a unit of the results store keyed by its complete spec."""
    from privbandits.experiments.evaluations import EvaluationPlan

    chosen = _policies(policies)
    clipping = _clipping(delta, weight_clip, reward_range, interval_share)
    privacy = _privacy(epsilon, clipping, reproducible, over_epsilon is not None)
    names = _estimators(estimators, privacy is not None)
    sweep = _numbers(over_epsilon, "--over-epsilon") if over_epsilon else ()
    if any(value <= 0 for value in sweep):
        _fail(f"--over-epsilon must be numbers > 0, got {over_epsilon!r}")
    _check_run(log_path, train_fraction, store, out, repeats)
    options = {"epsilon": policy_epsilon, "delta": policy_delta, "descriptor": _descriptor(descriptor)}
    plan = EvaluationPlan(log_path, chosen, names, seed, train_fraction, threshold, interval, level, privacy,
                          options, sweep, repeats, clipping)  # fmt: skip
    if reproducible:
        typer.echo("warning: --reproducible draws the DP noise from --seed: reproducible, not secret (tests and "
                   "demos only)", err=True)  # fmt: skip
    _run(plan, store, out, force, level)


def _run(plan, store: Path, out: Path, force: bool, level: float) -> None:
    from rich.console import Console

    from privbandits.experiments.evaluations import privacy_notes, run_tasks, sweep_cells, write_report
    from privbandits.experiments.store import ResultsStore, StoreError
    from privbandits.validation import InvalidInputError

    console = Console()
    try:
        with ResultsStore(store) as results, console.status("evaluating") as status:
            progress = lambda label: status.update(f"done: {label}")  # noqa: E731
            units = run_tasks(plan.tasks(), results, force=force, progress=progress)
            sweeps = run_tasks(plan.sweep_tasks(), results, force=force, progress=progress)
    except (InvalidInputError, ValueError, OSError, StoreError) as error:
        _fail(str(error))
    for unit in units:
        console.print(_table(unit, level))
    for note in privacy_notes(units):
        console.print(f"privacy: {note}")
    if sweeps:
        from privbandits.experiments.evaluations import SWEEP_HEADER

        console.print(_plain("DP estimators' error against the non-private estimates", SWEEP_HEADER,
                             sweep_cells(sweeps)))  # fmt: skip
    for path in write_report(units, sweeps, out):
        console.print(f"wrote {path}")


def _plain(title: str, header: list[str], lines: list[list[str]]):
    from rich.table import Table

    table = Table(title=title)
    for column in header:
        table.add_column(column)
    for line in lines:
        table.add_row(*line)
    return table


def _table(unit: dict[str, Any], level: float):
    from rich.table import Table

    from privbandits.experiments.evaluations import _number

    title = f"{unit['policy']}: trained on {unit['n_train']} rounds, evaluated on {unit['n_test']}"
    table = Table(title=title)
    columns = ["estimator", "estimate", f"{level:.0%} low", f"{level:.0%} high", "interval", "ESS"]
    columns += ["ε", "δ", "noise"] if unit["private"] else []
    for column in columns:
        table.add_column(column, justify="left" if column in ("estimator", "interval", "noise") else "right")
    for row in unit["rows"]:
        cells = [f"{row['estimate']:.4f}", f"{row['low']:.4f}", f"{row['high']:.4f}", row["interval"],
                 _number(row["ess"])]  # fmt: skip
        if unit["private"]:
            cells += [_number(row["epsilon"]), _number(row["delta"]), row["noise"]]
        table.add_row(row["method"], *cells)
    return table
