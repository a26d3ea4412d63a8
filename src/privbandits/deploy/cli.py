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
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    pass

deploy_app = typer.Typer(
    help=(
        "Deployments: parties as separate processes over mutually authenticated TCP.\n\n"
        "Typical use:  privbandits deploy certs DEPLOY.toml;  "
        "privbandits deploy data DEPLOY.toml;  privbandits deploy local DEPLOY.toml  (DEPLOY.toml: a file, or a "
        "shipped deployment's name, e.g. mpc-epsilon-greedy, copied into this folder on first use)"
    ),
    no_args_is_help=True,
    add_completion=False,
)
party_app = typer.Typer(
    help="Run one party of a deployment in this process (one per machine or organisation).",
    no_args_is_help=True,
    add_completion=False,
)

DeploymentArgument = Annotated[
    Path,
    typer.Argument(
        help="The deployment file (TOML), or a shipped deployment's name (mpc-epsilon-greedy, ...): copied to "
        "./NAME.toml on first use, that copy used afterwards.",
        show_default=False,
    ),
]


def _fail(message: str, code: int = 2) -> None:
    from rich.console import Console

    Console(stderr=True).print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)
    raise typer.Exit(code=code)


def _checked(value: int, option: str, low: int, high: int | None, note: str) -> None:
    """Exit 2 with one line (``OPTION must be in [LOW, HIGH] (NOTE), got VALUE``) unless ``value`` is in range."""
    from privbandits.validation import Integer, InvalidInputError, check

    try:
        check(value, option, Integer(low, high, note=note))
    except InvalidInputError as exc:
        _fail(str(exc))


def _reason(exc: OSError) -> str:
    from privbandits.deploy.party import reason

    return reason(exc)


def _load(path: Path, *, fixed_ports: bool = False):
    """The deployment file, or exit 2 with one line; ``fixed_ports``: refuse port 0 (`deploy local` resolves it)."""
    from privbandits.deploy.deployment import DeploymentError, load_deployment
    from privbandits.deploy.shipped import resolve

    try:
        spec = load_deployment(resolve(path))  # a shipped deployment's name: its copy here (deploy/shipped.py)
        if fixed_ports:
            spec.check_ports()
        return spec
    except DeploymentError as exc:
        _fail(str(exc))


@deploy_app.command("certs")
def certs(
    deployment: DeploymentArgument,
    out: Annotated[
        Path | None,
        typer.Option("--out", help="Where to write the bundles: the file's `bundles` folder (the default) only."),
    ] = None,
    days: Annotated[int, typer.Option("--days", help="Validity of every certificate, in days (1 to 3650).")] = 365,
    force: Annotated[
        bool,
        typer.Option("--force", help="Replace a CA and bundles already there (the hosts' copies stop working)."),
    ] = False,
) -> None:
    """Make a development CA and one bundle per party: BUNDLES/NAME/ holds the CA certificate, the party's
    certificate and its key (0600); the CA's key stays in BUNDLES, in no party's folder. Copy BUNDLES/NAME to
    party NAME's host (beside the deployment file, as the file names it): that host needs nothing else of it.
    A CA and bundles already in BUNDLES are kept unless --force."""
    from privbandits.deploy.certs import MOST_DAYS, existing_bundles, write_bundles

    spec = _load(deployment)
    if spec.bundles is None:
        _fail(
            f"{deployment}: bundles: not set; `deploy certs` writes one bundle per party into the folder `bundles` "
            'names (add e.g. bundles = "certs" to the file; it replaces ca, certificate and key)'
        )
    if out is not None and out.resolve() != spec.bundles:
        _fail(
            f"--out {out}: the deployment reads its bundles from bundles = {spec.bundles} (relative to the file); "
            "omit --out, or change `bundles` in the file"
        )
    _checked(days, "--days", 1, MOST_DAYS, "a development certificate's validity in days: at most ten years")
    there = existing_bundles(spec.bundles, spec.parties)
    if there and not force:
        _fail(
            f"bundles: {spec.bundles} already holds a CA and bundles ({', '.join(there)}); a new CA would replace "
            "them and every bundle already copied to a host would stop working: add --force to replace them"
        )
    try:
        written = write_bundles(spec.bundles, list(spec.parties), days=days)
    except OSError as exc:
        _fail(f"bundles: cannot write {exc.filename} ({_reason(exc)})")
    lines = [f"{spec.name}: one bundle per party in {spec.bundles} (copy NAME/ to party NAME's host)"]
    for name, files in written.parties.items():
        lines.append(f"  {name}: {files['key'].parent}/ ({', '.join(path.name for path in files.values())})")
    lines.append(f"the CA's key, for no party's host: {written.ca_key}")
    for line in lines:
        print(line)


