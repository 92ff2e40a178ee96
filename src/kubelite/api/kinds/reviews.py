"""The review kinds: create-only questions the server answers and never stores.

authentication.k8s.io: SelfSubjectReview (``kubectl auth whoami``) and TokenReview;
authorization.k8s.io: SelfSubjectAccessReview (``kubectl auth can-i``), SubjectAccessReview,
LocalSubjectAccessReview and SelfSubjectRulesReview. kube-apiserver answers a POST of one with
201 and the object it was sent, ``metadata`` reduced to ``creationTimestamp: null`` (plus the
namespace of a local review) and ``status`` filled in.

kubelite's users are the administrator of the kubeconfig (in the ``system:masters`` group) and
service accounts holding tokens (:mod:`kubelite.api.authn`), and there is no authorizer yet:
every authenticated request is allowed. The access reviews say so
(``allowed: true``) for any subject, and the rules review lists ``*`` rules; when RBAC arrives,
these answers come from it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from kubelite.api import errors
from kubelite.api.authn import API_AUDIENCE, User
from kubelite.api.catalogue import ResourceInfo
from kubelite.api.errors import Cause
from kubelite.api.rest import Context, WriteOptions

Obj = dict[str, Any]

AUTHENTICATION = "authentication.k8s.io"
AUTHORIZATION = "authorization.k8s.io"
REVIEWS = frozenset(
    {
        (AUTHENTICATION, "selfsubjectreviews"),
        (AUTHENTICATION, "tokenreviews"),
        (AUTHORIZATION, "selfsubjectaccessreviews"),
        (AUTHORIZATION, "subjectaccessreviews"),
        (AUTHORIZATION, "localsubjectaccessreviews"),
        (AUTHORIZATION, "selfsubjectrulesreviews"),
    }
)
#: A bearer token -> the user it authenticates, or None.
TokenCheck = Callable[[str], Awaitable[User | None]]


class ReviewREST:
    """A review kind's storage: create only, answered and never stored."""

    object_info = None

    def __init__(self, info: ResourceInfo, check_token: TokenCheck) -> None:
        self.info = info
        self.check_token = check_token

    async def create(self, ctx: Context, body: Obj, opts: WriteOptions) -> Obj:
        return await answer(self.info, ctx.namespace, body, ctx.user, self.check_token)


async def answer(
    info: ResourceInfo, namespace: str | None, body: Obj, user: User, check_token: TokenCheck
) -> Obj:
    """The object kube-apiserver returns for a POST of ``body``: spec as sent, status filled."""
    spec = body.get("spec") or {}
    if not isinstance(spec, dict):
        raise errors.bad_request(f"{info.kind} in version {info.version!r}: spec must be an object")
    meta: Obj = {"creationTimestamp": None}
    if info.plural == "localsubjectaccessreviews":
        meta = {"namespace": namespace, **meta}
    out: Obj = {"kind": info.kind, "apiVersion": info.group_version, "metadata": meta}
    if info.plural == "selfsubjectreviews":
        out["status"] = {"userInfo": user.info()}
        return out
    out["spec"] = spec
    if info.plural == "tokenreviews":
        out["status"] = await _token_status(spec, check_token)
    elif info.plural == "selfsubjectrulesreviews":
        if not spec.get("namespace"):
            raise _invalid(info, "spec.namespace", '""', "must be specified")
        out["status"] = {
            "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
            "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
            "incomplete": False,
        }
    else:
        _check_access_spec(info, namespace, spec)
        out["status"] = {"allowed": True}
    return out


async def _token_status(spec: Obj, check_token: TokenCheck) -> Obj:
    token = spec.get("token")
    user = await check_token(token) if isinstance(token, str) and token else None
    if user is None:
        return {"user": {}, "error": "[invalid bearer token, token lookup failed]"}
    wanted = spec.get("audiences") or [API_AUDIENCE]
    if API_AUDIENCE not in wanted:
        return {"user": {}, "error": "token audiences do not match the requested audiences"}
    return {"authenticated": True, "user": user.info(), "audiences": [API_AUDIENCE]}


def _check_access_spec(info: ResourceInfo, namespace: str | None, spec: Obj) -> None:
    resource, non_resource = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
    if resource is not None and non_resource is not None:
        raise _invalid(
            info,
            "spec.nonResourceAttributes",
            _go_value(non_resource),
            "cannot be specified in combination with resourceAttributes",
        )
    if resource is None and non_resource is None:
        raise _invalid(
            info,
            "spec.resourceAttributes",
            '"null"',
            "exactly one of nonResourceAttributes or resourceAttributes must be specified",
        )
    if info.plural in ("subjectaccessreviews", "localsubjectaccessreviews") and not (
        spec.get("user") or spec.get("groups")
    ):
        raise _invalid(info, "spec.user", '""', "at least one of user or group must be specified")
    if info.plural == "localsubjectaccessreviews" and non_resource is not None:
        raise _invalid(
            info,
            "spec.nonResourceAttributes",
            _go_value(non_resource),
            "disallowed on this kind of request",
        )
    asked = (resource or {}).get("namespace")
    if info.plural == "localsubjectaccessreviews" and asked not in (namespace, None, ""):
        raise _invalid(
            info, "spec.resourceAttributes.namespace", f'"{asked}"', "must match metadata.namespace"
        )


def _go_value(value: Any) -> str:
    return '"null"' if value is None else "{...}"


def _invalid(info: ResourceInfo, field: str, value: str, message: str) -> errors.APIError:
    return errors.invalid(
        info.kind,
        info.group,
        "",
        [Cause("FieldValueInvalid", f"Invalid value: {value}: {message}", field)],
    )
