"""Units of work: a task is a module-level function and its complete parameters.

A task's key is the SHA-256 of the canonical JSON of ``(function, parameters)``.
The parameters must hold everything that can change the result: every option,
the seed, and the identity (path and content hash, :func:`file_identity`) of any
data file read. A changed option is therefore a different key, and a stored
result can never be reused for a spec it was not computed from.

Functions are named by ``"package.module:function"`` strings, so a task is plain
data: it pickles to a worker process or a Ray worker, and the function is
imported only where it runs. A function that moved keeps the key of its historical
name (:data:`MOVED`, :func:`keyed_name`), so that results stored before the move are found.
"""

from __future__ import annotations

import hashlib
import importlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, overload

_KEY_DIGITS = 32

MOVED: dict[str, str] = {"privbandits.papers.": "privbandits.experiments.papers."}
"""Package prefixes whose task functions moved: today's prefix → the one their stored results were keyed by.

Issue 32 moved the paper reproductions from ``privbandits.experiments.papers`` to the layer
``privbandits.papers``; their tasks are keyed (and their store rows' ``fn`` written) under the old
prefix, so every key is the one it was before the move. Add a row when a package of task functions
moves; never remove one while stores keyed under it exist.
"""


def jsonable(value: Any) -> Any:
    """``value`` as plain JSON data: tuples become lists, paths strings, numpy scalars Python numbers.

    Non-finite floats stay floats (JSON's ``Infinity``/``NaN`` extension, which Python reads back).
    """
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    if hasattr(value, "item") and callable(value.item) and getattr(value, "shape", None) == ():
        value = value.item()
    if value is None or isinstance(value, bool | int | float | str):
        return value
    raise TypeError(f"task parameters must be JSON data; got {type(value).__name__}: {value!r}")


def canonical_json(value: Any) -> str:
    """Canonical JSON of ``value`` (sorted keys, no spaces): equal data gives equal text."""
    return json.dumps(jsonable(value), sort_keys=True, separators=(",", ":"))


@dataclass(frozen=True)
class Task:
    """One unit of work: ``fn(**params)`` returns a JSON-able dict.

    ``label`` names the task for progress lines and for the report that reads its
    result; it is not part of the key.
    """

    fn: str
    params: Mapping[str, Any]
    label: str = ""
    key: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if ":" not in self.fn:
            raise ValueError(f"Task.fn must look like 'package.module:function', got {self.fn!r}")
        params = jsonable(self.params)
        object.__setattr__(self, "params", params)
        text = canonical_json({"fn": keyed_name(self.fn), "params": params})
        object.__setattr__(self, "key", hashlib.sha256(text.encode()).hexdigest()[:_KEY_DIGITS])

    def run(self) -> dict[str, Any]:
        """Import the function and compute the result (a dict of JSON data)."""
        result = resolve(self.fn)(**self.params)
        if not isinstance(result, Mapping):
            raise TypeError(f"task function {self.fn} must return a dict; got {type(result).__name__}")
        return jsonable(result)


def keyed_name(fn: str) -> str:
    """The name ``fn`` is keyed and stored by: its historical name if its package moved (:data:`MOVED`)."""
    for today, historical in MOVED.items():
        if fn.startswith(today):
            return historical + fn[len(today) :]
    return fn


@cache
def resolve(name: str):
    """The object named ``"package.module:attribute"``."""
    module, _, attribute = name.partition(":")
    return getattr(importlib.import_module(module), attribute)


@cache
def _content_hash(path: str, size: int, mtime_ns: int) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@overload
def file_identity(path: str | Path) -> dict[str, str]: ...
@overload
def file_identity(path: None) -> None: ...
def file_identity(path: str | Path | None) -> dict[str, str] | None:
    """``{"path", "sha256"}`` of a data file (a folder: every file under it), for task parameters.

    Put this in a task's parameters instead of a bare path, so that a changed file is a
    different task. ``None`` stays ``None``.
    """
    if path is None:
        return None
    path = Path(path).resolve()
    if path.is_dir():
        digest = hashlib.sha256()
        for item in sorted(p for p in path.rglob("*") if p.is_file()):
            digest.update(str(item.relative_to(path)).encode() + b"\0")
            digest.update(file_identity(item)["sha256"].encode())
        return {"path": str(path), "sha256": digest.hexdigest()}
    stat = path.stat()
    return {"path": str(path), "sha256": _content_hash(str(path), stat.st_size, stat.st_mtime_ns)}


@overload
def identity_path(identity: Mapping[str, str]) -> Path: ...
@overload
def identity_path(identity: None) -> None: ...
def identity_path(identity: Mapping[str, str] | None) -> Path | None:
    """The path inside a :func:`file_identity` (``None`` stays ``None``)."""
    return None if identity is None else Path(identity["path"])