@deploy_app.command("data")
def data(deployment: DeploymentArgument) -> None:
    """Write each party's local data file for the protocol's synthetic problem (to try a deployment out)."""
    from rich.console import Console

    from privbandits.deploy.deployment import DeploymentError
    from privbandits.deploy.party import protocol_of

    spec = _load(deployment)
    protocol = protocol_of(spec)
    if protocol.no_data_files is not None:
        Console().print(f"{protocol.name}: no data files ({protocol.no_data_files})")
        return
    try:
        written = protocol.write_synthetic_data(spec)
    except OSError as exc:
        _fail(f"{exc.filename}: cannot write a data file ({_reason(exc)})")
    except DeploymentError as exc:
        _fail(str(exc))
    for name, path in written.items():
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

    Every party's files are checked before any starts (exit 2 naming the field; 5 if an address cannot be
    listened on); exit 1 if a party failed. Background roles (the MPC dealer, whose material runs ahead of
    the rounds) run at lower CPU priority."""
    from rich.console import Console

    from privbandits.deploy.deployment import DeploymentError
    from privbandits.deploy.party import EXIT_DEPLOYMENT, EXIT_HANDSHAKE, ListenFailed

    spec = _load(deployment)
    console = Console()
    try:
        codes, parties = _run_local(spec, progress, resume, console, pin_cpus)
    except DeploymentError as exc:
        _fail(str(exc), EXIT_HANDSHAKE if isinstance(exc, ListenFailed) else EXIT_DEPLOYMENT)
    _report(spec, codes, parties, console)
    if any(codes.values()):
        raise typer.Exit(code=1)


@deploy_app.command("load")
def load(
    deployment: DeploymentArgument,
    devices: Annotated[int, typer.Option("--devices", help="Simulated devices, one encoded report each.")] = 1000,
    rate: Annotated[float, typer.Option("--rate", help="Reports per second in all (0: as fast as they go).")] = 0.0,
    processes: Annotated[int, typer.Option("--processes", help="Processes driving the devices.")] = 2,
    concurrency: Annotated[int, typer.Option("--concurrency", help="Connections in flight per process.")] = 16,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the devices' random reports.")] = 0,
    local_service: Annotated[
        bool, typer.Option("--local", help="Start the shuffler and the server on 127.0.0.1 first (else: running).")
    ] = False,
    resumption: Annotated[
        bool, typer.Option("--tls-resumption/--no-tls-resumption", help="Devices resume their host's TLS session.")
    ] = True,
    progress: Annotated[bool, typer.Option("--progress/--no-progress", help="Show a progress bar.")] = True,
) -> None:
    """Drive a running P2B shuffler with simulated devices over mutual TLS, one connection per report.

    Plays every device host of the file (their certificates): waits for the shuffler to open the encoded batch,
    sends the reports, closes the batch and fetches the model. Prints the accepted reports per second, latency
    percentiles, refusals and failures. Exit 2 for bad input (one line), 1 if a report failed or a party did."""
    import tempfile

    from privbandits.deploy.deployment import DeploymentError
    from privbandits.deploy.p2b.load import LoadSettings, check_deployment

    spec = _load(deployment, fixed_ports=not local_service)
    settings = LoadSettings(devices, rate, processes, concurrency, seed, resumption)
    try:
        check_deployment(spec, settings)
    except DeploymentError as exc:
        _fail(str(exc))
    with tempfile.TemporaryDirectory() as workdir:
        result, codes = _run_load(spec, settings, local_service, progress, Path(workdir))
    summary = result.summary()
    latency = summary["latency_ms"]
    print(f"{summary['accepted']} of {devices} reports accepted in {summary['seconds']:.2f} s: "
          f"{summary['accepted_per_s']:,.0f} accepted reports/s; latency p50 {latency['p50']:.1f} ms, "
          f"p90 {latency['p90']:.1f} ms, p99 {latency['p99']:.1f} ms; {summary['refused']} refused, "
          f"{summary['failed']} failed")  # fmt: skip
    for error in result.errors:
        print(f"a device failed: {error}")
    for name, code in codes.items():
        print(f"{name}: exit {code}")
    if summary["failed"] or any(codes.values()):
        raise typer.Exit(code=1)


def _run_load(spec, settings, local_service: bool, progress: bool, workdir: Path):
    from rich.progress import Progress

    from privbandits.comm import ProtocolError, TransportError
    from privbandits.comm.frames import FrameError
    from privbandits.deploy.deployment import DeploymentError
    from privbandits.deploy.local import wait_parties
    from privbandits.deploy.p2b.load import run_load, start_service
    from privbandits.deploy.party import ListenFailed

    listeners, started = None, []
    try:
        if local_service:
            spec, started, listeners = start_service(spec, workdir)
        with Progress(disable=not progress, transient=True) as bar:
            task = bar.add_task("devices", total=settings.devices)
            result = run_load(spec, settings, listeners=listeners,
                              on_progress=lambda done, _: bar.update(task, completed=done))  # fmt: skip
        codes = wait_parties(started, spec.deadline_s) if started else {}
    except ListenFailed as exc:
        _fail(str(exc), 5)
    except (DeploymentError, OSError, TransportError, ProtocolError, FrameError) as exc:
        why = "; ".join(f"{p.name}: {p.last_error}" for p in started if p.process.poll() not in (None, 0))
        _fail(f"deploy load: {exc}" + (f" ({why})" if why else ""), 1)
    finally:
        for party in started:
            if party.process.poll() is None:
                party.process.kill()
    return result, codes


@deploy_app.command("hosts")
def hosts(
    deployment: DeploymentArgument,
    folder: Annotated[
        Path, typer.Option("--dir", help="Empty or new folder for one folder per party (each host's files).")
    ] = Path("hosts"),
    timeout: Annotated[float, typer.Option("--timeout", min=1, help="Seconds before every party is killed.")] = 600,
) -> None:
    """Every party on a host of its own (Linux, root): a network namespace with its own address, and a folder
    holding only the shared file, its bundle and its data; the parties reach each other only by address.

    Run `deploy certs` and `deploy data` first. Each party's result is in DIR/NAME/out; exit 1 if a party failed."""
    from rich.console import Console

    from privbandits.deploy.deployment import DeploymentError
    from privbandits.deploy.hosts import run_hosts, unavailable
    from privbandits.deploy.party import check_own_files

    spec = _load(deployment)
    _new_folder(folder, "--dir")
    why = unavailable()
    if why is not None:
        _fail(f"deploy hosts: {why}")
    try:
        for name in spec.parties:
            check_own_files(spec, name)
    except DeploymentError as exc:
        _fail(str(exc))
    console = Console()
    run = run_hosts(spec, folder, timeout_s=timeout)
    for name, code in run.codes.items():
        last = run.stderr[name].splitlines()[-1] if run.stderr[name] else ""
        console.print(f"{name}: exit {code}  {last}", highlight=False, soft_wrap=True)
    if any(run.codes.values()):
        raise typer.Exit(code=1)


