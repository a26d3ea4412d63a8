"""A development certificate authority and one bundle per party (the ``cryptography`` library).

Every party's certificate carries its party name as the only DNS subject alternative
name (and as the common name); :mod:`privbandits.comm.tls` checks that name against the
deployment file. Keys are Ed25519 (the cheapest keys for OpenSSL 3.0 to decode: a party that takes
many resumed TLS sessions decodes its client's certificate from each ticket), written unencrypted with
mode 0600. :func:`write_bundles` writes one folder per party (the CA certificate, its own
certificate and key: all that party's host needs) and the CA's key apart from them.
:func:`check_party` is what a party checks of its own files before it links up. This is
for trying deployments out and for tests: in production each organisation keeps its own
key and has its certificate signed by a CA all parties agree on.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ed25519
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from privbandits.deploy.deployment import DeploymentError, bundle_files

DEFAULT_DAYS = 365
MOST_DAYS = 3650
"""The longest validity ``deploy certs`` gives a development certificate (ten years)."""
BUNDLE_HINT = " (make the bundles with `privbandits deploy certs DEPLOY.toml`)"


@dataclass(frozen=True)
class Issued:
    """A certificate and its private key, in memory."""

    certificate: x509.Certificate
    key: ed25519.Ed25519PrivateKey

    def certificate_pem(self) -> bytes:
        return self.certificate.public_bytes(serialization.Encoding.PEM)

    def key_pem(self) -> bytes:
        return self.key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )

    def write(self, certificate: Path, key: Path) -> None:
        """Write the certificate (0644) and key (0600, created with that mode, never world-readable)."""
        certificate.parent.mkdir(parents=True, exist_ok=True)
        key.parent.mkdir(parents=True, exist_ok=True)
        certificate.write_bytes(self.certificate_pem())
        if key.exists():
            key.unlink()
        descriptor = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(self.key_pem())


def _validity(days: int) -> tuple[dt.datetime, dt.datetime]:
    now = dt.datetime.now(dt.UTC)
    return now - dt.timedelta(minutes=5), now + dt.timedelta(days=days)


def make_ca(common_name: str = "privbandits development CA", *, days: int = DEFAULT_DAYS) -> Issued:
    """A self-signed CA that may sign party certificates only (path length 0)."""
    key = ed25519.Ed25519PrivateKey.generate()
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    start, end = _validity(days)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=False,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, None)  # Ed25519 hashes inside
    )
    return Issued(certificate, key)


def issue(ca: Issued, party: str, *, days: int = DEFAULT_DAYS) -> Issued:
    """A certificate for ``party`` (client and server use), signed by ``ca``."""
    key = ed25519.Ed25519PrivateKey.generate()
    start, end = _validity(days)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, party)]))
        .issuer_name(ca.certificate.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=False,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(
            x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False
        )
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(party)]), critical=False)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca.key.public_key()), critical=False)
        .sign(ca.key, None)
    )
    return Issued(certificate, key)


@dataclass(frozen=True)
class PartyFiles:
    certificate: Path
    key: Path


@dataclass(frozen=True)
class Bundles:
    """What :func:`write_bundles` wrote: the CA's certificate and key (in no party's folder) and each party's bundle."""

    ca_certificate: Path
    ca_key: Path
    parties: dict[str, dict[str, Path]]
    """Per party, its ``ca``, ``certificate`` and ``key`` (all in its own folder)."""


def write_bundles(
    out: Path, parties: Iterable[str], *, days: int = DEFAULT_DAYS, ca_name: str = "privbandits development CA"
) -> Bundles:
    """A development CA (``out/ca.pem``, ``out/ca.key``) and one folder per party, ``out/NAME/``, holding the
    CA certificate (``ca.pem``), the party's certificate (``NAME.pem``) and its key (``NAME.key``, mode 0600).

    Copy ``out/NAME`` to party NAME's host: it needs nothing else of this folder, and no party's folder holds
    the CA's key."""
    out = Path(out)
    ca = make_ca(ca_name, days=days)
    ca.write(out / "ca.pem", out / "ca.key")
    written = {}
    for party in parties:
        files = {what: Path(path) for what, path in bundle_files(out, party).items()}
        files["ca"].parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        files["ca"].write_bytes(ca.certificate_pem())
        issue(ca, party, days=days).write(files["certificate"], files["key"])
        written[party] = files
    return Bundles(out / "ca.pem", out / "ca.key", written)


