"""The ``privbandits`` command line: run configs, report results, list what exists."""

from __future__ import annotations

import os

# The compiled kernels run in parallel between serial steps; on small machines their idle
# OpenMP threads must sleep rather than spin (measured: the P2B pipeline runs ~20% faster).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import ast
import inspect
from contextlib import nullcontext
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from privbandits import __version__
from privbandits.experiments.config import ConfigError, load_config
from privbandits.experiments.paper import PaperReport
from privbandits.experiments.registry import ENVIRONMENTS, POLICIES
from privbandits.experiments.report import (
    Metric,
    latest_runs,
    plot_cumulative,
    summarise,
    summary_table,
    write_summary_csv,
)
from privbandits.experiments.reproductions import COMPUTED, PAPER_REPORTS, list_reproductions, resolve_config
from privbandits.experiments.runner import run_experiment
from privbandits.experiments.store import ResultsStore, StoreError

app = typer.Typer(
    help=(
        "Privacy-preserving contextual bandits: run experiment configs, report their "
        "results as tables and plots, and list the available policies, environments "
        "and paper reproductions.\n\n"
        "Typical use:  privbandits list;  privbandits run vertical-synthetic-demo;  "
        "privbandits report vertical-synthetic-demo"
    ),
    no_args_is_help=True,
    add_completion=False,
)
console = Console()
err_console = Console(stderr=True)

DEFAULT_STORE = Path("results/results.sqlite")
DEFAULT_OUT = Path("results")

StoreOption = Annotated[Path, typer.Option("--store", help="SQLite results file (`run` creates it if missing).")]
OutOption = Annotated[Path, typer.Option("--out", help="Folder for PNG plots and CSV summaries.")]


def _fail(message: str) -> None:
    err_console.print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)
    raise typer.Exit(code=2)


def _report(store: ResultsStore, experiment: str, out: Path, metrics: list[Metric], log_y: bool, title: str) -> None:
    records = store.load(experiment)
    if not records:
        _fail(f"no stored runs for experiment {experiment!r} in {store.path}")
    records, stale = latest_runs(records)
    if stale:
        console.print(f"[yellow]note:[/] older runs of an edited config ignored for: {', '.join(stale)}")
    summaries = summarise(records)
    console.print(summary_table(experiment, summaries))
    written = [write_summary_csv(summaries, out / f"{experiment}-summary.csv")]
    for metric in metrics:
        written.append(plot_cumulative(records, metric, out / f"{experiment}-{metric}.png", title=title, log_y=log_y))
    if experiment in PAPER_REPORTS:
        _show_paper_report(PAPER_REPORTS[experiment](records, out), out)
    for path in written:
        console.print(f"wrote {path}")


def _show_paper_report(paper: PaperReport, out: Path) -> None:
    console.print(paper.table())
    for path in [*paper.figures, paper.write(out)]:
        console.print(f"wrote {path}")


def _computed_options(name: str, options: list[str]) -> dict[str, object]:
    """``KEY=VALUE`` strings as keyword arguments of reproduction ``name``.

    A value is read as a Python literal (``131070``, ``(32, 128)``, ``True``) when
    it is one, and kept as a string (a path) otherwise.
    """
    allowed = [
        parameter
        for parameter in inspect.signature(COMPUTED[name].run).parameters
        if parameter not in ("out", "progress")
    ]
    parsed = {}
    for option in options:
        key, separator, text = option.partition("=")
        if not separator or not key:
            raise ValueError(f"--option must look like KEY=VALUE, got {option!r}")
        if key not in allowed:
            raise ValueError(f"{name} has no option {key!r}; its options: {', '.join(allowed) or 'none'}")
        try:
            parsed[key] = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            parsed[key] = text
    return parsed


def _run_computed(name: str, out: Path, progress: bool, options: dict[str, object]) -> None:
    reproduction = COMPUTED[name]
    console.print(f"[bold]{name}[/]: {reproduction.description}")
    with console.status("starting", spinner="dots") if progress else nullcontext() as status:
        step = (lambda message: status.update(message)) if progress else None
        paper = reproduction.run(out, progress=step, **options)
    for caption, rows in paper.tables.items():
        table = Table(title=caption, title_justify="left")
        for column in rows[0]:
            table.add_column(column, overflow="fold")
        for row in rows[1:]:
            table.add_row(*row)
        console.print(table)
    _show_paper_report(paper, out)