def _new_folder(folder: Path, option: str) -> None:
    """Exit 2 with one line unless ``folder`` is a new or empty folder this process can write."""
    from privbandits.experiments.writable import PathError, check_writable

    try:
        check_writable(folder, option, folder=True)
    except PathError as exc:
        _fail(str(exc))
    if folder.is_dir() and any(folder.iterdir()):
        _fail(f"{option} must be a new or empty folder (got {str(folder)!r}, which holds files)")


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

    from privbandits.deploy.console import link_summary
    from privbandits.deploy.party import protocol_of

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
        outcome = protocol_of(spec).summary(results.get(party.name, {})) if code == 0 else party.last_error
        table.add_row(party.name, spec.parties[party.name].role, str(code), outcome)
    console.print(table)
    if len(results) != len(spec.parties):
        return
    links = Table(
        title="traffic per link (payload bytes as in simulation; wire = frame bytes; a host's devices in one row)",
        title_justify="left",
    )
    numbers = ("messages", "payload bytes", "wire bytes")
    for column in ("phase", "sender", "receiver", *numbers, "rounds"):
        links.add_column(column, justify="right" if column in numbers else "left")
    for row in link_summary(results):
        links.add_row(*map(str, row))
    console.print(links)
    console.print(f"results: {spec.output}", highlight=False)


