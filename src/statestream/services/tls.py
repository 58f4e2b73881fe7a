"""A local certificate authority and a server certificate for the local broker's TLS listener.

Generated on first start under the broker's folder (`ca.crt`, `server.crt`, `server.key`) and
kept: clients verify the server against `ca.crt` (setting `mqtt.ca_file`), so it must not change
between starts. The server certificate names `localhost`, `127.0.0.1` and `::1`; it is made again
(by the same CA) when it is missing or has less than 30 days left.

    >>> import tempfile
    >>> files = ensure_server_certificate(Path(tempfile.mkdtemp()))
    >>> sorted(path.name for path in (files.ca, files.certificate, files.key))
    ['ca.crt', 'server.crt', 'server.key']
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
from pathlib import Path
from typing import NamedTuple

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from statestream.errors import ServiceError

CA_DAYS = 3650
SERVER_DAYS = 825
RENEW_BEFORE = dt.timedelta(days=30)
SERVER_NAMES = ("localhost",)
SERVER_ADDRESSES = ("127.0.0.1", "::1")


class TlsFiles(NamedTuple):
    """The PEM files of the local TLS listener."""

    ca: Path
    certificate: Path
    key: Path


def ensure_server_certificate(folder: Path) -> TlsFiles:
    """The CA and server certificate in `folder`, made when missing (the CA only once)."""
    folder.mkdir(parents=True, exist_ok=True)
    files = TlsFiles(folder / "ca.crt", folder / "server.crt", folder / "server.key")
    ca_key_file = folder / "ca.key"
    if not (files.ca.is_file() and ca_key_file.is_file()):
        ca_key = ec.generate_private_key(ec.SECP256R1())
        _write_key(ca_key_file, ca_key)
        _write_certificate(files.ca, _ca_certificate(ca_key))
        files.certificate.unlink(missing_ok=True)
    if _needs_server_certificate(files.certificate):
        ca_key = _read_ca_key(ca_key_file)
        ca = x509.load_pem_x509_certificate(files.ca.read_bytes())
        server_key = ec.generate_private_key(ec.SECP256R1())
        _write_key(files.key, server_key)
        _write_certificate(files.certificate, _server_certificate(server_key, ca, ca_key))
    return files


def _read_ca_key(path: Path) -> ec.EllipticCurvePrivateKey:
    """The CA's key as `ensure_server_certificate` wrote it (an elliptic-curve key)."""
    key = serialization.load_pem_private_key(path.read_bytes(), password=None)
    if not isinstance(key, ec.EllipticCurvePrivateKey):
        raise ServiceError(
            f"{path} holds a {type(key).__name__}, not the local CA's elliptic-curve key: delete "
            "it and the next start makes a new CA (clients then need its new ca.crt)"
        )
    return key


def _needs_server_certificate(path: Path) -> bool:
    if not path.is_file():
        return True
    certificate = x509.load_pem_x509_certificate(path.read_bytes())
    return certificate.not_valid_after_utc - _now() < RENEW_BEFORE


def _ca_certificate(key: ec.EllipticCurvePrivateKey) -> x509.Certificate:
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "statestream local CA")])
    return (
        _builder(name, name, key.public_key(), CA_DAYS)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_key_usage(ca=True), critical=True)
        .sign(key, hashes.SHA256())
    )


def _server_certificate(
    key: ec.EllipticCurvePrivateKey, ca: x509.Certificate, ca_key: ec.EllipticCurvePrivateKey
) -> x509.Certificate:
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    alternative_names = [x509.DNSName(host) for host in SERVER_NAMES] + [
        x509.IPAddress(ipaddress.ip_address(address)) for address in SERVER_ADDRESSES
    ]
    return (
        _builder(name, ca.subject, key.public_key(), SERVER_DAYS)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_key_usage(ca=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectAlternativeName(alternative_names), critical=False)
        .sign(ca_key, hashes.SHA256())
    )


def _builder(
    subject: x509.Name, issuer: x509.Name, public_key: ec.EllipticCurvePublicKey, days: int
) -> x509.CertificateBuilder:
    now = _now()
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=days))
    )


def _key_usage(*, ca: bool) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=not ca,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=not ca,
        key_cert_sign=ca,
        crl_sign=ca,
        encipher_only=False,
        decipher_only=False,
    )


def _write_key(path: Path, key: ec.EllipticCurvePrivateKey) -> None:
    data = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)


def _write_certificate(path: Path, certificate: x509.Certificate) -> None:
    path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)
