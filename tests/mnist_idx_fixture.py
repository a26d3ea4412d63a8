"""Tiny MNIST folders in the IDX format (``train-images-idx3-ubyte`` …) for tests that need real files.

Not a test module: ``tests/`` is on ``sys.path`` under pytest's default import mode.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from privbandits.datasets.mnist import MNIST_FILES


def idx_bytes(array: np.ndarray) -> bytes:
    """``array`` as an IDX file of unsigned bytes (MNIST's format)."""
    header = bytes([0, 0, 0x08, array.ndim]) + np.array(array.shape, dtype=">u4").tobytes()
    return header + array.astype(np.uint8).tobytes()


def write_idx(path: Path, array: np.ndarray) -> None:
    """An IDX file of unsigned bytes (MNIST's format)."""
    path.write_bytes(idx_bytes(array))


def write_mnist_folder(folder: Path, train: int = 40, test: int = 20, side: int = 28, seed: int = 5) -> Path:
    """``folder`` holding the four IDX files: ``train`` and ``test`` random ``side`` × ``side`` images of 10 classes."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    for part, n in (("train", train), ("test", test)):
        write_idx(folder / MNIST_FILES[f"{part}_images"], rng.integers(0, 256, size=(n, side, side)))
        write_idx(folder / MNIST_FILES[f"{part}_labels"], np.arange(n) % 10)
    return folder
