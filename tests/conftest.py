"""Shared fixtures: small experiment configs."""

from __future__ import annotations

import copy
import os
import tempfile

import numpy  # noqa: F401  (load numpy's and scipy's BLAS before limiting them)
import pytest
import scipy.linalg  # noqa: F401
from threadpoolctl import threadpool_limits


def pytest_configure(config: pytest.Config) -> None:
    """One BLAS thread per test process: tests run two at a time on two cores, and
    the small matrices here gain nothing from threads but lose much to oversubscription.

    Tests never read the user's real-data cache (``privbandits data fetch``): it points at an
    empty folder, so reproductions fall back to their bundled data as on a fresh CI machine."""
    threadpool_limits(limits=1)
    os.environ["PRIVBANDITS_DATA"] = tempfile.mkdtemp(prefix="privbandits-empty-cache-")


BASE_CONFIG = {
    "name": "tiny",
    "description": "a tiny synthetic experiment",
    "horizon": 300,
    "seeds": [0, 1, 2],
    "series_points": 50,
    "environment": {"kind": "linear_gaussian", "dim": 8, "n_arms": 4},
    "policies": [
        {"kind": "linucb", "label": "ucb", "alpha": 0.5},
        {"kind": "lints", "label": "ts", "v": 0.1},
    ],
}


@pytest.fixture
def config_data() -> dict:
    """A fresh, mutable copy of a small valid config mapping."""
    return copy.deepcopy(BASE_CONFIG)


@pytest.fixture(scope="session")
def postgres_server():
    """A throw-away PostgreSQL server for the session (``tests/pg_server.py``), stopped at its end; the tests that
    need it skip, saying why, where it cannot start."""
    from pg_server import PostgresServer, unavailable

    reason = unavailable()
    if reason is not None:
        pytest.skip(reason)
    try:
        server = PostgresServer.start()
    except RuntimeError as exc:
        pytest.skip(str(exc))
    yield server
    server.stop()
