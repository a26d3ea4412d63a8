"""``privbandits serve`` and ``privbandits serve-token``: run a party as a service, give an application a token.

Both take either a **reference service file** (a ``[learner]`` table: the plaintext development service,
:mod:`privbandits.serve.settings`) or a **deployment file** with ``--as NAME``, whose protocol is asked for that
party's serving role (:meth:`~privbandits.deploy.registry.DeployableProtocol.serving_role`); a party its protocol does
not serve is said in one line (exit 2). Heavy modules (uvicorn, starlette, numpy) load only when a command runs.
"""

from __future__ import annotations

import ssl
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from privbandits.serve.role import ServedRole
    from privbandits.serve.settings import ServiceSettings

FileArgument = Annotated[
    Path,
    typer.Argument(
        help="A reference service file (TOML with a [learner] table: the plaintext development service) or a "
        "deployment file (then --as names the party).",
        show_default=False,
    ),
]
AsOption = Annotated[
    str | None,
    typer.Option("--as", help="The party to serve (a deployment file); a reference file's name, if given.",
                 show_default=False),
]  # fmt: skip


def _fail(message: str, code: int = 2) -> None:
    print(f"error: {message}", file=sys.stderr, flush=True)
    raise typer.Exit(code=code)


@dataclass
class Served:
    """What a service file names: the party's name, its role and its service settings."""

    name: str
    decider: ServedRole
    settings: ServiceSettings
    reproducible: bool


def _read(path: Path) -> dict:
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except FileNotFoundError:
        _fail(f"{path} does not exist")
    except (OSError, tomllib.TOMLDecodeError) as exc:
        _fail(f"{path} cannot be read as TOML: {exc}")
    raise AssertionError("unreachable")


def load_served(path: Path, name: str | None) -> Served:
    """The party ``path`` (and ``--as``) names, or exit 2 with one line."""
    from privbandits.serve.settings import SettingsError, is_reference_file, parse_reference

    if not path.exists() or path.suffix != ".toml":
        return _from_deployment(path, name)  # a shipped deployment's name, or a missing file: the loader says
    data = _read(path)
    if not is_reference_file(data):
        return _from_deployment(path, name)
    from privbandits.serve.reference import ReferenceDecider

    try:
        parsed = parse_reference(data, path.resolve().parent)
    except SettingsError as exc:
        _fail(f"{path}: {exc}")
        raise
    if name is not None and name != parsed.name:
        _fail(f"--as {name!r}: {path} is the reference service {parsed.name!r}")
    reproducible = parsed.learner.seed is not None
    return _budgeted(Served(parsed.name, ReferenceDecider(parsed.learner), parsed.service, reproducible))


def _budgeted(served: Served) -> Served:
    """``served`` with its role under the per-user budget its settings declare (exit 2 if it cannot keep one)."""
    from privbandits.serve.budget import BudgetError, with_user_budget

    settings = served.settings
    try:
        served.decider = with_user_budget(served.decider, settings.user_budget_epsilon, settings.user_budget_delta)
    except BudgetError as exc:
        _fail(str(exc))
    return served


def _from_deployment(path: Path, name: str | None) -> Served:
    from privbandits.deploy.cli import _load
    from privbandits.deploy.deployment import DeploymentError
    from privbandits.deploy.registry import PROTOCOLS
    from privbandits.serve.settings import ServiceSettings

    spec = _load(path)
    if name is None or name not in spec.parties:
        _fail(f"--as must name a party of {spec.name} ({', '.join(spec.parties)}), got {name!r}")
    assert name is not None
    try:
        decider = PROTOCOLS.get(spec.protocol.name).serving_role(spec, name)
    except DeploymentError as exc:  # a party the protocol does not serve, or its own files missing: one line
        _fail(str(exc))
        raise
    if decider is None:
        _fail(
            f"protocol {spec.protocol.name!r} has no serving role yet (party {name!r}): `privbandits serve` can serve "
            "it only once the protocol says how (docs/serve.md, for protocol authors)"
        )
    assert decider is not None
    party = spec.parties[name]
    options = spec.serve.get(name)
    settings = ServiceSettings(
        **(options.model_dump() if options is not None else {}),
        store=Path(spec.output) / f"{name}.serve.sqlite", certificate=party.certificate, key=party.key,
    )
    return _budgeted(Served(name, decider, settings, spec.reproducible))


