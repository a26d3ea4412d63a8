"""How a service is run (:class:`ServiceSettings`) and the reference service file that names one.

:class:`ServiceSettings` is what every served party shares: where it listens, its store, its reward timeout, its
request limits and its TLS files. A **reference service file** is the development service's own TOML: a name, a
``[service]`` table (these settings) and a ``[learner]`` table (the plaintext policy,
:class:`~privbandits.serve.reference.ReferenceLearner`). It serves no protocol and gives no privacy: it is for
trying the API, for tests, and as the template a protocol's serving role follows. Relative paths are taken from
the file's folder.
"""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from privbandits.serve.options import ServeOptions
from privbandits.serve.reference import ReferenceLearner


class SettingsError(ValueError):
    """A service file that cannot be used: one line naming the field."""


class ServiceSettings(ServeOptions):
    """The ``[service]`` table: where and how a party serves its application, its store and its TLS files."""

    store: Path = Field(Path("serve.sqlite"), description="the event store (SQLite), created 0600 if missing")
    certificate: Path | None = Field(None, description="TLS certificate (PEM); none: --dev-plain-http on loopback")
    key: Path | None = Field(None, description="its private key (PEM)")

    def resolved(self, base: Path) -> ServiceSettings:
        """These settings with relative paths taken from ``base``."""
        paths = {name: base / value for name in ("store", "certificate", "key")
                 if isinstance(value := getattr(self, name), Path) and not value.is_absolute()}  # fmt: skip
        return self.model_copy(update=paths)

    @property
    def tls(self) -> bool:
        return self.certificate is not None

    def check_transport(self, plain_http: bool) -> None:
        """:class:`SettingsError` unless the API is TLS, or plain HTTP on a loopback address with the flag given."""
        if (self.certificate is None) != (self.key is None):
            raise SettingsError("service.certificate and service.key must be given together")
        if self.tls:
            for name in ("certificate", "key"):
                if not Path(getattr(self, name)).is_file():
                    raise SettingsError(f"service.{name} {getattr(self, name)} does not exist")
            if plain_http:
                raise SettingsError("--dev-plain-http is for a service without TLS files; this one names them")
            return
        if not plain_http:
            raise SettingsError(
                "service.certificate and service.key are missing: the API is served over TLS "
                "(plain HTTP only on a loopback address with --dev-plain-http, for development)"
            )
        if not _loopback(self.host):
            raise SettingsError(f"--dev-plain-http serves only a loopback address, not service.host = {self.host!r}")


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class ReferenceServiceFile(BaseModel):
    """A reference service file (see the module docstring)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1, max_length=64, pattern=r"^[a-z][a-z0-9_-]*$")
    service: ServiceSettings = ServiceSettings()
    learner: ReferenceLearner


def is_reference_file(data: dict[str, Any]) -> bool:
    """Whether a TOML document is a reference service file (it has a ``[learner]`` table) rather than a
    deployment file."""
    return "learner" in data


def parse_reference(data: dict[str, Any], base: Path) -> ReferenceServiceFile:
    """The validated reference service file, paths resolved from ``base``; :class:`SettingsError` naming the field."""
    try:
        parsed = ReferenceServiceFile.model_validate(data)
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        where = ".".join(str(part) for part in error["loc"]) or "file"
        raise SettingsError(f"{where}: {error['msg']}") from None
    return parsed.model_copy(update={"service": parsed.service.resolved(base)})
