"""Run a served party: open its store (recovering its decider), build the app, serve it with uvicorn until stopped.

The listening socket is bound here (so port 0 works and the actual address is printed before the first request);
TLS uses the party's certificate and key; uvicorn's limits bound what a client may hold: connections, idle
keep-alive, header size. SIGINT or SIGTERM stops the service gracefully: in-flight requests finish, the learner is
checkpointed, the store closed (then uvicorn ends the process by the same signal, as it does for every app).
SIGKILL loses nothing acknowledged (see :mod:`privbandits.serve.service`).
"""

from __future__ import annotations

import socket
from collections.abc import Callable

import uvicorn

from privbandits.serve.app import ApiLimits, build_app
from privbandits.serve.auth import TokenSet
from privbandits.serve.role import ServedRole
from privbandits.serve.service import DecisionService, ServiceOptions
from privbandits.serve.settings import ServiceSettings

HEADER_BYTES = 16 * 1024


def open_service(decider: ServedRole, settings: ServiceSettings) -> DecisionService:
    """The service over the settings' store (``StoreError`` if it cannot be used)."""
    options = ServiceOptions(settings.reward_timeout_s, settings.checkpoint_every)
    return DecisionService.open(decider, settings.store, options)


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)  # so asyncio sets TCP_NODELAY on each
    # accepted connection (it does only for IPPROTO_TCP sockets): without it every response waits ~40 ms (Nagle
    # holds its body until the client acknowledges its headers, which the client delays)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def make_server(service: DecisionService, settings: ServiceSettings) -> tuple[uvicorn.Server, socket.socket, str]:
    """The uvicorn server of ``service``, its bound listening socket and its URL (TLS files checked here)."""
    sock = _bind(settings.host, settings.port)
    try:
        limits = ApiLimits(settings.max_body_bytes, settings.body_timeout_s)
        app = build_app(service, lambda: TokenSet(service.store.token_hashes()), limits, owns=True)
        config = uvicorn.Config(
            app,
            lifespan="on",
            log_level="warning",
            access_log=False,
            server_header=False,
            proxy_headers=False,
            timeout_keep_alive=int(max(1, settings.keep_alive_s)),
            limit_concurrency=settings.max_connections,
            h11_max_incomplete_event_size=HEADER_BYTES,
            timeout_graceful_shutdown=10,
            ssl_certfile=None if settings.certificate is None else str(settings.certificate),
            ssl_keyfile=None if settings.key is None else str(settings.key),
        )
        config.load()  # fails here, before anything is announced, on unusable TLS files
    except BaseException:
        sock.close()
        raise
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    return uvicorn.Server(config), sock, f"{'https' if settings.tls else 'http'}://{shown}:{port}"


def serve(service: DecisionService, settings: ServiceSettings, announce: Callable[[str], None]) -> None:
    """Serve ``service`` until SIGINT/SIGTERM; ``announce(url)`` once listening. Closes the service on the way out."""
    try:
        server, sock, url = make_server(service, settings)
        announce(url)
        server.run(sockets=[sock])
    finally:
        service.close()
