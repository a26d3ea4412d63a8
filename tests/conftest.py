"""Shared fixtures: small experiment configs."""

from __future__ import annotations

import copy
import os
import shutil
import tempfile
from pathlib import Path

import numpy  # noqa: F401  (load numpy's and scipy's BLAS before limiting them)
import pytest
import scipy.linalg  # noqa: F401
from threadpoolctl import threadpool_limits

ENCODER_CACHE = "PRIVBANDITS_CACHE"
"""Where P2B's public encoders are cached (``privbandits.privacy.encoding``)."""


def pytest_configure(config: pytest.Config) -> None:
    """One BLAS thread per test process: tests run two at a time on two cores, and
    the small matrices here gain nothing from threads but lose much to oversubscription.

    Tests never read the user's real-data cache (``privbandits data fetch``): it points at an
    empty folder, so reproductions fall back to their bundled data as on a fresh CI machine.

    Nor the user's encoder cache: the run has one of its own, made here in the first process (the xdist workers
    and every process a test starts inherit the variable), so each public encoder is fitted once a run, whichever
    test needs it first (a fit takes up to 12 s of CPU: d = 20 or 23), and the others read it."""
    threadpool_limits(limits=1)
    os.environ["PRIVBANDITS_DATA"] = tempfile.mkdtemp(prefix="privbandits-empty-cache-")
    if not hasattr(config, "workerinput"):  # not an xdist worker: the workers inherit the controller's
        os.environ[ENCODER_CACHE] = config.encoder_cache = tempfile.mkdtemp(prefix="privbandits-test-encoders-")


def pytest_unconfigure(config: pytest.Config) -> None:
    if hasattr(config, "encoder_cache"):
        shutil.rmtree(config.encoder_cache, ignore_errors=True)


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
def encoder_cache() -> Path:
    """The run's encoder cache (``pytest_configure``), which the processes a test starts inherit: the P2B tests
    name it where their parties fit or read the public encoder."""
    return Path(os.environ[ENCODER_CACHE])


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
