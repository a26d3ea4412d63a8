"""The ``[protocol]`` section of an FCLUB deployment file (``name = "fclub"``): its options and roles."""

from __future__ import annotations

from typing import Any, ClassVar, Literal, get_args

from pydantic import Field, model_validator

from privbandits.declared import declared  # the protocols' declared options, without importing the protocols
from privbandits.deploy.deployment_parts import (
    MOST_ARMS,
    MOST_ROUNDS,
    PartyEntry,
    ProtocolSection,
    _roles,
    check_numbers,
)


class FCLUBProtocol(ProtocolSection):
    """FCLUB (spec ``fclub.md``): local servers, the global server and the users
    (:mod:`privbandits.deploy.fclub.party`).

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
    horizon: int = declared("FCLUBConfig", "horizon", required=True, le=MOST_ROUNDS)
    n_users: int = Field(40, ge=1, le=1_000_000, description="n, users of all local servers together")
    n_clusters: int = Field(4, ge=1, description="m, the users' true clusters")
    dim: int = Field(10, ge=1, le=1000, description="d")
    n_arms: int = Field(10, ge=1, le=MOST_ARMS, description="K, arms per round")
    construction: Literal["reference", "paper"] = "reference"
    epsilon: float = declared("FCLUBConfig", "epsilon", allow_inf_nan=False)
    seed: int = Field(
        0, ge=0, description="the environment, and with reproducible = true the local servers', as run_fclub(seed=...)"
    )
    options: dict[str, bool | int | float | str] = Field(
        default_factory=dict, description="FCLUBConfig fields over the preset (e.g. rebuild_local_copies)"
    )
    schedule: Literal["lock-step", "free-running"] = Field(
        "lock-step",
        description="lock-step: every round waits for the global server (equals the in-memory run); free-running: "
        "uploads and downloads cross (deploy/fclub/party.py)",
    )

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

    @model_validator(mode="before")
    @classmethod
    def _named_noise(cls, data: Any) -> Any:
        """A private ``paper`` deployment that leaves the noise out is at the analytic Gaussian, named in ``options``
        (:func:`~privbandits.experiments.later_options.fclub_named_noise`), so its digest (checkpoints, served
        identities) differs from one at the paper's form, the default before issue 47."""
        if not isinstance(data, dict) or not isinstance(data.get("options", {}), dict):
            return data
        from privbandits.experiments.later_options import fclub_named_noise

        variant = data.get("variant", cls.model_fields["variant"].default)
        preset = data.get("preset", cls.model_fields["preset"].default)
        options = data.get("options", {})
        named = fclub_named_noise(options, variant, preset)
        return data if named is options else {**data, "options": named}

    @model_validator(mode="after")
    def _clusters(self) -> FCLUBProtocol:
        if self.n_clusters > self.n_users:
            raise ValueError(f"n_clusters = {self.n_clusters} exceeds n_users = {self.n_users}")
        sizes = ("n_users", self.n_users), ("dim", self.dim), ("dim", self.dim)
        check_numbers("the local servers' statistics (a d × d matrix per user)", *sizes)
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
