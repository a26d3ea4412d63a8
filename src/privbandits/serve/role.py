"""What every served party is (:class:`ServedRole`), and the party whose application puts its own features
(:class:`FeatureHolder`).

``privbandits serve DEPLOY.toml --as NAME`` asks the party's protocol for its serving role
(:meth:`~privbandits.deploy.registry.DeployableProtocol.serving_role`). A role is one of three kinds, and the API the
service publishes follows from it:

* a :class:`~privbandits.serve.decider.Decider` answers its application's events: ``POST /v1/decide`` and
  ``POST /v1/reward`` (e.g. the vertical active party, the MPC environment party, an FCLUB local server);
* a :class:`FeatureHolder` keeps rows its own application puts and updates: ``POST /v1/features`` (e.g. a vertical
  passive party's feature block per user, an MPC computing party's block of an event's context);
* a plain :class:`ServedRole` has no application API: it serves the other parties only (e.g. the mask generator, the
  FCLUB global server, the P2B shuffler).

Every role has ``GET /v1/health``, ``GET /v1/ledger`` and ``GET /metrics``. Its links to the other parties (mutual TLS,
as ``deploy`` makes them) are its own: :meth:`ServedRole.start` opens them once the store has rebuilt the role's state,
:meth:`ServedRole.stop` closes them before the last checkpoint. Every call comes from the service's one worker thread,
except what a role runs on threads of its own after :meth:`~ServedRole.start` (its links' loops), which must hand
state changes to the worker or lock them itself.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

JsonObject = dict[str, Any]


class Refused(ValueError):
    """A request the role refuses, naming the request's ``field``; raised before any state changes."""

    def __init__(self, field: str, message: str, status: int = 422) -> None:
        super().__init__(f"{field}: {message}")
        self.field, self.message, self.status = field, message, status


class ServedRole(ABC):
    """A party served by ``privbandits serve``: its identity, lifecycle, ledger and checkpoints (see the module)."""

    kind: str = "role"
    """A short name for health and metrics (``reference-linucb``, ``vertical-active``, ...)."""

    @abstractmethod
    def identity(self) -> str:
        """A fingerprint of the configuration the role's state depends on: a store written under another one is
        refused at start (its checkpoints would not fit)."""

    def start(self) -> None:
        """Begin serving the other parties (open links, start their loops), after the store rebuilt the state;
        default: nothing (a role with no other party)."""
        return None

    def stop(self) -> None:
        """Stop what :meth:`start` began (close links, join loops); default: nothing. Called once, before the last
        checkpoint is written."""
        return None

    @property
    def model_version(self) -> int:
        """A number that grows whenever the role's state changes (rewards absorbed, rows put); default 0."""
        return 0

    @abstractmethod
    def ledger(self) -> JsonObject:
        """What the party has spent and learnt, JSON-able, for ``GET /v1/ledger`` (privacy spent, counts)."""

    def privacy_spent(self) -> Mapping[str, float]:
        """The privacy spent so far as numbers for the metrics (e.g. ``{"epsilon": 1.5, "delta": 1e-6}``); default
        none."""
        return {}

    def checkpoint(self) -> bytes:
        """The role's state as bytes, exact (float bytes, not decimal text); default: none (a stateless role)."""
        return b""

    def restore(self, state: bytes) -> None:
        """Load a :meth:`checkpoint` into this freshly built role; ``ValueError`` if it does not fit."""
        if state:
            raise ValueError(f"{self.kind} keeps no state, but the checkpoint holds {len(state)} bytes")


@dataclass(frozen=True)
class FeaturePut:
    """Rows an application puts: ``key`` names them (a user id, or an event id: the holder says which) and
    ``features`` is float64 of shape ``(rows, dim)``."""

    key: str
    features: np.ndarray


class FeatureHolder(ServedRole):
    """A party whose application puts and updates its own rows (``POST /v1/features``).

    The service journals each put in the party's store before acknowledging it, then hands it to :meth:`apply_put`;
    recovery replays the puts after the last checkpoint through :meth:`apply_put` in order. The same rows put again
    under a key are acknowledged as a duplicate and neither journalled nor applied again.
    """

    def check_put(self, put: FeaturePut, previous: np.ndarray | None) -> None:
        """:class:`Refused` naming ``key`` or ``features`` when this holder cannot take ``put`` (e.g. the wrong
        width; another put under a key that names one event). ``previous``: the rows last put under that key, if
        any. Default: anything."""
        return None

    @abstractmethod
    def apply_put(self, put: FeaturePut) -> None:
        """Keep ``put`` (already checked and made durable); the rows replace any earlier ones under its key."""
