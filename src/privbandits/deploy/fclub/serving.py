"""FCLUB served live (``privbandits serve DEPLOY.toml --as NAME``, issue 46): which party serves what, and what the
served parties share.

* Every **local server** (``local0``, ``local1``, ...) is a :class:`~privbandits.serve.decider.Decider`
  (:class:`~privbandits.deploy.fclub.serve_local.ServedLocalServer`): its application asks for a decision for one of
  the server's users (``user_id``, the K candidate arms' features), and reports the reward later.
* The **global server** is a plain :class:`~privbandits.serve.role.ServedRole`
  (:class:`~privbandits.deploy.fclub.serve_global.ServedGlobalServer`): no application API; it keeps the federation's
  clock and runs the phases (merge, renewals, downloads) with the local servers over their mutual-TLS links.
* The **users** party is not served: in ``deploy`` it stands for the users' devices and replays the synthetic arrivals;
  served, the application plays that part, talking to the user's local server directly.

The clock (spec §3.2: a phase starts at round t = 2^s − 1). A round is a reward a local server absorbed: every absorb
ends with one message to the global server (the upload Eq. 5 made due, or a :class:`~.serve_messages.Tick`), and the
local server waits for its answer, as a lock-step deployment does. The global server counts them; when round t's
count makes a phase start due, it first quiesces every local server (:class:`~.serve_messages.Quiesce`: each finishes
the exchange it has in flight and answers :class:`~.serve_messages.Quiet`), then runs the phase start (detection,
phase uploads, merge, renewals) as ``deploy`` does, and only then answers the absorb that made it due. A local server
handles the phase on its link thread, or inside the absorb that waits, holding its lock: decisions asked meanwhile wait
behind it. So when the application sends each reward right after its decision (the replay client), every decision
sees exactly the state the in-memory run's has, and the served decisions equal ``deploy local``'s in reproducible
mode.
"""

from __future__ import annotations

import hashlib
import io
import json
import select
import sys
import threading
import time
import zipfile
from collections.abc import Collection

import numpy as np

from privbandits.comm import HandshakeError, Message, PeerLost, ProtocolError, TlsNetwork
from privbandits.deploy import snapshot
from privbandits.deploy.deployment import Deployment, DeploymentError
from privbandits.deploy.fclub.section import FCLUBProtocol

POLL_S = 0.2
"""How long an idle link thread waits for its socket before it looks whether it is asked to stop."""


def identity(deployment: Deployment[FCLUBProtocol], name: str) -> str:
    """What a served party's state depends on: the protocol section, the randomness mode and the parties' roles."""
    digest = hashlib.sha256(f"fclub-serve/1|{name}|{deployment.protocol_digest()}".encode()).hexdigest()
    return f"fclub:{name}:{digest}"


ATTEMPT_S = 2.0
"""Each try to (re)make a party's links lasts this long; tries go on until ``connect_deadline_s`` or a stop."""


def linked(
    deployment: Deployment[FCLUBProtocol], name: str, peers: list[str], deadline: float, stopping: threading.Event
) -> TlsNetwork:
    """Party ``name``'s mutual-TLS links to ``peers``, made as ``deploy`` makes them, in tries of
    :data:`ATTEMPT_S` until the deployment's ``connect_deadline_s`` (parties start, and restart, in any order);
    :class:`DeploymentError` in one line if they cannot be made, or if ``stopping`` is set meanwhile."""
    from privbandits.deploy.party import network_for

    until = time.monotonic() + deployment.connect_deadline_s
    while True:
        network = network_for(deployment, name, peers=peers, deadline=deadline)
        network.connect_deadline = min(ATTEMPT_S, max(0.1, until - time.monotonic()))
        try:
            return network.connect()
        except HandshakeError as exc:
            if stopping.is_set() or time.monotonic() >= until:
                raise DeploymentError(f"{name}: the links to {', '.join(peers)} could not be made: {exc}") from None


def waiting(exc: PeerLost) -> bool:
    """Whether ``exc`` only says that nothing came within a poll (rather than that a link ended)."""
    return " s deadline" in str(exc) and ("message within the" in str(exc) or "message from any of" in str(exc))


