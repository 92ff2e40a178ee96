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

:class:`TokenAuthenticator` is the server's authenticator: the admin token, a service account
token whose account still exists with the same uid, or a user token that
``kubelite kubeconfig --user NAME --group G`` signed with the same key (kube-apiserver would
take an x509 client certificate here; kubelite's HTTP server, granian, does not hand the
application the client's certificate, so a signed token carries the same user and groups).
What each user may do is the authorizer's decision (:mod:`kubelite.api.authorizer`).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import orjson

from kubelite.api import errors
from kubelite.api.errors import Cause

Obj = dict[str, Any]

#: The audience of tokens kube-apiserver accepts when a request names none.
API_AUDIENCE = "https://kubernetes.default.svc.cluster.local"
ISSUER = API_AUDIENCE
DEFAULT_EXPIRATION = 3600
MIN_EXPIRATION = 600
MAX_EXPIRATION = 1 << 32
#: the audience of the user tokens ``kubelite kubeconfig --user`` writes
USER_AUDIENCE = "kubelite-user"
AUTHENTICATED_GROUP = "system:authenticated"


@dataclass(frozen=True, slots=True)
class User:
    name: str
    groups: tuple[str, ...]
    uid: str = ""
    #: (key, values) pairs, as kube's ``user.Info.GetExtra()``
    extra: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def info(self) -> Obj:
        """The user as kube's ``UserInfo`` (SelfSubjectReview, TokenReview, audit events)."""
        out: Obj = {"username": self.name}
        if self.uid:
            out["uid"] = self.uid
        out["groups"] = list(self.groups)
        if self.extra:
            out["extra"] = {key: list(values) for key, values in self.extra}
        return out


ADMIN = User("kubelite-admin", ("system:masters", "system:authenticated"))
#: A request without credentials (allowed only on the public paths).
ANONYMOUS = User("system:anonymous", ("system:unauthenticated",))


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

    def issue_user(
        self, name: str, groups: list[str], expiration: int, now: float | None = None
    ) -> str:
        """A token that authenticates as user ``name`` in ``groups`` (and
        ``system:authenticated``) until ``expiration`` seconds from now: what
        ``kubelite kubeconfig --user`` writes."""
        issued = int(time.time() if now is None else now)
        claims = {
            "aud": [USER_AUDIENCE],
            "exp": issued + expiration,
            "iat": issued,
            "iss": ISSUER,
            "nbf": issued,
            "sub": name,
            "groups": groups,
        }
        signing_input = f"{_HEADER}.{_b64(orjson.dumps(claims))}"
        return f"{signing_input}.{self._sign(signing_input)}"

    def verify_user(self, token: str, now: float | None = None) -> User | None:
        """The user of a token from :meth:`issue_user`, while it is valid."""
        claims = self._claims(token, now)
        try:
            if claims["aud"] != [USER_AUDIENCE]:
                return None
            name, groups = claims["sub"], claims["groups"]
            if not isinstance(name, str) or not name or not isinstance(groups, list):
                return None
            if not all(isinstance(g, str) for g in groups):
                return None
        except (KeyError, TypeError):
            return None
        if AUTHENTICATED_GROUP not in groups:
            groups = [*groups, AUTHENTICATED_GROUP]
        return User(name, tuple(groups))

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
        user = self.tokens.verify_user(token)
        if user is not None:
            return user
        claim = self.tokens.verify(token)
        if claim is None or API_AUDIENCE not in claim.audiences:
            return None
        account = await self.lookup_account(claim.namespace, claim.name)
        if account is None or account["metadata"].get("uid") != claim.uid:
            return None
        return claim.user()