@party_app.command("run")
def run(
    deployment: DeploymentArgument,
    name: Annotated[str, typer.Option("--as", help="The party this process plays.", show_default=False)],
    resume: Annotated[
        bool, typer.Option("--resume", help="Continue from the last round every party completed.")
    ] = False,
    progress: Annotated[
        bool | None,
        typer.Option(
            "--progress/--no-progress",
            help="Progress lines on stderr (round, rounds/s, bytes) [default: when stderr is a terminal].",
            show_default=False,
        ),
    ] = None,
    listen_fd: Annotated[
        int | None, typer.Option("--listen-fd", hidden=True, help="Inherited listening socket (deploy local).")
    ] = None,
    progress_lines: Annotated[
        bool, typer.Option("--progress-lines", hidden=True, help="Print `progress t T` per round (deploy local).")
    ] = False,
) -> None:
    """Run one party: link to its peers with mutual TLS, play its part, write OUTPUT/NAME.result.json.

    It reads only its own files (its bundle and data file). On stderr: one line once linked (its peers and
    their addresses), progress on a terminal or with --progress, and an outcome line naming the result file.
    Exit codes: 0 done; 2 unusable deployment, files or data (the line names the field); 3 a peer was lost
    (the line names it and the round); 4 a malformed or unexpected frame; 5 links could not be set up (its
    address cannot be listened on, or peers refused or were unreachable).
    """
    spec = _load(deployment, fixed_ports=listen_fd is None)
    listener = None
    if listen_fd is not None:
        import socket

        listener = socket.socket(fileno=listen_fd)
    from privbandits.deploy.console import PartyConsole
    from privbandits.deploy.party import PartyFailed, run_party

    show = sys.stderr.isatty() if progress is None else progress
    console = PartyConsole(name, {p: e.address for p, e in spec.parties.items()}, sys.stderr, show_progress=show)

    def on_round(t: int, total: int) -> None:
        if progress_lines and (t % max(1, total // 100) == 0 or t == total):  # ~100 lines: each wakes the launcher
            print(f"progress {t} {total}", flush=True)
        console.round(t, total)

    try:
        result = run_party(spec, name, listener=listener, resume=resume, on_round=on_round, on_linked=console.linked)
    except PartyFailed as exc:
        console.failed(str(exc))
        raise typer.Exit(code=exc.exit_code) from None
    console.done(result, spec.result_path(name))


standalone = typer.Typer(add_completion=False, no_args_is_help=True, help="privbandits deployments (standalone).")
standalone.add_typer(deploy_app, name="deploy")
standalone.add_typer(party_app, name="party")

if __name__ == "__main__":
    standalone()
