"""The deployment file (TOML): which protocol, its parameters, and each party's address and files.

Example (vertical O3M, three data holders and the mask generator)::

    name = "vfucb-demo"
    bundles = "certs"              # each party's bundle: certs/NAME/ca.pem, NAME.pem, NAME.key (paths are
                                   # relative to this file; `deploy certs` writes them)
    deadline_s = 30                # a peer silent this long counts as lost
    output = "out"                 # each party writes out/NAME.result.json here
    checkpoint_every = 100         # rounds between checkpoints (out/checkpoints/NAME.npz)
    reproducible = false           # true: every party's random choices derive from protocol.seed
                                   # (equal to the in-memory run; tests and demos only: no privacy)

    [protocol]
    name = "vertical-o3m"
    policy = "vfucb"               # or "vfts"
    partition = [40, 25, 35]       # feature blocks: the active party's first, then the passive parties'
    n_arms = 10
    rounds = 200
    seed = 0

    [parties.mask_generator]
    role = "mask_generator"
    address = "10.0.0.1:7100"
    data = "data/mask_generator.npz"   # optional: its private mask seed (else drawn from OS entropy)

    [parties.active]
    role = "active"
    address = "10.0.0.2:7100"
    data = "data/active.npz"

    [parties.passive2]             # passive parties take the partition's blocks in file order
    ...

    [serve.active]                 # optional: how `privbandits serve` serves a party's application
    port = 8750

Instead of ``bundles``, a file may name each party's ``certificate`` and ``key`` (and ``ca``,
at the top or per party) one by one. Parties are listed in file order; a party dials the ones
before it and accepts the ones after it. Every party must use the same protocol, parties and
addresses and the same CA: their digest (:meth:`Deployment.digest`) is compared when links are
set up; where each host keeps its files is its own affair.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Self

from pydantic import Field, SerializeAsAny, ValidationError, field_validator, model_validator
from pydantic_core import ErrorDetails, PydanticCustomError, PydanticKnownError
from typing_extensions import TypeVar

from privbandits.deploy.deployment_parts import (  # what every protocol section builds on
    BUNDLE_FILES,
    PARTY_NAME,
    DeploymentError,
    PartyEntry,
    ProtocolSection,
    _Strict,
    bundle_files,
)
from privbandits.deploy.deployment_parts import (
    parse_address as parse_address,  # re-exported
)
from privbandits.deploy.registry import PROTOCOLS
from privbandits.serve.options import ServeOptions
from privbandits.strict import TomlPath

SESSION_FIELDS = {"name", "deadline_s", "connect_deadline_s", "checkpoint_every", "reproducible", "protocol"}
"""What the session digest covers besides the parties and the CA: never a path."""


P = TypeVar("P", bound=ProtocolSection, default=ProtocolSection, covariant=True)
"""The protocol section's class, for a type checker: ``Deployment[P2BProtocol]`` where code knows which it runs."""


