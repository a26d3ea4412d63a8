"""Open Bandit Pipeline's ``BanditFeedback`` dictionary, and the same dictionary in a ``.npz`` file.

OBP passes logged data around as a plain dict (``obp.types.BanditFeedback``): ``n_rounds`` and
``n_actions`` (ints), ``context``, ``action``, ``reward``, ``pscore``, ``position`` (None when the data
has no slots), ``action_context``, and for synthetic data ``expected_reward`` and ``pi_b``. OBP's
``pi_b`` carries a list dimension, shape ``(n_rounds, n_actions, len_list)``; :func:`to_bandit_feedback`
writes it with ``len_list = 1`` and :func:`from_bandit_feedback` takes either that or the
``(n_rounds, n_actions)`` matrix. privbandits adds ``event_id`` and ``timestamp`` (string arrays) when
the log has them; OBP ignores keys it does not use. Nothing here imports OBP.

The ``.npz`` file holds the same keys, a key absent when its value is None; strings are stored as
fixed-width unicode arrays, so the file loads with ``allow_pickle=False``.
"""

from __future__ import annotations

import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from privbandits.logs.feedback import LoggedFeedback
from privbandits.validation import InvalidInputError

REQUIRED = ("n_rounds", "n_actions", "context", "action", "reward", "pscore")
"""Keys every BanditFeedback must have."""
OPTIONAL = ("action_context", "position", "expected_reward", "pi_b", "event_id", "timestamp")
"""Keys a BanditFeedback may have (None or absent when the log lacks them)."""
KEYS = REQUIRED + OPTIONAL


def to_bandit_feedback(log: LoggedFeedback) -> dict[str, Any]:
    """The log as OBP's ``BanditFeedback`` dict (numpy arrays, copies that may be written to)."""
    feedback: dict[str, Any] = {"n_rounds": log.n_rounds, "n_actions": log.n_actions}
    for key in ("context", "action", "reward", "pscore", "position", "action_context", "expected_reward"):
        value = getattr(log, key)
        if value is not None or key == "position":  # OBP reads "position" even when there are none
            feedback[key] = None if value is None else np.array(value)
    if log.pi_b is not None:
        feedback["pi_b"] = np.array(log.pi_b)[:, :, np.newaxis]
    for key in ("event_id", "timestamp"):
        strings = getattr(log, key)
        if strings is not None:
            feedback[key] = np.array(strings, dtype=np.str_)
    return feedback


def _pi_b(value: object) -> object:
    """OBP's ``(n_rounds, n_actions, 1)`` as the matrix; any other shape is left for the log to refuse."""
    array = np.asarray(value)
    if array.ndim == 3 and array.shape[2] == 1:
        return array[:, :, 0]
    if array.ndim == 3:
        raise InvalidInputError(
            f"pi_b must have shape (n_rounds, n_actions) or (n_rounds, n_actions, 1) (one slot), got {array.shape}"
        )
    return value


def _scalar(value: object) -> object:
    """A 0-d array (as ``.npz`` stores ints) as its item."""
    return value.item() if isinstance(value, np.ndarray) and value.ndim == 0 else value


def from_bandit_feedback(feedback: Mapping[str, Any], source: str = "BanditFeedback") -> LoggedFeedback:
    """A ``BanditFeedback`` dict as a validated :class:`LoggedFeedback`.

    Missing required keys and unknown keys are refused in one line naming them (``source`` names the
    dict or file in the message).
    """
    if not isinstance(feedback, Mapping):
        kind = type(feedback).__name__
        raise InvalidInputError(f"{source} must be a dict with keys {', '.join(REQUIRED)}, got {kind}")
    missing = [key for key in REQUIRED if key not in feedback]
    if missing:
        raise InvalidInputError(f"{source} has no key {missing[0]!r}; required keys: {', '.join(REQUIRED)}")
    unknown = sorted(str(key) for key in feedback if key not in KEYS)
    if unknown:
        raise InvalidInputError(f"{source} has unknown key {unknown[0]!r}; allowed keys: {', '.join(KEYS)}")
    values: dict[str, Any] = {key: _scalar(feedback.get(key)) for key in KEYS}
    if values["pi_b"] is not None:
        values["pi_b"] = _pi_b(values["pi_b"])
    for key in ("event_id", "timestamp"):
        if isinstance(values[key], np.ndarray):
            values[key] = tuple(values[key].tolist())
    return LoggedFeedback(**values)


def save_npz(log: LoggedFeedback, path: str | Path) -> Path:
    """Write the log's ``BanditFeedback`` to ``path`` (compressed ``.npz``, no pickled objects); returns the path."""
    path = Path(path)
    arrays = {key: np.asarray(value) for key, value in to_bandit_feedback(log).items() if value is not None}
    with path.open("wb") as handle:
        np.savez_compressed(handle, **arrays)  # type: ignore[arg-type]  # numpy's stub: a key may be allow_pickle
    return path


def load_npz(path: str | Path) -> LoggedFeedback:
    """Read a ``BanditFeedback`` ``.npz`` (as :func:`save_npz` writes it, or numpy's ``savez`` of OBP's dict
    without its None entries); objects that need pickle are refused."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"BanditFeedback file {path} does not exist")
    with path.open("rb") as handle:
        magic = handle.read(4)
    if magic != b"PK\x03\x04":
        raise InvalidInputError(f"{path} is not a .npz archive (a zip of .npy arrays); got a file starting {magic!r}")
    try:
        with np.load(path, allow_pickle=False) as archive:
            feedback = {key: archive[key] for key in archive.files}
    except (zipfile.BadZipFile, OSError, EOFError) as error:
        raise InvalidInputError(f"{path} is not a readable .npz archive ({error})") from None
    except ValueError:
        why = "BanditFeedback arrays must be numbers or strings"
        raise InvalidInputError(f"{path} holds pickled objects; {why}") from None
    return from_bandit_feedback(feedback, source=str(path))
