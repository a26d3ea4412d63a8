"""The ready configs shipped in ``configs/``, one per paper figure or table."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import NamedTuple

from privbandits.experiments.config import ConfigError


class Reproduction(NamedTuple):
    name: str
    description: str
    path: Path


def configs_dir() -> Path | None:
    """Folder of shipped configs: inside the installed package, else the source checkout's."""
    package = Path(__file__).resolve().parents[1]
    for candidate in (package / "configs", package.parents[1] / "configs"):
        if candidate.is_dir():
            return candidate
    return None


def list_reproductions() -> list[Reproduction]:
    """Every shipped config, by file stem, with its description."""
    folder = configs_dir()
    if folder is None:
        return []
    found = []
    for path in sorted(folder.glob("*.toml")):
        description = tomllib.loads(path.read_text()).get("description", "")
        found.append(Reproduction(path.stem, description, path))
    return found


def resolve_config(argument: str) -> Path:
    """A config path, or the name of a shipped reproduction."""
    path = Path(argument)
    if path.is_file():
        return path
    for reproduction in list_reproductions():
        if reproduction.name == argument:
            return reproduction.path
    names = ", ".join(r.name for r in list_reproductions()) or "none found"
    raise ConfigError(f"no config file or reproduction named {argument!r}; reproductions: {names}")
