"""The inter-party links of a served vertical party: mutual TLS as ``deploy`` makes them, linked again after a failure.

A served party runs for as long as its application needs it, and any party may be killed and restarted meanwhile.
Its links to the others are therefore made in **link sessions**: :class:`Relinker` builds the party's
:class:`~privbandits.comm.TlsNetwork` (its certificate, key and CA, the deployment's addresses, digest and
deadlines: the same checks as ``deploy``), connects to the peers it needs, and hands the linked network to the role's
``session`` function (set-up, then serving). When the session ends on a failure (a peer lost, a malformed or
unexpected message, a refused handshake), the network is aborted, so every linked peer ends its session too, and all
link again: every session starts with a fresh set-up (the mask generator sends every block again; pair seeds are
drawn afresh), so no party carries state from one session into the next beyond what its store holds.

The mask generator comes first in a deployment's order, so every party dials it and it only accepts: while the
others serve it waits in its next set-up, and a restarted mask generator joins their next link session.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from privbandits.comm import HandshakeError, MessageDecodeError, PeerLost, ProtocolError, TlsCredentials, TlsNetwork
from privbandits.comm.frames import FrameError
from privbandits.deploy.certs import BUNDLE_HINT, check_party
from privbandits.deploy.deployment import BUNDLE_FILES, Deployment, DeploymentError
from privbandits.validation import InvalidInputError

log = logging.getLogger(__name__)

LINK_FAILURES = (PeerLost, HandshakeError, FrameError, MessageDecodeError, ProtocolError, InvalidInputError, OSError)
"""What ends a link session (a peer, its messages or the transport at fault), never the party itself."""

PAUSE_S = (0.05, 1.0)
"""First and longest pause between two link sessions (doubling while set-ups fail)."""


def own_credentials(deployment: Deployment, name: str) -> tuple[TlsCredentials, str]:
    """Party ``name``'s TLS files, checked as ``deploy`` checks them (:func:`~privbandits.deploy.certs.check_party`),
    and the session digest its links agree on. A served party needs no data file, so none is asked for."""
    entry = deployment.parties[name]
    fields = {what: deployment.field_of(name, what) for what in BUNDLE_FILES}
    fingerprint = check_party(name, entry.ca, entry.certificate, entry.key, fields, BUNDLE_HINT)
    return TlsCredentials(entry.ca, entry.certificate, entry.key), deployment.digest(fingerprint)


class Relinker:
    """Runs ``session(network)`` over fresh links from party ``name`` to ``peers``, again after each failure, on a
    thread of its own, until :meth:`stop` (see the module docstring).

    ``session`` returns when its link session is over (a failure raises one of :data:`LINK_FAILURES`); it may block
    for as long as the session lasts. ``sessions`` counts the link sessions set up, ``failures`` the ones that ended
    on a failure, ``last_failure`` says the latest one's reason.
    """

    def __init__(
        self, deployment: Deployment, name: str, peers: list[str], session: Callable[[TlsNetwork], None]
    ) -> None:
        self.deployment, self.name, self.peers, self.session = deployment, name, peers, session
        self.credentials, self.digest = own_credentials(deployment, name)
        self.stopping = threading.Event()
        self.sessions = self.failures = 0
        self.last_failure = ""
        self._network: TlsNetwork | None = None
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name=f"privbandits-links-{name}", daemon=True)

    def network(self) -> TlsNetwork:
        """A new, unconnected network of this party to its peers (its listener bound if it accepts any)."""
        deployment = self.deployment
        try:
            return TlsNetwork(
                self.name,
                deployment.addresses(),
                self.credentials,
                peers=self.peers,
                session=self.digest,
                deadline=deployment.deadline_s,
                connect_deadline=deployment.connect_deadline_s,
            )
        except OSError as exc:
            raise DeploymentError(f"parties.{self.name}.address: cannot listen ({exc})") from None

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """End the current link session (its peers hear of it) and the thread."""
        self.stopping.set()
        with self._lock:
            network = self._network
        if network is not None:
            network.abort(f"{self.name!r} stopped serving", lost=self.name)
        self._thread.join(timeout=2.0)  # a daemon: one stuck in a connect ends with the process

    def _run(self) -> None:
        pause = PAUSE_S[0]
        while not self.stopping.is_set():
            try:
                network = self.network()
            except DeploymentError as exc:  # its address is taken (e.g. its previous process is still closing)
                self._failed(str(exc))
                self.stopping.wait(pause)
                pause = min(2 * pause, PAUSE_S[1])
                continue
            with self._lock:
                self._network = network
            try:
                network.connect()
                self.sessions += 1
                pause = PAUSE_S[0]
                self.session(network)
            except LINK_FAILURES as exc:
                if not self.stopping.is_set():
                    self._failed(f"{type(exc).__name__}: {exc}")
            finally:
                with self._lock:
                    self._network = None
                network.abort("link session over", lost=None)
            self.stopping.wait(pause)
            pause = min(2 * pause, PAUSE_S[1])

    def _failed(self, why: str) -> None:
        """Count a failed link session; say why on stderr when the reason changes (a party waiting for its peers
        fails the same way every ``connect_deadline_s``)."""
        self.failures += 1
        if why != self.last_failure:
            log.warning("%s: link session ended (%s); linking again", self.name, why)
        self.last_failure = why


def wait_readable(network: TlsNetwork, peer: str, stopping: threading.Event, poll_s: float = 0.25) -> bool:
    """Block until ``peer``'s link has bytes (True) or the party stops (False), however long the peer is quiet (a
    served passive party waits for requests that come when the application's users come)."""
    return wait_any_readable(network, [peer], stopping, poll_s)


def wait_any_readable(
    network: TlsNetwork, peers: list[str], stopping: threading.Event, poll_s: float = 0.25
) -> bool:
    """Block until one of ``peers``' links has bytes or has ended (True), or the party stops (False)."""
    import select

    links = [network.link(peer) for peer in peers]
    while not stopping.is_set():
        if any(link.has_data() for link in links):
            return True
        readable, _, _ = select.select([link.sock for link in links], [], [], poll_s)
        if readable:
            return True
    return False
