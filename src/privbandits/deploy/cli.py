"""Command groups ``privbandits deploy ...`` and ``privbandits party ...`` (typer sub-apps).

The main CLI adds them with ``app.add_typer(deploy_app, name="deploy")`` and
``app.add_typer(party_app, name="party")``. This module imports only typer and the standard
library at import time; everything else is imported inside the commands. It also runs on
its own (``python -m privbandits.deploy.cli deploy|party ...``), which is how
``deploy local`` starts the party processes.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

deploy_app = typer.Typer(
    help=(
        "Deployments: parties as separate processes over mutually authenticated TCP.\n\n"
        "Typical use:  privbandits deploy certs DEPLOY.toml --out certs;  "
        "privbandits deploy data DEPLOY.toml;  privbandits deploy local DEPLOY.toml"
    ),
    no_args_is_help=True,
    add_completion=False,
)
party_app = typer.Typer(
    help="Run one party of a deployment in this process (one per machine or organisation).",
    no_args_is_help=True,
    add_completion=False,
)

DeploymentArgument = Annotated[Path, typer.Argument(help="The deployment file (TOML).", show_default=False)]


def _fail(message: str, code: int = 2) -> None:
    from rich.console import Console

    Console(stderr=True).print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)
    raise typer.Exit(code=code)


def _load(path: Path):
    from privbandits.deploy.deployment import DeploymentError, load_deployment

    try:
        return load_deployment(path)
    except DeploymentError as exc:
        _fail(str(exc))


@deploy_app.command("certs")
def certs(
    deployment: DeploymentArgument,
    out: Annotated[
        Path | None, typer.Option("--out", help="Folder for the CA and party files (default: the folder of `ca`).")
    ] = None,
    days: Annotated[int, typer.Option("--days", min=1, help="Validity of every certificate.")] = 365,
) -> None:
    """Make a development CA and one certificate + key per party (keys are written with mode 0600)."""
    from rich.console import Console
    from rich.table import Table

    from privbandits.deploy.certs import write_development_pki

    spec = _load(deployment)
    folder = out if out is not None else spec.ca.parent
    ca, files = write_development_pki(folder, list(spec.parties), days=days)
    table = Table(title=f"development PKI in {folder}", title_justify="left")
    for column in ("party", "certificate", "key", "matches the deployment"):
        table.add_column(column)
    table.add_row("(CA)", str(ca), str(folder / "ca.key"), "yes" if ca.resolve() == spec.ca else f"no: ca = {spec.ca}")
    for name, written in files.items():
        entry = spec.parties[name]
        same = written.certificate.resolve() == entry.certificate and written.key.resolve() == entry.key
        table.add_row(name, str(written.certificate), str(written.key), "yes" if same else "no: edit the file")
    Console().print(table)


@deploy_app.command("data")
def data(deployment: DeploymentArgument) -> None:
    """Write each party's local data file for the protocol's synthetic problem (to try a deployment out)."""
    from rich.console import Console

    spec = _load(deployment)
    if spec.protocol.name == "vertical-o3m":
        from privbandits.deploy.vertical import write_synthetic_data
    elif spec.protocol.name == "p2b":
        from privbandits.deploy.p2b import write_synthetic_data
    elif spec.protocol.name == "fclub":
        Console().print("fclub: no data files (every party derives the synthetic users from the seed)")
        return
    else:
        from privbandits.deploy.mpc import write_synthetic_data

    for name, path in write_synthetic_data(spec).items():
        Console().print(f"{name}: {path}", highlight=False)


@deploy_app.command("local")
def local(
    deployment: DeploymentArgument,
    progress: Annotated[bool, typer.Option("--progress/--no-progress", help="Show a progress bar.")] = True,
    resume: Annotated[bool, typer.Option("--resume", help="Continue from the parties' checkpoints.")] = False,
    pin_cpus: Annotated[
        bool,
        typer.Option(
            "--pin-cpus",
            help="Pin each party's process to one core, the online parties first (Linux; parties that answer "
            "each other every round then never share a core while another is idle).",
        ),
    ] = False,
) -> None:
    """Run every party on 127.0.0.1 as separate processes with mutual TLS, then print the report.

    Background roles (the MPC dealer, whose material runs ahead of the rounds) run at lower CPU priority."""
    from rich.console import Console

    from privbandits.deploy.deployment import DeploymentError

    spec = _load(deployment)
    console = Console()
    try:
        codes, parties = _run_local(spec, progress, resume, console, pin_cpus)
    except DeploymentError as exc:
        _fail(str(exc))
    _report(spec, codes, parties, console)
    if any(codes.values()):
        raise typer.Exit(code=1)


def _run_local(spec, progress: bool, resume: bool, console, pin_cpus: bool = False):
    from rich.progress import Progress

    from privbandits.deploy.local import run_local

    if progress:
        with Progress(console=console, transient=False) as bar:
            task = bar.add_task(f"{spec.name}: rounds", total=None)
            codes, parties = run_local(
                spec,
                resume=resume,
                on_progress=lambda t, total: bar.update(task, completed=t, total=total),
                pin_cpus=pin_cpus,
            )
    else:
        codes, parties = run_local(spec, resume=resume, pin_cpus=pin_cpus)
    return codes, parties


def _report(spec, codes: dict[str, int], parties, console) -> None:
    import json

    from rich.table import Table

    results = {}
    for name in spec.parties:
        path = spec.result_path(name)
        if codes.get(name) == 0 and path.is_file():
            results[name] = json.loads(path.read_text())
    table = Table(title=f"{spec.name}: parties", title_justify="left")
    for column in ("party", "role", "exit", "outcome"):
        table.add_column(column)
    for party in parties:
        code = codes[party.name]
        outcome = "done" if code == 0 else party.last_error
        if code == 0 and "cumulative_reward" in results.get(party.name, {}):
            result = results[party.name]
            outcome = f"{result['rounds']} rounds, cumulative reward {result['cumulative_reward']:.2f}"
            if "cumulative_regret" in result:
                outcome += f", regret {result['cumulative_regret']:.2f}"
        elif code == 0 and "outcome" in results.get(party.name, {}):
            outcome = results[party.name]["outcome"]
        table.add_row(party.name, spec.parties[party.name].role, str(code), outcome)
    console.print(table)
    if len(results) != len(spec.parties):
        return
    links = Table(title="traffic per link (payload bytes as in simulation; wire = frame bytes)", title_justify="left")
    for column in ("phase", "sender", "receiver", "messages", "payload bytes", "wire bytes", "rounds"):
        links.add_column(column, justify="right" if column in ("messages", "payload bytes", "wire bytes") else "left")
    wire = {}
    for name, result in results.items():
        for phase, sender, receiver, _, size, _ in result["wire"]:
            if sender == name:
                wire[(phase, sender, receiver)] = size
    for result in results.values():
        for phase, sender, receiver, messages, size, rounds in result["traffic"]:
            on_wire = wire.get((phase, sender, receiver), "")
            links.add_row(phase, sender, receiver, str(messages), str(size), str(on_wire), str(rounds))
    console.print(links)
    console.print(f"results: {spec.output}", highlight=False)


@party_app.command("run")
def run(
    deployment: DeploymentArgument,
    name: Annotated[str, typer.Option("--as", help="The party this process plays.", show_default=False)],
    resume: Annotated[
        bool, typer.Option("--resume", help="Continue from the last round every party completed.")
    ] = False,
    listen_fd: Annotated[
        int | None, typer.Option("--listen-fd", hidden=True, help="Inherited listening socket (deploy local).")
    ] = None,
    progress_lines: Annotated[
        bool, typer.Option("--progress-lines", hidden=True, help="Print `progress t T` per round (deploy local).")
    ] = False,
) -> None:
    """Run one party: link to its peers with mutual TLS, play its part, write OUTPUT/NAME.result.json.

    Exit codes: 0 done; 2 unusable deployment or data; 3 a peer was lost (the line names it
    and the round); 4 a malformed or unexpected frame; 5 links could not be set up.
    """
    spec = _load(deployment)
    listener = None
    if listen_fd is not None:
        import socket

        listener = socket.socket(fileno=listen_fd)

    def report_progress(t: int, total: int) -> None:
        if t % max(1, total // 100) == 0 or t == total:  # at most ~100 lines, each may wake the launcher
            print(f"progress {t} {total}", flush=True)

    from privbandits.deploy.party import PartyFailed, run_party

    try:
        run_party(spec, name, listener=listener, resume=resume, on_round=report_progress if progress_lines else None)
    except PartyFailed as exc:
        print(f"party {name!r}: {exc}", file=sys.stderr, flush=True)
        raise typer.Exit(code=exc.exit_code) from None


standalone = typer.Typer(add_completion=False, no_args_is_help=True, help="privbandits deployments (standalone).")
standalone.add_typer(deploy_app, name="deploy")
standalone.add_typer(party_app, name="party")

if __name__ == "__main__":
    standalone()
