"""The ``[protocol]`` section of an MPC ε-greedy deployment file (``name = "mpc-epsilon-greedy"``): its options and
roles."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from privbandits.declared import MPCDeploymentOptions, declared  # the protocol's options, without importing it
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


class MPCProtocol(ProtocolSection, MPCDeploymentOptions):
    """The private multi-party ε-greedy bandit (spec ``mpc-bandit.md``, Alg. 1).

    Roles: one ``dealer`` (the trusted dealer of correlated randomness and exploration
    samples), one ``computing`` party per partition block (each holds its block of every
    context), and one ``environment`` party, p′ = p″ outside the computing parties: it
    alone learns a_t, pulls it and observes r_t.
    """

    name: Literal["mpc-epsilon-greedy"]
    partition: list[int] = Field(
        min_length=2, max_length=16, description="context features of each computing party, in file order"
    )
    n_arms: int = declared("MPCBanditConfig", "n_arms", required=True, le=MOST_ARMS)
    rounds: int = Field(ge=1, le=MOST_ROUNDS)
    seed: int = Field(0, ge=0, description="the synthetic data of `deploy data` (never a party's secrets)")

    ROLES: ClassVar[tuple[str, ...]] = ("dealer", "computing", "environment")
    REPORTER: ClassVar[str] = "environment"
    BACKGROUND: ClassVar[tuple[str, ...]] = ("dealer",)
    """Roles whose work runs ahead of the rounds (the dealer's material): lower priority on a shared host."""

    @field_validator("partition")
    @classmethod
    def _blocks(cls, value: list[int]) -> list[int]:
        if any(size < 0 for size in value) or not 1 <= sum(value) <= MOST_FEATURES:
            raise ValueError(f"blocks must be >= 0 features, 1 to {MOST_FEATURES:,} in all, got {value}")
        return value

    @model_validator(mode="after")
    def _truncation(self) -> MPCProtocol:
        if self.truncation == "local" and len(self.partition) != 2:
            raise ValueError(f"local truncation is for 2 computing parties, got {len(self.partition)}")
        per_round = ("features + n_arms", self.dim + self.n_arms)
        check_numbers("the data files (a context and a reward per arm each round)", ("rounds", self.rounds), per_round)
        per_arm = ("n_arms", self.n_arms), ("features", self.dim), ("features", self.dim)
        check_numbers("the learner's shared statistics (a d × d matrix per arm)", *per_arm)
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
        _block_holders(roles, self.partition, "computing", len(self.partition))
        for name, entry in parties.items():
            if entry.data is None:
                what = "its private seed" if entry.role == "dealer" else "its local data and private seed"
                raise ValueError(f"parties.{name}.data: the {entry.role} party needs its file ({what})")
