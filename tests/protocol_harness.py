"""What the contract suites need of each deployable protocol, in one place: the registered protocols
(:data:`privbandits.deploy.registry.PROTOCOLS`) and the test suite's toy (``tests/toy_protocol``).

A protocol's valid deployment file is its shipped one (``configs/deploy/*.toml``, found by its ``protocol.name``; the
toy's is :data:`toy_protocol.EXAMPLE`), so a registered protocol that ships a file is covered by the section suite with
nothing added here. :data:`SMALL` says how to make its in-memory run quick (the message-boundary suite), and
:data:`OUTCOMES` what that run decides (compared between a serialized and a plain run); a protocol missing from them
runs at its shipped size and is compared by its transcript alone.

Not a test module: ``tests/`` is on ``sys.path`` (pyproject.toml's ``[tool.pytest.ini_options] pythonpath``).
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import json
import shutil
import tempfile
import tomllib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from project_paths import SHIPPED_DEPLOYMENTS
from toy_protocol import EXAMPLE as TOY_EXAMPLE
from toy_protocol import NAME as TOY
from toy_protocol import TOY as TOY_CODE

from privbandits.comm import Envelope, InMemoryNetwork, Message, message
from privbandits.deploy.deployment import Deployment, load_deployment
from privbandits.deploy.registry import PROTOCOLS

NAMES = (*PROTOCOLS.names(), TOY)
"""Every protocol the suites run over: the registered ones, then the toy (registered for the test's while)."""


@contextlib.contextmanager
def registered(name: str) -> Iterator[None]:
    """Protocol ``name`` registered for the ``with`` block (the toy is, only there; the others always are)."""
    with PROTOCOLS.extended(TOY_CODE) if name == TOY and TOY not in PROTOCOLS.names() else contextlib.nullcontext():
        yield


def shipped_files() -> dict[str, Path]:
    """The shipped deployment file of each protocol, by its ``protocol.name``."""
    files = {}
    for path in sorted(SHIPPED_DEPLOYMENTS.glob("*.toml")):
        files[tomllib.loads(path.read_text())["protocol"]["name"]] = path
    return files


def valid_file(name: str) -> dict[str, Any]:
    """A valid deployment file of protocol ``name``, as the mapping TOML reads (paths relative to its folder)."""
    if name == TOY:
        return tomllib.loads(TOY_EXAMPLE)
    files = shipped_files()
    assert name in files, f"protocol {name!r} ships no deployment file in {SHIPPED_DEPLOYMENTS}"
    return tomllib.loads(files[name].read_text())


# -------------------------------------------------------------------------------- writing a deployment file


def toml_value(value: object) -> str:
    """``value`` as TOML (a string, a number, inf and nan among them, a boolean, an array or an inline table)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)  # inf, -inf, nan are TOML's spellings too
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(key)} = {toml_value(item)}" for key, item in value.items()) + "}"
    return json.dumps(value)


def toml_text(data: dict[str, Any]) -> str:
    """A deployment mapping as a TOML file: its settings, then ``[protocol]``, then each ``[parties.NAME]``."""
    lines = [f"{key} = {toml_value(value)}" for key, value in data.items() if not isinstance(value, dict)]
    for table in ("protocol", "parties"):
        entries = data.get(table, {})
        if table == "protocol":
            lines += ["", "[protocol]", *(f"{key} = {toml_value(value)}" for key, value in entries.items())]
            continue
        for party, entry in entries.items():
            lines += ["", f"[parties.{party}]", *(f"{key} = {toml_value(value)}" for key, value in entry.items())]
    return "\n".join(lines) + "\n"


def write_file(folder: Path, data: dict[str, Any]) -> Path:
    path = folder / "deployment.toml"
    path.write_text(toml_text(data))
    return path


# -------------------------------------------------------------------------------- small in-memory runs


@dataclass(frozen=True)
class Small:
    """A quick in-memory run of a protocol: its ``[protocol]`` settings over the shipped file's, the parties kept
    (None: all)."""

    protocol: dict[str, Any] = field(default_factory=dict)
    parties: tuple[str, ...] | None = None


SMALL: dict[str, dict[str, Small]] = {
    "vertical-o3m": {"vfucb": Small({"partition": [4, 3, 3], "n_arms": 4, "rounds": 40})},
    "mpc-epsilon-greedy": {"two parties": Small({"partition": [3, 2], "n_arms": 4, "rounds": 12, "epsilon": 0.3})},
    "p2b": {
        "one_hot": Small({"n_users": 240, "interactions": 4, "n_codes": 8, "omega": 1.0, "raw_baseline": True}),
        "scalar_code": Small({"n_users": 240, "interactions": 4, "n_codes": 8, "representation": "scalar_code",
                              "raw_baseline": True}),  # fmt: skip
    },
    "fclub": {
        "cdp-fclub-dc": Small({"horizon": 127, "n_users": 12, "n_clusters": 2},
                              ("global", "users", "local0", "local1")),  # fmt: skip
    },
    TOY: {"toy": Small()},
}
"""Per protocol, its variants' quick in-memory runs (a protocol missing here runs its shipped file as it is)."""

P2B_SETTINGS = ("cold", "warm_non_private", "warm_private")
OUTCOMES: dict[str, Callable[[Any], object]] = {
    "vertical-o3m": lambda out: out[0].arms.tolist(),
    "mpc-epsilon-greedy": lambda out: out[0].arms.tolist(),
    "p2b": lambda out: (out[0].release, [getattr(out[0], kind) for kind in P2B_SETTINGS]),
    "fclub": lambda out: (out.regret.tolist(), out.communication.tolist()),
    TOY: lambda out: out[0],
}
"""What each protocol's in-memory run decides, in a comparable form."""


def variants(name: str) -> list[tuple[str, str]]:
    """``(protocol, variant)`` of every quick run the suites make."""
    return [(name, variant) for variant in SMALL.get(name, {"shipped": Small()})]


ALL_VARIANTS = [pair for name in NAMES for pair in variants(name)]


@functools.cache
def _folder() -> Path:
    """This process's folder for the quick deployments and their caches (removed when the process ends)."""
    folder = Path(tempfile.mkdtemp(prefix="privbandits-contracts-"))
    atexit.register(shutil.rmtree, folder, True)
    return folder


@functools.cache
def small_deployment(name: str, variant: str) -> Deployment:
    """Protocol ``name``'s quick deployment (reproducible, its data files written): one per process."""
    small = SMALL.get(name, {}).get(variant, Small())
    data = valid_file(name)
    data["reproducible"] = True  # the in-memory runs derive every party's randomness from the seed: repeatable
    data["protocol"].update(small.protocol)
    if small.parties is not None:
        data["parties"] = {party: data["parties"][party] for party in small.parties}
    folder = _folder() / f"{name}-{variant}".replace(" ", "-")
    folder.mkdir()
    with registered(name):  # P2B fits its public encoder in the run's cache (tests/conftest.py)
        spec = load_deployment(write_file(folder, data))
        code = PROTOCOLS.get(name)
        if code.no_data_files is None and name != TOY:
            code.write_synthetic_data(spec)
    return spec


@message("tests.contract.stray")
class Stray(Message):
    """A message of a kind no party of any protocol receives."""

    note: int


class Recording(InMemoryNetwork):
    """Records every envelope delivered (``transcript``) and every one taken, with how it was asked for:
    ``takes``, ``(receiver, envelope, kinds, sender, others)`` (``others``: how many more messages matching the
    request were waiting then)."""

    def __init__(self, *, serialize: bool = False) -> None:
        super().__init__(serialize=serialize, record=True)
        self.takes: list[tuple[str, Envelope, tuple[str, ...], str | None, int]] = []

    def _matching(self, receiver: str, kinds: tuple[str, ...], sender: str | None) -> int:
        return sum(kind in kinds and sender in (None, s) for s, _, kind in self.pending(receiver))

    def _take(self, receiver, kind, sender):
        others = self._matching(receiver, (kind,), sender) - 1
        envelope, depth = super()._take(receiver, kind, sender)
        self.takes.append((receiver, envelope, (kind,), sender, others))
        return envelope, depth

    def _take_one_of(self, receiver, kinds, sender):
        others = self._matching(receiver, tuple(kinds), sender) - 1
        envelope, depth = super()._take_one_of(receiver, kinds, sender)
        self.takes.append((receiver, envelope, tuple(kinds), sender, others))
        return envelope, depth



def run_in_memory(name: str, variant: str, network: InMemoryNetwork) -> Any:
    """Protocol ``name``'s in-memory run (its party code's ``run_in_memory``) of the quick deployment, on
    ``network``."""
    spec = small_deployment(name, variant)
    with registered(name):
        return PROTOCOLS.get(name).run_in_memory(spec, network)


@functools.cache
def honest_run(name: str, variant: str) -> tuple[Any, Recording]:
    """The quick run with every message through codec bytes, recorded: ``(outcome, network)`` (one per process)."""
    network = Recording(serialize=True)
    return run_in_memory(name, variant, network), network
