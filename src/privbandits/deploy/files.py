"""A party's local data file: the arrays of its ``.npz``, read without pickle, with every missing piece named,
and written readable by its owner only."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from privbandits.deploy.deployment import DeploymentError


def read_arrays(path: Path, what: str, wanted: Iterable[str], hint: str = "") -> dict[str, np.ndarray]:
    """Every array of ``path``; DeploymentError if the file is absent (``"{what} data file … does not exist"``
    plus ``hint``), unreadable, or lacks a key of ``wanted``."""
    try:
        with np.load(path, allow_pickle=False) as archive:
            arrays = {key: archive[key] for key in archive.files}
    except FileNotFoundError:
        raise DeploymentError(f"{what} data file {path} does not exist{hint}") from None
    except (OSError, ValueError) as exc:
        raise DeploymentError(f"{path}: not a readable .npz file ({exc})") from None
    missing = [key for key in wanted if key not in arrays]
    if missing:
        raise DeploymentError(f"{path}: missing array(s) {missing}; it has {sorted(arrays)}")
    return arrays


def write_private_npz(path: Path, **arrays: np.ndarray) -> Path:
    """Write ``arrays`` to ``path`` (its folder made) with mode 0600: a party's data and seeds are its own.

    The file is never readable by others, even for a moment, nor when it replaces one that was."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "wb") as handle:
        os.fchmod(handle.fileno(), 0o600)
        np.savez(handle, **arrays)  # type: ignore[arg-type]  # numpy's stub: a key may be allow_pickle
    return path
