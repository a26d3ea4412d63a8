"""A log file read or written by its suffix: ``.npz`` (BanditFeedback), ``.dsjson``/``.jsonl``/``.json``
(DSJSON lines); a folder is read as an Open Bandit Dataset campaign folder (``all.csv``, ``item_context.csv``)."""

from __future__ import annotations

from pathlib import Path

from privbandits.logs.feedback import LoggedFeedback
from privbandits.validation import InvalidInputError

NPZ = (".npz",)
DSJSON = (".dsjson", ".jsonl", ".json")
ALLOWED = "a .npz file (BanditFeedback) or a .dsjson, .jsonl or .json file (DSJSON lines)"


def log_format(path: Path, name: str) -> str:
    """The format of ``path`` by its suffix, "npz" or "dsjson"; any other suffix is refused naming ``name``."""
    suffix = path.suffix.lower()
    if suffix in NPZ:
        return "npz"
    if suffix in DSJSON:
        return "dsjson"
    raise InvalidInputError(f"{name} must be {ALLOWED}, got {str(path)!r}")


def load_log(path: str | Path, name: str = "log") -> LoggedFeedback:
    """The log in ``path`` (by suffix), or the OBD campaign folder ``path``; ``name`` names it in refusals."""
    from privbandits.logs.dsjson import read_dsjson
    from privbandits.logs.obd import obd_feedback
    from privbandits.logs.obp import load_npz

    path = Path(path)
    if path.is_dir():
        if not (path / "all.csv").is_file():
            raise InvalidInputError(
                f"{name} must be {ALLOWED}, or an Open Bandit Dataset folder holding all.csv, got {str(path)!r}"
            )
        return obd_feedback(path)
    kind = log_format(path, name)
    if not path.is_file():
        raise FileNotFoundError(f"{name} {str(path)!r} does not exist")
    return load_npz(path) if kind == "npz" else read_dsjson(path)


def save_log(log: LoggedFeedback, path: str | Path, name: str = "log") -> Path:
    """Write ``log`` to ``path`` in the format its suffix names; returns the path."""
    from privbandits.experiments.writable import check_writable
    from privbandits.logs.dsjson import write_dsjson
    from privbandits.logs.obp import save_npz

    path = Path(path)
    kind = log_format(path, name)
    check_writable(path, name, folder=False)
    return save_npz(log, path) if kind == "npz" else write_dsjson(log, path)
