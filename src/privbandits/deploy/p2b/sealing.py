"""Sealed P2B reports (issue 48, item 1): a device seals what only the server may see to the server's public key.

Encode–shuffle–analyze nests its encryption: the device encrypts the report's content to the analyzer and the
shuffler sees only what it must act on. Here the device sends the shuffler its crowd id (the code the shuffler
thresholds on) in the clear and the rest, ``(action, reward)``, sealed with HPKE (RFC 9180, base mode) to the
server: DHKEM(X25519, HKDF-SHA256), HKDF-SHA256, AES-128-GCM, from ``pyhpke`` (built on ``cryptography``; no
cryptography of this project's own). The code is the sealing's associated data, so a ciphertext opens only beside
the code it was sealed with: the shuffler cannot move a report to another crowd. The shuffler stores, thresholds,
shuffles and forwards the code and the ciphertext; the server opens only the reports of the released batch.

The server's key pair is its own: drawn at the server from OS entropy when its session starts (also in reproducible
mode: the released batch does not depend on it), kept in its own file (0600) for ``--resume``, and its public key
sent to each device host on their mutual-TLS link (:class:`~privbandits.deploy.p2b.messages.ServerKey`); under
``privbandits serve`` it comes with the model a device fetches.

A sealed report is :data:`SEALED_BYTES` bytes: HPKE's encapsulated key, then the AES-GCM ciphertext of the plaintext
(the action as a little-endian ``uint32``, then the reward as a byte) and its tag.
"""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
from pyhpke import AEADId, CipherSuite, KDFId, KEMId, KEMKey

SUITE = CipherSuite.new(KEMId.DHKEM_X25519_HKDF_SHA256, KDFId.HKDF_SHA256, AEADId.AES128_GCM)
INFO = b"privbandits p2b report v1"
"""HPKE's ``info``: binds a sealing to this use."""
_PLAIN = struct.Struct("<IB")
ENCAPSULATED_BYTES, TAG_BYTES = 32, 16
SEALED_BYTES = ENCAPSULATED_BYTES + _PLAIN.size + TAG_BYTES
"""The bytes of one sealed report."""
PUBLIC_BYTES = 32


def _aad(code: int) -> bytes:
    return struct.pack("<q", int(code))


def new_private_key() -> bytes:
    """A fresh X25519 private key (raw, from OS entropy through ``cryptography``)."""
    from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

    return KEMKey.from_pyca_cryptography_key(X25519PrivateKey.generate()).to_private_bytes()


def public_key(private: bytes) -> np.ndarray:
    """The public key of ``private``, as the uint8 array the messages carry."""
    from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

    public = X25519PrivateKey.from_private_bytes(private).public_key().public_bytes_raw()
    return np.frombuffer(public, dtype=np.uint8).copy()


def seal(public: np.ndarray, code: int, action: int, reward: int) -> np.ndarray:
    """``(action, reward)`` sealed to ``public`` beside ``code`` (fresh randomness each call): a uint8 array of
    :data:`SEALED_BYTES`."""
    recipient = SUITE.kem.deserialize_public_key(bytes(np.asarray(public, dtype=np.uint8)))
    encapsulated, context = SUITE.create_sender_context(recipient, INFO)
    sealed = encapsulated + context.seal(_PLAIN.pack(action, reward), _aad(code))
    return np.frombuffer(sealed, dtype=np.uint8).copy()


class Opener:
    """The server's side: opens sealed reports with its private key."""

    def __init__(self, private: bytes) -> None:
        self.private = SUITE.kem.deserialize_private_key(private)

    def open(self, code: int, sealed: np.ndarray) -> tuple[int, int] | None:
        """``(action, reward)`` of a report sealed beside ``code``, or None if it does not open (forged, damaged,
        or sealed beside another code or to another key)."""
        data = bytes(np.asarray(sealed, dtype=np.uint8))
        if len(data) != SEALED_BYTES:
            return None
        try:
            context = SUITE.create_recipient_context(data[:ENCAPSULATED_BYTES], self.private, INFO)
            action, reward = _PLAIN.unpack(context.open(data[ENCAPSULATED_BYTES:], _aad(code)))
        except Exception:  # pyhpke raises its own errors (and cryptography's) on a bad ciphertext
            return None
        return action, reward


def open_batch(opener: Opener, codes: np.ndarray, sealed: np.ndarray, n_arms: int):
    """The released batch ``codes``/``sealed`` opened: ``(EncodedBatch, unopened)``, the reports in the order
    released, less those that do not open or hold an action outside ``[0, n_arms)`` or a reward other than 0 or 1
    (each dropped, counted in ``unopened`` and logged)."""
    import logging

    from privbandits.protocols.p2b.core import EncodedBatch

    kept, actions, rewards = [], [], []
    for index, code in enumerate(np.asarray(codes).tolist()):
        content = opener.open(code, sealed[index])
        if content is None or not (0 <= content[0] < n_arms and content[1] in (0, 1)):
            continue
        kept.append(index)
        actions.append(content[0])
        rewards.append(content[1])
    unopened = len(codes) - len(kept)
    if unopened:
        logging.getLogger(__name__).warning("%d released report(s) did not open; dropped", unopened)
    as_ints = (np.asarray(values, dtype=np.int64) for values in (actions, rewards))
    return EncodedBatch(np.asarray(codes, dtype=np.int64)[kept], *as_ints), unopened


def server_key(path: Path, *, resume: bool, digest: str) -> bytes:
    """The server's private key: fresh (and saved 0600 at ``path``), or read back from it when ``resume``."""
    from privbandits.deploy import checkpoint
    from privbandits.deploy.deployment import DeploymentError

    if resume:
        saved = checkpoint.load(path)
        if saved is None:
            raise DeploymentError(f"no server key at {path} to resume from (start the session afresh)")
        if saved[1].get("digest") != digest:
            raise DeploymentError(f"{path} was written for another deployment (its digest differs)")
        return saved[0]["private"].tobytes()
    private = new_private_key()
    checkpoint.save(path, {"private": np.frombuffer(private, dtype=np.uint8)}, {"digest": digest})
    return private


def check_sealed(report: object) -> str | None:
    """Why a device's sealed report is malformed (its sealed content not :data:`SEALED_BYTES` uint8), or None."""
    sealed = getattr(report, "sealed", None)
    if not isinstance(sealed, np.ndarray) or sealed.dtype != np.uint8 or sealed.shape != (SEALED_BYTES,):
        shape = getattr(sealed, "shape", None)
        return f"sealed must be {SEALED_BYTES} bytes (uint8), got {type(sealed).__name__} of shape {shape}"
    return None
