"""The ``privbandits`` command line: run and report reproductions and configs, show their options, list them.

Only light modules are imported here; the protocols, numba and matplotlib load when
a command needs them, so ``privbandits --help``, ``list`` and ``show`` start fast.
"""

from __future__ import annotations

import os

# The compiled kernels run in parallel between serial steps; on small machines their idle
# OpenMP threads must sleep rather than spin (measured: the P2B pipeline runs ~20% faster).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from pathlib import Path  # noqa: E402
from typing import Annotated  # noqa: E402

import typer  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402
from rich.text import Text  # noqa: E402

from privbandits import __version__  # noqa: E402
from privbandits.audit.cli import audit_command  # noqa: E402
from privbandits.data_cli import data_app  # noqa: E402
from privbandits.deploy.cli import deploy_app, party_app  # noqa: E402
from privbandits.evaluation.cli import evaluate_command  # noqa: E402
from privbandits.experiments.config import ConfigError  # noqa: E402
from privbandits.experiments.overrides import OptionError, split_assignments  # noqa: E402
from privbandits.experiments.reproduction import ReportError  # noqa: E402
from privbandits.logs.cli import logs_app  # noqa: E402
from privbandits.serve.cli import export_command, serve_command, token_command  # noqa: E402

app = typer.Typer(
    help=(
        "Privacy-preserving contextual bandits: run paper reproductions and experiment configs "
        "into one results store, rebuild their reports from it, and list or show what exists.\n\n"
        "Typical use:  privbandits list;  privbandits show vertical-fig4;  "
        "privbandits run vertical-fig4 -o seeds=0,1;  privbandits report vertical-fig4;  "
        "privbandits deploy certs|data|local vertical-vfucb (a shipped deployment, every party its own process)"
    ),
    no_args_is_help=True,
    add_completion=False,
)
app.add_typer(deploy_app, name="deploy")
app.add_typer(party_app, name="party")
app.add_typer(data_app, name="data")
app.add_typer(logs_app, name="logs")
app.command("audit")(audit_command)
app.command("evaluate")(evaluate_command)
app.command("serve")(serve_command)
app.command("serve-token")(token_command)
app.command("serve-export")(export_command)
console = Console()
err_console = Console(stderr=True)

DEFAULT_STORE = Path("results/results.sqlite")
DEFAULT_OUT = Path("results")

StoreOption = Annotated[Path, typer.Option("--store", help="SQLite results store (`run` creates it if missing).")]
OutOption = Annotated[Path, typer.Option("--out", help="Folder for the reports: PNG figures, CSV and Markdown.")]
OverrideOption = Annotated[
    list[str] | None,
    typer.Option(
        "--option",
        "-o",
        help="KEY=VALUE, typed by the reproduction's spec (lists comma-separated: -o seeds=0,1,2); "
        "repeatable; `privbandits show NAME` lists the keys.",
    ),
]

_USER_ERRORS: tuple[type[Exception], ...] = (ConfigError, OptionError, ReportError, FileNotFoundError, ValueError)
"""Shown as one line (``writable.PathError`` is a ValueError)."""


def _fail(message: str) -> None:
    err_console.print(Text("error: ", style="bold red") + Text(message), highlight=False, soft_wrap=True)
    raise typer.Exit(code=2)


def _user_errors() -> tuple[type[Exception], ...]:
    """Errors that are the caller's, shown as one line (the store's and executors' load lazily)."""
    from privbandits.experiments.executors import ExecutorError
    from privbandits.experiments.store import StoreError

    return (*_USER_ERRORS, StoreError, ExecutorError)


def _check_out(out: Path) -> None:
    from privbandits.experiments.writable import check_writable

    check_writable(out, "--out", folder=True)


def _existing_store(store: Path) -> None:
    """``report`` and ``site`` read a store that exists: a folder or a missing file is named as such."""
    if store.is_dir():
        _fail(f"--store {str(store)!r} is a folder; give the results file (e.g. {str(store / 'results.sqlite')!r})")
    if not store.is_file():
        _fail(f"results store {store} does not exist; run `privbandits run NAME` first")


def _print_report(paper) -> None:
    """Tables, the claims, and every file the report wrote."""
    for caption, rows in paper.tables.items():
        table = Table(title=caption, title_justify="left")
        for column in rows[0]:
            table.add_column(column, overflow="fold")
        for row in rows[1:]:
            table.add_row(*row)
        console.print(table)
    if paper.claims:
        console.print(paper.table())
    for path in [*paper.figures, *paper.files]:
        console.print(f"wrote {path}")


