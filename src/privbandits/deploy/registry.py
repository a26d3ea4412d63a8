"""Deployable protocols as plug-ins: the interface a protocol's party code implements, and the registry.

A deployable protocol is two things: its ``[protocol]`` section (a pydantic model deriving from
:class:`~privbandits.deploy.deployment_parts.ProtocolSection`: name, options, roles), which the deployment
file's parser needs, and its party code (a :class:`DeployableProtocol`: how each party runs, its hooks, its
synthetic data, its in-memory twin, its result summary), which only a running party needs. The registry
(:data:`PROTOCOLS`) holds both: the parser, the party runner, ``deploy local`` and the CLI look a protocol up
there by its name, and an unknown name is refused with the registered ones listed.

A protocol registers itself with :meth:`ProtocolRegistry.register` (its party code at hand) or
:meth:`ProtocolRegistry.register_lazy` (its section, and the ``"module:attribute"`` of its party code, imported
the first time a party of it runs), so reading a deployment file never imports a protocol's party code. The four
built-in protocols are packages under :mod:`privbandits.deploy` (:data:`BUILT_IN`), each naming its ``SECTION`` and
its ``PARTY_CODE``; they register the first time the registry is asked anything. An installed package declares its
own as an entry point (group :data:`ENTRY_POINTS`), found by every process at the first name the registry does not
know; a test registers its own for a while with :meth:`ProtocolRegistry.extended`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from privbandits.deploy.deployment_parts import DeploymentError, ProtocolSection

if TYPE_CHECKING:
    from privbandits.comm import Network, TlsNetwork
    from privbandits.serve.role import ServedRole

OnRound = Callable[[int, int], None]


class Session(Protocol):
    """What the interface's defaults read of a deployment (a :class:`~privbandits.deploy.deployment.Deployment`)."""

    @property
    def deadline_s(self) -> float: ...


D = TypeVar("D", bound=Session)
"""The deployment a protocol's hooks take: ``Deployment[ItsSection]`` (this module never imports the deployment
file's module, which consults :data:`PROTOCOLS`)."""


class DeployableProtocol(Generic[D]):
    """A protocol whose parties run as separate processes (or threads) over mutually authenticated TCP.

    A subclass sets :attr:`section` and implements :meth:`run_party`; every other method is an optional hook
    whose default is documented on it (what a protocol without that need gets). Every hook takes the validated
    deployment (``D``, a :class:`~privbandits.deploy.deployment.Deployment` whose ``protocol`` is a :attr:`section`).
    """

    section: type[ProtocolSection]
    """The pydantic model of the deployment file's ``[protocol]`` section (its name, options and roles)."""
    party_modules: tuple[str, ...] = ()
    """Modules every party imports: ``deploy local``'s fork server imports them once for all parties."""
    no_data_files: str | None = None
    """Why no party of the protocol reads a data file (``deploy data`` says so), or None: see
    :meth:`write_synthetic_data`."""

    @property
    def name(self) -> str:
        """The protocol's name in a deployment file (``protocol.name``)."""
        return self.section.protocol_name()

    @property
    def roles(self) -> tuple[str, ...]:
        """The roles of its parties."""
        return self.section.ROLES

    def run_party(
        self, deployment: D, name: str, network: TlsNetwork, *, resume: bool, on_round: OnRound | None
    ) -> dict:
        """Play party ``name`` over its linked ``network`` to the end of the session; its result (JSON-able; the
        runner adds the network's ledgers and writes it). ``resume``: continue from the party's checkpoint;
        ``on_round(t, total)``: called after each round by the party that learns the decisions."""
        raise NotImplementedError(f"{type(self).__name__} must implement run_party")

    def receive_deadline(self, deployment: D, name: str) -> float:
        """Seconds party ``name`` waits for a message before it reports the sender lost; default: the file's
        ``deadline_s``."""
        return deployment.deadline_s

    def peers(self, deployment: D, name: str) -> list[str] | None:
        """The parties party ``name`` links to; default None: every other party."""
        return None

    def prepare(self, deployment: D, name: str) -> None:
        """Work party ``name`` does before it links up (e.g. a costly set-up the others should not wait on while
        linked); default: none."""

    def keeps_listening(self, deployment: D, name: str) -> bool:
        """Whether party ``name`` keeps accepting connections once linked (e.g. from devices); default False."""
        return False

    def link_order(self, deployment: D) -> list[str] | None:
        """The parties in the order that sets who dials whom (each dials those before it and accepts those after
        it, also when a lost peer comes back); default None: the file's order."""
        return None

    def rejoin(self, deployment: D) -> tuple[float, float] | None:
        """``(rejoin_s, backoff_s)`` when a lost peer may come back (its network is a
        :class:`~privbandits.comm.tls.rejoin.RejoinNetwork`); default None: a lost peer is lost."""
        return None

    def write_synthetic_data(self, deployment: D) -> dict[str, Path]:
        """Write each party's local data file for the protocol's synthetic problem (``deploy data``); the files
        by party. Default: refused (unless :attr:`no_data_files` says why no party needs one)."""
        raise DeploymentError(f"protocol {self.name!r} has no synthetic data files to write")

    def run_in_memory(self, deployment: D, network: Network | None = None) -> Any:
        """The in-memory run the deployed parties must equal (its form is the protocol's); default: refused."""
        raise DeploymentError(f"protocol {self.name!r} has no in-memory run")

    def serving_role(self, deployment: D, name: str) -> ServedRole | None:
        """What party ``name`` is under ``privbandits serve`` (:mod:`privbandits.serve.role`: a decider, a feature
        holder, or a role that serves the other parties only), built from its own files; default None: the protocol
        has no serving role (yet), or not for that party's role."""
        return None

    def summary(self, result: dict) -> str:
        """One line on a party's result (``deploy local``'s report); default: the rounds, the cumulative reward
        and regret where the result has them, else its ``outcome``, else ``done``."""
        if "cumulative_reward" in result:
            line = f"{result['rounds']} rounds, cumulative reward {result['cumulative_reward']:.2f}"
            if "cumulative_regret" in result:
                line += f", regret {result['cumulative_regret']:.2f}"
            return line
        return str(result.get("outcome", "done"))


