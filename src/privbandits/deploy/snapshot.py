"""A party's whole state as named arrays and a JSON tree, without pickle, for the checkpoints of
:mod:`privbandits.deploy.checkpoint` (FCLUB's parties: nested clusters, privatizer trees, ledgers).

:func:`encode` walks an object graph of numpy arrays, random generators, numbers, strings, lists,
tuples, sets, dicts, enums and privbandits objects (their attributes, or their dataclass fields when
slotted), and keeps identity: an array, generator or object reached twice (a global cluster shared
by its members, a tree drawing from its server's generator) is written once and referred to after.
:func:`decode` rebuilds the graph. Only classes of the ``privbandits`` package are rebuilt, and only
by setting their attributes (``__new__``, no constructor and no code from the file runs), so a
checkpoint can name no other code. Array views are not kept as views: a class that holds views of
its own arrays rebuilds them after :func:`decode` (``LocalServer``'s per-user rows).
"""

from __future__ import annotations

import dataclasses
import enum
import importlib
import json
from collections.abc import Iterable
from typing import Any

import numpy as np

_PLAIN = (bool, int, float, str, type(None))


class _Encoder:
    def __init__(self) -> None:
        self.arrays: dict[str, np.ndarray] = {}
        self.seen: dict[int, int] = {}  # id(value) -> its reference number
        self.alive: list[object] = []  # what ``seen`` names stays alive while encoding

    def __call__(self, value: object) -> object:
        if type(value) in _PLAIN:
            return value
        if isinstance(value, np.generic):
            return {"scalar": value.dtype.str, "value": value.item()}
        if isinstance(value, enum.Enum):
            return {"enum": _name(type(value)), "member": value.name}
        number = self.seen.get(id(value))
        if number is not None:
            return {"ref": number}
        number = self.seen[id(value)] = len(self.seen)
        self.alive.append(value)
        return {"id": number, **self._new(value)}

    def _new(self, value: object) -> dict:
        if isinstance(value, np.ndarray):
            key = f"s{len(self.arrays)}"
            self.arrays[key] = value
            return {"array": key}
        if isinstance(value, np.random.Generator):
            return {"generator": value.bit_generator.state}
        for kind in (list, tuple, set, frozenset):
            if type(value) is kind:
                return {kind.__name__: [self(item) for item in _ordered(value)]}
        if type(value) is dict:
            return {"dict": [[self(key), self(item)] for key, item in value.items()]}
        if type(value).__module__.startswith("privbandits."):
            return {"object": _name(type(value)), "state": {key: self(item) for key, item in attributes(value)}}
        raise TypeError(f"cannot checkpoint a {type(value).__name__}")


def attributes(value: Any):
    """``(name, value)`` of an object's attributes: an instance's, or a slotted dataclass's fields."""
    if hasattr(value, "__dict__"):
        return vars(value).items()
    return ((field.name, getattr(value, field.name)) for field in dataclasses.fields(value))


def _ordered(items: Iterable[Any]) -> Iterable[Any]:
    """A set's items in a canonical order (where they have one), so that equal sets are written the same: a set's own
    order depends on the order its items came in and on the process's string hashing. The order is that of
    :func:`_canonical`, not ``<``, which for sets of sets is inclusion: sorting with it kept the order they came in."""
    if isinstance(items, set | frozenset):
        try:
            return sorted(items, key=_canonical)
        except TypeError:
            return items
    return items


def _canonical(item: Any) -> str:
    """A total order's key for hashable values made of numbers, strings, tuples, sets and enums (``TypeError`` for
    anything else): equal values, the same key, whatever order a set's items came in."""
    if type(item) in _PLAIN or isinstance(item, np.generic):
        return json.dumps([type(item).__name__, item.item() if isinstance(item, np.generic) else item])
    if isinstance(item, enum.Enum):
        return json.dumps(["enum", _name(type(item)), item.name])
    if isinstance(item, tuple):
        return json.dumps(["tuple", [_canonical(part) for part in item]])
    if isinstance(item, frozenset):
        return json.dumps(["frozenset", sorted(_canonical(part) for part in item)])
    raise TypeError(f"no canonical order for a {type(item).__name__}")


def _name(cls: type) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


