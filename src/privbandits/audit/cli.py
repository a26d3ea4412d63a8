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
                   "evaluation.dp_ips@gaussian", "evaluation.dp_snips@gaussian", "evaluation.dp_dr@gaussian",
                   "e2e.dp_linucb.joint", "e2e.dp_linucb.joint_mf", "e2e.dp_linucb.local", "e2e.dp_linucb.shuffle",
                   "e2e.fclub.local_server", "e2e.fclub.local_server_mf", "e2e.mpc_bandit.learner",
                   "e2e.mpc_bandit.twin", "e2e.p2b.pipeline")  # fmt: skip
"""The names :data:`privbandits.audit.run.MECHANISMS` registers (a test keeps the two equal)."""
MUTANT_NAMES = ("mutant.joint.tree_noise_dropped", "mutant.joint.tree_noise_tenth", "mutant.joint.reward_unclipped",
                "mutant.joint.context_unclipped", "mutant.joint_mf.noise_tenth", "mutant.local.ten_epsilon",
                "mutant.local.unclipped", "mutant.shuffle.randomiser_tenth", "mutant.fclub.server_hundredth",
                "mutant.fclub_mf.server_hundredth",
                "mutant.mpc.exploring_tenth", "mutant.mpc.composition_ignored", "mutant.mpc_twin.exploring_tenth",
                "mutant.p2b.threshold_dropped")  # fmt: skip
"""The mutants :data:`privbandits.audit.mutants.MUTANTS` registers (a test keeps the two equal)."""


def _fail(message: str) -> None:
    Console(stderr=True).print(Text("error: ", style="bold red") + Text(message), highlight=False, soft_wrap=True)
    raise typer.Exit(code=2)


def _check(names: list[str], samples: int | None, seed: int, out: Path) -> None:
    """Refuse (one line, exit 2) what the audit cannot run or write, before it runs."""
    unknown = [name for name in names if name not in MECHANISM_NAMES + MUTANT_NAMES]
    if unknown:
        _fail(f"mechanism must be one of {', '.join(MECHANISM_NAMES)}, or a mutant: {', '.join(MUTANT_NAMES)}; "
              f"got {', '.join(map(repr, unknown))}")  # fmt: skip
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


def _typed(text: str, default: object) -> object:
    """``text`` as the type of ``default`` (a bool from true/false, 1/0, yes/no)."""
    if isinstance(default, bool):
        if text.lower() in ("true", "1", "yes", "on"):
            return True
        if text.lower() in ("false", "0", "no", "off"):
            return False
        raise ValueError("a boolean (true or false)")
    if isinstance(default, int):
        return int(text)
    if isinstance(default, float):
        return float(text)
    return text


def _options(names: list[str], given: list[str]) -> tuple[tuple[str, tuple[tuple[str, object], ...]], ...]:
    """``-o KEY=VALUE`` (each typed by the default it replaces) for every named mechanism that takes KEY; refused
    (exit 2) when none does or the value does not parse. Each mechanism's audit then checks its values."""
    from privbandits.audit.run import audited, mechanism, settable_options

    chosen: dict[str, dict[str, object]] = {name: {} for name in names}
    for item in given:
        key, sep, text = item.partition("=")
        key = key.strip()
        if not sep or not key:
            _fail(f"-o takes KEY=VALUE, got {item!r}")
        takers = [name for name in names if key in settable_options(name)]
        if not takers:
            known = sorted({k for name in names for k in settable_options(name)})
            _fail(f"-o {key}: no mechanism named takes {key!r}; they take {', '.join(known) or 'no options'}")
        for name in takers:
            try:
                chosen[name][key] = _typed(text.strip(), settable_options(name)[key])
            except ValueError as exc:
                kind = "a boolean (true or false)" if "boolean" in str(exc) else \
                    type(settable_options(name)[key]).__name__  # fmt: skip
                _fail(f"-o {key}={text}: {name}'s {key} must be {kind}")
    for name, values in chosen.items():
        if values:
            try:
                mechanism(audited(name), values)
            except (ValueError, TypeError) as exc:
                _fail(f"-o for {name}: {exc}")
    return tuple((name, tuple(sorted(values.items()))) for name, values in chosen.items() if values)


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


def _mutant_table(units: list[dict]) -> Table:
    from privbandits.audit.run import MUTANT_HEADER, mutant_cells

    title = "mutation suite (each must be caught: its lower bound above its own ledger's claim)"
    return _plain_table(title, MUTANT_HEADER, [mutant_cells(unit) for unit in units])


