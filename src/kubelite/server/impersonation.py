"""Impersonation: ``Impersonate-User``, ``Impersonate-Group``, ``Impersonate-Uid`` and
``Impersonate-Extra-<key>`` headers (``kubectl --as``, ``--as-group``, ``--as-uid``) switch the
request's user, after the authorizer allows the ``impersonate`` verb on each thing asked for
(k8s.io/apiserver ``pkg/endpoints/filters/impersonation.go``, ``WithImpersonation``).

Each header is one request to act as something: a user (``users``), a service account when the
user name is ``system:serviceaccount:<ns>:<name>`` (``serviceaccounts`` in ``<ns>``), a group
(``groups``), an extra value (``userextras/<key>`` in authentication.k8s.io) or a UID (``uids``
in authentication.k8s.io). The first one the authorizer does not allow answers 403; groups,
extras or a UID without a user answer 400. The new user gets kube's implied groups, the audit
event records both users (:attr:`Request.impersonator`), and the headers are dropped.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from typing import NamedTuple
from urllib.parse import unquote

from kubelite.api import errors
from kubelite.api.auth.authorizer import Authorizer
from kubelite.api.auth.rbac import SERVICE_ACCOUNT_PREFIX, forbidden
from kubelite.api.machinery.names import label_errors, subdomain_errors
from kubelite.api.machinery.request import RequestInfo
from kubelite.api.machinery.user import User
from kubelite.server.messages import Request, Send

Handler = Callable[[Request, Send], Awaitable[None]]

USER_HEADER = b"impersonate-user"
GROUP_HEADER = b"impersonate-group"
UID_HEADER = b"impersonate-uid"
EXTRA_PREFIX = b"impersonate-extra-"
AUTHENTICATION = "authentication.k8s.io"
AUTHENTICATED, UNAUTHENTICATED = "system:authenticated", "system:unauthenticated"
ANONYMOUS_NAME = "system:anonymous"


class _Ask(NamedTuple):
    """One thing to act as (kube builds an ObjectReference per header value)."""

    kind: str
    name: str
    namespace: str = ""
    api_version: str = ""
    field_path: str = ""

    def go(self) -> str:
        """Go's ``%v`` of the ObjectReference (its seven fields, space-separated)."""
        fields = (self.kind, self.namespace, self.name, "", self.api_version, "", self.field_path)
        return "{" + " ".join(fields) + "}"

    def attributes(self) -> RequestInfo:
        group = AUTHENTICATION if self.kind in ("UserExtra", "UID") else ""
        resource = {
            "ServiceAccount": "serviceaccounts",
            "User": "users",
            "Group": "groups",
            "UserExtra": "userextras",
            "UID": "uids",
        }[self.kind]
        subresource = self.field_path if self.kind == "UserExtra" else ""
        version = "v1"
        return RequestInfo(
            "", "impersonate", True, "", group, version, self.namespace, resource, subresource,
            self.name,
        )  # fmt: skip


def split_service_account(name: str) -> tuple[str, str] | None:
    """``system:serviceaccount:<ns>:<name>`` with a valid namespace and name (kube's
    ``serviceaccount.SplitUsername``), else None."""
    if not name.startswith(SERVICE_ACCOUNT_PREFIX):
        return None
    parts = name[len(SERVICE_ACCOUNT_PREFIX) :].split(":")
    if len(parts) != 2 or label_errors(parts[0]) or subdomain_errors(parts[1]):
        return None
    return parts[0], parts[1]


_MALFORMED_ESCAPE = re.compile("%(?![0-9A-Fa-f]{2})")


def unescape_extra_key(key: str) -> str:
    """kube's ``unescapeExtraKey``: ``url.PathUnescape`` of the lower-cased key, or the key as
    sent when one of its %-escapes is malformed (Go fails on those; Python would keep them and
    decode the others)."""
    if _MALFORMED_ESCAPE.search(key):
        return key
    return unquote(key, errors="replace")


def _asks(headers: list[tuple[bytes, bytes]]) -> tuple[list[_Ask], bool]:
    """The impersonation requests the headers make, and whether the groups header is set. Of
    a repeated user or UID header the first counts, empty or not (Go's ``Header.Get``)."""
    user: str | None = None
    groups: list[_Ask] = []
    extras: list[_Ask] = []
    uid: str | None = None
    for raw_name, raw_value in headers:
        name = raw_name.lower()
        value = raw_value.decode("utf-8", "replace")  # bytes that are not UTF-8: U+FFFD
        if name == USER_HEADER:
            user = value if user is None else user
        elif name == GROUP_HEADER:
            groups.append(_Ask("Group", value))
        elif name == UID_HEADER:
            uid = value if uid is None else uid
        elif name.startswith(EXTRA_PREFIX):
            key = unescape_extra_key(name[len(EXTRA_PREFIX) :].decode("utf-8", "replace"))
            extras.append(_Ask("UserExtra", value, "", f"{AUTHENTICATION}/v1", key))
    asks: list[_Ask] = []
    if user:
        account = split_service_account(user)
        asks.append(
            _Ask("ServiceAccount", account[1], account[0]) if account else _Ask("User", user)
        )
    asks += groups + extras
    if uid:
        asks.append(_Ask("UID", uid, "", f"{AUTHENTICATION}/v1"))
    if (groups or extras or uid) and not user:
        listed = " ".join(a.go() for a in asks)
        raise errors.bad_request(f"requested [{listed}] without impersonating a user")
    return asks, bool(groups)


def with_impersonation(inner: Handler, authorizer: Authorizer | None) -> Handler:
    if authorizer is None:
        return inner

    async def impersonate(request: Request, send: Send) -> None:
        headers = request.scope.get("headers") or []
        if not any(name.lower().startswith(b"impersonate-") for name, _ in headers):
            await inner(request, send)
            return
        try:
            asks, groups_given = _asks(headers)
        except errors.APIError:
            request.refused = True
            raise
        if not asks:
            await inner(request, send)
            return
        requestor = request.user
        name, uid = "", ""
        groups: list[str] = []
        extra: dict[str, list[str]] = {}
        for ask in asks:
            attrs = ask.attributes()
            decision = authorizer.authorize(requestor, attrs)
            if not decision.allowed:
                request.refused = True
                raise forbidden(requestor, attrs, decision.reason)
            if ask.kind == "ServiceAccount":
                name = f"{SERVICE_ACCOUNT_PREFIX}{ask.namespace}:{ask.name}"
                if not groups_given:
                    groups = ["system:serviceaccounts", f"system:serviceaccounts:{ask.namespace}"]
            elif ask.kind == "User":
                name = ask.name
            elif ask.kind == "Group":
                groups.append(ask.name)
            elif ask.kind == "UserExtra":
                extra.setdefault(ask.field_path, []).append(ask.name)
            else:
                uid = ask.name
        if name != ANONYMOUS_NAME:
            if AUTHENTICATED not in groups and UNAUTHENTICATED not in groups:
                groups.append(AUTHENTICATED)
        elif UNAUTHENTICATED not in groups:
            groups.append(UNAUTHENTICATED)
        request.impersonator = requestor
        request.user = User(
            name, tuple(groups), uid, tuple((k, tuple(v)) for k, v in extra.items())
        )
        kept = [(k, v) for k, v in headers if not k.lower().startswith(b"impersonate-")]
        request.scope["headers"] = kept
        request.headers = {
            k: v for k, v in request.headers.items() if not k.startswith("impersonate-")
        }
        await inner(request, send)

    return impersonate