def waiting_message(network: TlsNetwork, sender: str, kind: str) -> Message:
    """The message of ``kind`` from ``sender`` that a peek has just read ahead (left waiting), to check it first."""
    for envelope, _ in network.link(sender).queue:
        if envelope.message.kind == kind:
            return envelope.message
    raise ProtocolError(f"no {kind!r} message from {sender!r} is waiting")


def check_statistics(msg: Message, sender: str, dim: int, clusters: Collection[int]) -> None:
    """An upload's or a download's fields as the protocol allows them (a known local cluster, a finite d × d gram,
    a finite d-vector, a count >= 0), or a :class:`ProtocolError` naming the field and the value."""
    cluster, gram, moment, count = msg.cluster, msg.gram, msg.moment, msg.count  # type: ignore[attr-defined]
    problems = []
    if cluster not in clusters:
        problems.append(f"cluster {cluster!r} is none of {sorted(clusters)}")
    for name, array, shape in (("gram", gram, (dim, dim)), ("moment", moment, (dim,))):
        if not isinstance(array, np.ndarray) or array.shape != shape or array.dtype != np.float64:
            problems.append(f"{name} must be float64 of shape {shape}, got {getattr(array, 'shape', type(array))}")
        elif not np.isfinite(array).all():
            problems.append(f"{name} must be finite")
    if not (isinstance(count, int) and count >= 0):
        problems.append(f"count must be an integer >= 0, got {count!r}")
    if problems:
        raise ProtocolError(f"{sender!r} sent a malformed {msg.kind!r}: {'; '.join(problems)}")


def readable(link, timeout: float) -> bool:
    """Whether a frame of ``link`` can be read now: bytes read ahead or decrypted, or its socket readable within
    ``timeout`` seconds."""
    if link.has_data():
        return True
    return bool(select.select([link.sock], [], [], timeout)[0])


def encode_state(state: dict[str, object]) -> bytes:
    """A role's state as exact bytes: the arrays and the JSON tree of :mod:`privbandits.deploy.snapshot`."""
    arrays, tree = snapshot.encode(state)
    buffer = io.BytesIO()
    words = np.frombuffer(json.dumps(tree).encode(), dtype=np.uint8)
    np.savez(buffer, **arrays, __tree__=words)  # type: ignore[arg-type]  # numpy's stub: a key may be allow_pickle
    return buffer.getvalue()


def decode_state(data: bytes) -> dict:
    """The state :func:`encode_state` wrote; ``ValueError`` if the bytes are not one."""
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as archive:
            arrays = {key: archive[key] for key in archive.files if key != "__tree__"}
            tree = json.loads(archive["__tree__"].tobytes().decode())
    except (OSError, KeyError, EOFError, ValueError, zipfile.BadZipFile) as exc:
        raise ValueError(f"the checkpoint is not an FCLUB served party's state ({exc})") from None
    return snapshot.decode(arrays, tree)


class Links:
    """A served party's links and the thread that serves its peers: started by :meth:`run`, stopped by
    :meth:`stop` (the thread ends between two messages, never inside a phase)."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.network: TlsNetwork | None = None
        self.stopping = threading.Event()
        self.thread: threading.Thread | None = None
        self.failure: str | None = None

    def run(self, target, name: str) -> None:
        def guarded() -> None:
            try:
                target()
            except Exception as exc:  # the links are gone: say so on stderr and in the ledger
                self.failure = f"{type(exc).__name__}: {exc}"
                if not self.stopping.is_set():
                    print(f"error: {name}: its links ended: {self.failure}", file=sys.stderr, flush=True)

        self.thread = threading.Thread(target=guarded, name=f"fclub-{name}-links", daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.stopping.set()
        if self.thread is not None:
            self.thread.join(timeout=30.0)
        if self.network is not None:  # an abort, not a close: a peer hears either as this party lost, and a close
            try:  # waited up to a second for a CLOSE that no peer sends back (it links again instead)
                self.network.abort("stopped serving", lost=self.network.local)
            except (OSError, ValueError):  # the links were being made again
                self.network.close_sockets()