def play_by_role(plays: Mapping[str, Callable[..., dict]]) -> Callable[..., dict]:
    """A protocol's ``run_party`` from one function per role, ``play(deployment, name, network, resume)``; the role
    that learns the decisions (the section's ``REPORTER``) also gets ``on_round``:
    ``play(deployment, name, network, resume, on_round)``."""

    def run_party(deployment, name: str, network, *, resume: bool = False, on_round: OnRound | None = None) -> dict:
        role = deployment.parties[name].role
        if role == deployment.protocol.REPORTER:
            return plays[role](deployment, name, network, resume, on_round)
        return plays[role](deployment, name, network, resume)

    return run_party


def deadline_by_role(factors: Mapping[str, float], default: float = 1.0) -> Callable[[Any, str], float]:
    """A protocol's ``receive_deadline``: the file's ``deadline_s`` times the party's role's factor (``default`` for
    a role ``factors`` does not name)."""

    def receive_deadline(deployment, name: str) -> float:
        return factors.get(deployment.parties[name].role, default) * deployment.deadline_s

    return receive_deadline


@dataclass
class PartyFunctions(DeployableProtocol[D]):
    """A :class:`DeployableProtocol` whose party code is a module's functions, each hook passed by name (a hook
    left None keeps the interface's default). How the built-in protocols declare theirs."""

    section: type[ProtocolSection]
    party_modules: tuple[str, ...] = field()  # required (the base class has a default)
    play: Callable[..., dict]
    deadline: Callable[[D, str], float]
    data: Callable[[D], dict[str, Path]] | None = None
    in_memory: Callable[..., Any] | None = None
    linked_peers: Callable[[D, str], list[str] | None] | None = None
    before_linking: Callable[[D, str], None] | None = None
    listening: Callable[[D, str], bool] | None = None
    ordering: Callable[[D], list[str] | None] | None = None
    rejoining: Callable[[D], tuple[float, float]] | None = None
    serving: Callable[[D, str], ServedRole | None] | str | None = None
    """The serving roles: a function, or where one is (``"module:function"``), imported when a party is first served,
    so that ``deploy`` never loads the HTTP service and the party code need not import its serving code."""
    no_data_files: str | None = None

    def run_party(self, deployment, name, network, *, resume, on_round):
        return self.play(deployment, name, network, resume=resume, on_round=on_round)

    def receive_deadline(self, deployment, name):
        return self.deadline(deployment, name)

    def peers(self, deployment, name):
        return None if self.linked_peers is None else self.linked_peers(deployment, name)

    def prepare(self, deployment, name):
        if self.before_linking is not None:
            self.before_linking(deployment, name)

    def keeps_listening(self, deployment, name):
        return self.listening is not None and self.listening(deployment, name)

    def link_order(self, deployment):
        return None if self.ordering is None else self.ordering(deployment)

    def rejoin(self, deployment):
        return None if self.rejoining is None else self.rejoining(deployment)

    def write_synthetic_data(self, deployment):
        return super().write_synthetic_data(deployment) if self.data is None else self.data(deployment)

    def run_in_memory(self, deployment, network=None):
        if self.in_memory is None:
            return super().run_in_memory(deployment, network)
        return self.in_memory(deployment, network)

    def serving_role(self, deployment, name):
        if isinstance(self.serving, str):
            module, _, attribute = self.serving.partition(":")
            self.serving = getattr(importlib.import_module(module), attribute)
        return None if self.serving is None else self.serving(deployment, name)


@dataclass
class _Entry:
    section: type[ProtocolSection]
    target: str | None = None  # "module:attribute" of the party code, until it is loaded
    plugin: DeployableProtocol[Any] | None = None