@app.command()
def run(
    configs: Annotated[
        list[str], typer.Argument(help="Config TOML files, or names from `privbandits list`.", show_default=False)
    ],
    store: StoreOption = DEFAULT_STORE,
    jobs: Annotated[int, typer.Option("--jobs", "-j", min=1, help="Worker processes.")] = 1,
    force: Annotated[bool, typer.Option("--force", help="Rerun runs already in the store.")] = False,
    report: Annotated[bool, typer.Option("--report/--no-report", help="Write the report afterwards.")] = True,
    out: OutOption = DEFAULT_OUT,
    progress: Annotated[bool, typer.Option("--progress/--no-progress", help="Show a progress bar.")] = True,
    option: Annotated[
        list[str] | None,
        typer.Option(
            "--option",
            "-o",
            help="KEY=VALUE for a computed reproduction, e.g. -o path=/data/train.txt or -o horizon=131070 "
            "(repeatable; an unknown key lists the valid ones).",
        ),
    ] = None,
) -> None:
    """Run every (policy, seed) of each config, skipping runs already stored.

    Each finished run is saved at once, so an interrupted command, run again,
    continues where it stopped. Computed reproductions (e.g. vertical-fig5)
    resume from the points they saved, write their report to --out, and take
    their options (real data files, full sizes) with --option.
    """
    try:
        computed = [c for c in configs if c in COMPUTED and not Path(c).is_file()]
        if option and len(computed) != 1:
            raise ValueError("--option needs exactly one computed reproduction to apply to")
        options = _computed_options(computed[0], option) if option else {}
        loaded = [load_config(resolve_config(c)) for c in configs if c not in computed]
        for name in computed:
            _run_computed(name, out, progress, options)
        with ResultsStore(store) as results:
            for config in loaded:
                console.print(f"[bold]{config.name}[/]: {config.description}")
                try:
                    summary = run_experiment(config, results, jobs=jobs, force=force, show_progress=progress)
                except KeyboardInterrupt:
                    err_console.print(
                        f"[yellow]interrupted:[/] finished runs are saved in {store}; "
                        "run the same command again to continue",
                        soft_wrap=True,
                    )
                    raise typer.Exit(code=130) from None
                console.print(f"ran {len(summary.ran)} run(s), skipped {summary.skipped} already in {store}")
                if report:
                    _report(results, config.name, out, list(Metric), False, config.description or config.name)
    except (ConfigError, StoreError, FileNotFoundError, ValueError) as exc:
        _fail(str(exc))


@app.command("report")
def report_command(
    experiments: Annotated[
        list[str] | None,
        typer.Argument(help="Experiment names or config files (default: every stored experiment).", show_default=False),
    ] = None,
    store: StoreOption = DEFAULT_STORE,
    out: OutOption = DEFAULT_OUT,
    metric: Annotated[
        list[Metric] | None, typer.Option("--metric", help="Plot cumulative regret and/or reward (default both).")
    ] = None,
    log_y: Annotated[bool, typer.Option("--log-y", help="Logarithmic y axis.")] = False,
) -> None:
    """Print a summary table and write plots for stored experiments."""
    if not store.is_file():
        _fail(f"results store {store} does not exist; run `privbandits run CONFIG` first")
    try:
        with ResultsStore(store) as results:
            names = []
            for item in experiments or results.experiments():
                path = Path(item)
                names.append(load_config(path).name if path.suffix == ".toml" else item)
            if not names:
                _fail(f"{store} holds no runs yet")
            for name in names:
                _report(results, name, out, metric or list(Metric), log_y, name)
    except (ConfigError, StoreError) as exc:
        _fail(str(exc))


@app.command("list")
def list_command() -> None:
    """List the available policies, environments and paper reproductions."""
    for title, registry in (("policies (kind = ...)", POLICIES), ("environments (kind = ...)", ENVIRONMENTS)):
        table = Table(title=title, title_justify="left")
        table.add_column("kind", style="bold cyan")
        table.add_column("description")
        table.add_column("options")
        for kind, (schema, description) in registry.items():
            options = ", ".join(name for name in schema.model_fields if name != "kind")
            table.add_row(kind, description, options)
        console.print(table)
    table = Table(title="reproductions (privbandits run NAME)", title_justify="left")
    table.add_column("name", style="bold cyan")
    table.add_column("description")
    table.add_column("config")
    for reproduction in list_reproductions():
        path = reproduction.path
        shown = path.relative_to(Path.cwd()) if path.is_relative_to(Path.cwd()) else path
        table.add_row(reproduction.name, reproduction.description, str(shown))
    for reproduction in COMPUTED.values():
        table.add_row(reproduction.name, reproduction.description, "(computed)")
    console.print(table)


def _version(value: bool) -> None:
    if value:
        console.print(f"privbandits {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Show the version and exit.")
    ] = False,
) -> None:
    """Privacy-preserving contextual bandits."""


if __name__ == "__main__":
    app()
