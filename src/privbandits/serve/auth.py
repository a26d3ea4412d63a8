"""Client tokens of the application API: made with :mod:`secrets`, stored as SHA-256 hashes, checked in constant time.

A token is shown once, when it is made (``privbandits serve-token``); the store keeps only its hash, so reading the
store does not give anyone a credential. A request presents it as ``Authorization: Bearer TOKEN``; the service hashes
it and compares the hash with every stored one with :func:`hmac.compare_digest`, never stopping at the first match.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets

TOKEN_BYTES = 32
CLIENT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


def new_token() -> str:
    """A fresh random token (256 bits from the OS, URL-safe text)."""
    return "pbt_" + secrets.token_urlsafe(TOKEN_BYTES)


def token_hash(token: str) -> str:
    """The SHA-256 of a token (hex): what the store keeps."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def check_client_name(client: str) -> str:
    """``client`` if it is a usable client name; ``ValueError`` naming the rule."""
    if not CLIENT_NAME.match(client):
        rule = "1-64 letters, digits, '.', '_' or '-', starting with a letter or digit"
        raise ValueError(f"client name must be {rule}, got {client!r}")
    return client


class TokenSet:
    """The stored token hashes, checked in constant time (see the module docstring)."""

    def __init__(self, hashes: dict[str, str]) -> None:
        self._hashes = [(client, bytes.fromhex(digest)) for client, digest in sorted(hashes.items())]

    def __len__(self) -> int:
        return len(self._hashes)

    def client(self, authorization: str | None) -> str | None:
        """The client whose token the ``Authorization`` header carries, or None."""
        if not authorization:
            return None
        scheme, _, token = authorization.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            return None
        presented = hashlib.sha256(token.strip().encode("utf-8", "replace")).digest()
        found = None
        for client, digest in self._hashes:  # every comparison runs: the time says nothing about which matched
            if hmac.compare_digest(presented, digest):
                found = client
        return found