class ProtocolRegistry:
    """Deployable protocols by name, in registration order."""

    def __init__(self, entry_points: str | None = None, built_in: tuple[str, ...] = ()) -> None:
        self._registered: dict[str, _Entry] = {}
        self._group = entry_points  # installed packages' protocols: discovered at the first unknown name
        self._built_in = built_in  # packages naming SECTION and PARTY_CODE: registered at the first question

    @property
    def _entries(self) -> dict[str, _Entry]:
        """The entries by name, the built-in protocols' first (registered on first use)."""
        built_in, self._built_in = self._built_in, ()
        for package in built_in:
            module = importlib.import_module(package)
            self.register_lazy(module.SECTION, module.PARTY_CODE)
        return self._registered

    def _discover(self) -> None:
        """Register, once, the protocols installed packages declare as entry points of the group (each
        ``NAME = "module:attribute"``, a :class:`DeployableProtocol` named NAME): a plug-in's own process
        (``deploy local``'s parties) finds it without being told."""
        group, self._group = self._group, None
        if group is None:
            return
        from importlib.metadata import entry_points

        for point in entry_points(group=group):
            if point.name not in self._entries:
                plugin = point.load()
                if not isinstance(plugin, DeployableProtocol) or plugin.name != point.name:
                    raise TypeError(f"entry point {point.name} = {point.value!r} ({group}) is not its protocol")
                self.register(plugin)

    def register(self, plugin: DeployableProtocol[Any]) -> None:
        """Register ``plugin`` under its section's name; refused (``ValueError``) if that name is taken."""
        self._add(_Entry(plugin.section, plugin=plugin))

    def register_lazy(self, section: type[ProtocolSection], target: str) -> None:
        """Register the protocol of ``section`` whose party code is ``target``, ``"module:attribute"`` (a
        :class:`DeployableProtocol`), imported the first time :meth:`get` asks for it."""
        if target.count(":") != 1:
            raise ValueError(f"target must be 'module:attribute', got {target!r}")
        self._add(_Entry(section, target=target))

    def _add(self, entry: _Entry) -> None:
        name = entry.section.protocol_name()
        if name in self._entries:
            raise ValueError(f"protocol {name!r} is already registered (registered: {', '.join(self.names())})")
        self._registered[name] = entry

    def unregister(self, name: str) -> None:
        """Forget protocol ``name``; ``KeyError`` naming the registered ones if there is none."""
        if name not in self._entries:
            raise KeyError(f"no protocol {name!r} is registered (registered: {', '.join(self.names())})")
        del self._registered[name]

    @contextmanager
    def extended(self, *plugins: DeployableProtocol[Any]) -> Iterator[ProtocolRegistry]:
        """Register ``plugins`` for the ``with`` block, then forget them (e.g. a test's own protocol)."""
        added: list[str] = []
        try:
            for plugin in plugins:
                self.register(plugin)
                added.append(plugin.name)
            yield self
        finally:
            for name in added:
                self.unregister(name)

    def names(self) -> tuple[str, ...]:
        """The registered protocols' names, in registration order (installed plug-ins' last)."""
        self._discover()
        return tuple(self._entries)

    def section(self, name: object) -> type[ProtocolSection] | None:
        """The section model of protocol ``name``; None if no protocol of that name is registered."""
        if not isinstance(name, str):
            return None
        if name not in self._entries:
            self._discover()
        entry = self._entries.get(name)
        return None if entry is None else entry.section

    def get(self, name: str) -> DeployableProtocol[Any]:
        """The party code of protocol ``name`` (imported on first use); :class:`DeploymentError` listing the
        registered protocols if there is none."""
        if name not in self._entries:
            self._discover()
        entry = self._entries.get(name)
        if entry is None:
            raise DeploymentError(
                f"protocol {name!r} is not registered (registered: {', '.join(map(repr, self.names()))})"
            )
        if entry.plugin is None:
            entry.plugin = _load(entry)
        return entry.plugin


def _load(entry: _Entry) -> DeployableProtocol[Any]:
    module, _, attribute = str(entry.target).partition(":")
    plugin = getattr(importlib.import_module(module), attribute)
    if not isinstance(plugin, DeployableProtocol) or plugin.section is not entry.section:
        raise TypeError(f"{entry.target} is not the DeployableProtocol of {entry.section.__name__}")
    return plugin


ENTRY_POINTS = "privbandits.deploy_protocols"
"""The entry-point group an installed package declares its deployable protocols in (``NAME = "module:attribute"``)."""

BUILT_IN = (
    "privbandits.deploy.vertical",
    "privbandits.deploy.mpc_bandit",
    "privbandits.deploy.p2b",
    "privbandits.deploy.fclub",
)
"""The built-in protocols' packages, in registration order: each names its ``SECTION`` (the ``[protocol]`` section's
model) and its ``PARTY_CODE`` (``"module:attribute"`` of its :class:`DeployableProtocol`)."""

PROTOCOLS = ProtocolRegistry(ENTRY_POINTS, BUILT_IN)
"""The deployable protocols: the four built-in ones (:data:`BUILT_IN`), those installed packages declare
(:data:`ENTRY_POINTS`, found at the first unknown name) and any registered since."""
