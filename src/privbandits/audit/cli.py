"""``privbandits audit``: the empirical privacy audit of every mechanism, into the results store.

Kept light: the mechanisms and the store load only when the command runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

MECHANISM_NAMES = ("mpc_bandit.action", "fclub.pvt", "dp_linucb.joint", "dp_linucb.local", "dp_linucb.shuffle",
                   "p2b.crowd_blending", "fclub.pvt@analytic", "dp_linucb.joint@analytic",
                   "dp_linucb.local@analytic", "evaluation.dp_ips", "evaluation.dp_snips", "evaluation.dp_dr",
                   "evaluation.dp_ips@gaussian", "evaluation.dp_snips@gaussian",
                   "evaluation.dp_dr@gaussian")  # fmt: skip
"""The names :data:`privbandits.audit.run.MECHANISMS` registers (a test keeps the two equal)."""


def _fail(message: str) -> None:
    Console(stderr=True).print(Text("error: ", style="bold red") + Text(message), highlight=False, soft_wrap=True)
    raise typer.Exit(code=2)


def _check(names: list[str], samples: int | None, seed: int, out: Path) -> None:
    """Refuse (one line, exit 2) what the audit cannot run or write, before it runs."""
    unknown = [name for name in names if name not in MECHANISM_NAMES]
    if unknown:
        _fail(f"mechanism must be one of {', '.join(MECHANISM_NAMES)}; got {', '.join(map(repr, unknown))}")
    repeated = next((name for name in names if names.count(name) > 1), None)
    if repeated is not None:
        _fail(f"mechanism {repeated!r} is given {names.count(repeated)} times; name each mechanism once")
    from privbandits.audit.run import MOST_SAMPLES, default_samples
    from privbandits.experiments.writable import PathError, check_writable
    from privbandits.validation import Integer, InvalidInputError, check

    most, name = min((MOST_SAMPLES * default_samples(name), name) for name in names)
    note = f"runs on each neighbouring input; at most {MOST_SAMPLES} times {name}'s default"
    try:
        if samples is not None:
            check(samples, "--samples", Integer(2, most, note=note))
        check(seed, "--seed", Integer(0, note="the seed of the audit's runs"))
        check_writable(out, "--out", folder=True)
    except (InvalidInputError, PathError) as exc:
        _fail(str(exc))


def _plain_table(title: str, header: list[str], lines: list[list[str]]) -> Table:
    table = Table(title=title, title_justify="left")
    for column in header:
        table.add_column(column, overflow="fold")
    for line in lines:
        table.add_row(*line)
    return table


def _table(rows: list[dict]) -> Table:
    from privbandits.audit.run import HEADER, cells

    title = "empirical privacy audit (ε ≥: one-sided 95% lower bound at the claimed δ)"
    return _plain_table(title, HEADER, [cells(row) for row in rows])


def audit_command(
    names: Annotated[
        list[str] | None,
        typer.Argument(help=f"Mechanisms to audit (default: all): {', '.join(MECHANISM_NAMES)}.", show_default=False),
    ] = None,
    samples: Annotated[
        int | None,
        typer.Option("--samples", help="Runs on each neighbouring input (default: 100,000; 10,000 for shuffle)."),
    ] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the audit's runs.")] = 0,
    store: Annotated[Path, typer.Option("--store", help="SQLite results store (created if missing).")] = Path(
        "results/results.sqlite"
    ),
    out: Annotated[Path, typer.Option("--out", help="Folder for audit.json and audit.md.")] = Path("results/audit"),
    force: Annotated[bool, typer.Option("--force", help="Recompute audits already in the store.")] = False,
) -> None:
    """Audit every DP mechanism: a measured lower bound on ε beside its claim, and a weakened copy that must fail.

    Each (mechanism, weakening) is one unit in the store, keyed by its mechanism, options,
    samples and seed: a rerun reuses it unless --force.
    """
    names = list(names or MECHANISM_NAMES)
    _check(names, samples, seed, out)
    from privbandits.audit import calibrations
    from privbandits.audit.run import rows, write_report
    from privbandits.experiments.audits import AuditPlan, run_plan
    from privbandits.experiments.store import ResultsStore, StoreError

    console = Console()
    try:
        with ResultsStore(store) as results, console.status("auditing") as status:
            plan = AuditPlan(tuple(names), samples, seed)
            found, tables = run_plan(plan, results, force=force, progress=lambda label: status.update(f"done: {label}"))
    except (StoreError, OSError) as exc:
        _fail(str(exc))
    console.print(_table(rows(found)))
    for title, header, lines in calibrations.tables_for_print(tables):
        console.print(_plain_table(title, header, lines))
    for path in write_report(found, out, tables):
        console.print(f"wrote {path}")
