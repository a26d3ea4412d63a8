"""Run one party of a deployment in this process: link up, play its part, write its result.

Before it listens or dials, a party checks its own files only (its CA certificate, certificate,
key and data file: :func:`check_own_files`), so a host needs nothing of the other parties'.
On a failure the party tells its remaining peers which peer was lost (an ABORT frame),
so every process exits with one line naming the same lost peer and round. Exit codes:
0 done, 2 unusable deployment, files or data (a missing, unreadable or mismatched file),
3 a peer was lost (died, stalled, closed early, or the session was aborted), 4 a malformed
or unexpected frame or message, 5 links could not be set up (its address cannot be listened
on, or peers refused or were unreachable).
"""

from __future__ import annotations

import json
import os
import socket
import ssl
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from privbandits.comm import HandshakeError, MessageDecodeError, PeerLost, ProtocolError, TlsCredentials, TlsNetwork
from privbandits.comm.frames import FrameError
from privbandits.deploy.certs import BUNDLE_HINT, check_party
from privbandits.deploy.deployment import BUNDLE_FILES, Deployment, DeploymentError
from privbandits.deploy.registry import PROTOCOLS, DeployableProtocol

EXIT_OK, EXIT_DEPLOYMENT, EXIT_LOST, EXIT_FRAME, EXIT_HANDSHAKE = 0, 2, 3, 4, 5


class PartyFailed(RuntimeError):
    """A party could not finish; ``exit_code`` says why (see the module docstring)."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def write_json_atomic(path: Path, value: object) -> None:
    """Write JSON to a temporary file beside ``path`` and rename it: never half-written. The file is its owner's
    alone (0600, whatever the umask), like every other private file: a party's result holds what only it may see
    (the MPC environment's and the active party's arms, P2B hosts' late rewards, FCLUB users' arms)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(descriptor, "w") as handle:
            json.dump(value, handle, indent=1)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temporary, 0o600)  # mkstemp's mode already; said here, since the result is private
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


class ListenFailed(DeploymentError):
    """A party cannot listen on its address (in use, not this host's, not allowed): exit code 5."""


def reason(exc: OSError) -> str:
    """The operating system's words for ``exc`` ("Address already in use"), without Python's decorations."""
    return os.strerror(exc.errno) if exc.errno else str(exc)


def check_own_files(deployment: Deployment, name: str) -> str:
    """Party ``name``'s own files, checked (:func:`~privbandits.deploy.certs.check_party`; its data file exists);
    the CA certificate's fingerprint. :class:`DeploymentError` with one line naming the field otherwise."""
    entry = deployment.parties[name]
    fields = {what: deployment.field_of(name, what) for what in BUNDLE_FILES}
    ca = check_party(name, entry.ca, entry.certificate, entry.key, fields, BUNDLE_HINT)
    if entry.data is not None and not entry.data.is_file():
        raise DeploymentError(
            f"{deployment.field_of(name, 'data')}: data file {entry.data} does not exist "
            "(make synthetic ones with `privbandits deploy data DEPLOY.toml`)"
        )
    return ca


def _ordered(addresses: dict, order: list[str] | None) -> dict:
    """``addresses`` in ``order`` (None: as they are)."""
    return addresses if order is None else {name: addresses[name] for name in order}


