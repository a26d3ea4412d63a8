"""Parties linked over the TLS transport in one process, for the transport's tests and the P2B front end's: 127.0.0.1,
ephemeral ports, parties in threads, every wait with a deadline of a few seconds and every thread joined with a
timeout.

Not a test module: ``tests/`` is on ``sys.path`` (pyproject.toml's ``[tool.pytest.ini_options] pythonpath``).
"""

from __future__ import annotations

import socket
import threading

import numpy as np

from privbandits.comm import TlsNetwork
from privbandits.comm.tls import bind_listener

DEADLINE = 3.0
JOIN = 15.0


class Background:
    """Run a callable in a thread; ``result()`` joins it (bounded) and re-raises its error."""

    def __init__(self, function) -> None:
        self.value, self.error = None, None

        def target() -> None:
            try:
                self.value = function()
            except BaseException as exc:  # noqa: BLE001 - handed to the test thread
                self.error = exc

        self.thread = threading.Thread(target=target, daemon=True)
        self.thread.start()

    def result(self):
        self.thread.join(JOIN)
        assert not self.thread.is_alive(), "background party did not finish in time"
        if self.error is not None:
            raise self.error
        return self.value


def addresses(names: list[str]) -> tuple[dict[str, tuple[str, int]], dict[str, socket.socket]]:
    listeners = {name: bind_listener() for name in names}
    return {name: listener.getsockname()[:2] for name, listener in listeners.items()}, listeners


def network(name, addrs, listeners, credentials, **options) -> TlsNetwork:
    options = {"deadline": DEADLINE, "connect_deadline": DEADLINE, "handshake_timeout": 2.0, **options}
    return TlsNetwork(name, addrs, credentials, listener=listeners.pop(name, None), **options)


def linked(pki, names: list[str], **options) -> dict[str, TlsNetwork]:
    """Networks of ``names``, all connected to each other."""
    addrs, listeners = addresses(names)
    nets = {name: network(name, addrs, listeners, pki[name], **options) for name in names}
    jobs = [Background(net.connect) for net in nets.values()]
    for job in jobs:
        job.result()
    for listener in listeners.values():
        listener.close()
    return nets


def close_all(nets) -> None:
    jobs = [Background(net.close) for net in nets.values()]
    for job in jobs:
        job.result()


def assert_same_message(got, sent) -> None:
    assert type(got) is type(sent)
    for name in sent.field_names:
        np.testing.assert_array_equal(getattr(got, name), getattr(sent, name))


def raw_link(net: TlsNetwork, peer: str):
    return net.link(peer)
