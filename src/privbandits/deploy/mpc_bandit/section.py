"""The ``[protocol]`` section of an MPC ε-greedy deployment file (``name = "mpc-epsilon-greedy"``): its options and
roles."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from privbandits.declared import declared  # the protocols' declared options, without importing the protocols
from privbandits.deploy.deployment_parts import PartyEntry, ProtocolSection, _roles


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