MOVED: dict[str, str] = {
    "privbandits.protocols.p2b": "privbandits.protocols.p2b.core",
    "privbandits.protocols.p2b_config": "privbandits.protocols.p2b.config",
    "privbandits.protocols.vertical": "privbandits.protocols.vertical.core",
    "privbandits.protocols.fclub_config": "privbandits.protocols.fclub.config",
    "privbandits.protocols.fclub_messages": "privbandits.protocols.fclub.messages",
    "privbandits.deploy.vertical": "privbandits.deploy.vertical.party",
    "privbandits.deploy.mpc": "privbandits.deploy.mpc_bandit.party",
    "privbandits.deploy.deployment_p2b": "privbandits.deploy.p2b.section",
    "privbandits.deploy.p2b_data": "privbandits.deploy.p2b.data",
    "privbandits.deploy.p2b_front": "privbandits.deploy.p2b.front",
    "privbandits.deploy.p2b_load": "privbandits.deploy.p2b.load",
    "privbandits.deploy.p2b_messages": "privbandits.deploy.p2b.messages",
    "privbandits.deploy.p2b_parties": "privbandits.deploy.p2b.roles",
    "privbandits.deploy.p2b_scaleout": "privbandits.deploy.p2b.scaleout",
    "privbandits.deploy.fclub": "privbandits.deploy.fclub.messages",  # the classes of deploy/fclub.py: its messages
    "privbandits.deploy.fclub_global": "privbandits.deploy.fclub.global_server",
    "privbandits.deploy.fclub_local": "privbandits.deploy.fclub.local_server",
    "privbandits.deploy.fclub_users": "privbandits.deploy.fclub.users",
    "privbandits.deploy.fclub_resume": "privbandits.deploy.fclub.resume",
}
"""Modules whose classes moved (issue 45: one package per protocol): the name a checkpoint written before the move
gives → where the class is now. Add a row when a module that checkpoints name moves; never remove one."""


def _class(name: str) -> Any:  # a class, an Enum's among them: which, the checkpoint says
    module, _, qualname = name.partition(":")
    if not module.startswith("privbandits."):
        raise ValueError(f"a checkpoint may only name privbandits classes, not {name!r}")
    module = MOVED.get(module, module)
    found: Any = importlib.import_module(module)
    for part in qualname.split("."):
        found = getattr(found, part)
    return found


class _Decoder:
    def __init__(self, arrays: dict[str, np.ndarray]) -> None:
        self.arrays = arrays
        self.made: dict[int, object] = {}

    def __call__(self, node: object) -> object:
        if not isinstance(node, dict):
            return node
        if "scalar" in node:
            return np.dtype(node["scalar"]).type(node["value"])
        if "enum" in node:
            return _class(node["enum"])[node["member"]]
        if "ref" in node:
            return self.made[node["ref"]]
        if "object" in node:  # made before its attributes: they may refer back to it
            cls = _class(node["object"])
            made = self.made[node["id"]] = cls.__new__(cls)
            for key, item in node["state"].items():
                object.__setattr__(made, key, self(item))
            return made
        made = self.made[node["id"]] = self._container(node)
        return made

    def _container(self, node: dict) -> object:
        if "array" in node:
            return np.array(self.arrays[node["array"]])
        if "generator" in node:
            state = node["generator"]
            generator = np.random.Generator(getattr(np.random, state["bit_generator"])())
            generator.bit_generator.state = state
            return generator
        if "dict" in node:
            return {self(key): self(item) for key, item in node["dict"]}
        for kind in (list, tuple, set, frozenset):
            if kind.__name__ in node:
                return kind(self(item) for item in node[kind.__name__])
        raise ValueError(f"unknown checkpoint node {sorted(node)}")


def encode(state: dict[str, object]) -> tuple[dict[str, np.ndarray], dict]:
    """``(arrays, tree)`` of ``state`` (a mapping of names to values), identity kept across all of it."""
    encoder = _Encoder()
    tree = {key: encoder(value) for key, value in state.items()}
    return encoder.arrays, tree


def decode(arrays: dict[str, np.ndarray], tree: dict) -> dict[str, Any]:
    """The state :func:`encode` wrote."""
    decoder = _Decoder(arrays)
    return {key: decoder(node) for key, node in tree.items()}
