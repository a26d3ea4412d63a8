"""The strict base of every file the library reads: experiment configs and deployment files.

A TOML value must already have its field's type: ``rounds = "500"``, ``deadline_s = "30"`` or
``secure_aggregation = "no"`` are refused, not converted, and no float may be infinite or NaN. An integer is
still a number where a float is expected (``deadline_s = 30``). Paths are the one conversion: TOML has no path
type, so a :data:`TomlPath` field takes a string.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Strict


class StrictModel(BaseModel):
    """Frozen, no unknown keys, strict types, finite floats."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)


TomlPath = Annotated[Path, Strict(False)]
"""A path field of a strict model: a :class:`~pathlib.Path` or the string TOML gives."""
