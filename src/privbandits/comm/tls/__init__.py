"""Parties as separate processes: a :class:`~privbandits.comm.Network` over mutually authenticated TCP.

Each process runs one party and holds a :class:`TlsNetwork`: one TCP connection per
peer, blocking sockets wrapped by the standard :mod:`ssl` module: bandit rounds are many small
messages, so latency decides, and blocking sockets had the lowest round-trip time on loopback
of the transports measured (asyncio streams, gRPC; ``benchmarks/network_latency.py``).

Security of a link:

* TLS 1.3 only, both ways authenticated: every party presents a certificate signed by
  the deployment's CA (and only that CA is trusted); the certificate's DNS subject
  alternative name must be exactly the party name the deployment file gives that
  address. No certificate, another CA, another name or a plaintext client is refused
  during the handshake, before any frame is read; the refusal is kept in
  :attr:`TlsNetwork.refusals` and the listener goes on waiting for the real peer.
* Unauthenticated traffic costs a bounded amount of work and stops no one: the listener
  (:class:`~privbandits.comm.tls.gate.Gate`) runs every connection's handshake side by side,
  each within ``handshake_timeout``, at most 64 at once; a dialer (and a device) tries again
  after a transient failure until its deadline. An idle, plaintext or garbage connection is
  refused at its own timeout and never ends set-up or a session.
* Frames (:mod:`~privbandits.comm.frames`) carry the codec's bytes, never pickle, with
  per-link sequence numbers (replay, reordering or loss is an error) and a bounded length.
  A decoded envelope must name the authenticated peer as sender and this party as receiver.
* Every receive has a deadline. A peer that dies, stalls past the deadline, sends a
  malformed frame or aborts raises :class:`PeerLost` (or :class:`~privbandits.comm.frames.FrameError`)
  naming the peer and the protocol round; :meth:`TlsNetwork.abort` then tells the remaining
  peers which peer was lost, so every party can exit with one line naming it.

Who dials whom: parties are ordered as in the deployment file; each party dials the
parties before it and accepts the ones after it (no cycles, so no deadlock).

Modules: :mod:`~privbandits.comm.tls.context` (errors, credentials, contexts, the listening
socket), :mod:`~privbandits.comm.tls.link` (one link's framing), :mod:`~privbandits.comm.tls.gate`
(the listener), :mod:`~privbandits.comm.tls.network` (:class:`TlsNetwork`), :mod:`~privbandits.comm.tls.rejoin`
(:class:`~privbandits.comm.tls.rejoin.RejoinNetwork`: links that survive a peer's restart, its messages replayed).
The transport's internal API, used by :mod:`privbandits.comm.oneshot` (and the P2B device front end), no private
member of another class: ``Link`` (``peer``, ``sock``, ``queue``, ``send``, ``read``, ``has_data``, ``set_timeout``,
``shut``), the gate's ``arrived``, ``wait`` and ``next_arrival``, and ``TlsNetwork``'s ``gate``, ``open_link``,
``link``, ``lost_peer``, ``count_wire``, ``note_dropped``, ``current_phase``, besides what every
:class:`~privbandits.comm.Network` declares (``check_links``, ``connection_per_sender``, ``rejoin_s``).

The ledger: :attr:`Network.traffic` counts, as in :class:`~privbandits.comm.InMemoryNetwork`,
the payload bytes, messages and rounds of the messages *this* party sends (the union of
all parties' ledgers is the in-memory ledger); :attr:`TlsNetwork.received` counts what it
received; :attr:`TlsNetwork.wire` counts frame bytes (header + codec bytes) both ways.
"""

from privbandits.comm.tls.context import (
    HandshakeError,
    PeerLost,
    TlsCredentials,
    TransportError,
    bind_listener,
    certificate_names,
    client_context,
    server_context,
)
from privbandits.comm.tls.link import BATCH_BYTES, READ_AHEAD
from privbandits.comm.tls.network import CONTROL, WIRE_VERSION, TlsNetwork

__all__ = [
    "BATCH_BYTES",
    "CONTROL",
    "READ_AHEAD",
    "WIRE_VERSION",
    "HandshakeError",
    "PeerLost",
    "TlsCredentials",
    "TlsNetwork",
    "TransportError",
    "bind_listener",
    "certificate_names",
    "client_context",
    "server_context",
]