def network_for(
    deployment: Deployment,
    name: str,
    listener: socket.socket | None = None,
    *,
    deadline: float | None = None,
    peers: list[str] | None = None,
    keep_listening: bool = False,
    rejoin: tuple[float, float] | None = None,
    order: list[str] | None = None,
) -> TlsNetwork:
    """The (unconnected) network of party ``name``, configured from the deployment.

    ``deadline`` overrides the deployment's receive deadline (a protocol may give a party that
    waits on a party that itself waits on others a longer one, so the stall is reported by the
    party it stalls). ``rejoin``: ``(rejoin_s, backoff_s)`` for a network whose lost peers may come
    back (:class:`~privbandits.comm.tls.rejoin.RejoinNetwork`); None or ``rejoin_s = 0``: a lost peer is lost.
    ``order``: the parties in the order that sets who dials whom (each dials those before it); None: the file's.
    """
    if name not in deployment.parties:
        raise DeploymentError(f"no party named {name!r} in the deployment (parties: {', '.join(deployment.parties)})")
    entry = deployment.parties[name]
    fingerprint = check_own_files(deployment, name)
    kind: type[TlsNetwork] = TlsNetwork
    extra: dict[str, Any] = {}
    if rejoin is not None and rejoin[0] > 0:
        from privbandits.comm.tls.rejoin import RejoinNetwork

        kind, extra = RejoinNetwork, {"rejoin_s": rejoin[0], "backoff_s": rejoin[1]}
    try:
        return kind(
            name,
            _ordered(deployment.addresses(), order),
            TlsCredentials(entry.ca, entry.certificate, entry.key),
            session=deployment.digest(fingerprint),
            deadline=deployment.deadline_s if deadline is None else deadline,
            connect_deadline=deployment.connect_deadline_s,
            listener=listener,
            peers=peers,
            keep_listening=keep_listening,
            **extra,
        )
    except ssl.SSLError as exc:  # what check_own_files does not foresee (e.g. a curve this OpenSSL lacks)
        raise DeploymentError(f"parties.{name}: its certificate and key cannot be loaded ({exc.reason})") from None
    except OSError as exc:
        raise ListenFailed(f"parties.{name}.address: cannot listen on {entry.address} ({reason(exc)})") from None


def protocol_of(deployment: Deployment) -> DeployableProtocol[Deployment]:
    """The party code of ``deployment``'s protocol (:data:`~privbandits.deploy.registry.PROTOCOLS`'s)."""
    return PROTOCOLS.get(deployment.protocol.name)


def _rows(traffic) -> list[list]:
    return [list(row) for row in traffic.rows()]


def run_party(
    deployment: Deployment,
    name: str,
    *,
    listener: socket.socket | None = None,
    resume: bool = False,
    on_round: Callable[[int, int], None] | None = None,
    on_linked: Callable[[TlsNetwork], None] | None = None,
) -> dict:
    """Run party ``name`` to the end of the session; :class:`PartyFailed` with one clear line otherwise.

    Writes ``<output>/<name>.result.json`` (its decisions, if any, and its ledgers) atomically.
    ``resume`` continues a session from the parties' checkpoints (``<output>/checkpoints``).
    ``on_linked`` is called with the network once every link is up; ``on_round(t, total)`` by the party that
    learns the decisions, after each round.
    """
    try:
        protocol = protocol_of(deployment)
        if name not in deployment.parties:
            raise DeploymentError(
                f"no party named {name!r} in the deployment (parties: {', '.join(deployment.parties)})"
            )
        peers = protocol.peers(deployment, name)
        protocol.prepare(deployment, name)  # work a party does before it links up
        listening = protocol.keeps_listening(deployment, name)
        network = network_for(deployment, name, listener, deadline=protocol.receive_deadline(deployment, name),
                              peers=peers, keep_listening=listening, rejoin=protocol.rejoin(deployment),
                              order=protocol.link_order(deployment))  # fmt: skip
    except ListenFailed as exc:
        raise PartyFailed(str(exc), EXIT_HANDSHAKE) from None
    except DeploymentError as exc:
        raise PartyFailed(str(exc), EXIT_DEPLOYMENT) from None
    try:
        network.connect()
    except HandshakeError as exc:
        raise PartyFailed(str(exc), EXIT_HANDSHAKE) from None
    if on_linked is not None:
        on_linked(network)
    try:
        result = protocol.run_party(deployment, name, network, resume=resume, on_round=on_round)
    except PeerLost as exc:
        network.abort(str(exc), lost=exc.peer, round=exc.round)
        raise PartyFailed(str(exc), EXIT_LOST) from None
    except (FrameError, MessageDecodeError, ProtocolError) as exc:
        network.abort(str(exc))
        raise PartyFailed(str(exc), EXIT_FRAME) from None
    except DeploymentError as exc:
        network.abort(f"{name!r} cannot run: {exc}", lost=name)
        raise PartyFailed(str(exc), EXIT_DEPLOYMENT) from None
    except BaseException as exc:  # a bug or an interrupt: the others must still hear of it
        network.abort(f"{name!r} failed: {type(exc).__name__}: {exc}", lost=name)
        raise
    result.update(
        traffic=_rows(network.traffic),
        received=_rows(network.received),
        wire=_rows(network.wire),
        refusals=network.refusals,
        dropped=network.dropped,
    )
    if network.rejoin_s > 0:
        result["rejoins"] = list(network.rejoins)
    write_json_atomic(deployment.result_path(name), result)
    return result
