"""The server's own certificate authority and serving certificate, made at first start.

kubectl sends its bearer token only over TLS, so even a local test server serves HTTPS. The data
directory keeps ``ca.crt`` (put into the kubeconfig as ``certificate-authority-data``),
``server.crt`` and ``server.key`` (mode 0600); the serving certificate names localhost,
127.0.0.1, ::1, the bind address and every ``--tls-san``, and is made again if one is missing
or another CA issued it (servers over one etcd adopt the first server's CA).
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import warnings
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.exceptions import InvalidSignature
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


def _names(hosts: set[str]) -> list[x509.GeneralName]:
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


def ensure_ca(data_dir: Path) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    """The server's CA (``ca.crt``, ``ca.key``), made on first start."""
    cert_path, key_path = data_dir / "ca.crt", data_dir / "ca.key"
    if cert_path.exists() and key_path.exists():
        ca_cert = x509.load_pem_x509_certificate(cert_path.read_bytes())
        loaded = serialization.load_pem_private_key(key_path.read_bytes(), None)
        assert isinstance(loaded, ec.EllipticCurvePrivateKey)
        return ca_cert, loaded
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_cert = _certificate("kubelite-ca", ca_key, None, ca_key, None)
    _write_private(key_path, _key_pem(ca_key))
    cert_path.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    return ca_cert, ca_key


def ensure_serving_files(
    data_dir: Path, bind_address: str, extra_names: tuple[str, ...] = ()
) -> ServingFiles:
    """The CA and a serving certificate it issued for localhost, 127.0.0.1, ::1, the bind
    address and ``extra_names`` (``--tls-san``); made again when a name is missing or the CA
    changed."""
    files = ServingFiles(data_dir / "ca.crt", data_dir / "server.crt", data_dir / "server.key")
    ca_cert, ca_key = ensure_ca(data_dir)
    hosts = {"localhost", "127.0.0.1", "::1", bind_address, *extra_names}
    if files.cert.exists() and files.key.exists() and _covers(files.cert, hosts, ca_cert):
        return files
    key = ec.generate_private_key(ec.SECP256R1())
    cert = _certificate("kubelite", key, ca_cert.subject, ca_key, _names(hosts))
    _write_private(files.key, _key_pem(key))
    files.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return files


def _covers(cert_path: Path, hosts: set[str], ca_cert: x509.Certificate) -> bool:
    cert = x509.load_pem_x509_certificate(cert_path.read_bytes())
    try:
        cert.verify_directly_issued_by(ca_cert)
    except (ValueError, TypeError, InvalidSignature):
        return False
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    present = {str(n.value) for n in san}
    return all(_canonical(h) in present for h in hosts)


def _canonical(host: str) -> str:
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        return host


def issue_client_certificate(
    data_dir: Path, user: str, groups: list[str], seconds: float
) -> tuple[bytes, bytes]:
    """A client certificate the data dir's CA signs for ``user`` (the CN) in ``groups`` (one O
    each), valid for ``seconds``: what ``kubelite kubeconfig --user`` writes. Returns the
    certificate and its key, PEM."""
    ca_cert, ca_key = ensure_ca(data_dir)
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    with warnings.catch_warnings():
        # no length limit on the names (X.509's is 64 for a CN, cryptography warns beyond it):
        # kube's users and groups have none, and Go reads longer ones
        warnings.simplefilter("ignore", UserWarning)
        subject = x509.Name(
            [x509.NameAttribute(NameOID.ORGANIZATION_NAME, g, _validate=False) for g in groups]
            + [x509.NameAttribute(NameOID.COMMON_NAME, user, _validate=False)]
        )
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(seconds=seconds))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), True)
        .add_extension(
            x509.KeyUsage(True, False, True, False, False, False, False, False, False), True
        )
        .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.CLIENT_AUTH]), False)
        .sign(ca_key, hashes.SHA256())
    )
    return cert.public_bytes(serialization.Encoding.PEM), _key_pem(key)