def serve_command(
    file: FileArgument,
    name: AsOption = None,
    dev_plain_http: Annotated[
        bool,
        typer.Option("--dev-plain-http", help="Development only: plain HTTP, allowed on a loopback address only."),
    ] = False,
) -> None:
    """Serve a party's decisions to its application over HTTP until stopped (SIGINT/SIGTERM).

    FILE is a deployment file (with --as NAME: that party, as its protocol serves it: docs/serve-PROTOCOL.md) or a
    reference service file (the plaintext reference learner, no privacy). Endpoints: POST /v1/decide and POST
    /v1/reward (a party that decides), POST /v1/features (a party whose application puts its own rows), GET
    /v1/health, GET /v1/ledger, GET /metrics, and the OpenAPI document at GET /v1/openapi.json; every request
    but the document needs a token (`privbandits
    serve-token`). The API is TLS with the service's certificate; plain HTTP only with --dev-plain-http on a
    loopback address. Every answer is sent after what it acknowledges is in the party's store (SQLite): after a
    crash, a restart absorbs every acknowledged reward exactly once. On stderr: one line with the URL once
    listening. Exit codes: 0 stopped; 2 unusable file, settings or store (the line names it); 5 the address
    cannot be listened on.
    """
    from privbandits.deploy.deployment import DeploymentError
    from privbandits.serve.server import open_service, serve
    from privbandits.serve.settings import SettingsError
    from privbandits.serve.store import StoreError

    served = load_served(file, name)
    try:
        served.settings.check_transport(dev_plain_http)
        service = open_service(served.decider, served.settings)
    except (SettingsError, StoreError, DeploymentError) as exc:  # DeploymentError: a role's links, at its start
        _fail(str(exc))
        raise
    if served.reproducible:
        print("warning: reproducible coins (a seed): for tests and demos only", file=sys.stderr, flush=True)

    def announce(url: str) -> None:
        line = f"serving {served.name} ({served.decider.kind}) at {url}; store {served.settings.store}"
        print(line, file=sys.stderr, flush=True)

    try:
        serve(service, served.settings, announce)
    except ssl.SSLError as exc:
        _fail(f"service.certificate and service.key cannot be used for TLS: {exc}")
    except OSError as exc:
        _fail(f"cannot listen on {served.settings.host}:{served.settings.port}: {exc.strerror or exc}", 5)


def token_command(
    file: FileArgument,
    client: Annotated[str, typer.Option("--client", help="The application's name (replaces its token).")],
    name: AsOption = None,
) -> None:
    """Make a client token for an application of the service and print it (once: the store keeps only its hash).

    The running service picks it up within a second. Pass it as `Authorization: Bearer TOKEN`.
    """
    from privbandits.serve.auth import check_client_name, new_token, token_hash
    from privbandits.serve.store import EventStore, StoreError

    served = load_served(file, name)
    try:
        check_client_name(client)
        store = EventStore(served.settings.store, served.decider.identity())
    except (ValueError, StoreError) as exc:
        _fail(f"--client: {exc}" if isinstance(exc, ValueError) and not isinstance(exc, StoreError) else str(exc))
        raise
    token = new_token()
    store.add_token(client, token_hash(token))
    store.close()
    typer.echo(f"token for {client!r} of {served.name} (shown once; the store keeps its hash):", err=True)
    print(token)


def export_command(
    file: FileArgument,
    target: Annotated[
        Path, typer.Argument(metavar="OUT", help="The log to write: .npz (BanditFeedback) or .dsjson/.jsonl/.json.")
    ],
    name: AsOption = None,
    actions: Annotated[
        int | None,
        typer.Option("--actions", min=1, help="Arms the policy chooses among (default: one above the largest logged)."),
    ] = None,
) -> None:
    """Write the party's decision log for offline evaluation: every rewarded event's features (the party's own),
    arm, propensity and reward, as Open Bandit Pipeline's BanditFeedback (.npz) or Vowpal Wabbit's DSJSON.

    Read from the party's store (safe while the service runs). Evaluate it with `privbandits evaluate OUT ...`.
    """
    from privbandits.logs.files import log_format, save_log
    from privbandits.serve.export import decision_log
    from privbandits.serve.store import EventStore, StoreError
    from privbandits.validation import InvalidInputError

    served = load_served(file, name)
    try:
        log_format(target, "OUT")
        if not served.settings.store.exists():
            raise StoreError(f"event store {served.settings.store} does not exist: the party has not served yet")
        store = EventStore(served.settings.store, served.decider.identity())
        try:
            known = getattr(served.decider, "propensities_known", True)  # a role that does not decide logs nothing
            log = decision_log(store, actions, propensities_known=known)
        finally:
            store.close()
        save_log(log, target, "OUT")
    except (StoreError, InvalidInputError, ValueError, OSError) as exc:
        _fail(str(exc))
    typer.echo(f"wrote {target}: {log.n_rounds} rewarded events, {log.n_actions} arms", err=True)
