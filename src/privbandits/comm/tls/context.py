"""The transport's errors, a party's TLS credentials and contexts, and its listening socket."""

from __future__ import annotations

import functools
import socket
import ssl
from dataclasses import dataclass
from pathlib import Path

LISTEN_BACKLOG = 128
"""Connections the kernel queues for a listener before the party takes them (idle intruders wait there too)."""


class TransportError(RuntimeError):
    """A link could not be set up or used."""


class HandshakeError(TransportError):
    """A peer could not be connected and authenticated (or refused us)."""


class PeerLost(TransportError):
    """A peer died, stalled past the deadline, closed early or aborted the session.

    ``peer`` is the party that was lost (for an abort relayed by another party, the one
    that party lost) and ``round`` the protocol round it was lost in, when known.
    """

    def __init__(self, message: str, *, peer: str, round: str | None = None) -> None:
        super().__init__(message)
        self.peer, self.round = peer, round


@dataclass(frozen=True)
class TlsCredentials:
    """PEM files of one party: the deployment CA's certificate, its own certificate and private key."""

    ca: Path
    certificate: Path
    key: Path


def _context(credentials: TlsCredentials, *, server: bool) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER if server else ssl.PROTOCOL_TLS_CLIENT)
    context.minimum_version = context.maximum_version = ssl.TLSVersion.TLSv1_3
    context.check_hostname = False  # the peer's name is checked against the deployment file instead
    context.verify_mode = ssl.CERT_REQUIRED  # on the server side this demands a client certificate
    context.load_verify_locations(cafile=str(credentials.ca))  # only the deployment CA, no system roots
    context.load_cert_chain(str(credentials.certificate), str(credentials.key))
    return context


def server_context(credentials: TlsCredentials) -> ssl.SSLContext:
    """TLS 1.3 server context that requires a client certificate from the deployment CA."""
    return _context(credentials, server=True)


def client_context(credentials: TlsCredentials) -> ssl.SSLContext:
    """TLS 1.3 client context that presents this party's certificate and trusts only the deployment CA."""
    return _context(credentials, server=False)


def certificate_names(sock: ssl.SSLSocket | ssl.SSLObject) -> list[str]:
    """DNS subject alternative names of the peer's (already verified) certificate."""
    der = sock.getpeercert(binary_form=True)
    return list(_dns_names(der)) if der else []


@functools.lru_cache(maxsize=1024)
def _dns_names(der: bytes) -> tuple[str, ...]:
    """The DNS subject alternative names in a certificate (DER), remembered per certificate: decoding it for each
    connection was a visible part of a shuffler's CPU per device, and a deployment's devices present a few
    certificates many times."""
    from cryptography import x509

    try:
        alt = x509.load_der_x509_certificate(der).extensions.get_extension_for_class(x509.SubjectAlternativeName)
    except x509.ExtensionNotFound:
        return ()
    return tuple(alt.value.get_values_for_type(x509.DNSName))


def bind_listener(host: str = "127.0.0.1", port: int = 0, backlog: int = LISTEN_BACKLOG) -> socket.socket:
    """A listening TCP socket (port 0: an ephemeral port; read it with ``getsockname()``)."""
    return socket.create_server((host, port), backlog=backlog)


def transient(exc: BaseException) -> bool:
    """A failure worth another try: the peer is not up yet, was busy, or dropped the half-made connection
    (a timeout, a refused or reset connection, an end of stream). A TLS alert or a certificate that does not
    verify is an answer, not a transient failure."""
    if isinstance(exc, ssl.SSLEOFError | ssl.SSLZeroReturnError | EOFError):
        return True
    return isinstance(exc, OSError) and not isinstance(exc, ssl.SSLError)
