"""Options of the vertical O3M paper's computed reproductions (light: the catalogue and ``show`` import it).

Every field is typed and bounded, so a bad ``-o KEY=VALUE`` is refused with one line naming the key
before anything runs; each field says what it does (``privbandits show NAME``).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any

from pydantic import (
    ConfigDict,
    DirectoryPath,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic.dataclasses import dataclass

from privbandits.experiments.reproduction import Distinct, Options

PositiveInt = Annotated[int, Field(ge=1)]
Seed = Annotated[int, Field(ge=0)]


@dataclass(frozen=True, config=ConfigDict(extra="forbid"))
class DxK:
    """A (d, K) point, written ``DxK`` (e.g. ``1000x100``): context dimension and number of arms."""

    dim: PositiveInt
    n_arms: PositiveInt

    @model_validator(mode="before")
    @classmethod
    def _from_text(cls, value: Any) -> Any:
        if isinstance(value, str):
            match = re.fullmatch(r"\s*([+-]?\d+)\s*[xX]\s*([+-]?\d+)\s*", value)
            if match is None:
                raise ValueError(f"a point must be written DxK with integers d and K, e.g. 1000x100 (got {value!r})")
            return {"dim": int(match[1]), "n_arms": int(match[2])}
        if isinstance(value, list | tuple):
            if len(value) != 2:
                raise ValueError(f"a point is two integers d and K (got {list(value)!r})")
            return {"dim": value[0], "n_arms": value[1]}
        return value

    def __str__(self) -> str:
        return f"{self.dim}x{self.n_arms}"


def _points(*pairs: tuple[int, int]) -> tuple[DxK, ...]:
    return tuple(DxK(dim=d, n_arms=k) for d, k in pairs)


class Fig5Options(Options):
    """Fig. 5: wall-time ratios measured on a (d, K) grid, bytes per step at chosen (d, K) points."""

    time_dims: Annotated[tuple[PositiveInt, ...], Distinct] = Field(
        (25, 50, 100, 200, 400), description="Context dimensions d at which step times are measured."
    )
    time_arms: Annotated[tuple[PositiveInt, ...], Distinct] = Field(
        (100, 500, 1000), description="Numbers of arms K at which step times are measured."
    )
    time_rounds: PositiveInt = Field(20, description="Rounds per timed run (the fastest of 3 runs is kept).")
    byte_points: Annotated[tuple[DxK, ...], Distinct] = Field(
        _points((100, 100), (1000, 100), (1000, 1000), (2000, 500), (5000, 1000)),
        description="(d, K) points, written DxK, at which one protocol step's bytes are counted.",
    )
    n_parties: Annotated[int, Field(ge=2)] = Field(
        5,
        validate_default=True,
        description="Parties M (the active party and M-1 passive ones); at most the smallest d.",
    )

    @field_validator("n_parties")
    @classmethod
    def _fits_every_dim(cls, value: int, info: ValidationInfo) -> int:
        dims = [*info.data.get("time_dims", ()), *(p.dim for p in info.data.get("byte_points", ()))]
        if dims and value > min(dims):
            raise ValueError(
                f"must be at most the smallest d in time_dims and byte_points ({min(dims)}), so every party holds a "
                f"feature (got {value})"
            )
        return value


class AuditOptions(Options):
    """Privacy audit: known-plaintext, ICA and secure-aggregation attacks on recorded O3M transcripts."""

    rounds: PositiveInt = Field(200, description="Protocol rounds recorded (each gives K masked vectors per party).")
    dim: PositiveInt = Field(100, description="Context dimension d, split evenly among the parties.")
    n_arms: PositiveInt = Field(10, description="Arms K per round.")
    n_parties: Annotated[int, Field(ge=3)] = Field(
        5, validate_default=True, description="Parties M (secure aggregation needs at least 2 passive parties)."
    )
    seed: Seed = Field(0, description="Seed of the contexts, the mask and the ICA.")

    @field_validator("n_parties")
    @classmethod
    def _enough_pairs(cls, value: int, info: ValidationInfo) -> int:
        dim, rounds, n_arms = (info.data.get(key) for key in ("dim", "rounds", "n_arms"))
        if dim is None:
            return value
        block = dim // value
        if block < 2:
            raise ValueError(
                f"dim // n_parties (party 2's d_j) must be at least 2; dim={dim}, n_parties={value} give {block}"
            )
        if rounds is not None and n_arms is not None and rounds * n_arms <= 2 * block:
            raise ValueError(
                f"the attacks fit up to 2·d_j = {2 * block} known pairs and test on the rest, so rounds × n_arms "
                f"must exceed {2 * block} (got rounds={rounds}, n_arms={n_arms}: {rounds * n_arms})"
            )
        return value


class ObdOptions(Options):
    """Fig. 6(c) analogue: replay of VFUCB, the active party alone and uniform random on the OBD sample."""

    seeds: Annotated[tuple[Seed, ...], Distinct] = Field(
        tuple(range(10)), description="Seeds: one replay of each policy per seed."
    )
    folder: DirectoryPath | None = Field(
        None,
        validate_default=True,
        description="OBD campaign folder with all.csv and item_context.csv (default: the OBD sample, "
        "../shared/data/obd/random/all or the data cache's: privbandits data fetch obd).",
    )
    alpha: Annotated[float, Field(ge=0)] = Field(0.5, description="LinUCB exploration weight α (both LinUCB policies).")

    @field_validator("folder")
    @classmethod
    def _holds_the_sample(cls, value: Path | None) -> Path:
        from privbandits.datasets.obd import EVENTS_FILE, ITEMS_FILE, default_obd_path, missing_sample

        if value is None:
            value = default_obd_path()
            if value is None:
                raise ValueError(f"{missing_sample()}; or give -o folder=PATH")
        missing = [name for name in (EVENTS_FILE, ITEMS_FILE) if not (value / name).is_file()]
        if missing:
            raise ValueError(f"must hold {EVENTS_FILE} and {ITEMS_FILE}; {value} lacks {', '.join(missing)}")
        return value
