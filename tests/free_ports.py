"""Free TCP ports on 127.0.0.1 for the tests' deployments and services (each was free when asked; a test that binds
it later may, rarely, lose it to another process)."""

from __future__ import annotations

import socket


def free_ports(count: int) -> list[int]:
    """``count`` distinct ports, held open together while they are chosen so none is given twice."""
    sockets = [socket.create_server(("127.0.0.1", 0)) for _ in range(count)]
    ports = [int(sock.getsockname()[1]) for sock in sockets]
    for sock in sockets:
        sock.close()
    return ports


def free_port() -> int:
    """One free port."""
    return free_ports(1)[0]
