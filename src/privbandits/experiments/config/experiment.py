"""The whole experiment config, and the run spec of each policy that keys the results store.

:class:`ExperimentConfig` holds one environment, several policies and several seeds, refusing
a policy its environment cannot serve. :meth:`ExperimentConfig.run_spec` is everything that
determines one policy's runs (data files by path and content hash, :func:`environment_spec`);
:func:`environment_from_spec` turns it back into an environment, and :func:`config_hash`
is its short hash.
"""

from __future__ import annotations

import hashlib
import json
from typing import Annotated, Any

from pydantic import Field, field_validator, model_validator

from privbandits.experiments.config.base import ConfigError, Listed, _Strict, by_kind
from privbandits.experiments.config.compatibility import incompatibility
from privbandits.experiments.config.environments import ENVIRONMENT_CONFIGS, EnvConfig
from privbandits.experiments.config.kind import PolicyConfig


class ExperimentConfig(_Strict):
    """A whole experiment: one environment, several policies, several seeds."""

    name: str = Field(
        pattern=r"^[a-z0-9][a-z0-9_-]*$", max_length=80, description="experiment name (lower case, digits, - and _)"
    )
    description: str = Field("", description="one line shown in listings and reports")
    horizon: int = Field(
        ge=1, le=100_000_000, description="rounds per run (population environments: interactions per user)"
    )
    seeds: Annotated[list[Annotated[int, Field(ge=0)]], Listed] = Field(
        min_length=1, description="one run per policy and seed"
    )
    series_points: int = Field(200, ge=2, le=100_000, description="points kept of each per-round series")
    environment: EnvConfig = Field(description="the problem ([environment] table; dotted keys: environment.dim=50)")
    policies: Annotated[list[PolicyConfig], Listed] = Field(
        min_length=1, description="the learners ([[policies]] tables; dotted keys: policies.0.alpha=0.5)"
    )

    @field_validator("seeds")
    @classmethod
    def _distinct_seeds(cls, seeds: list[int]) -> list[int]:
        if len(set(seeds)) != len(seeds):
            raise ValueError("must be distinct")
        return seeds

    @field_validator("policies")
    @classmethod
    def _unique_labels(cls, policies: list[Any]) -> list[Any]:
        labels = [p.display_label for p in policies]
        repeated = sorted({label for label in labels if labels.count(label) > 1})
        if repeated:
            raise ValueError(f"labels must be unique; repeated: {', '.join(repeated)} (set 'label')")
        return policies

    @model_validator(mode="after")
    def _fit_environment(self) -> ExperimentConfig:
        env = self.environment
        for i, policy in enumerate(self.policies):
            why = incompatibility(env, policy)
            if why is not None:
                named = why.partition(": ")[0] in type(policy).model_fields  # "FIELD: why": the field's location
                raise ValueError(f"policies[{i}].{why}" if named else f"policies[{i}]: {why}")
            visible = getattr(policy, "visible_features", None)
            if visible is not None and visible > env.context_dim:
                raise ValueError(
                    f"policies[{i}].visible_features: must be <= the environment's context "
                    f"dimension {env.context_dim} (got {visible})"
                )
            partition = getattr(policy, "partition", None)
            if partition is not None and sum(partition) != env.context_dim:
                raise ValueError(
                    f"policies[{i}].partition: block sizes must sum to the environment's context "
                    f"dimension {env.context_dim} (got {sum(partition)})"
                )
            if getattr(policy, "layout", None) == "shared" and not env.per_arm_contexts:
                raise ValueError(
                    f"policies[{i}].layout: 'shared' needs one context per arm, but environment "
                    f"{env.kind!r} gives one context per round; use 'disjoint'"
                )
        if env.replay:
            events = env.shape()[0]
            if self.horizon > events:
                raise ValueError(f"horizon: must be <= the {events} events of the replayed log (got {self.horizon})")
        return self

    def run_spec(self, policy_index: int) -> dict[str, Any]:
        """Everything that determines one policy's runs (besides the seed); data files by path and content hash."""
        return {
            "experiment": self.name,
            "policy_index": policy_index,
            "horizon": self.horizon,
            "series_points": self.series_points,
            "environment": environment_spec(self.environment),
            "policy": self.policies[policy_index].model_dump(mode="json"),
        } | self.policies[policy_index].noise_key()  # DP runs name their noise sampler (noise_key.py)


def environment_spec(environment: Any) -> dict[str, Any]:
    """The environment's fields as JSON data, each data file replaced by its ``{"path", "sha256"}`` identity."""
    from privbandits.experiments.tasks import file_identity

    data = environment.model_dump(mode="json")
    for name in environment.data_paths:
        value = data[name]
        if isinstance(value, list):
            data[name] = [file_identity(item) for item in value]
        elif value is not None:
            data[name] = file_identity(value)
    return data


def _restored(value: Any) -> Any:
    """A path back from its identity, refusing a file whose content changed since the spec was made."""
    from privbandits.experiments.tasks import file_identity

    if not isinstance(value, dict):
        return value
    now = file_identity(value["path"])
    if now["sha256"] != value["sha256"]:
        raise ConfigError(f"data file {value['path']} changed since this run was planned; plan the run again")
    return value["path"]


def environment_from_spec(data: dict[str, Any]) -> Any:
    """The environment config of a run spec (inverse of :func:`environment_spec`)."""
    from pydantic import TypeAdapter

    data = dict(data)
    model = by_kind(ENVIRONMENT_CONFIGS)[data["kind"]]
    for name in model.data_paths:
        value = data.get(name)
        data[name] = [_restored(item) for item in value] if isinstance(value, list) else _restored(value)
    return TypeAdapter(EnvConfig).validate_python(data)


def config_hash(run_spec: dict[str, Any]) -> str:
    """Stable short hash of a run spec (canonical JSON, SHA-256, 16 hex digits)."""
    canonical = json.dumps(run_spec, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]
