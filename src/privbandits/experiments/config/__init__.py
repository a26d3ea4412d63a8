"""Experiment configs: TOML files validated by a pydantic schema.

A config names one environment, several policies (learners or protocols) and a
list of seeds; every (policy, seed) pair is one run. Every environment and every
policy is a model tagged by its ``kind``, usable from TOML and from Python
(``LinUCBConfig(kind="linucb", alpha=0.5)``). Validation errors name the
offending key, the allowed values and the value given, e.g.
``policies[1].alpha: must be >= 0 (got -1)``; a policy paired with an environment
it cannot run on is refused, saying why.

Values are strict: booleans are not numbers, ``dim = 10.0`` is not an integer,
reals must be finite (integers are accepted for reals). A data-file field is
checked to exist at validation and enters the run spec as its path and content
hash (:func:`~privbandits.experiments.tasks.file_identity`), so a changed file is
a different unit of the results store.

The schema lives in the modules of this package: :mod:`.base` (the error type, strict models,
data-file paths), :mod:`.environments`, :mod:`.kind` (what a policy kind's config is),
:mod:`.policies` (the built-in policy kinds, registered in
:data:`~privbandits.experiments.registry.POLICY_KINDS`), :mod:`.compatibility` (which policy
runs on which environment), :mod:`.experiment` (:class:`ExperimentConfig`, the run spec and its
hash) and :mod:`.errors` (one line per validation problem). Every name is importable from here;
``POLICY_CONFIGS`` is the registered policy kinds' models, as registered when it is read.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from privbandits.experiments.config.base import ConfigError, Listed, by_kind, existing_path
from privbandits.experiments.config.compatibility import incompatibility
from privbandits.experiments.config.environments import (
    ENVIRONMENT_CONFIGS,
    ClusteredUsersEnvConfig,
    DigitsEnvConfig,
    EnvConfig,
    KMeansArmsEnvConfig,
    LinearGaussianEnvConfig,
    LoggedReplayEnvConfig,
    MNIST5kEnvConfig,
    MNISTEnvConfig,
    MultiLabelEnvConfig,
    MultiLabelPopulationEnvConfig,
    OBDReplayEnvConfig,
    P2BSyntheticEnvConfig,
    PooledUsersEnvConfig,
)
from privbandits.experiments.config.errors import _describe
from privbandits.experiments.config.experiment import (
    ExperimentConfig,
    config_hash,
    environment_from_spec,
    environment_spec,
)
from privbandits.experiments.config.kind import PolicyConfig, PolicyKindConfig
from privbandits.experiments.config.policies import (
    CLUBConfig,
    EpsilonGreedyConfig,
    FCLUBPolicyConfig,
    JointDPLinUCBConfig,
    LinTSConfig,
    LinUCBConfig,
    LocalDPLinUCBConfig,
    MPCEpsilonGreedyConfig,
    P2BPolicyConfig,
    PlaintextMPCEpsilonGreedyConfig,
    RandomPolicyConfig,
    SCLUBConfig,
    ShuffleDPLinUCBConfig,
    UserLinUCBConfig,
    VerticalLinTSConfig,
    VerticalLinUCBConfig,
)
from privbandits.experiments.registry import POLICY_KINDS
from privbandits.experiments.tomlfile import read_toml

__all__ = [
    "CLUBConfig",
    "ClusteredUsersEnvConfig",
    "ConfigError",
    "DigitsEnvConfig",
    "ENVIRONMENT_CONFIGS",
    "EnvConfig",
    "EpsilonGreedyConfig",
    "ExperimentConfig",
    "FCLUBPolicyConfig",
    "JointDPLinUCBConfig",
    "KMeansArmsEnvConfig",
    "LinTSConfig",
    "LinUCBConfig",
    "LinearGaussianEnvConfig",
    "Listed",
    "LocalDPLinUCBConfig",
    "LoggedReplayEnvConfig",
    "MNIST5kEnvConfig",
    "MNISTEnvConfig",
    "MPCEpsilonGreedyConfig",
    "MultiLabelEnvConfig",
    "MultiLabelPopulationEnvConfig",
    "OBDReplayEnvConfig",
    "P2BPolicyConfig",
    "P2BSyntheticEnvConfig",
    "PlaintextMPCEpsilonGreedyConfig",
    "PolicyConfig",
    "PolicyKindConfig",
    "PooledUsersEnvConfig",
    "RandomPolicyConfig",
    "SCLUBConfig",
    "ShuffleDPLinUCBConfig",
    "UserLinUCBConfig",
    "VerticalLinTSConfig",
    "VerticalLinUCBConfig",
    "by_kind",
    "config_hash",
    "environment_from_spec",
    "environment_spec",
    "existing_path",
    "incompatibility",
    "load_config",
    "parse_config",
]


def __getattr__(name: str) -> Any:
    """``POLICY_CONFIGS``: the registered policy kinds' config models, in registration order (read when asked, so
    a kind registered since is among them)."""
    if name == "POLICY_CONFIGS":
        return POLICY_KINDS.models()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def parse_config(data: dict[str, Any], source: str = "config") -> ExperimentConfig:
    """Validate a config mapping; raise :class:`ConfigError` listing every problem."""
    try:
        return ExperimentConfig.model_validate(data)
    except ValidationError as exc:
        problems = [_describe(e) for e in exc.errors(include_url=False)]
        raise ConfigError(f"{source} is invalid:\n  " + "\n  ".join(problems)) from None


def load_config(path: str | Path) -> ExperimentConfig:
    """Read and validate a TOML experiment config."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"config file not found: {path}")
    return parse_config(read_toml(path, ConfigError), source=str(path))