class Deployment(_Strict, Generic[P]):
    """A validated deployment file; paths are absolute (resolved against the file's folder).

    Each party's files are named either by ``bundles`` (a folder holding one folder per party,
    ``NAME/ca.pem``, ``NAME/NAME.pem``, ``NAME/NAME.key``: what ``deploy certs`` writes) or one by
    one (``ca`` at the top or per party, ``certificate`` and ``key`` per party). Loading never reads
    them: each party checks only its own when it starts (:func:`privbandits.deploy.certs.check_party`).
    """

    name: str = Field(min_length=1)
    ca: TomlPath | None = Field(None, description="the CA certificate of every party that names none of its own")
    bundles: TomlPath | None = Field(None, description="the folder of the parties' bundles (BUNDLES/NAME/...)")
    deadline_s: float = Field(30.0, gt=0, le=86400)
    connect_deadline_s: float = Field(60.0, gt=0, le=86400)
    output: TomlPath = Path("out")
    checkpoint_every: int = Field(100, ge=1, description="rounds between checkpoints of a party's state")
    reproducible: bool = Field(
        False,
        description="derive every party's random choices from protocol.seed (the in-memory run's streams), for tests "
        "and demos only: anyone holding this file can recompute them (no privacy); false draws each party's secret "
        "randomness from OS entropy (privbandits.deploy.entropy)",
    )
    if TYPE_CHECKING:  # a registered protocol's section (validated below); Deployment[P2BProtocol]'s is a P2BProtocol
        protocol: P
    else:
        protocol: SerializeAsAny[ProtocolSection]
    parties: dict[str, PartyEntry] = Field(min_length=2)
    serve: dict[str, ServeOptions] = Field(
        default_factory=dict,
        description="[serve.NAME]: how party NAME serves its application under `privbandits serve` (its API's address "
        "and limits; the store is OUTPUT/NAME.serve.sqlite, TLS the party's own certificate); a party without one "
        "takes the defaults",
    )
    source: TomlPath | None = Field(None, exclude=True)

    @field_validator("parties")
    @classmethod
    def _names(cls, value: dict[str, PartyEntry]) -> dict[str, PartyEntry]:
        for name in value:
            if not PARTY_NAME.match(name):
                raise ValueError(
                    f"party name {name!r} must be lower-case letters, digits, '_' or '-', starting with a letter "
                    "(it is the DNS name in the party's certificate)"
                )
        return value

    @field_validator("protocol", mode="plain")
    @classmethod
    def _protocol(cls, value: Any) -> ProtocolSection:
        """The section of the protocol ``value["name"]`` names, validated by that protocol's model (the registry's)."""
        if isinstance(value, ProtocolSection):
            return value
        if not isinstance(value, dict):
            raise PydanticKnownError("model_attributes_type")
        if "name" not in value:
            raise PydanticCustomError("union_tag_not_found", "protocol.name missing")
        section = PROTOCOLS.section(value["name"])
        if section is None:
            raise PydanticCustomError("union_tag_invalid", "unknown protocol.name")
        return section.model_validate(value)

    @model_validator(mode="before")
    @classmethod
    def _files(cls, data: Any) -> Any:
        """Each party's ``ca``, ``certificate`` and ``key``: its own, else the top-level ``ca``, else its bundle's."""
        parties = data.get("parties") if isinstance(data, dict) else None
        if not isinstance(parties, dict):
            return data
        bundles, ca = data.get("bundles"), data.get("ca")
        filled = {}
        for name, entry in parties.items():
            if isinstance(entry, dict):
                defaults = bundle_files(bundles, name) if isinstance(bundles, str | Path) else {}
                entry = {**defaults, **({"ca": ca} if isinstance(ca, str | Path) else {}), **entry}
            filled[name] = entry
        return {**data, "parties": filled}

    @model_validator(mode="after")
    def _roles(self) -> Self:
        self.protocol.check_parties(self.parties)
        for name in self.serve:
            if name not in self.parties:
                raise ValueError(f"serve.{name}: no party is named {name!r} (parties: {', '.join(self.parties)})")
        seen: dict[tuple[str, int], str] = {}
        for name, entry in self.parties.items():
            if entry.host_port[1] and seen.setdefault(entry.host_port, name) != name:
                raise ValueError(
                    f"parties.{name}.address: {entry.address} is also parties.{seen[entry.host_port]}.address; "
                    "every party needs an address of its own"
                )
        return self

    # ------------------------------------------------------------- views

    def names(self, role: str) -> list[str]:
        """Party names with ``role``, in file order."""
        return [name for name, entry in self.parties.items() if entry.role == role]

    def addresses(self) -> dict[str, tuple[str, int]]:
        return {name: entry.host_port for name, entry in self.parties.items()}

    def check_ports(self) -> None:
        """Refuse port 0 (any free port): only ``deploy local`` can resolve it; a party run alone must be dialled."""
        for name, entry in self.parties.items():
            if entry.host_port[1] == 0:
                raise DeploymentError(
                    f"{self.source or 'deployment'}: parties.{name}.address: port 0 (any free port) works only with "
                    f"`deploy local`; give the port the party listens on (1..65535), got {entry.address!r}"
                )

    def digest(self, ca_fingerprint: str = "") -> str:
        """SHA-256 of the session's identity, what both ends of every link must agree on: the protocol, the
        session's settings, each party's name, role and address, and ``ca_fingerprint`` (the CA certificate's
        SHA-256, which every host holds). Never a path: hosts lay their files out as they like."""
        state = {
            "session": self.model_dump(mode="json", include=SESSION_FIELDS),
            "parties": [[name, entry.role, entry.address] for name, entry in self.parties.items()],
            "ca": ca_fingerprint,
        }
        return _sha256(state)

    def protocol_digest(self) -> str:
        """SHA-256 of what a checkpoint depends on: the protocol, where the parties' randomness comes from, and each
        party's name and role (not addresses, not paths)."""
        state = {
            "reproducible": self.reproducible,  # a session resumed in the other mode would draw other coins
            "protocol": self.protocol.model_dump(mode="json", exclude=set(getattr(self.protocol, "UNDIGESTED", ()))),
            "parties": {name: entry.role for name, entry in self.parties.items()},
        }
        return _sha256(state)

    def field_of(self, name: str, what: str) -> str:
        """The field of the file that names party ``name``'s ``what`` (``ca``, ``certificate``, ``key``, ``data``),
        for messages: ``ca``, ``bundles (NAME/FILE)`` or ``parties.NAME.WHAT``."""
        path = getattr(self.parties[name], what)
        if what == "ca" and self.ca is not None and path == self.ca:
            return "ca"
        if what in BUNDLE_FILES and self.bundles is not None and str(path) == bundle_files(self.bundles, name)[what]:
            return f"bundles ({name}/{path.name})"
        return f"parties.{name}.{what}"

    def data_file(self, name: str) -> Path:
        """Party ``name``'s data file, for a role whose protocol section requires one (checked when loaded)."""
        path = self.parties[name].data
        if path is None:
            raise DeploymentError(f"{self.source or 'deployment'}: parties.{name}.data: this party needs its data file")
        return path

    def result_path(self, party: str) -> Path:
        return self.output / f"{party}.result.json"

    def checkpoint_path(self, party: str) -> Path:
        return self.output / "checkpoints" / f"{party}.npz"

    def to_toml(self) -> str:
        """The deployment as TOML (absolute paths, each party's files named), e.g. to hand resolved ports to
        party processes."""
        data = self.model_dump(mode="json", exclude_none=True, exclude={"ca", "bundles"})
        lines = []
        for key in ("name", "deadline_s", "connect_deadline_s", "output", "checkpoint_every", "reproducible"):
            lines.append(f"{key} = {_toml_value(data[key])}")
        lines.append("\n[protocol]")
        lines += [f"{key} = {_toml_value(value)}" for key, value in data["protocol"].items()]
        for name, entry in data["parties"].items():
            lines.append(f"\n[parties.{name}]")
            lines += [f"{key} = {_toml_value(value)}" for key, value in entry.items()]
        return "\n".join(lines) + "\n"