def audit_command(
    names: Annotated[
        list[str] | None,
        typer.Argument(
            help=f"Mechanisms to audit (default: all, and every mutant): {', '.join(MECHANISM_NAMES)}; "
            f"mutants of the mutation suite: {', '.join(MUTANT_NAMES)}.",
            show_default=False,
        ),
    ] = None,
    mechanisms: Annotated[
        list[str] | None,
        typer.Option(
            "--mechanism",
            "-m",
            help="A mechanism or mutant to audit (repeatable; as the arguments).",
            show_default=False,
        ),
    ] = None,
    option: Annotated[
        list[str] | None,
        typer.Option(
            "--option",
            "-o",
            help="KEY=VALUE: an option of the named mechanisms' audits (d, horizon, "
            "epsilon, batch_size, …; typed by its default), for each that takes it.",
            show_default=False,
        ),
    ] = None,
    quick: Annotated[
        bool,
        typer.Option(
            "--quick",
            help="Every audit (or those named) at a size that fits about 3 minutes on 2 "
            "cores; exit 1 if any claim is below its lower bound or a mutant is not caught.",
        ),
    ] = False,
    samples: Annotated[
        int | None,
        typer.Option(
            "--samples",
            help="Runs on each neighbouring input (default: 100,000 for a mechanism; less "
            "for the shuffled batch and the end-to-end audits, a mutant as its end-to-end audit).",
        ),
    ] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the audit's runs.")] = 0,
    store: Annotated[Path, typer.Option("--store", help="SQLite results store (created if missing).")] = Path(
        "results/results.sqlite"
    ),
    out: Annotated[Path, typer.Option("--out", help="Folder for audit.json and audit.md.")] = Path("results/audit"),
    force: Annotated[bool, typer.Option("--force", help="Recompute audits already in the store.")] = False,
) -> None:
    """Audit every DP mechanism: a measured lower bound on ε beside its claim, and a weakened copy that must fail.

    Each (mechanism, options, weakening) is one unit in the store, keyed by its mechanism, options,
    samples and seed: a rerun reuses it unless --force. The end-to-end audits (e2e.…) drive each learner
    and protocol through its public API; their weakened copies are the mutation suite's mutants (mutant.…),
    one unit each, keyed likewise. Exits 1 when a claim is below its measured lower bound or a mutant is
    not caught (its lower bound at or below its claim), 2 on bad usage.
    """
    names = list(names or []) + list(mechanisms or [])
    names = names or list(MECHANISM_NAMES + MUTANT_NAMES)
    _check(names, samples, seed, out)
    options = _options(names, list(option or []))
    from privbandits.audit import calibrations
    from privbandits.audit.run import QUICK_SAMPLES, missed, mutated, refuted, rows, write_report
    from privbandits.experiments.audits import AuditPlan, run_plan
    from privbandits.experiments.store import ResultsStore, StoreError

    console = Console()
    if not console.is_terminal:  # a log or a pipe: a table wide enough to read, not folded to 80 columns
        console = Console(width=200)
    sizes = tuple((name, QUICK_SAMPLES[name]) for name in names if name in QUICK_SAMPLES) if quick else ()
    plan = AuditPlan(tuple(names), samples, seed, options, sizes)
    total = len(plan.tasks()) + 1
    done = [0]

    def progress(label: str) -> None:
        done[0] += 1
        console.print(f"[{done[0]}/{total}] done: {label}", highlight=False, soft_wrap=True)

    try:
        with ResultsStore(store) as results:
            found, tables = run_plan(plan, results, force=force, progress=progress)
    except (StoreError, OSError) as exc:
        _fail(str(exc))
    if rows(found):
        console.print(_table(rows(found)))
    if mutated(found):
        console.print(_mutant_table(mutated(found)))
    for title, header, lines in calibrations.tables_for_print(tables):
        console.print(_plain_table(title, header, lines))
    for path in write_report(found, out, tables):
        console.print(f"wrote {path}")
    bad = [result["mechanism"] for result in found if refuted(result)]
    if bad:
        console.print(f"CLAIM REFUTED: {', '.join(bad)} (a lower bound above the claimed ε)", highlight=False)
    uncaught = [result["mutant"] for result in found if missed(result)]
    if uncaught:
        console.print(f"MUTANT NOT CAUGHT: {', '.join(uncaught)} (a lower bound at or below its claimed ε)",
                      highlight=False)  # fmt: skip
    if bad or uncaught:
        raise typer.Exit(code=1)
