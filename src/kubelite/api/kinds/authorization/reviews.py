"""The review kinds: create-only questions the server answers and never stores.

authentication.k8s.io: SelfSubjectReview (``kubectl auth whoami``) and TokenReview;
authorization.k8s.io: SelfSubjectAccessReview (``kubectl auth can-i``), SubjectAccessReview,
LocalSubjectAccessReview and SelfSubjectRulesReview. kube-apiserver answers a POST of one with
201 and the object it was sent, ``metadata`` reduced to ``creationTimestamp: null`` (plus the
namespace of a local review) and ``status`` filled in; a rules review answers a new object, its
``spec`` empty (kube's pkg/registry/authorization/selfsubjectrulesreview/rest.go).

The access reviews ask the server's authorizer (the kind table's ``authorizer`` hook) about the
attributes they carry, for the user they name (SubjectAccessReview, LocalSubjectAccessReview)
or the caller (SelfSubjectAccessReview); the rules review lists the rules the authorizer finds
for the caller in a namespace. Without an authorizer (no authentication) they answer as kube's
AlwaysAllow does: allowed, and ``*`` rules. Sources: kubernetes
``pkg/registry/authorization/*/rest.go`` and ``pkg/registry/authorization/util/helpers.go``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubelite.api import errors
from kubelite.api.auth.authn import API_AUDIENCE
from kubelite.api.auth.authorizer import AlwaysAllow, Authorizer, AuthorizerHook, Decision
from kubelite.api.auth.rbac import strings
from kubelite.api.auth.rbaccover import aggregate
from kubelite.api.catalogue import ResourceInfo
from kubelite.api.errors import Cause, go_quote
from kubelite.api.kinds.resource import Resource, TokenCheck, Wiring
from kubelite.api.machinery.backing import Backing
from kubelite.api.machinery.registry import Storages
from kubelite.api.machinery.request import RequestInfo
from kubelite.api.machinery.rest import Context, WriteOptions
from kubelite.api.machinery.strategy import Strategy
from kubelite.api.machinery.user import User

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


class ReviewREST:
    """A review kind's storage: create only, answered and never stored."""

    object_info = None

    def __init__(
        self, info: ResourceInfo, check_token: TokenCheck, authorizer: AuthorizerHook
    ) -> None:
        self.info = info
        #: the kind request bodies are decoded as (wrong types 400, unknown fields dropped), as
        #: kube decodes a review into its Go struct before answering it
        self.apply_info = info
        self.check_token = check_token
        self.authorizer = authorizer

    async def create(self, ctx: Context, body: Obj, opts: WriteOptions) -> Obj:
        authorizer = self.authorizer() or AlwaysAllow()
        return await answer(self.info, ctx.namespace, body, ctx.user, self.check_token, authorizer)


def review_storages(
    info: ResourceInfo, strategy: Strategy, backing: Backing, wiring: Wiring
) -> Storages:
    return {"": ReviewREST(info, wiring.token_user, wiring.current_authorizer)}


RESOURCES = tuple(
    Resource(group, plural, Strategy(), review_storages) for group, plural in sorted(REVIEWS)
)


