"""Fixtures of the transport's tests: a development PKI for parties a, b, c (a module may define its own)."""

from __future__ import annotations

import pytest

from privbandits.comm import TlsCredentials
from privbandits.deploy.certs import write_development_pki


@pytest.fixture(scope="module")
def pki(tmp_path_factory) -> dict[str, TlsCredentials]:
    """Certificates of parties a, b, c from one development CA."""
    out = tmp_path_factory.mktemp("pki")
    ca, files = write_development_pki(out, ["a", "b", "c"])
    return {name: TlsCredentials(ca, f.certificate, f.key) for name, f in files.items()}
