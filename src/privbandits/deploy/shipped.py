"""The shipped deployment files, named from any folder (issue 45 item 6, "the wheel is enough").

``privbandits deploy certs mpc-epsilon-greedy`` works where only the package is installed: a name that is not a
file but the name of a shipped deployment (``configs/deploy/NAME.toml``, inside the installed package or beside
a source checkout's ``src``) is copied into the current folder as ``NAME.toml`` the first time a command names
it, with one line saying so. Every later command naming it (``deploy data NAME``, ``deploy local NAME``,
``party run NAME --as X``) finds that copy, so the deployment's certificates, data, checkpoints and results go
beside the copy, never into site-packages, and an edit of the copy (fewer rounds, other addresses) is what runs.
The copy is byte-identical to the shipped file, so a copy on another host links with it.

A name that is neither a file nor a shipped deployment is refused in one line listing the shipped names.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable
from pathlib import Path

from privbandits.deploy.deployment import DeploymentError

SUFFIX = ".toml"


class NotADeployment(DeploymentError):
    """A deployment argument that names no file and no shipped deployment (the message lists the shipped names)."""


def shipped_folder() -> Path | None:
    """``configs/deploy`` inside the installed package, else beside the source checkout this package runs from
    (as :func:`privbandits.experiments.catalog.configs_dir` finds the shipped configs), else None."""
    package = Path(__file__).resolve().parents[1]
    for candidate in (package / "configs" / "deploy", package.parents[1] / "configs" / "deploy"):
        if candidate.is_dir():
            return candidate
    return None


def shipped_deployments() -> dict[str, Path]:
    """Every shipped deployment file by its name (the file name without ``.toml``), sorted by name."""
    folder = shipped_folder()
    return {} if folder is None else {path.stem: path for path in sorted(folder.glob(f"*{SUFFIX}"))}


def _shipped_name(argument: Path) -> str | None:
    """The shipped deployment ``argument`` names (``NAME`` or ``NAME.toml``, no folder), else None."""
    if argument.parent != Path(".") or argument.name in ("", ".", ".."):
        return None
    stem = argument.name.removesuffix(SUFFIX)
    return stem if stem in shipped_deployments() else None


def unknown(argument: Path) -> str:
    """The one line for an argument that is neither a file nor a shipped deployment."""
    stem = argument.name.removesuffix(SUFFIX)
    shipped = shipped_deployments()
    if stem in shipped:  # e.g. configs/deploy/p2b.toml where no checkout is
        return (
            f"deployment file {argument} does not exist; name the shipped deployment alone: "
            f"`privbandits deploy certs {stem}` copies it to ./{stem}{SUFFIX}"
        )
    names = ", ".join(shipped) or "none in this installation"
    return (
        f"deployment file {argument} does not exist, and {stem!r} is not a shipped deployment "
        f"(shipped: {names}; naming one copies it into this folder)"
    )


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def resolve(argument: Path | str, announce: Callable[[str], None] = _say) -> Path:
    """The deployment file a command's argument means.

    An existing path is itself. ``NAME`` or ``NAME.toml`` of a shipped deployment is ``./NAME.toml``: copied
    there from the shipped file on first use (``announce`` gets one line saying where), found there afterwards.
    Anything else, or a copy that cannot be written, raises :class:`NotADeployment` (one line: the shipped
    names, or why the copy failed).
    """
    argument = Path(argument)
    if argument.is_file():
        return argument
    name = _shipped_name(argument)
    if name is None:
        if argument.exists():
            raise NotADeployment(f"deployment file {argument} is a folder; give the deployment file (TOML)")
        raise NotADeployment(unknown(argument))
    copy = Path(f"{name}{SUFFIX}")
    if copy.is_file():  # the copy an earlier command made (or the user's own file of that name): it is what runs
        return copy
    try:
        with shipped_deployments()[name].open("rb") as source, copy.open("xb") as target:
            shutil.copyfileobj(source, target)
    except OSError as exc:
        why = exc.strerror or type(exc).__name__
        raise NotADeployment(
            f"cannot copy the shipped deployment {name} to {copy.resolve()} ({why}); run the command from a folder "
            "you can write, or give the path of a copy"
        ) from None
    announce(
        f"copied the shipped deployment {name} to {copy.resolve()}: its certificates, data and results go beside "
        f"it, and later commands naming {name} use it (edit it there)"
    )
    return copy