def _sha256(state: object) -> str:
    return hashlib.sha256(json.dumps(state, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(item) for item in value) + "]"
    if isinstance(value, dict):  # an inline table (keys quoted: any string is a valid quoted key)
        return "{" + ", ".join(f"{json.dumps(key)} = {_toml_value(item)}" for key, item in value.items()) + "}"
    return json.dumps(str(value))  # a JSON string is a valid TOML basic string


def _resolve(data: dict, base: Path) -> dict:
    def absolute(value: Any) -> Any:
        return str((base / value).resolve()) if isinstance(value, str) else value

    data = dict(data)
    data.setdefault("output", "out")
    for key in ("ca", "bundles", "output"):
        if key in data:
            data[key] = absolute(data[key])
    parties = data.get("parties")
    if isinstance(parties, dict):
        files = ("ca", "certificate", "key", "data")
        resolved = {}
        for name, entry in parties.items():
            if isinstance(entry, dict):
                entry = {key: absolute(value) if key in files else value for key, value in entry.items()}
            resolved[name] = entry
        data["parties"] = resolved
    return data


def _explain(exc: ValidationError) -> str:
    lines = []
    for error in exc.errors():
        loc = list(error["loc"])
        where = ".".join(str(part) for part in loc)
        message = error["msg"].removeprefix("Value error, ")
        if error["type"] in ("union_tag_invalid", "union_tag_not_found"):
            where = "protocol.name"
            message = f"Input should be {' or '.join(map(repr, PROTOCOLS.names()))}"
        elif error["type"] == "missing" and loc[:1] == ["parties"] and loc[-1] in BUNDLE_FILES:
            message = "missing: name the file, or set `bundles` (the folder holding each party's bundle, BUNDLES/NAME/)"
        elif error["type"] == "path_type":
            message = f"Input should be a path (a string), got {error['input']!r}"
        elif _given(error):
            message = f"{message}, got {error['input']!r}"  # say which value
        lines.append(f"{where}: {message}" if where else message)
    return "; ".join(lines)


def _given(error: ErrorDetails) -> bool:
    """Whether ``error``'s message should name the value given: a number out of range, or a value of another type
    (``rounds = "500"``: the strict base converts nothing); a validator's own message names it itself."""
    given = error.get("input")
    if isinstance(given, int | float) and not isinstance(given, bool):
        return True
    return isinstance(given, str | bool) and error["type"] != "value_error"


def parse_deployment(data: dict, base: Path = Path("."), source: Path | None = None) -> Deployment:
    """Validate a deployment mapping; relative paths are taken from ``base``."""
    try:
        return Deployment.model_validate({**_resolve(data, base), "source": source})
    except ValidationError as exc:
        where = f"{source}: " if source else ""
        raise DeploymentError(f"{where}{_explain(exc)}") from None


def load_deployment(path: str | Path) -> Deployment:
    """Read and validate a deployment TOML file; :class:`DeploymentError` says what is wrong."""
    from privbandits.experiments.tomlfile import read_toml

    path = Path(path)
    try:
        data = read_toml(path, DeploymentError, "deployment file ")
    except FileNotFoundError:
        raise DeploymentError(f"deployment file {path} does not exist") from None
    return parse_deployment(data, path.resolve().parent, path)
