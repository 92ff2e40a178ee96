"""The server's own certificate authority and serving certificate, made at first start.

kubectl sends its bearer token only over TLS, so even a local test server serves HTTPS. The data
directory keeps ``ca.crt`` (put into the kubeconfig as ``certificate-authority-data``),
``server.crt`` and ``server.key`` (mode 0600); the serving certificate names localhost,
127.0.0.1, ::1 and the bind address, and is made again if the bind address is not among them.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

VALID_DAYS = 3650


@dataclass(frozen=True, slots=True)
class ServingFiles:
    ca_cert: Path
    cert: Path
    key: Path


def _write_private(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _names(bind_address: str) -> list[x509.GeneralName]:
    hosts = {"localhost", "127.0.0.1", "::1", bind_address}
    names: list[x509.GeneralName] = []
    for host in sorted(hosts):
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    return names


def _certificate(
    subject: str,
    key: ec.EllipticCurvePrivateKey,
    issuer: x509.Name | None,
    issuer_key: ec.EllipticCurvePrivateKey,
    names: list[x509.GeneralName] | None,
) -> x509.Certificate:
    now = datetime.datetime.now(datetime.UTC)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)])
    builder = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(issuer or name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=VALID_DAYS))
    )
    if names is None:
        builder = builder.add_extension(x509.BasicConstraints(ca=True, path_length=0), True)
    else:
        builder = builder.add_extension(x509.SubjectAlternativeName(names), False)
        builder = builder.add_extension(x509.BasicConstraints(ca=False, path_length=None), True)
    return builder.sign(issuer_key, hashes.SHA256())


def ensure_serving_files(data_dir: Path, bind_address: str) -> ServingFiles:
    files = ServingFiles(data_dir / "ca.crt", data_dir / "server.crt", data_dir / "server.key")
    ca_key_path = data_dir / "ca.key"
    if files.ca_cert.exists() and ca_key_path.exists():
        ca_cert = x509.load_pem_x509_certificate(files.ca_cert.read_bytes())
        loaded = serialization.load_pem_private_key(ca_key_path.read_bytes(), None)
        assert isinstance(loaded, ec.EllipticCurvePrivateKey)
        ca_key = loaded
    else:
        ca_key = ec.generate_private_key(ec.SECP256R1())
        ca_cert = _certificate("kubelite-ca", ca_key, None, ca_key, None)
        _write_private(ca_key_path, _key_pem(ca_key))
        files.ca_cert.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    if files.cert.exists() and files.key.exists() and _covers(files.cert, bind_address):
        return files
    key = ec.generate_private_key(ec.SECP256R1())
    cert = _certificate("kubelite", key, ca_cert.subject, ca_key, _names(bind_address))
    _write_private(files.key, _key_pem(key))
    files.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return files


def _covers(cert_path: Path, bind_address: str) -> bool:
    cert = x509.load_pem_x509_certificate(cert_path.read_bytes())
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    return any(str(n.value) == bind_address for n in san)
