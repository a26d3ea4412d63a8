"""What every protocol section of a deployment file builds on: parties, addresses, bundles, the strict base model,
and :class:`ProtocolSection`, the base class of every protocol's ``[protocol]`` section.

Re-exported by :mod:`privbandits.deploy.deployment`; each protocol's section (``privbandits.deploy.<protocol>.section``)
imports it from here.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import ClassVar, get_args

from pydantic import field_validator

from privbandits.strict import StrictModel, TomlPath

PARTY_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,62}$")


class DeploymentError(ValueError):
    """A deployment file that cannot be used; the message names the field."""


class _Strict(StrictModel):
    """The base of every model of a deployment file: strict types and finite floats, as an experiment config's
    (:class:`privbandits.strict.StrictModel`); paths are :data:`~privbandits.strict.TomlPath`."""


MOST_ROUNDS = 10_000_000
"""The most rounds (or the longest horizon) a deployment file may ask for."""
MOST_ARMS = 10_000
"""The most arms a deployment file may ask for."""
MOST_FEATURES = 10_000
"""The most context features a deployment file may ask for (in all, or one party's block)."""
MOST_NUMBERS = 100_000_000
"""The most numbers one party may have to hold at once for a section's sizes (its data file, its per-arm or per-user
statistics, as float64): a file's sizes are refused when it loads, not by a ``MemoryError`` mid-session."""


def check_numbers(held: str, *sizes: tuple[str, int]) -> None:
    """Refuse (``ValueError`` naming the fields, the limit and the values) sizes ``(field, value)`` whose product,
    the numbers one party holds as ``held``, exceeds :data:`MOST_NUMBERS`."""
    total = math.prod(value for _, value in sizes)
    if total > MOST_NUMBERS:
        product = " × ".join(f"{name} ({value:,})" for name, value in sizes)
        raise ValueError(
            f"{product} = {total:,} numbers in {held}, at most {MOST_NUMBERS:,} (800 MB as float64): make one of "
            "them smaller"
        )


class ProtocolSection(_Strict):
    """The ``[protocol]`` section of a deployment file: the base class of each protocol's section model.

    A subclass declares ``name`` as a one-value ``Literal`` (the protocol's name in the file), its options as
    pydantic fields, and the class attributes below; :meth:`check_parties` checks the file's parties against it.
    A protocol is deployable once its section is registered with its party code
    (:data:`privbandits.deploy.registry.PROTOCOLS`).
    """

    name: str

    ROLES: ClassVar[tuple[str, ...]] = ()
    """The roles a party of this protocol may have."""
    REPORTER: ClassVar[str] = ""
    """The role that learns the decisions (it reports progress and the final result)."""
    BACKGROUND: ClassVar[tuple[str, ...]] = ()
    """Roles whose work runs ahead of the rounds: lower priority on a shared host (``deploy local``)."""
    SURVIVABLE: ClassVar[tuple[str, ...]] = ()
    """Roles the session survives losing (``deploy local`` starts no countdown when one fails)."""
    UNDIGESTED: ClassVar[tuple[str, ...]] = ()
    """Options that change when messages are sent but no decision, so a checkpoint does not depend on them."""

    @classmethod
    def protocol_name(cls) -> str:
        """The protocol's name in a deployment file: the one value of the ``name`` field's ``Literal``."""
        values = get_args(cls.model_fields["name"].annotation)
        if len(values) != 1 or not isinstance(values[0], str):
            raise TypeError(f"{cls.__name__}.name must be declared as Literal['<protocol name>']")
        return values[0]

    def check_parties(self, parties: dict[str, PartyEntry]) -> None:
        """Refuse (``ValueError`` naming the field) parties this protocol cannot run with; by default every
        party's role must be one of :attr:`ROLES`."""
        _roles(parties, self.ROLES, ())


def parse_address(text: str) -> tuple[str, int]:
    """``"host:port"`` (IPv6 hosts in brackets) → ``(host, port)``; port 0 (any free port) only ``deploy local``
    can resolve (:meth:`Deployment.check_ports`)."""
    host, sep, port = text.rpartition(":")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"address must be host:port with a port in 0..65535 (0: any free port), got {text!r}")
    return host, int(port)


BUNDLE_FILES = {"ca": "ca.pem", "certificate": "{name}.pem", "key": "{name}.key"}
"""A party's bundle: the folder ``BUNDLES/NAME`` holding these files (``deploy certs`` writes them)."""


def bundle_files(bundles: str | Path, name: str) -> dict[str, str]:
    """Party ``name``'s CA certificate, certificate and key in the bundles folder ``bundles``."""
    return {what: str(Path(bundles) / name / file.format(name=name)) for what, file in BUNDLE_FILES.items()}


class PartyEntry(_Strict):
    """One party: its role in the protocol, where it listens, its TLS files and its local data.

    ``ca``, ``certificate`` and ``key`` default to the party's bundle (``bundles/NAME/...``) and ``ca`` to the
    file's top-level ``ca``; only the party itself ever reads them."""

    role: str
    address: str
    ca: TomlPath
    certificate: TomlPath
    key: TomlPath
    data: TomlPath | None = None

    @field_validator("address")
    @classmethod
    def _address(cls, value: str) -> str:
        parse_address(value)
        return value

    @property
    def host_port(self) -> tuple[str, int]:
        return parse_address(self.address)


def _roles(parties: dict[str, PartyEntry], allowed: tuple[str, ...], single: tuple[str, ...]) -> dict[str, str]:
    """Each party's role, checked: every role one of ``allowed``, exactly one party of each role in ``single``."""
    roles = {name: entry.role for name, entry in parties.items()}
    for name, role in roles.items():
        if role not in allowed:
            raise ValueError(f"parties.{name}.role: must be one of {', '.join(allowed)}, got {role!r}")
    for role in single:
        holders = [name for name, have in roles.items() if have == role]
        if len(holders) != 1:
            raise ValueError(f"parties: exactly one party must have role {role!r}, found {len(holders)}")
    return roles


def _block_holders(roles: dict[str, str], partition: list[int], role: str, blocks: int) -> list[str]:
    """The parties of ``role``, checked to be as many as the ``blocks`` of ``partition`` they hold."""
    holders = [name for name, have in roles.items() if have == role]
    if len(holders) != blocks:
        raise ValueError(
            f"parties: partition {partition} has {len(partition)} blocks, so it needs {blocks} {role} parties; "
            f"found {len(holders)}"
        )
    return holders
