"""Who a request is: the administrator of the kubeconfig, or a service account holding a token
from ``POST .../serviceaccounts/<name>/token`` (TokenRequest, what ``kubectl create token``
sends).

Service account tokens are JWTs with kube-apiserver's claims (``iss``, ``sub``
``system:serviceaccount:<ns>:<name>``, ``aud``, ``exp``, ``iat``, ``nbf`` and
``kubernetes.io: {namespace, serviceaccount: {name, uid}}``), signed HS256 with a key derived
from the admin token, so they stay valid across restarts of a data dir and across the servers
that share its token. A token authenticates only while it has not expired, names the API
server's audience, and its service account still exists with the same uid (kube-apiserver's
"legacy" and bound-token checks, without pod binding).

:class:`TokenAuthenticator` is the server's bearer-token authenticator: the admin token, or a
service account token whose account still exists with the same uid. :func:`certificate_user` is
its x509 authenticator: a client certificate the data dir's CA signed (``kubelite kubeconfig
--user NAME --group G`` writes one) is the user its subject's CN names, in each O as a group.
What each user may do is the authorizer's decision (:mod:`kubelite.api.auth.authorizer`).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import time
import warnings
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

import orjson
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.x509.oid import NameOID

from kubelite.api import errors
from kubelite.api.errors import Cause
from kubelite.api.machinery.user import ADMIN, User

Obj = dict[str, Any]

#: The audience of tokens kube-apiserver accepts when a request names none.
API_AUDIENCE = "https://kubernetes.default.svc.cluster.local"
ISSUER = API_AUDIENCE
DEFAULT_EXPIRATION = 3600
MIN_EXPIRATION = 600
MAX_EXPIRATION = 1 << 32
AUTHENTICATED_GROUP = "system:authenticated"
#: user.CredentialIDKey: what credential authenticated the request
CREDENTIAL_ID = "authentication.kubernetes.io/credential-id"
#: the subject attribute kube reads a certificate user's uid from (asn1util.X509UID)
UID_OID = x509.ObjectIdentifier("1.3.6.1.4.1.57683.2")


@dataclass(frozen=True, slots=True)
class ServiceAccountClaim:
    """What a valid token says: the service account it was issued to."""

    namespace: str
    name: str
    uid: str
    audiences: tuple[str, ...]

    def user(self) -> User:
        return User(
            f"system:serviceaccount:{self.namespace}:{self.name}",
            (
                "system:serviceaccounts",
                f"system:serviceaccounts:{self.namespace}",
                "system:authenticated",
            ),
            self.uid,
        )


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


_HEADER = _b64(orjson.dumps({"alg": "HS256", "typ": "JWT"}))


class ServiceAccountTokens:
    def __init__(self, admin_token: str) -> None:
        self._key = hmac.new(
            admin_token.encode(), b"kubelite service account tokens", hashlib.sha256
        ).digest()

    def _sign(self, signing_input: str) -> str:
        return _b64(hmac.new(self._key, signing_input.encode(), hashlib.sha256).digest())

    def issue(
        self, account: Obj, audiences: list[str], expiration: int, now: float | None = None
    ) -> tuple[str, str]:
        """A token for the service account object ``account``; returns (token, expiration
        timestamp as RFC 3339)."""
        issued = int(time.time() if now is None else now)
        meta = account["metadata"]
        claims = {
            "aud": audiences,
            "exp": issued + expiration,
            "iat": issued,
            "iss": ISSUER,
            "nbf": issued,
            "sub": f"system:serviceaccount:{meta['namespace']}:{meta['name']}",
            "kubernetes.io": {
                "namespace": meta["namespace"],
                "serviceaccount": {"name": meta["name"], "uid": meta["uid"]},
            },
        }
        signing_input = f"{_HEADER}.{_b64(orjson.dumps(claims))}"
        expires = datetime.fromtimestamp(issued + expiration, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        return f"{signing_input}.{self._sign(signing_input)}", expires

    def verify(self, token: str, now: float | None = None) -> ServiceAccountClaim | None:
        """The claim of a token this server (or one sharing its admin token) issued, if its
        signature holds and it is within its validity; the caller checks the account exists."""
        claims = self._claims(token, now)
        try:
            k8s = claims["kubernetes.io"]
            return ServiceAccountClaim(
                k8s["namespace"],
                k8s["serviceaccount"]["name"],
                k8s["serviceaccount"]["uid"],
                tuple(claims["aud"]),
            )
        except (KeyError, TypeError):
            return None

    def _claims(self, token: str, now: float | None) -> Any:
        """A signed token's claims while it is within its validity, else an empty dict."""
        parts = token.split(".")
        if len(parts) != 3 or parts[0] != _HEADER:
            return {}
        if not hmac.compare_digest(parts[2], self._sign(f"{parts[0]}.{parts[1]}")):
            return {}
        try:
            claims = orjson.loads(_unb64(parts[1]))
            current = time.time() if now is None else now
            if not claims["nbf"] <= current < claims["exp"]:
                return {}
        except (ValueError, KeyError, TypeError):
            return {}
        return claims


