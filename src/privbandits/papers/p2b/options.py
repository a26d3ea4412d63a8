"""Options of the P2B reproductions (light: only pydantic and the standard library).

Every option that changes a result reaches the task parameters: sizes, seed, codes,
data files (by content hash) and the simulation mode.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated, Literal, TypeVar

from pydantic import AfterValidator, BeforeValidator, DirectoryPath, Field, FilePath, ValidationInfo, field_validator

from privbandits.experiments.reproduction import Options

MultiLabelName = Literal["mediamill", "tmc2007_500"]
MULTILABEL_NAMES: tuple[MultiLabelName, ...] = ("mediamill", "tmc2007_500")
"""The multi-label data sets of Fig. 6, in plotting order."""

CRITEO_STAND_IN_INTERACTIONS = 300
"""Interactions per user of the default Criteo stand-in (the paper's largest t)."""


def grid_size(dim: int, precision: int = 1) -> int:
    """Number of normalised q-precision contexts in d dimensions (spec Eq. 1)."""
    return math.comb(10**precision + dim - 1, dim - 1)


def _distinct(values: tuple) -> tuple:
    if len(set(values)) != len(values):
        raise ValueError(f"items must be distinct (got {', '.join(map(str, values))})")
    return values


def _paths(value: object) -> object:
    """``NAME:FILE,NAME:FILE`` (the ``-o`` form) as ``{NAME: [FILE, …]}``; other values pass through."""
    if not isinstance(value, str):
        return value
    found: dict[str, list[str]] = {}
    for item in (part.strip() for part in value.split(",") if part.strip()):
        name, separator, path = item.partition(":")
        if not separator or name not in MULTILABEL_NAMES:
            hint = f"write NAME:FILE with NAME {' or '.join(MULTILABEL_NAMES)}, comma-separated"
            if not Path(item).is_file():
                raise ValueError(f"file not found: {item!r} ({hint})")
            raise ValueError(f"{item!r} does not say which data set it holds ({hint})")
        found.setdefault(name, []).append(path)
    return found


Count = Annotated[int, Field(ge=1)]
Actions = Annotated[int, Field(ge=2)]
Codes = Annotated[int, Field(ge=2)]
Dimension = Annotated[int, Field(ge=2)]
Seed = Annotated[int, Field(ge=0)]
Mapping = Literal["linear", "softmax"]
MultiLabelPaths = Annotated[
    dict[MultiLabelName, tuple[FilePath, ...]] | None, BeforeValidator(_paths)
]


_Item = TypeVar("_Item")
Distinct = Annotated[tuple[_Item, ...], Field(min_length=1), AfterValidator(_distinct)]
"""A non-empty tuple of distinct ``_Item`` values: ``Distinct[Count]``."""


def _codes_fit(n_codes: int, dim: int | None) -> int:
    """``n_codes`` if d = ``dim`` has that many q = 1 contexts to encode."""
    if dim is not None and n_codes > grid_size(dim):
        raise ValueError(
            f"must be at most {grid_size(dim):,}, the number of q = 1 contexts in d = {dim} (got {n_codes})"
        )
    return n_codes


class Fig3Options(Options):
    """Fig. 3 has no options: ε(p) is computed at the spec table's participation probabilities."""


class Fig4Options(Options):
    """Fig. 4: reward versus users on the synthetic benchmark (d = 10, t = 10, k = 2^10)."""

    n_actions: Distinct[Actions] = Field((10, 20, 50), description="numbers of actions |A|, one panel each")
    early_users: Distinct[Count] = Field(
        (1_000, 5_000, 10_000, 50_000, 100_000, 500_000, 1_000_000),
        description="numbers of early (sharing) users on the x-axis; total users = early / 0.7",
    )
    mapping: Mapping = Field("linear", description="reward generator: 'linear' (reference code) or 'softmax' (paper)")
    dim: Dimension = Field(10, description="context dimension d")
    n_codes: Codes = Field(1024, description="number of encoder codes k")
    seed: Seed = Field(0, description="seed of the synthetic users and of the simulation")

    @field_validator("n_codes")
    @classmethod
    def _codes_fit_dim(cls, n_codes: int, info: ValidationInfo) -> int:
        return _codes_fit(n_codes, info.data.get("dim"))


class Fig5Options(Options):
    """Fig. 5: reward versus context dimension (20,000 early users, |A| = 20, t = 20)."""

    dims: Distinct[Dimension] = Field(tuple(range(6, 21)), description="context dimensions d on the x-axis")
    early: Count = Field(20_000, description="number of early (sharing) users; total users = early / 0.7")
    mapping: Mapping = Field("linear", description="reward generator: 'linear' (reference code) or 'softmax' (paper)")
    n_codes: Codes = Field(1024, description="number of encoder codes k")
    reference_mode: bool = Field(
        False, description="the reference code's scalar codes and one shared warm agent (spec §9.1, §9.2)"
    )
    seed: Seed = Field(0, description="seed of the synthetic users and of the simulation")

    @field_validator("n_codes")
    @classmethod
    def _codes_fit_dims(cls, n_codes: int, info: ValidationInfo) -> int:
        dims = info.data.get("dims")
        return _codes_fit(n_codes, min(dims) if dims else None)


class Fig5ReferenceOptions(Fig5Options):
    """Fig. 5 in the reference code's mode (scalar codes, one shared warm agent)."""

    reference_mode: bool = Field(
        True, description="the reference code's scalar codes and one shared warm agent (spec §9.1, §9.2)"
    )


class Fig6Options(Options):
    """Fig. 6: accuracy versus local interactions on MediaMill and TMC2007 (d = 20)."""

    rounds: Distinct[Count] = Field(
        (2, *range(5, 101, 5)), description="interactions per local agent t on the x-axis (those a data set has)"
    )
    paths: MultiLabelPaths = Field(
        None,
        description="local ARFF files, e.g. mediamill:train.arff,mediamill:test.arff; none: offline stand-ins",
    )
    n_codes: Codes = Field(32, description="number of encoder codes k")
    reference_mode: bool = Field(
        False, description="the reference code's scalar codes and one shared warm agent (spec §9.1, §9.2)"
    )
    seed: Seed = Field(0, description="seed of the stand-in data and of the simulation")


class Fig6ReferenceOptions(Fig6Options):
    """Fig. 6 in the reference code's mode (scalar codes, one shared warm agent)."""

    reference_mode: bool = Field(
        True, description="the reference code's scalar codes and one shared warm agent (spec §9.1, §9.2)"
    )


class Fig7Options(Options):
    """Fig. 7: CTR versus local interactions on Criteo (d = 10, |A| = 40), both modes; then the OBD sample."""

    path: FilePath | None = Field(None, description="local Criteo Kaggle train.txt; none: the offline stand-in")
    obd_folder: DirectoryPath | None = Field(
        None, description="Open Bandit Dataset campaign folder; none: ../shared/data/obd/random/all if present"
    )
    stand_in_users: Count = Field(3000, description="users of the Criteo stand-in (without path)")
    stand_in_interactions: Count = Field(
        CRITEO_STAND_IN_INTERACTIONS, description="interactions per user of the Criteo stand-in (without path)"
    )
    rounds: Distinct[Count] = Field(
        tuple(range(20, 301, 20)), description="interactions per local agent t on the x-axis"
    )
    n_codes: Distinct[Codes] = Field(
        (32, 128), description="numbers of encoder codes k, one row of panels each (the first also for OBD)"
    )
    seed: Seed = Field(0, description="seed of the stand-in data and of the simulation")

    @field_validator("rounds")
    @classmethod
    def _rounds_in_stand_in(cls, rounds: tuple[int, ...], info: ValidationInfo) -> tuple[int, ...]:
        available = info.data.get("stand_in_interactions")
        if "path" in info.data and info.data["path"] is None and available and max(rounds) > available:
            raise ValueError(f"must be at most stand_in_interactions = {available} without a path (got {max(rounds)})")
        return rounds