def _write_report(paper, out: Path) -> None:
    _print_report(paper)
    if paper.claims or paper.notes:
        console.print(f"wrote {paper.write(out)}")


@app.command()
def run(
    names: Annotated[
        list[str],
        typer.Argument(help="Reproduction names (`privbandits list`) or config TOML files.", show_default=False),
    ],
    option: OverrideOption = None,
    store: StoreOption = DEFAULT_STORE,
    out: OutOption = DEFAULT_OUT,
    jobs: Annotated[int, typer.Option("--jobs", "-j", min=1, help="Worker processes (or Ray workers).")] = 1,
    executor: Annotated[
        str, typer.Option("--executor", help="Where units run: 'local' (a process pool) or 'ray'.")
    ] = "local",
    ray_address: Annotated[
        str | None, typer.Option("--ray-address", help="Join this Ray cluster (default: start a local one).")
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Recompute units already in the store.")] = False,
    report: Annotated[bool, typer.Option("--report/--no-report", help="Write the report afterwards.")] = True,
    progress: Annotated[bool, typer.Option("--progress/--no-progress", help="Show a progress bar.")] = True,
) -> None:
    """Compute every unit of each reproduction that the store lacks, then write its report.

    Every finished unit is stored at once, keyed by the hash of its complete spec, so an
    interrupted command, run again, continues where it stopped; a changed option is a
    different unit. Options are checked, all of them, before anything runs.
    """
    from privbandits.experiments import catalog
    from privbandits.experiments import reproduction as repro

    try:
        if executor not in ("local", "ray"):
            raise OptionError(f"--executor must be one of 'local', 'ray' (got {executor!r})")
        if ray_address is not None and executor != "ray":
            raise OptionError(f"--ray-address is used only with --executor ray (got --executor {executor})")
        _check_out(out)
        raw = split_assignments(option)
        plans = []
        for name in names:
            reproduction = catalog.find(name)
            plans.append((reproduction, reproduction.parse(raw)))
        from privbandits.experiments.store import ResultsStore

        with ResultsStore(store) as results:
            for reproduction, options in plans:
                console.print(f"[bold]{reproduction.name}[/]: {reproduction.description}", highlight=False)
                try:
                    summary, paper = repro.run(
                        reproduction,
                        options,
                        results,
                        out,
                        jobs=jobs,
                        executor=executor,
                        ray_address=ray_address,
                        force=force,
                        progress=progress,
                        build=report,
                    )
                except KeyboardInterrupt:
                    err_console.print(
                        f"[yellow]interrupted:[/] finished units are saved in {store}; "
                        "run the same command again to continue",
                        soft_wrap=True,
                    )
                    raise typer.Exit(code=130) from None
                console.print(
                    f"computed {len(summary.computed)} unit(s); {summary.stored} already in {store}"
                    + (f"; {summary.waited} finished by another process" if summary.waited else "")
                )
                if paper is not None:
                    _write_report(paper, out)
    except _user_errors() as exc:
        _fail(str(exc))


@app.command("report")
def report_command(
    names: Annotated[
        list[str] | None,
        typer.Argument(
            help="Reproduction names or config files (default: everything run into the store).", show_default=False
        ),
    ] = None,
    option: OverrideOption = None,
    store: StoreOption = DEFAULT_STORE,
    out: OutOption = DEFAULT_OUT,
    book: Annotated[
        Path | None,
        typer.Option("--book", help="Also write every report into this one Markdown file, e.g. docs/results.md."),
    ] = None,
    also: Annotated[
        list[str] | None,
        typer.Option(
            "--also",
            help="With --book: one more section, for other stored options of a reproduction: "
            '"NAME -o KEY=VALUE ..." (repeatable).',
        ),
    ] = None,
) -> None:
    """Rebuild reports (figures, tables, paper-vs-ours claims) from the store alone.

    Without -o, each reproduction is reported with the options it was last run with.
    """
    from privbandits.experiments import catalog
    from privbandits.experiments import reproduction as repro

    _existing_store(store)
    try:
        _check_out(out)
        if also and book is None:
            _fail("--also adds sections to the book: give --book FILE with it")
        if book is not None:
            from privbandits.experiments.writable import check_writable

            check_writable(book, "--book", folder=False)
        raw = split_assignments(option)
        from privbandits.experiments.store import ResultsStore

        with ResultsStore(store) as results:
            chosen = names or results.invocations()
            if not chosen:
                _fail(f"{store} holds no runs yet")
            sections = []
            for name in sorted(chosen) if book else chosen:
                reproduction = catalog.find(name, results)
                if not raw and results.recall(reproduction.name) is None:
                    raise ReportError(
                        f"no stored runs of {reproduction.name!r} in {store}; run `privbandits run {name}` first"
                    )
                options = repro.resolve_options(reproduction, raw, results)
                paper = repro.report(reproduction, options, results, out)
                _write_report(paper, out)
                if book:
                    from privbandits.experiments.book import section

                    sections.append(section(reproduction, options, paper))
            if book:
                from privbandits.experiments.audits import book_section
                from privbandits.experiments.evaluations import book_section as evaluation_section

                audit = book_section(results)  # the audits stored, if any
                evaluation = evaluation_section(results)  # the off-policy evaluations stored, if any
                sections += _also_sections(also or [], results) + [part for part in (audit, evaluation) if part]
        if book:
            from privbandits.experiments.book import write_book

            console.print(f"wrote {write_book(sections, book, also or [])}")
    except _user_errors() as exc:
        _fail(str(exc))


def _also_sections(also: list[str], results) -> list[str]:
    """The book's sections for ``--also`` options (reports drawn in a scratch folder: the book has no figures)."""
    import tempfile

    from privbandits.experiments import catalog
    from privbandits.experiments import reproduction as repro
    from privbandits.experiments.book import parse_also, section

    sections = []
    for text in also:
        name, assignments = parse_also(text)
        reproduction = catalog.find(name, results)
        options = repro.resolve_options(reproduction, split_assignments(assignments), None)
        with tempfile.TemporaryDirectory() as scratch:
            sections.append(section(reproduction, options, repro.report(reproduction, options, results, Path(scratch))))
    return sections


@app.command("site")
def site_command(
    store: StoreOption = DEFAULT_STORE,
    out: Annotated[Path, typer.Option("--out", help="Folder for the site (index.html opens from disk).")] = Path(
        "results/site"
    ),
    names: Annotated[
        list[str] | None,
        typer.Argument(help="Reproductions to include (default: everything run into the store).", show_default=False),
    ] = None,
) -> None:
    """Write a static HTML results site from the store: an index and one page per reproduction."""
    _existing_store(store)
    try:
        _check_out(out)
        from privbandits.experiments.site import build_site
        from privbandits.experiments.store import ResultsStore

        with ResultsStore(store) as results:
            if not (names or results.invocations()):
                _fail(f"{store} holds no runs yet")
            pages = build_site(results, out, names)
    except _user_errors() as exc:
        _fail(str(exc))
    console.print(f"wrote {out / 'index.html'} ({len(pages)} reproduction page(s))", soft_wrap=True)


@app.command("show")
def show_command(
    name: Annotated[str, typer.Argument(help="A reproduction name, a config file, or a policy or environment kind.")],
) -> None:
    """Print every option of a reproduction, or of a policy or environment kind: key, type, default and what it
    does (a protocol's options as the protocol declares them); of a deployment file, its settings and its protocol's
    options with their bounds and the values the file sets."""
    from privbandits.experiments import catalog

    deployment = _deployment_table(name)
    if deployment is not None:
        _show_deployment(Path(name), deployment)
        return
    try:
        reproduction = catalog.find(name)
    except _USER_ERRORS as exc:
        kind = _kinds().get(name)
        if kind is None:
            _fail(str(exc))
        console.print(f"[bold]kind {name}[/]: {(kind.__doc__ or '').strip()}", highlight=False)
        _options_table(kind, "options of its policies or environment table (KEY = VALUE)", {})
        return
    console.print(f"[bold]{reproduction.name}[/]: {reproduction.description}", highlight=False)
    _options_table(reproduction.options_model(), "options (-o KEY=VALUE)", _config_values(reproduction))


def _kinds() -> dict:
    """Policy and environment config classes by their ``kind``."""
    from privbandits.experiments.config import ENVIRONMENT_CONFIGS, by_kind
    from privbandits.experiments.registry import POLICY_KINDS

    return {**POLICY_KINDS.by_kind(), **by_kind(ENVIRONMENT_CONFIGS)}


def _deployment_table(name: str) -> dict | None:
    """The table of the deployment file ``name`` (a TOML file with ``protocol`` and ``parties``), else None."""
    path = Path(name)
    if path.suffix != ".toml" or not path.is_file():
        return None
    from privbandits.experiments.tomlfile import read_toml

    try:
        data = read_toml(path, ConfigError)
    except ConfigError as exc:
        _fail(str(exc))
    return data if isinstance(data.get("protocol"), dict) and "parties" in data else None


def _show_deployment(path: Path, data: dict) -> None:
    """A deployment file's settings and its protocol section's options (the models' fields), with its values."""
    from privbandits.deploy.deployment import Deployment
    from privbandits.deploy.registry import PROTOCOLS

    protocol = data["protocol"]
    section = PROTOCOLS.section(protocol.get("name"))
    if section is None:
        known = ", ".join(map(repr, PROTOCOLS.names()))
        _fail(f"{path}: protocol.name: must be one of {known}, got {protocol.get('name', '(nothing)')!r}")
    parties = data["parties"] if isinstance(data["parties"], dict) else {}
    roles = ", ".join(f"{party} ({entry.get('role', '?') if isinstance(entry, dict) else '?'})"
                      for party, entry in parties.items())  # fmt: skip
    console.print(f"[bold]{data.get('name', path.stem)}[/]: deployment file of protocol {protocol['name']}; "
                  f"parties: {roles or 'none'}", highlight=False, soft_wrap=True)  # fmt: skip
    _options_table(Deployment, "settings (top level)", {}, data, skip=("protocol", "parties", "source"))
    _options_table(section, f"\\[protocol] options of {protocol['name']}", {}, protocol, skip=("name",))


def _options_table(model, title: str, defaults: dict, values: dict | None = None, skip: tuple[str, ...] = ()) -> None:
    """Key, type, default (``defaults`` over the model's) and description of every field of ``model`` but ``skip``;
    with ``values`` (a deployment file's), also each field's bounds and the value ``values`` sets."""
    from privbandits.experiments.overrides import type_name

    columns: tuple[str, ...] = ("key", "type", "default", "description")
    if values is not None:
        columns = ("key", "type", "bounds", "default", "this file", "description")
    table = Table(title=title, title_justify="left")
    for column in columns:
        table.add_column(column, overflow="fold")
    for key, info in model.model_fields.items():
        if key in skip:
            continue
        default = "(required)" if info.is_required() else info.get_default(call_default_factory=True)
        row = {"key": key, "type": type_name(info.annotation), "bounds": _bounds(info),
               "default": _shown(defaults.get(key, default)), "description": info.description or "",
               "this file": _shown(values[key]) if values and key in values else ""}  # fmt: skip
        table.add_row(*(row[column] for column in columns))
    console.print(table)


def _bounds(info) -> str:
    """A field's bounds as its pydantic metadata states them: ``>= 1, <= 1024``."""
    signs = {"gt": ">", "ge": ">=", "lt": "<", "le": "<=", "min_length": "length >=", "max_length": "length <="}
    return ", ".join(f"{sign} {getattr(item, key)}" for item in info.metadata for key, sign in signs.items()
                     if hasattr(item, key))  # fmt: skip


def _config_values(reproduction) -> dict:
    """A config's own values (its file is the default); nothing for paper reproductions."""
    path = getattr(reproduction, "path", None)
    if path is None:
        return {}
    from privbandits.experiments.tomlfile import read_toml

    return read_toml(path, ConfigError)


def _shown(value) -> str:
    if isinstance(value, list | tuple):
        return (
            ",".join(_shown(v) for v in value)
            if all(not isinstance(v, dict) for v in value)
            else f"{len(value)} table(s)"
        )
    if isinstance(value, dict):
        return "table: " + ", ".join(f"{k}={_shown(v)}" for k, v in value.items())
    return str(value)


@app.command("list")
def list_command() -> None:
    """List the policies, environments and reproductions (with `show NAME` for their options)."""
    from privbandits.experiments.catalog import NONE_INSTALLED, REPRODUCTIONS, shipped_configs
    from privbandits.experiments.config import ENVIRONMENT_CONFIGS, by_kind
    from privbandits.experiments.registry import POLICY_KINDS

    kinds: tuple[tuple[str, dict], ...] = (
        ("policies (kind = ...)", POLICY_KINDS.by_kind()),
        ("environments (kind = ...)", by_kind(ENVIRONMENT_CONFIGS)),
    )
    for title, models in kinds:
        table = Table(title=title, title_justify="left")
        table.add_column("kind", style="bold cyan")
        table.add_column("description")
        table.add_column("options")
        for kind, schema in models.items():
            options = ", ".join(name for name in schema.model_fields if name != "kind")
            table.add_row(kind, (schema.__doc__ or "").strip().partition("\n")[0], options)
        console.print(table)
    table = Table(title="reproductions (privbandits run NAME; privbandits show NAME)", title_justify="left")
    table.add_column("name", style="bold cyan")
    table.add_column("description")
    table.add_column("kind")
    for name, config in shipped_configs().items():
        table.add_row(name, config.description, "config")
    for reproduction in REPRODUCTIONS.values():
        table.add_row(reproduction.name, reproduction.description, "paper")
    console.print(table)
    if not REPRODUCTIONS:
        console.print(NONE_INSTALLED)


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