def token_request_response(
    tokens: ServiceAccountTokens, account: Obj, body: Obj, now: float | None = None
) -> Obj:
    """The TokenRequest kube-apiserver answers for ``body`` (validated), token filled in."""
    meta = account["metadata"]
    spec = body.get("spec") or {}
    if not isinstance(spec, dict):
        raise errors.bad_request("TokenRequest: spec must be an object")
    expiration = spec.get("expirationSeconds", DEFAULT_EXPIRATION)
    audiences = spec.get("audiences") or [API_AUDIENCE]
    causes = []
    if not isinstance(expiration, int) or isinstance(expiration, bool):
        causes.append(
            Cause(
                "FieldValueInvalid",
                f"Invalid value: {expiration!r}: must be an integer",
                "spec.expirationSeconds",
            )
        )
    elif expiration < MIN_EXPIRATION:
        causes.append(
            Cause(
                "FieldValueInvalid",
                f"Invalid value: {expiration}: may not specify a duration less than 10 minutes",
                "spec.expirationSeconds",
            )
        )
    elif expiration > MAX_EXPIRATION:
        causes.append(
            Cause(
                "FieldValueInvalid",
                f"Invalid value: {expiration}: may not specify a duration larger than 2^32 seconds",
                "spec.expirationSeconds",
            )
        )
    if not isinstance(audiences, list) or not all(isinstance(a, str) for a in audiences):
        causes.append(
            Cause("FieldValueInvalid", "Invalid value: must be a list of strings", "spec.audiences")
        )
    if causes:
        raise errors.invalid("TokenRequest", "authentication.k8s.io", meta["name"], causes)
    token, expires = tokens.issue(account, audiences, expiration, now)
    return {
        "kind": "TokenRequest",
        "apiVersion": "authentication.k8s.io/v1",
        "metadata": {
            "name": meta["name"],
            "namespace": meta["namespace"],
            "creationTimestamp": None,
        },
        "spec": {"audiences": audiences, "expirationSeconds": expiration, "boundObjectRef": None},
        "status": {"token": token, "expirationTimestamp": expires},
    }


#: (namespace, name) -> the stored ServiceAccount, or None.
AccountLookup = Callable[[str, str], Awaitable[Obj | None]]


class TokenAuthenticator:
    """Who an ``Authorization: Bearer <token>`` header is: the administrator (the data dir's
    token), or the service account a token from ``serviceaccounts/<name>/token`` was issued to,
    while it exists with the uid the token names."""

    def __init__(self, admin_token: str, lookup_account: AccountLookup) -> None:
        self._admin = admin_token.encode()
        self._admin_header = b"Bearer " + self._admin
        self.tokens = ServiceAccountTokens(admin_token)
        self.lookup_account = lookup_account

    async def authenticate(self, authorization: str) -> User | None:
        header = authorization.encode()
        if hmac.compare_digest(header, self._admin_header):
            return ADMIN
        if header[:7] != b"Bearer ":
            return None
        return await self.user_for_token(authorization[7:])

    async def user_for_token(self, token: str) -> User | None:
        """The user a bearer token authenticates (also what a TokenReview asks), or None."""
        if hmac.compare_digest(token.encode(), self._admin):
            return ADMIN
        claim = self.tokens.verify(token)
        if claim is None or API_AUDIENCE not in claim.audiences:
            return None
        account = await self.lookup_account(claim.namespace, claim.name)
        if account is None or account["metadata"].get("uid") != claim.uid:
            return None
        return claim.user()


class CertificateError(Exception):
    """A verified client certificate kube's x509 authenticator still refuses (401)."""


def certificate_user(pem: str, now: float | None = None) -> User | None:
    """kube's x509 authenticator (``CommonNameUserConversion``) on a client certificate the TLS
    layer verified against the server's CA: the subject's CN is the user (the last CN, as Go's
    ``pkix.Name``), each O a group, the UID attribute its uid, and the certificate's SHA-256
    the credential id. None when the subject has no CN (the request is then authenticated as
    if it had no certificate); :class:`CertificateError` when it is outside its validity (a
    connection may outlive it) or names more than one uid or an empty one."""
    name, groups, uid, fingerprint, not_before, not_after = _certificate_fields(pem)
    current = time.time() if now is None else now
    if not not_before <= current <= not_after:
        raise CertificateError("the client certificate has expired or is not yet valid")
    if not name:
        return None
    if len(uid) > 1:
        raise CertificateError(f"expected 1 UID, but found multiple: [{' '.join(uid)}]")
    if uid and not uid[0]:
        raise CertificateError("UID cannot be an empty string")
    extra = ((CREDENTIAL_ID, (f"X509SHA256={fingerprint}",)),)
    if AUTHENTICATED_GROUP not in groups:
        groups = (*groups, AUTHENTICATED_GROUP)
    return User(name, groups, uid[0] if uid else "", extra)


@lru_cache(maxsize=256)
def _certificate_fields(
    pem: str,
) -> tuple[str, tuple[str, ...], tuple[str, ...], str, float, float]:
    """What :func:`certificate_user` reads of a certificate, parsed once per certificate (a
    connection sends the same one with every request)."""
    cert = x509.load_pem_x509_certificate(pem.encode())

    def values(oid: x509.ObjectIdentifier) -> tuple[str, ...]:
        return tuple(str(a.value) for a in cert.subject.get_attributes_for_oid(oid))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # a CN over X.509's 64 characters is fine
        common_names, groups, uids = (
            values(oid) for oid in (NameOID.COMMON_NAME, NameOID.ORGANIZATION_NAME, UID_OID)
        )
    return (
        common_names[-1] if common_names else "",
        groups,
        uids,
        hashlib.sha256(cert.public_bytes(serialization.Encoding.DER)).hexdigest(),
        cert.not_valid_before_utc.timestamp(),
        cert.not_valid_after_utc.timestamp(),
    )
