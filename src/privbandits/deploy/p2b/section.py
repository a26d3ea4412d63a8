"""The ``[protocol]`` section of a P2B deployment file (``name = "p2b"``): :class:`P2BProtocol`, its options, roles."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from privbandits.declared import P2BDeploymentOptions  # P2BConfig's options, without importing the protocol
from privbandits.deploy.deployment_parts import MOST_ROUNDS, PartyEntry, ProtocolSection, _roles, check_numbers


class P2BProtocol(ProtocolSection, P2BDeploymentOptions):
    """P2B (spec ``p2b.md``): device hosts, the trusted shuffler and the server (:mod:`privbandits.deploy.p2b.party`).

    Roles: one ``shuffler`` and one ``server`` (neither holds private data) and one or more
    ``device_host`` parties, each simulating the devices of its own users (its data file); optionally
    ``shuffler_front`` parties, the shuffler's front ends on other hosts sharing its PostgreSQL queue
    (:mod:`privbandits.deploy.p2b.scaleout`).
    The population is the synthetic benchmark (spec §5.1) of ``n_users`` users with
    ``interactions`` rounds each; the first ``early_fraction`` share, the rest are measured.
    ``seed`` is :func:`~privbandits.protocols.p2b.core.simulate`'s: with the deployment's
    ``reproducible = true`` every party derives its streams from it as the in-memory run does, so
    the processes reproduce that run; by default each party draws from OS entropy
    (:mod:`privbandits.deploy.entropy`). ``raw_baseline`` (off by default) also runs the
    non-private baseline: every participating device then sends a raw context to the server.
    """

    name: Literal["p2b"]
    n_users: int = Field(ge=2, le=MOST_ROUNDS, description="U, early and late users of all device hosts together")
    interactions: int = Field(ge=1, le=100_000, description="t, rounds per user")
    dim: int = Field(ge=2, le=100, description="d, the context dimension")
    n_actions: int = Field(ge=1, le=10_000, description="|A|")
    n_codes: int = Field(ge=1, le=1_000_000, description="k, the encoder's codes")
    precision: int = Field(1, ge=1, le=3, description="q, decimal digits of the encoder's grid")
    encoder_seed: int = Field(0, ge=0)
    mapping: Literal["softmax", "linear"] = "linear"
    data_seed: int = Field(0, ge=0, description="the synthetic users of `deploy data`")
    seed: int = Field(
        0, ge=0, description="the protocol's randomness, as simulate(seed=...), used only with reproducible = true"
    )
    raw_baseline: bool = Field(
        False,
        description="also run the non-private baseline: each participating device sends one raw context, action and "
        "reward to the server (through the shuffler, no thresholding) and late users play warm from that model; "
        "off, devices never send raw contexts and the server publishes only the private model",
    )
    batch_size: int | None = Field(
        None, ge=1, description="the shuffler closes a batch once it holds this many reports; later ones are refused"
    )
    batch_window_s: float | None = Field(
        None, gt=0, description="the shuffler closes a batch this many seconds after it opened; later reports refused"
    )
    queue_url: str | None = Field(
        None,
        description="the shuffler's report queue: unset, a SQLite file in OUTPUT/queues/; a postgresql://USER@HOST/DB "
        "URL without a password: schema SHUFFLER (its party name) of that database, which front ends may share",
    )
    rejoin_s: float = Field(30.0, ge=0, le=3600, description="seconds a party waits for a lost peer (restarted with "
                            "--resume) to link again before it exits naming it; 0: a lost peer ends the session")
    rejoin_backoff_s: float = Field(1.0, ge=0.05, le=60, description="the longest pause between two tries to dial a "
                                    "lost peer again (the pause doubles from 0.05 s)")
    workers: int | None = Field(None, ge=0, le=256, description="processes taking the devices' connections and TLS "
                                "handshakes side by side (the shuffler stores their reports in groups); none: one per "
                                "CPU the shuffler may use; 0: the shuffler takes one device at a time")  # fmt: skip

    ROLES: ClassVar[tuple[str, ...]] = ("shuffler", "server", "device_host", "shuffler_front")
    REPORTER: ClassVar[str] = "server"

    @field_validator("queue_url")
    @classmethod
    def _queue_url(cls, value: str | None) -> str | None:
        from privbandits.protocols.p2b.queue.postgres import check_queue_url  # needs no psycopg

        return None if value is None else check_queue_url(value)

    @model_validator(mode="after")
    def _split(self) -> P2BProtocol:
        n_early = int(self.early_fraction * self.n_users)
        if not 0 < n_early < self.n_users:
            raise ValueError(
                f"early_fraction = {self.early_fraction} of n_users = {self.n_users} gives {n_early} early users; "
                "both the early and the late users must be non-empty"
            )
        sizes = ("n_users", self.n_users), ("interactions", self.interactions), ("dim", self.dim)
        check_numbers("the device hosts' data files (every interaction's context)", *sizes)
        return self

    def check_parties(self, parties: dict[str, PartyEntry]) -> None:
        roles = _roles(parties, self.ROLES, ("shuffler", "server"))
        hosts = [name for name, role in roles.items() if role == "device_host"]
        if not hosts:
            raise ValueError("parties: at least one party must have role 'device_host'")
        n_early = int(self.early_fraction * self.n_users)
        if len(hosts) > min(n_early, self.n_users - n_early):
            raise ValueError(
                f"parties: {len(hosts)} device hosts, but every host needs at least one early and one late user "
                f"({n_early} early, {self.n_users - n_early} late)"
            )
        fronts = [name for name, role in roles.items() if role == "shuffler_front"]
        if fronts:
            self._check_fronts(fronts)
        for name, entry in parties.items():
            if entry.role == "device_host" and entry.data is None:
                raise ValueError(f"parties.{name}.data: the device_host party needs its users' data file")
            if entry.role != "device_host" and entry.data is not None:
                raise ValueError(f"parties.{name}.data: the {entry.role} holds no private data; remove the field")

    def _check_fronts(self, fronts: list[str]) -> None:
        """What front ends on other hosts need (:mod:`privbandits.deploy.p2b.scaleout`): each problem named."""
        needs = {
            "queue_url": (self.queue_url is None, "a postgresql:// URL: the front ends and the shuffler share that "
                          "queue (a SQLite file cannot be shared across hosts)", None),
            "workers": (self.workers == 0, "unset or at least 1 (the concurrent front end at each front end)", 0),
            "raw_baseline": (self.raw_baseline, "false: the raw baseline's reports are not queued", True),
            "batch_size": (self.batch_size is not None, "unset: a limit counted across front ends is not built",
                           self.batch_size),
            "batch_window_s": (self.batch_window_s is not None, "unset: a limit counted across front ends is not "
                               "built", self.batch_window_s),
        }  # fmt: skip
        for field, (bad, allowed, got) in needs.items():
            if bad:
                given = "unset" if got is None else repr(got).lower() if isinstance(got, bool) else f"{got:g}"
                raise ValueError(
                    f"protocol.{field}: with shuffler_front parties ({', '.join(fronts)}) it must be {allowed}; "
                    f"got {given}"
                )


__all__ = ["P2BProtocol"]
