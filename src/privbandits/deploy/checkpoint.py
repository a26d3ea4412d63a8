"""Checkpoints of a party's state at round boundaries: one ``.npz`` file, replaced atomically.

A checkpoint holds named arrays and a JSON ``meta`` mapping; it is written to a temporary
file beside the target, fsynced and renamed, so a party killed mid-write leaves the
previous checkpoint intact. A damaged one (truncated, emptied, bytes changed: the archive's CRC-32 of each member
catches a change) is refused whole (:class:`DamagedState`, one line naming the file), never half-used. Files are
created with mode 0600 (they may hold mask seeds).
No pickle: :func:`capture` / :func:`restore` save a learner's numpy arrays, numbers and
random-generator states attribute by attribute (its configuration is rebuilt from the
deployment file).
"""

from __future__ import annotations

import enum
import json
import os
import tempfile
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from privbandits.deploy.deployment_parts import DeploymentError

if TYPE_CHECKING:
    from privbandits.deploy.deployment import Deployment

_META = "__meta__"
_SCALARS = (bool, int, float, str, type(None))


def save(path: Path, arrays: dict[str, np.ndarray], meta: dict) -> None:
    """Write the checkpoint atomically (temporary file, fsync, rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(descriptor, "wb") as handle:
            words = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
            np.savez(handle, **arrays, **{_META: words})  # type: ignore[arg-type]  # numpy's stub: a key may be allow_pickle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


class DamagedState(DeploymentError):
    """A state file that is there but cannot be read back whole (a party's exit code 2, one line naming it)."""


def load(path: Path) -> tuple[dict[str, np.ndarray], dict] | None:
    """``(arrays, meta)`` of the checkpoint at ``path``, or None if there is none; :class:`DamagedState` if it is
    there but damaged."""
    if not path.is_file():
        return None
    try:
        with np.load(path, allow_pickle=False) as archive:
            if _META not in archive.files:
                raise ValueError("no meta record")
            arrays = {key: archive[key] for key in archive.files if key != _META}
            meta = json.loads(archive[_META].tobytes().decode())
        if not isinstance(meta, dict):
            raise ValueError("its meta record is not a mapping")
    except (OSError, EOFError, ValueError, KeyError, zipfile.BadZipFile) as exc:
        why = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise DamagedState(
            f"{path} is damaged ({why}): not a whole file this party wrote; restore it or move it away to start the "
            "session afresh"
        ) from None
    return arrays, meta


def resume(deployment: Deployment, name: str) -> tuple[dict[str, np.ndarray], dict]:
    """Party ``name``'s checkpoint to resume from: ``(arrays, meta)``, refused (:class:`DeploymentError`)
    when there is none or it was written for another deployment (``meta["digest"]``)."""
    path = deployment.checkpoint_path(name)
    saved = load(path)
    if saved is None:
        raise DeploymentError(f"no checkpoint at {path} to resume from (start the session afresh)")
    if saved[1].get("digest") != deployment.protocol_digest():
        raise DeploymentError(f"{path} was written for another deployment (its digest differs)")
    return saved


class DecisionLog:
    """A party's decisions (int64), appended and fsynced at each checkpoint, which then stores only their
    count (a checkpoint holding them all cost O(T) each, O(T²) over a session).

    The log is written before the checkpoint that counts it, so it never holds fewer decisions than
    a checkpoint counts; a resumed party cuts it to the count of the checkpoint it resumes from (what
    was appended after that checkpoint, or torn by a crash, goes). Mode 0600, as the checkpoints.
    """

    def __init__(self, path: Path) -> None:
        self.path, self.written = path, 0

    def start(self) -> None:
        """An empty log (a fresh session)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600))
        self.written = 0

    def append(self, decisions: list[int]) -> None:
        """Write the decisions not yet logged, durably."""
        new = np.asarray(decisions[self.written :], dtype="<i8")
        if new.size:
            with open(self.path, "ab") as handle:
                handle.write(new.tobytes())
                handle.flush()
                os.fsync(handle.fileno())
        self.written = len(decisions)

    def restore(self, count: int, n_arms: int | None = None) -> list[int]:
        """The first ``count`` decisions; the log is cut there. :class:`DeploymentError` if it holds fewer, and
        :class:`DamagedState` if one is no arm (outside ``[0, n_arms)``, where given)."""
        if count == 0:  # the session's first checkpoint: nothing to keep
            self.start()
            return []
        size = self.path.stat().st_size if self.path.is_file() else 0
        if size < 8 * count:
            raise DeploymentError(f"{self.path} holds {size // 8} decisions; the checkpoint counts {count}")
        with open(self.path, "r+b") as handle:
            decisions = np.frombuffer(handle.read(8 * count), dtype="<i8")
            if n_arms is not None and not (0 <= decisions.min() and decisions.max() < n_arms):  # checked, then cut
                raise DamagedState(f"{self.path} is damaged: it holds decisions that are no arm of 0..{n_arms - 1}")
            handle.truncate(8 * count)
            handle.flush()
            os.fsync(handle.fileno())
        self.written = count
        return decisions.tolist()


def decision_log(deployment: Deployment, name: str) -> DecisionLog:
    """Party ``name``'s decision log, beside its checkpoint."""
    return DecisionLog(deployment.checkpoint_path(name).with_suffix(".decisions"))


def capture(obj: object, prefix: str = "") -> tuple[dict[str, np.ndarray], dict]:
    """Arrays, numbers and generator states of ``obj`` and of its privbandits sub-objects."""
    arrays: dict[str, np.ndarray] = {}
    meta: dict[str, object] = {}
    for key, value in vars(obj).items():
        name = f"{prefix}{key}"
        if isinstance(value, np.ndarray):
            arrays[name] = value
        elif isinstance(value, np.random.Generator):
            meta[name] = {"generator_state": value.bit_generator.state}
        elif isinstance(value, _SCALARS) and not isinstance(value, enum.Enum):  # enums: configuration
            meta[name] = value
        elif _is_component(value):
            more_arrays, more_meta = capture(value, f"{name}.")
            arrays.update(more_arrays)
            meta.update(more_meta)
    return arrays, meta


def restore(obj: object, arrays: dict[str, np.ndarray], meta: dict, prefix: str = "") -> None:
    """Put back what :func:`capture` saved into a freshly built object of the same configuration."""
    for key, value in vars(obj).items():
        name = f"{prefix}{key}"
        if isinstance(value, np.ndarray):
            if name not in arrays:
                raise ValueError(f"checkpoint lacks array {name!r}")
            saved = arrays[name]
            if saved.shape == value.shape and saved.dtype == value.dtype and value.flags.writeable:
                np.copyto(value, saved)
            else:
                setattr(obj, key, saved.copy())
        elif isinstance(value, np.random.Generator):
            value.bit_generator.state = meta[name]["generator_state"]
        elif _is_component(value):
            restore(value, arrays, meta, f"{name}.")
        elif name in meta and isinstance(value, _SCALARS) and not isinstance(value, enum.Enum):
            setattr(obj, key, meta[name])


def _is_component(value: object) -> bool:
    """A privbandits object holding state of its own (e.g. a learner's ridge statistics), not an enum."""
    return (
        hasattr(value, "__dict__")
        and not isinstance(value, enum.Enum | type)
        and type(value).__module__.startswith("privbandits.")
    )
