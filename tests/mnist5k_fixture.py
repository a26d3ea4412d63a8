"""A tiny MNIST-5k in a temporary data cache, for the tests of the ``mnist5k`` config kind and the
privacy map's ``data`` option.

Not a test module: ``tests/`` is on ``sys.path`` under pytest's default import mode. The file has the
real one's format (``mnist_5k.csv.gz``: 784 pixels 0–255 and a label per row, sorted by label) and the
cache's pinned checksum is re-pinned to it, as ``test_mpc_data_paper`` does.
"""

from __future__ import annotations

import gzip
import hashlib
from dataclasses import replace
from pathlib import Path

import numpy as np

from privbandits.datasets import cache


def write_mnist5k(path: Path, seed: int = 0, per_class: int = 8) -> None:
    """A ``mnist_5k.csv.gz``-format file: per digit a noisy prototype, ``per_class`` rows each."""
    rng = np.random.default_rng(seed)
    prototypes = rng.integers(0, 256, size=(10, 784))
    rows = []
    for label in range(10):
        for _ in range(per_class):
            pixels = np.clip(prototypes[label] + rng.integers(-40, 41, size=784), 0, 255)
            rows.append(",".join(map(str, [*pixels, label])))
    path.write_bytes(gzip.compress(("\n".join(rows) + "\n").encode(), mtime=0))


def repin(monkeypatch, folder: Path) -> None:
    """Pin the cache's checksum of ``mnist5k`` to the fixture file in ``folder``."""
    spec = cache.SOURCES["mnist5k"]
    members = {
        kept: (inner, hashlib.sha256((folder / kept).read_bytes()).hexdigest())
        for kept, (inner, _) in spec.members.items()
    }
    monkeypatch.setitem(cache.SOURCES, "mnist5k", replace(spec, members=members))


def install(root: Path, monkeypatch, seed: int = 0, per_class: int = 8) -> Path:
    """A data cache at ``root`` (``$PRIVBANDITS_DATA``) holding a tiny MNIST-5k (``per_class`` images per digit);
    its file's path."""
    monkeypatch.setenv(cache.CACHE_ENV, str(root))
    folder = root / "mnist5k"
    folder.mkdir(parents=True, exist_ok=True)
    write_mnist5k(folder / "mnist_5k.csv.gz", seed, per_class)
    repin(monkeypatch, folder)
    return folder / "mnist_5k.csv.gz"
