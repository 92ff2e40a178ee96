"""kube's x509 authenticator (``CommonNameUserConversion``, k8s.io/apiserver
``pkg/authentication/request/x509``) on the
certificates ``kubelite kubeconfig`` issues and on hand-made ones."""

from __future__ import annotations

import datetime
import hashlib
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from kubelite.api.auth.authn import UID_OID, CertificateError, certificate_user
from kubelite.api.machinery.user import User
from kubelite.server.tls import ensure_ca, issue_client_certificate

NOW = datetime.datetime.now(datetime.UTC)


def make(
    attributes: list[tuple[x509.ObjectIdentifier, str]],
    not_before: datetime.datetime = NOW - datetime.timedelta(hours=1),
    not_after: datetime.datetime = NOW + datetime.timedelta(hours=1),
) -> str:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(oid, value, _validate=False) for oid, value in attributes])
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "ca")]))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .sign(key, hashes.SHA256())
    )
    return cert.public_bytes(serialization.Encoding.PEM).decode()


def fingerprint(pem: str) -> str:
    der = x509.load_pem_x509_certificate(pem.encode()).public_bytes(serialization.Encoding.DER)
    return "X509SHA256=" + hashlib.sha256(der).hexdigest()


def test_the_cn_is_the_user_each_o_a_group_and_the_fingerprint_the_credential_id() -> None:
    pem = make([(NameOID.ORGANIZATION_NAME, "devs"), (NameOID.ORGANIZATION_NAME, "ops"),
                (NameOID.COMMON_NAME, "alice")])  # fmt: skip
    user = certificate_user(pem)
    assert user == User(
        "alice",
        ("devs", "ops", "system:authenticated"),
        "",
        (("authentication.kubernetes.io/credential-id", (fingerprint(pem),)),),
    )
    assert user.info() == {
        "username": "alice",
        "groups": ["devs", "ops", "system:authenticated"],
        "extra": {"authentication.kubernetes.io/credential-id": [fingerprint(pem)]},
    }


def test_the_last_cn_counts_as_in_go_and_system_authenticated_is_not_added_twice() -> None:
    pem = make([(NameOID.COMMON_NAME, "first"), (NameOID.ORGANIZATION_NAME, "system:authenticated"),
                (NameOID.COMMON_NAME, "second")])  # fmt: skip
    user = certificate_user(pem)
    assert user is not None
    assert (user.name, user.groups) == ("second", ("system:authenticated",))


def test_a_subject_without_a_cn_authenticates_no_one() -> None:
    assert certificate_user(make([(NameOID.ORGANIZATION_NAME, "devs")])) is None


def test_the_uid_attribute_is_the_uid_once_and_not_empty() -> None:
    user = certificate_user(make([(NameOID.COMMON_NAME, "bob"), (UID_OID, "u-1")]))
    assert user is not None
    assert user.uid == "u-1"
    with pytest.raises(CertificateError, match=r"expected 1 UID, but found multiple: \[a b\]"):
        certificate_user(make([(NameOID.COMMON_NAME, "bob"), (UID_OID, "a"), (UID_OID, "b")]))
    with pytest.raises(CertificateError, match="UID cannot be an empty string"):
        certificate_user(make([(NameOID.COMMON_NAME, "bob"), (UID_OID, "")]))


def test_a_certificate_out_of_its_validity_is_refused() -> None:
    expired = make([(NameOID.COMMON_NAME, "old")], not_after=NOW - datetime.timedelta(seconds=1))
    with pytest.raises(CertificateError, match="expired or is not yet valid"):
        certificate_user(expired)
    future = make([(NameOID.COMMON_NAME, "new")], not_before=NOW + datetime.timedelta(hours=1))
    with pytest.raises(CertificateError):
        certificate_user(future)
    valid = make([(NameOID.COMMON_NAME, "now")])
    later = (NOW + datetime.timedelta(hours=2)).timestamp()
    with pytest.raises(CertificateError):  # the same certificate, once it has expired
        certificate_user(valid, now=later)


def test_kubelite_kubeconfig_certificates_are_signed_by_the_ca_for_client_auth(
    tmp_path: Path,
) -> None:
    long_name = "system:serviceaccount:a-rather-long-namespace-name:a-rather-long-account-name"
    cert_pem, key_pem = issue_client_certificate(tmp_path, long_name, ["devs", "g2"], 3600)
    cert = x509.load_pem_x509_certificate(cert_pem)
    ca_cert, _ = ensure_ca(tmp_path)
    cert.verify_directly_issued_by(ca_cert)
    usages = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(usages) == [ExtendedKeyUsageOID.CLIENT_AUTH]
    assert cert.not_valid_after_utc - cert.not_valid_before_utc == datetime.timedelta(
        seconds=3600, minutes=5
    )
    key = serialization.load_pem_private_key(key_pem, None)
    assert key.public_key() == cert.public_key()
    user = certificate_user(cert_pem.decode())
    assert user is not None
    assert (user.name, user.groups) == (long_name, ("devs", "g2", "system:authenticated"))
