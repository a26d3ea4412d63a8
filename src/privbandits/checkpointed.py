"""Objects that declare the state their checkpoint holds (a deployment's parties: :mod:`privbandits.deploy`).

A class lists the attributes it saves in :attr:`Checkpointed.SAVED` and those it leaves out (its links, its
configuration and views rebuilt from saved attributes) in :attr:`Checkpointed.NOT_SAVED`. :meth:`~Checkpointed.state`
hands the saved ones over and :meth:`~Checkpointed.restore` puts them back into a freshly built object, refusing a
state whose fields are not exactly those declared (:class:`StateMismatch`, naming the missing and the unknown ones),
so a checkpoint of another version is refused rather than half restored. Writing and reading the state is the
checkpoint layer's (:mod:`privbandits.deploy.snapshot`, :mod:`privbandits.deploy.checkpoint`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

PARTY = frozenset({"name", "network", "endpoint", "_sender"})
"""The attributes of a :class:`~privbandits.comm.Party`: its name and links, never saved (a resumed party is built
with them)."""


class StateMismatch(ValueError):
    """A saved state whose fields are not those its class declares."""


class Checkpointed:
    """Mixin: an object whose checkpoint holds exactly the attributes named in :attr:`SAVED`."""

    SAVED: ClassVar[tuple[str, ...]] = ()
    """The attributes a checkpoint holds and restores."""
    NOT_SAVED: ClassVar[frozenset[str]] = frozenset()
    """The attributes it leaves out (rebuilt by the constructor from the deployment file, or from saved ones)."""

    def state(self) -> dict[str, object]:
        """The attributes :attr:`SAVED` names, by name (the objects themselves, not copies)."""
        return {name: getattr(self, name) for name in self.SAVED}

    def restore(self, state: Mapping[str, object]) -> None:
        """Put back a :meth:`state`; :class:`StateMismatch` (nothing changed) unless its fields are :attr:`SAVED`."""
        check_fields(type(self).__name__, self.SAVED, state)
        for name in self.SAVED:
            setattr(self, name, state[name])


def check_fields(what: str, declared: tuple[str, ...], state: Mapping[str, object]) -> None:
    """:class:`StateMismatch` naming the fields ``state`` lacks and those it has beyond ``declared``."""
    missing = [name for name in declared if name not in state]
    unknown = sorted(str(name) for name in state if name not in declared)
    if missing or unknown:
        parts = [f"lacks {missing}"] * bool(missing) + [f"has unknown {unknown}"] * bool(unknown)
        raise StateMismatch(f"the saved state of a {what} {' and '.join(parts)} (its fields: {list(declared)})")
