"""Every named reproduction: those of the layers installed on top of the library, and the shipped TOML configs.

The library names no reproduction itself. A layer on top of it (the paper reproductions,
``privbandits.papers``, or a package of one's own) declares a
:class:`~privbandits.experiments.reproduction.Catalog` under the entry point group :data:`GROUP`
in its package metadata, e.g. in ``pyproject.toml``::

    [project.entry-points."privbandits.reproductions"]
    papers = "privbandits.papers.catalog:CATALOG"

An installation whose metadata declares none has no paper reproductions (only the shipped
configs): reinstall it (``pip install -e .``) after pulling a change of the entry points.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable
from importlib.metadata import entry_points
from pathlib import Path

from privbandits.experiments.config import ConfigError
from privbandits.experiments.reproduction import Catalog, ConfigReproduction, Reproduction
from privbandits.experiments.tomlfile import read_toml

GROUP = "privbandits.reproductions"
NONE_INSTALLED = (
    f"no reproduction catalog is installed (entry point group {GROUP}); reinstall the package: pip install -e ."
)


def installed_catalogs() -> tuple[Catalog, ...]:
    """The catalogs the installed packages declare under :data:`GROUP`, by entry point name."""
    found = []
    for point in sorted(entry_points(group=GROUP), key=lambda point: point.name):
        catalog = point.load()
        if not isinstance(catalog, Catalog):
            raise TypeError(f"entry point {point.name} = {point.value!r} ({GROUP}) must name a Catalog, "
                            f"got {type(catalog).__name__}")  # fmt: skip
        found.append(catalog)
    return tuple(found)


def _by_name(entries: Iterable[Reproduction]) -> dict[str, Reproduction]:
    named: dict[str, Reproduction] = {}
    for entry in entries:
        if entry.name in named:
            raise ValueError(f"two installed reproductions are named {entry.name!r} (entry point group {GROUP})")
        named[entry.name] = entry
    return named


CATALOGS = installed_catalogs()
REPRODUCTIONS: dict[str, Reproduction] = _by_name(entry for catalog in CATALOGS for entry in catalog.reproductions)
CONFIG_REPORTS: dict[str, str] = {name: fn for catalog in CATALOGS for name, fn in catalog.config_reports.items()}
"""Config experiments (by name) whose report starts from a layer's paper panels and claims (``"module:function"``)."""


def configs_dir() -> Path | None:
    """Folder of shipped configs: inside the installed package, else the source checkout's."""
    package = Path(__file__).resolve().parents[1]
    for candidate in (package / "configs", package.parents[1] / "configs"):
        if candidate.is_dir():
            return candidate
    return None


def shipped_configs() -> dict[str, ConfigReproduction]:
    """Every shipped config (``configs/*.toml`` and the examples, ``configs/examples/*.toml``) by its name, so that
    ``privbandits run NAME`` finds it from any folder, installed or not."""
    folder = configs_dir()
    if folder is None:
        return {}
    found = {}
    for path in [*sorted(folder.glob("*.toml")), *sorted(folder.glob("examples/*.toml"))]:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        name = str(data.get("name", path.stem))
        found[name] = config_reproduction(name, data.get("description", ""), path)
    return found


def config_reproduction(name: str, description: str, path: Path | None) -> ConfigReproduction:
    """The config experiment ``name`` (its TOML file ``path``, or None: known from the store), with the layer's
    paper panels its report starts from where a layer declares them for that name (:data:`CONFIG_REPORTS`)."""
    return ConfigReproduction(name, description, path, CONFIG_REPORTS.get(name))


def find(name: str, store=None) -> Reproduction | ConfigReproduction:
    """A reproduction by name, a shipped config by name, a TOML file by path, or a config experiment
    remembered in ``store`` (given) by its name."""
    if name in REPRODUCTIONS:
        return REPRODUCTIONS[name]
    path = Path(name)
    if path.suffix == ".toml" or path.is_file():
        if not path.is_file():
            raise ConfigError(f"config file not found: {path}")
        data = read_toml(path, ConfigError)
        return config_reproduction(str(data.get("name", path.stem)), str(data.get("description", "")), path)
    configs = shipped_configs()
    if name in configs:
        return configs[name]
    remembered = None if store is None else store.recall(name)
    if remembered is not None and {"policies", "environment"} <= set(remembered):
        return config_reproduction(name, str(remembered.get("description", "")), None)
    names = sorted([*REPRODUCTIONS, *configs])
    hint = "" if REPRODUCTIONS else f" ({NONE_INSTALLED})"
    raise ConfigError(f"no config file or reproduction named {name!r}; reproductions: {', '.join(names)}{hint}")