async def answer(
    info: ResourceInfo,
    namespace: str | None,
    body: Obj,
    user: User,
    check_token: TokenCheck,
    authorizer: Authorizer,
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
        asked = spec.get("namespace")
        if not isinstance(asked, str) or not asked:
            raise errors.bad_request("no namespace on request")
        out["spec"] = {}
        out["status"] = rules_review_status(*authorizer.rules_for(user, asked))
    else:
        if info.plural == "localsubjectaccessreviews":
            _check_object_namespace(body, namespace)
        _check_access_spec(info, namespace, body, spec)
        subject = user if info.plural == "selfsubjectaccessreviews" else spec_user(spec)
        out["status"] = access_status(authorizer.authorize(subject, attributes(spec)))
    return out


def spec_user(spec: Obj) -> User:
    """The user a SubjectAccessReview asks about (``spec.user``, ``groups``, ``uid``)."""
    name, uid = spec.get("user"), spec.get("uid")
    return User(
        name if isinstance(name, str) else "",
        tuple(strings(spec, "groups")),
        uid if isinstance(uid, str) else "",
    )


def attributes(spec: Obj) -> RequestInfo:
    """``ResourceAttributesFrom`` / ``NonResourceAttributesFrom``: the request an access review
    asks about (a resource request's version ``*`` when it names none)."""
    resource = spec.get("resourceAttributes")
    if isinstance(resource, dict):
        field = _fields(resource)
        return RequestInfo(
            "",
            field("verb"),
            True,
            api_group=field("group"),
            api_version=field("version") or "*",
            namespace=field("namespace"),
            resource=field("resource"),
            subresource=field("subresource"),
            name=field("name"),
        )
    non_resource = spec.get("nonResourceAttributes")
    field = _fields(non_resource if isinstance(non_resource, dict) else {})
    return RequestInfo(field("path"), field("verb"))


def _fields(attrs: Obj) -> Callable[[str], str]:
    def field(key: str) -> str:
        value = attrs.get(key)
        return value if isinstance(value, str) else ""

    return field


def access_status(decision: Decision) -> Obj:
    """SubjectAccessReviewStatus: ``allowed``; ``denied``, ``reason`` and ``evaluationError``
    only when set (omitempty)."""
    status: Obj = {"allowed": decision.allowed}
    if decision.denied:
        status["denied"] = True
    if decision.reason:
        status["reason"] = decision.reason
    if decision.error:
        status["evaluationError"] = decision.error
    return status


def rules_review_status(rules: list[Obj], resolution_errors: list[str]) -> Obj:
    """SubjectRulesReviewStatus of the rules an authorizer found: each rule with resources a
    resource rule, each with non-resource URLs a non-resource rule (in the order found), and
    the errors met finding them."""
    resource_rules: list[Obj] = []
    non_resource_rules: list[Obj] = []
    for rule in rules:
        if strings(rule, "resources"):
            entry: Obj = {"verbs": strings(rule, "verbs")}
            for key in ("apiGroups", "resources", "resourceNames"):
                if values := strings(rule, key):
                    entry[key] = values
            resource_rules.append(entry)
        if urls := strings(rule, "nonResourceURLs"):
            non_resource_rules.append({"verbs": strings(rule, "verbs"), "nonResourceURLs": urls})
    status: Obj = {
        "resourceRules": resource_rules,
        "nonResourceRules": non_resource_rules,
        "incomplete": False,
    }
    if resolution_errors:
        status["evaluationError"] = aggregate(resolution_errors)
    return status


async def _token_status(spec: Obj, check_token: TokenCheck) -> Obj:
    token = spec.get("token")
    user = await check_token(token) if isinstance(token, str) and token else None
    if user is None:
        return {"user": {}, "error": "[invalid bearer token, token lookup failed]"}
    wanted = spec.get("audiences") or [API_AUDIENCE]
    if API_AUDIENCE not in wanted:
        return {"user": {}, "error": "token audiences do not match the requested audiences"}
    return {"authenticated": True, "user": user.info(), "audiences": [API_AUDIENCE]}


def _check_access_spec(info: ResourceInfo, namespace: str | None, body: Obj, spec: Obj) -> None:
    """ValidateSubjectAccessReview, ValidateSelfSubjectAccessReview and
    ValidateLocalSubjectAccessReview: every error, in kube's order, in one 422."""
    local = info.plural == "localsubjectaccessreviews"
    resource, non_resource = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
    causes: list[Cause] = []
    if resource is not None and non_resource is not None:
        causes.append(
            _cause(
                "spec.nonResourceAttributes",
                _go_value(non_resource),
                "cannot be specified in combination with resourceAttributes",
            )
        )
    if resource is None and non_resource is None:
        causes.append(
            _cause(
                "spec.resourceAttributes",
                '"null"',
                "exactly one of nonResourceAttributes or resourceAttributes must be specified",
            )
        )
    if info.plural in ("subjectaccessreviews", "localsubjectaccessreviews") and not (
        spec.get("user") or spec.get("groups")
    ):
        causes.append(_cause("spec.user", '""', "at least one of user or group must be specified"))
    meta = body.get("metadata")
    if isinstance(meta, dict) and _set_metadata(meta, "namespace" if local else ""):
        why = "must be empty except for namespace" if local else "must be empty"
        causes.append(_cause("metadata", "{...}", why))
    if local and isinstance(resource, dict):
        asked = resource.get("namespace") or ""
        if asked != namespace:
            causes.append(
                _cause(
                    "spec.resourceAttributes.namespace",
                    go_quote(str(asked)),
                    "must match metadata.namespace",
                )
            )
    if local and non_resource is not None:
        causes.append(
            _cause(
                "spec.nonResourceAttributes",
                _go_value(non_resource),
                "disallowed on this kind of request",
            )
        )
    if causes:
        raise errors.invalid(info.kind, info.group, "", causes)


def _set_metadata(meta: Obj, allowed: str) -> bool:
    """Whether ``meta`` is not an empty ObjectMeta (managedFields, and ``allowed``, aside):
    Go's semantic equality, where "", 0, null and an empty list or map are unset."""
    return any(
        value not in (None, "", 0, False, [], {})
        for key, value in meta.items()
        if key not in ("managedFields", allowed)
    )


def _check_object_namespace(body: Obj, namespace: str | None) -> None:
    """The handler's check of a namespaced object against its URL (kube's
    ``EnsureObjectNamespaceMatchesRequestNamespace``): an object's namespace, when it has one,
    is the request's."""
    meta = body.get("metadata")
    given = meta.get("namespace") if isinstance(meta, dict) else None
    if given and given != namespace:
        raise errors.bad_request(
            "the namespace of the provided object does not match the namespace sent on the request"
        )


def _go_value(value: Any) -> str:
    return '"null"' if value is None else "{...}"


def _cause(field: str, value: str, message: str) -> Cause:
    return Cause("FieldValueInvalid", f"Invalid value: {value}: {message}", field)
