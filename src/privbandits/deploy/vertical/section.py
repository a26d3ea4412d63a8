"""The ``[protocol]`` section of a vertical O3M deployment file (``name = "vertical-o3m"``): its options and roles."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from privbandits.declared import declared  # the protocols' declared options, without importing the protocols
from privbandits.deploy.deployment_parts import (
    MOST_ARMS,
    MOST_FEATURES,
    MOST_ROUNDS,
    PartyEntry,
    ProtocolSection,
    _block_holders,
    _roles,
    check_numbers,
)


class VerticalProtocol(ProtocolSection):
    """VFUCB / VFTS with O3M masks (spec ``vertical-o3m.md``)."""

    name: Literal["vertical-o3m"]
    policy: Literal["vfucb", "vfts"] = "vfucb"
    partition: list[int] = Field(min_length=2, max_length=64)
    n_arms: int = Field(ge=1, le=MOST_ARMS)
    rounds: int = Field(ge=1, le=MOST_ROUNDS)
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
        if any(not 1 <= size <= MOST_FEATURES for size in value):
            raise ValueError(f"every block needs 1 to {MOST_FEATURES:,} features, got {value}")
        return value

    @model_validator(mode="after")
    def _aggregation(self) -> VerticalProtocol:
        if self.secure_aggregation and len(self.partition) < 3:
            raise ValueError("secure_aggregation needs at least 2 passive parties (3 or more partition blocks)")
        sizes = ("rounds", self.rounds), ("n_arms", self.n_arms), ("features", self.dim)
        check_numbers("the data files (a context per round and arm)", *sizes)
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
        _block_holders(roles, self.partition, "passive", len(self.partition) - 1)  # the active party holds the first
        for name, entry in parties.items():
            if entry.role != "mask_generator" and entry.data is None:
                raise ValueError(f"parties.{name}.data: the {entry.role} party needs its local data file")
