"""The local CA and server certificate: names, reuse of the CA, renewal of the server's, a
CA key of another kind refused."""

from __future__ import annotations

import ipaddress
import ssl
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519

from statestream.errors import ServiceError
from statestream.services.tls import ensure_server_certificate


def _certificate(path: Path) -> x509.Certificate:
    return x509.load_pem_x509_certificate(path.read_bytes())


def test_the_server_certificate_names_localhost_and_is_signed_by_the_ca(tmp_path: Path) -> None:
    files = ensure_server_certificate(tmp_path)
    names = (
        _certificate(files.certificate)
        .extensions.get_extension_for_class(x509.SubjectAlternativeName)
        .value
    )
    assert names.get_values_for_type(x509.DNSName) == ["localhost"]
    assert ipaddress.ip_address("127.0.0.1") in names.get_values_for_type(x509.IPAddress)
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(files.certificate, files.key)  # key and certificate belong together
    assert oct(files.key.stat().st_mode & 0o777) == "0o600"


def test_the_ca_is_kept_across_starts_and_a_lost_server_certificate_is_made_again(
    tmp_path: Path,
) -> None:
    first = ensure_server_certificate(tmp_path)
    ca_before = first.ca.read_bytes()
    server_before = first.certificate.read_bytes()
    assert ensure_server_certificate(tmp_path).certificate.read_bytes() == server_before
    first.certificate.unlink()
    again = ensure_server_certificate(tmp_path)
    assert again.ca.read_bytes() == ca_before
    assert again.certificate.read_bytes() != server_before
    issuer = _certificate(again.certificate).issuer
    assert issuer == _certificate(again.ca).subject


def test_a_ca_key_that_is_not_the_local_cas_kind_is_refused_with_what_to_do(
    tmp_path: Path,
) -> None:
    files = ensure_server_certificate(tmp_path)
    key = ed25519.Ed25519PrivateKey.generate()
    (tmp_path / "ca.key").write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    files.certificate.unlink()  # the server certificate is made again, signed by the CA's key
    with pytest.raises(ServiceError, match=r"ca\.key holds a .*Ed25519.*delete it"):
        ensure_server_certificate(tmp_path)