def existing_bundles(out: Path, parties: Iterable[str]) -> list[str]:
    """What :func:`write_bundles` would replace in ``out``: the CA's files and the parties' bundle folders there."""
    ca = [name for name in ("ca.pem", "ca.key") if (out / name).exists()]
    return ca + [f"{party}/" for party in parties if (out / party).exists()]


def fingerprint(certificate: x509.Certificate) -> str:
    """The certificate's SHA-256 fingerprint in hex (what the session digest holds of the CA)."""
    return certificate.fingerprint(hashes.SHA256()).hex()


class BundleError(DeploymentError):
    """A party's own CA certificate, certificate or key cannot be used; the message names the field."""


def _read(path: Path, field: str, what: str, hint: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except FileNotFoundError:
        raise BundleError(f"{field}: {what} {path} does not exist{hint}") from None
    except OSError as exc:
        raise BundleError(f"{field}: {what} {path} cannot be read ({exc.strerror})") from None


def _certificate(path: Path, field: str, what: str, hint: str) -> x509.Certificate:
    data = _read(path, field, what, hint)
    try:
        return x509.load_pem_x509_certificate(data)
    except ValueError:
        raise BundleError(f"{field}: {path} is not a PEM certificate") from None


def check_party(name: str, ca: Path, certificate: Path, key: Path, fields: dict[str, str], hint: str = "") -> str:
    """Check party ``name``'s own files before it links up; the CA certificate's fingerprint.

    :class:`BundleError` with one line naming the field (``fields[what]``, e.g. ``parties.bank.key``) when a
    file is missing or unreadable, not PEM, the certificate is not the CA's, not for ``name``, or out of its
    validity, or the key does not match the certificate. ``hint`` follows "does not exist"."""
    authority = _certificate(ca, fields["ca"], "CA certificate", hint)
    own = _certificate(certificate, fields["certificate"], "certificate", hint)
    data = _read(key, fields["key"], "key", hint)
    try:
        private = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError):
        raise BundleError(f"{fields['key']}: {key} is not an unencrypted PEM private key") from None
    try:
        own.verify_directly_issued_by(authority)
    except (ValueError, TypeError, InvalidSignature):
        raise BundleError(f"{fields['certificate']}: {certificate} is not signed by the CA certificate {ca}") from None
    names = _names(own)
    if name not in names:
        vouched = ", ".join(map(repr, names)) or "no party name"
        raise BundleError(f"{fields['certificate']}: {certificate} is for {vouched}, not {name!r}")
    now = dt.datetime.now(dt.UTC)
    if not own.not_valid_before_utc <= now <= own.not_valid_after_utc:
        raise BundleError(
            f"{fields['certificate']}: {certificate} is valid from {own.not_valid_before_utc:%Y-%m-%d %H:%M} to "
            f"{own.not_valid_after_utc:%Y-%m-%d %H:%M} UTC, not now"
        )
    if private.public_key().public_bytes(*_SPKI) != own.public_key().public_bytes(*_SPKI):
        raise BundleError(f"{fields['key']}: {key} does not match the certificate {certificate}")
    return fingerprint(authority)


_SPKI = (serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)


def _names(certificate: x509.Certificate) -> list[str]:
    """The certificate's DNS names (the party names it vouches for)."""
    try:
        extension = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName)
    except x509.ExtensionNotFound:
        return []
    return extension.value.get_values_for_type(x509.DNSName)


def write_development_pki(
    out: Path, parties: Iterable[str], *, days: int = DEFAULT_DAYS, ca_name: str = "privbandits development CA"
) -> tuple[Path, dict[str, PartyFiles]]:
    """Write ``ca.pem`` (+ ``ca.key``) and ``NAME.pem`` / ``NAME.key`` per party into one folder ``out`` (for
    tests and files that name each party's files; :func:`write_bundles` keeps the parties apart).

    Returns the CA certificate's path and each party's files.
    """
    out = Path(out)
    ca = make_ca(ca_name, days=days)
    ca.write(out / "ca.pem", out / "ca.key")
    files = {}
    for party in parties:
        files[party] = PartyFiles(out / f"{party}.pem", out / f"{party}.key")
        issue(ca, party, days=days).write(files[party].certificate, files[party].key)
    return out / "ca.pem", files
