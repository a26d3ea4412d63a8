"""A party's local data file: the arrays of its ``.npz``, read without pickle, with every missing piece named."""

from __future__ import annotations

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
