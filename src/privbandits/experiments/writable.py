"""Output paths checked before any work: a command that cannot write its results says so at once, in one line,
and writes nothing (issue 30), instead of failing with a traceback after the computing."""

from __future__ import annotations

import os
from pathlib import Path


class PathError(ValueError):
    """An output path that cannot be used; the message names the option and the path."""


def nearest_existing(path: Path) -> Path:
    """``path`` itself, or its closest ancestor that exists (``.`` for a relative path that has none)."""
    for candidate in (path, *path.parents):
        if candidate.exists():
            return candidate
    return Path(".")


def check_writable(path: str | Path, option: str, *, folder: bool) -> Path:
    """``path`` as a :class:`Path` if it can be written as a ``folder`` (created if missing) or a file; else a
    :class:`PathError` naming ``option``: a file where a folder is wanted or the reverse, something in the way
    of creating it, or a read-only place (file permissions or a read-only file system). Creates nothing."""
    path = Path(path)
    if path.exists() and path.is_dir() != folder:
        want, got = ("a folder", "an existing file") if folder else ("a file", "an existing folder")
        raise PathError(f"{option} must be {want} (got {str(path)!r}, {got})")
    place = nearest_existing(path if folder else path.parent)
    if not place.is_dir():
        raise PathError(f"{option} {str(path)!r} cannot be created: {str(place)!r} is a file, not a folder")
    target = path if path.exists() else place
    if not os.access(target, os.W_OK | (os.X_OK if target.is_dir() else 0)):
        raise PathError(f"{option} {str(path)!r} cannot be written: {str(target)!r} is read-only")
    return path
