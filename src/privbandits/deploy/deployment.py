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

Instead of ``bundles``, a file may name each party's ``certificate`` and ``key`` (and ``ca``,
at the top or per party) one by one. Parties are listed in file order; a party dials the ones
before it and accepts the ones after it. Every party must use the same protocol, parties and
addresses and the same CA: their digest (:meth:`Deployment.digest`) is compared when links are
set up; where each host keeps its files is its own affair.
"""

from __future__ import annotations

import hashlib
import json
import tomllib
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Literal, Self, get_args

from pydantic import Field, SerializeAsAny, ValidationError, field_validator, model_validator
from pydantic_core import PydanticCustomError, PydanticKnownError
from typing_extensions import TypeIs, TypeVar

from privbandits.declared import declared  # the protocols' declared options, without importing the protocols
from privbandits.deploy.deployment_p2b import P2BProtocol
from privbandits.deploy.deployment_parts import (  # what every protocol section builds on
    BUNDLE_FILES,
    PARTY_NAME,
    DeploymentError,
    PartyEntry,
    ProtocolSection,
    _roles,
    _Strict,
    bundle_files,
)
from privbandits.deploy.deployment_parts import (
    parse_address as parse_address,  # re-exported
)
from privbandits.deploy.registry import PROTOCOLS


class VerticalProtocol(ProtocolSection):
    """VFUCB / VFTS with O3M masks (spec ``vertical-o3m.md``)."""

    name: Literal["vertical-o3m"]
    policy: Literal["vfucb", "vfts"] = "vfucb"
    partition: list[int] = Field(min_length=2)
    n_arms: int = Field(ge=1)
    rounds: int = Field(ge=1)
    seed: int = Field(0, ge=0)
    alpha: float = declared("LinUCB", "alpha", default=0.5)  # β_t = 0.5 in the paper's experiments
    v: float = declared("LinTS", "v")
    reg: float = declared("LinUCB", "reg")
    secure_aggregation: bool = declared("VerticalFederatedBandit", "secure_aggregation")
    allow_single_feature_parties: bool = declared("VerticalFederatedBandit", "allow_single_feature_parties")
    prefetch: int = Field(
        1,
        ge=1,
        le=1024,
        description="rounds whose requests the active party has in flight: 1 asks for each user when its round "
        "starts; more sends the next users' requests ahead (they are known from its file and do not depend on "
        "decisions), so the passive parties' answers overlap the active party's work; decisions and messages are "
        "unchanged",
    )
    chunk_requests: bool = Field(
        False,
        description="with prefetch: send each top-up of requests (half the prefetch window) to a passive party as "
        "one message, answered with one; decisions and payload bytes per link are unchanged, messages per link fall "
        "by the chunk size",
    )

    ROLES: ClassVar[tuple[str, ...]] = ("mask_generator", "active", "passive")
    UNDIGESTED: ClassVar[tuple[str, ...]] = ("prefetch", "chunk_requests")
    """Options that change when messages are sent but no decision, so a checkpoint does not depend on them."""
    REPORTER: ClassVar[str] = "active"
    """The role that learns the decisions (it reports progress and the final result)."""

    @field_validator("partition")
    @classmethod
    def _blocks(cls, value: list[int]) -> list[int]:
        if any(size < 1 for size in value):
            raise ValueError(f"every block needs at least one feature, got {value}")
        return value

    @model_validator(mode="after")
    def _aggregation(self) -> VerticalProtocol:
        if self.secure_aggregation and len(self.partition) < 3:
            raise ValueError("secure_aggregation needs at least 2 passive parties (3 or more partition blocks)")
        single = [j + 1 for j, size in enumerate(self.partition) if j > 0 and size == 1]
        if single and not self.allow_single_feature_parties:
            raise ValueError(
                f"partition {self.partition}: passive block(s) {single} hold one feature, which the active party "
                "recovers up to sign (|Q^j x^j| = |x^j|); set allow_single_feature_parties = true to accept this"
            )
        return self

    @property
    def dim(self) -> int:
        return sum(self.partition)

    def check_parties(self, parties: dict[str, PartyEntry]) -> None:
        roles = _roles(parties, self.ROLES, ("mask_generator", "active"))
        passive = [name for name, role in roles.items() if role == "passive"]
        if len(passive) != len(self.partition) - 1:
            raise ValueError(
                f"parties: partition {self.partition} has {len(self.partition)} blocks, so it needs "
                f"{len(self.partition) - 1} passive parties; found {len(passive)}"
            )
        for name, entry in parties.items():
            if entry.role != "mask_generator" and entry.data is None:
                raise ValueError(f"parties.{name}.data: the {entry.role} party needs its local data file")


class MPCProtocol(ProtocolSection):
    """The private multi-party ε-greedy bandit (spec ``mpc-bandit.md``, Alg. 1).

    Roles: one ``dealer`` (the trusted dealer of correlated randomness and exploration
    samples), one ``computing`` party per partition block (each holds its block of every
    context), and one ``environment`` party, p′ = p″ outside the computing parties: it
    alone learns a_t, pulls it and observes r_t.
    """

    name: Literal["mpc-epsilon-greedy"]
    partition: list[int] = Field(min_length=2, description="context features of each computing party, in file order")
    n_arms: int = declared("MPCBanditConfig", "n_arms", required=True)
    rounds: int = Field(ge=1)
    seed: int = Field(0, ge=0, description="the synthetic data of `deploy data` (never a party's secrets)")
    epsilon: float = declared("MPCBanditConfig", "epsilon")
    precision: int = declared("MPCBanditConfig", "precision")
    nr_iterations: int = declared("MPCBanditConfig", "nr_iterations")
    reciprocal_start: Literal["exp", "linear"] = declared("MPCBanditConfig", "reciprocal_start")
    truncation: Literal["auto", "local", "wraps", "exact"] = declared("MPCBanditConfig", "truncation")
    binary_rewards: bool = declared("MPCBanditConfig", "binary_rewards")
    overlap_reciprocal: bool = declared("MPCBanditConfig", "overlap_reciprocal")
    mask_factors: bool = declared("MPCBanditConfig", "mask_factors")
    allmax_lookup: bool = declared("MPCBanditConfig", "allmax_lookup")
    lookup_comparison: bool = declared("MPCBanditConfig", "lookup_comparison")
    goldschmidt: bool = declared("MPCBanditConfig", "goldschmidt")
    dealt_exploration: bool = declared("MPCBanditConfig", "dealt_exploration")
    fused_input: bool = declared("MPCBanditConfig", "fused_input")

    ROLES: ClassVar[tuple[str, ...]] = ("dealer", "computing", "environment")
    REPORTER: ClassVar[str] = "environment"
    BACKGROUND: ClassVar[tuple[str, ...]] = ("dealer",)
    """Roles whose work runs ahead of the rounds (the dealer's material): lower priority on a shared host."""

    @field_validator("partition")
    @classmethod
    def _blocks(cls, value: list[int]) -> list[int]:
        if any(size < 0 for size in value) or sum(value) < 1:
            raise ValueError(f"blocks must be >= 0 features, at least one in all, got {value}")
        return value

    @model_validator(mode="after")
    def _truncation(self) -> MPCProtocol:
        if self.truncation == "local" and len(self.partition) != 2:
            raise ValueError(f"local truncation is for 2 computing parties, got {len(self.partition)}")
        from privbandits.protocols.mpc_bandit import (  # the protocol's rules
            dealt_exploration_problem,
            lookup_comparison_problem,
            mask_factors_problem,
            overlap_problem,
        )

        problem = overlap_problem(self.overlap_reciprocal, len(self.partition), self.truncation)
        problem = problem or mask_factors_problem(self.mask_factors, self.overlap_reciprocal)
        problem = problem or lookup_comparison_problem(
            self.lookup_comparison, len(self.partition), self.allmax_lookup, self.n_arms
        )
        problem = problem or dealt_exploration_problem(self.dealt_exploration, self.allmax_lookup)
        if problem:
            raise ValueError(problem)
        return self

    @property
    def dim(self) -> int:
        return sum(self.partition)

    def check_parties(self, parties: dict[str, PartyEntry]) -> None:
        roles = _roles(parties, self.ROLES, ("dealer", "environment"))
        computing = [name for name, role in roles.items() if role == "computing"]
        if len(computing) != len(self.partition):
            raise ValueError(
                f"parties: partition {self.partition} has {len(self.partition)} blocks, so it needs "
                f"{len(self.partition)} computing parties; found {len(computing)}"
            )
        for name, entry in parties.items():
            if entry.data is None:
                what = "its private seed" if entry.role == "dealer" else "its local data and private seed"
                raise ValueError(f"parties.{name}.data: the {entry.role} party needs its file ({what})")


class FCLUBProtocol(ProtocolSection):
    """FCLUB (spec ``fclub.md``): local servers, the global server and the users (:mod:`privbandits.deploy.fclub`).

    Roles: one ``users`` party (the users' devices: the synthetic environment of spec §6.2,
    drawn from ``seed``, which sends each round's user and contexts to that user's local
    server and scores its choice), one ``global_server`` named ``global`` and one or more
    ``local_server`` parties named ``local0``, ``local1``, ... in file order, each serving a
    contiguous block of the users (the experiments' ``assign_groups`` blocks). ``variant`` and
    ``preset`` name the algorithm as an experiment config's ``fclub`` policy does
    (:data:`~privbandits.protocols.fclub.config.PRESETS`): the default, CDP-FCLUB-DC's ``paper``
    preset, privatizes every upload; its ``reference`` preset (the paper reproductions' plain
    "CDP-FCLUB-DC") puts noise only in the upload trigger, so its uploads reach the global server
    raw. Nobody holds a data file. The users party draws the synthetic environment from ``seed``
    as :func:`~privbandits.protocols.fclub.run_fclub` does (public data, by construction); each
    local server draws its privatizers' noise and tie-breaks from OS entropy, or, with the
    deployment's ``reproducible = true``, from ``seed`` as ``run_fclub`` does, so the processes
    reproduce that run.
    """

    name: Literal["fclub"]
    variant: Literal["cdp-fclub-dc", "fclub-dc", "fclub", "homo-dc", "homo"] = "cdp-fclub-dc"
    preset: Literal["paper", "reference"] = "paper"
    horizon: int = declared("FCLUBConfig", "horizon", required=True)
    n_users: int = Field(40, ge=1, description="n, users of all local servers together")
    n_clusters: int = Field(4, ge=1, description="m, the users' true clusters")
    dim: int = Field(10, ge=1, description="d")
    n_arms: int = Field(10, ge=1, description="K, arms per round")
    construction: Literal["reference", "paper"] = "reference"
    epsilon: float = declared("FCLUBConfig", "epsilon", allow_inf_nan=False)
    seed: int = Field(
        0, ge=0, description="the environment, and with reproducible = true the local servers', as run_fclub(seed=...)"
    )
    options: dict[str, bool | int | float | str] = Field(
        default_factory=dict, description="FCLUBConfig fields over the preset (e.g. rebuild_local_copies)"
    )
    schedule: Literal["lock-step", "free-running"] = Field("lock-step", description="lock-step: every round waits "
        "for the global server (equals the in-memory run); free-running: uploads and downloads cross (deploy/fclub.py)")

    ROLES: ClassVar[tuple[str, ...]] = ("users", "global_server", "local_server")
    REPORTER: ClassVar[str] = "users"
    GLOBAL: ClassVar[str] = "global"
    SURVIVABLE: ClassVar[tuple[str, ...]] = ("local_server",)
    """Roles the session survives losing (``deploy local`` starts no countdown when one fails)."""

    @model_validator(mode="before")
    @classmethod
    def _renamed(cls, data: Any) -> Any:
        """``algorithm`` (the paper reproductions' names) became ``variant`` and ``preset`` (issue 32)."""
        if isinstance(data, dict) and "algorithm" in data:
            old, variants = str(data["algorithm"]), get_args(cls.model_fields["variant"].annotation)
            variant = old.removesuffix(" (faithful)").lower()
            preset = "paper" if old.endswith(" (faithful)") else "reference"
            instead = (f"for algorithm = {old!r} write variant = {variant!r} and preset = {preset!r}"
                       if variant in variants else f"variant is one of {', '.join(variants)}")  # fmt: skip
            raise ValueError(f"algorithm is now variant and preset (the experiment config's names): {instead}")
        return data

    @model_validator(mode="after")
    def _clusters(self) -> FCLUBProtocol:
        if self.n_clusters > self.n_users:
            raise ValueError(f"n_clusters = {self.n_clusters} exceeds n_users = {self.n_users}")
        from dataclasses import fields

        from privbandits.protocols.fclub.config import FCLUBConfig
        from privbandits.validation import InvalidInputError

        known = sorted(f.name for f in fields(FCLUBConfig) if f.name not in ("horizon", "epsilon"))
        unknown = sorted(set(self.options) - set(known))
        if unknown:
            raise ValueError(f"options: unknown FCLUBConfig field(s) {', '.join(unknown)}; known: {', '.join(known)}")
        try:  # the options are FCLUBConfig's: its checks name the field and the allowed values
            self.fclub_config()
        except InvalidInputError as exc:
            raise ValueError(f"options: {exc}") from None
        return self

    def fclub_config(self):
        """The algorithm's :class:`~privbandits.protocols.fclub.config.FCLUBConfig`: the preset with ``options``,
        as the experiments build it (m_bound = the true clusters)."""
        options = {"horizon": self.horizon, "epsilon": self.epsilon, "m_bound": self.n_clusters, **self.options}
        from privbandits.protocols.fclub.config import FCLUBConfig

        return FCLUBConfig.from_preset(self.variant, self.preset, **options)

    def check_parties(self, parties: dict[str, PartyEntry]) -> None:
        roles = _roles(parties, self.ROLES, ("users", "global_server"))
        if roles.get(self.GLOBAL) != "global_server":
            raise ValueError(f"parties: the global_server party must be named {self.GLOBAL!r} (the protocol's name)")
        local = [name for name, role in roles.items() if role == "local_server"]
        expected = [f"local{ell}" for ell in range(len(local))]
        if not local or local != expected:
            raise ValueError(
                f"parties: the local_server parties must be named {', '.join(expected) or 'local0'} in file order "
                f"(the protocol's names; they take the users' blocks in that order), got {', '.join(local) or 'none'}"
            )
        if len(local) > self.n_users:
            raise ValueError(f"parties: {len(local)} local servers, but only n_users = {self.n_users} users")
        for name, entry in parties.items():
            if entry.data is not None:
                raise ValueError(f"parties.{name}.data: no FCLUB party reads a data file")


SESSION_FIELDS = {"name", "deadline_s", "connect_deadline_s", "checkpoint_every", "reproducible", "protocol"}
"""What the session digest covers besides the parties and the CA: never a path."""


AnyProtocol = VerticalProtocol | MPCProtocol | P2BProtocol | FCLUBProtocol
"""The built-in protocols' sections (a plug-in's is another :class:`ProtocolSection`)."""
P = TypeVar("P", bound=ProtocolSection, default=AnyProtocol, covariant=True)
"""The protocol section's class, for a type checker: ``Deployment[P2BProtocol]`` where code knows which it runs."""
Q = TypeVar("Q", VerticalProtocol, MPCProtocol, P2BProtocol, FCLUBProtocol)


class Deployment(_Strict, Generic[P]):
    """A validated deployment file; paths are absolute (resolved against the file's folder).

    Each party's files are named either by ``bundles`` (a folder holding one folder per party,
    ``NAME/ca.pem``, ``NAME/NAME.pem``, ``NAME/NAME.key``: what ``deploy certs`` writes) or one by
    one (``ca`` at the top or per party, ``certificate`` and ``key`` per party). Loading never reads
    them: each party checks only its own when it starts (:func:`privbandits.deploy.certs.check_party`).
    """

    name: str = Field(min_length=1)
    ca: Path | None = Field(None, description="the CA certificate of every party that names none of its own")
    bundles: Path | None = Field(None, description="the folder of the parties' bundles (BUNDLES/NAME/...)")
    deadline_s: float = Field(30.0, gt=0, le=86400, allow_inf_nan=False)
    connect_deadline_s: float = Field(60.0, gt=0, le=86400, allow_inf_nan=False)
    output: Path = Path("out")
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
    source: Path | None = Field(None, exclude=True)

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


def runs(deployment: Deployment, protocol: type[Q]) -> TypeIs[Deployment[Q]]:
    """Whether ``deployment`` runs ``protocol`` (a type checker then knows it as ``Deployment[protocol]``)."""
    return isinstance(deployment.protocol, protocol)


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
        elif isinstance(error.get("input"), int | float) and not isinstance(error["input"], bool):
            message = f"{message}, got {error['input']!r}"  # a number out of range: say which
        lines.append(f"{where}: {message}" if where else message)
    return "; ".join(lines)


def parse_deployment(data: dict, base: Path = Path("."), source: Path | None = None) -> Deployment:
    """Validate a deployment mapping; relative paths are taken from ``base``."""
    try:
        return Deployment.model_validate({**_resolve(data, base), "source": source})
    except ValidationError as exc:
        where = f"{source}: " if source else ""
        raise DeploymentError(f"{where}{_explain(exc)}") from None


def load_deployment(path: str | Path) -> Deployment:
    """Read and validate a deployment TOML file; :class:`DeploymentError` says what is wrong."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise DeploymentError(f"deployment file {path} does not exist") from None
    except tomllib.TOMLDecodeError as exc:
        raise DeploymentError(f"{path}: not valid TOML: {exc}") from None
    return parse_deployment(data, path.resolve().parent, path)


# The built-in protocols: their sections are above (P2B's in deployment_p2b), their party code is imported when a
# party runs.
PROTOCOLS.register_lazy(VerticalProtocol, "privbandits.deploy.vertical:DEPLOYABLE")
PROTOCOLS.register_lazy(MPCProtocol, "privbandits.deploy.mpc:DEPLOYABLE")
PROTOCOLS.register_lazy(P2BProtocol, "privbandits.deploy.p2b_outcome:DEPLOYABLE")
PROTOCOLS.register_lazy(FCLUBProtocol, "privbandits.deploy.fclub:DEPLOYABLE")
