"""What an admission policy's CEL sees of one write (apiserver
``pkg/admission/plugin/cel/activation.go`` and ``condition.go``'s CreateAdmissionRequest and
CreateNamespaceObject):

- ``request``: the AdmissionRequest as kube marshals it, empty optional fields left out (so
  ``request.subResource`` of a write to the resource itself is absent, as in kube): the
  matched ``kind``/``resource``, the request's own ``requestKind``/``requestResource``,
  ``name``, ``namespace``, ``operation``, ``userInfo``, ``dryRun`` and ``options`` (the write's
  CreateOptions, UpdateOptions or DeleteOptions, ``meta.k8s.io/v1``);
- ``namespaceObject``: the request's Namespace (metadata, spec and status only; null for
  cluster-scoped requests and for Namespaces themselves);
- ``authorizer``: checks for the request's user through the server's authorizer
  (:mod:`kubelite.api.cel.authz`), each distinct check asked once per write.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubelite.api.admission.policy.matching import Matched, request_kind
from kubelite.api.auth.authorizer import Authorizer
from kubelite.api.cel import authz
from kubelite.api.machinery.admission import CREATE, DELETE, Attributes
from kubelite.api.machinery.names import MAX_GENERATED_PREFIX
from kubelite.api.machinery.request import RequestInfo
from kubelite.api.machinery.user import User

Obj = dict[str, Any]

#: the length of the random suffix of a generated name (apiserver's names.SimpleNameGenerator)
GENERATED_SUFFIX = 5
_NAMESPACE_METADATA = (
    "name", "generateName", "namespace", "uid", "resourceVersion", "generation",
    "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "labels",
    "annotations", "finalizers",
)  # fmt: skip


def _gvk(group: str, version: str, kind: str) -> Obj:
    return {"group": group, "version": version, "kind": kind}


def _gvr(group: str, version: str, resource: str) -> Obj:
    return {"group": group, "version": version, "resource": resource}


def user_info(user: User) -> Obj:
    """authentication/v1 UserInfo as JSON (empty fields left out)."""
    out: Obj = {}
    if user.name:
        out["username"] = user.name
    if user.uid:
        out["uid"] = user.uid
    if user.groups:
        out["groups"] = list(user.groups)
    if user.extra:
        out["extra"] = {key: list(values) for key, values in user.extra}
    return out


def operation_options(attrs: Attributes) -> Obj:
    """The write's options object as kube's handlers pass it to admission."""
    kind = {CREATE: "CreateOptions", DELETE: "DeleteOptions"}.get(attrs.operation, "UpdateOptions")
    out: Obj = {"kind": kind, "apiVersion": "meta.k8s.io/v1"}
    if attrs.options is not None:  # as the client sent them
        return {**out, **attrs.options}
    if attrs.dry_run:
        out["dryRun"] = ["All"]
    if attrs.field_manager and attrs.operation != DELETE:
        out["fieldManager"] = attrs.field_manager
    return out


def admission_request(attrs: Attributes, matched: Matched) -> Obj:
    """``request``: the AdmissionRequest of ``attrs`` at the resource it matched."""
    info = attrs.info
    out: Obj = {
        "uid": "",
        "kind": _gvk(matched.group, matched.version, matched.kind),
        "resource": _gvr(matched.info.group, matched.info.version, matched.info.plural),
    }
    if attrs.subresource:
        out["subResource"] = attrs.subresource
    out["requestKind"] = _gvk(*request_kind(info, attrs.subresource))
    out["requestResource"] = _gvr(info.group, info.version, info.plural)
    if attrs.subresource:
        out["requestSubResource"] = attrs.subresource
    name = request_name(attrs)
    if name:
        out["name"] = name
    if attrs.namespace:
        out["namespace"] = attrs.namespace
    out["operation"] = attrs.operation
    out["userInfo"] = user_info(attrs.user)
    out["dryRun"] = attrs.dry_run
    out["options"] = operation_options(attrs)
    return out


def request_name(attrs: Attributes) -> str:
    """The request's name: none for a create by ``generateName`` (kube's admission attributes
    keep the request's empty name; kubelite's carry the prefix, then the generated name)."""
    meta = (attrs.obj or {}).get("metadata") or {}
    prefix, name = meta.get("generateName"), str(meta.get("name") or "")
    if attrs.operation == CREATE and isinstance(prefix, str) and prefix:
        kept = prefix[:MAX_GENERATED_PREFIX]
        generated = name.startswith(kept) and len(name) == len(kept) + GENERATED_SUFFIX
        if not name or generated or attrs.name == prefix:
            return ""
    return attrs.name


def namespace_object(namespace: Obj | None) -> Obj | None:
    """``namespaceObject``: the Namespace's metadata (kube's subset), spec and status."""
    if namespace is None:
        return None
    meta = namespace.get("metadata") or {}
    out: Obj = {"metadata": {k: meta[k] for k in _NAMESPACE_METADATA if k in meta}}
    for key in ("spec", "status"):
        if key in namespace:
            out[key] = namespace[key]
    return out


def request_resource(attrs: Attributes) -> dict[str, str]:
    """``authorizer.requestResource``'s attributes: the request's resource and object."""
    return {
        "group": attrs.info.group,
        "resource": attrs.info.plural,
        "subresource": attrs.subresource,
        "namespace": attrs.namespace or "",
        "name": request_name(attrs),
    }


class AuthorizerChecks:
    """The authorizer library's checks for one write: the request's user (or a service
    account's, for ``authorizer.serviceAccount``), through ``authorizer`` (None: every check is
    allowed, kube's AlwaysAllow), each distinct check decided once (kube's caching
    authorizer)."""

    def __init__(self, user: User, authorizer: Authorizer | None) -> None:
        self.user = user
        self.authorizer = authorizer
        self._decided: dict[Any, tuple[bool, str, str]] = {}

    def __call__(
        self, who: tuple[str, tuple[str, ...]] | None, attributes: dict[str, str]
    ) -> tuple[bool, str, str]:
        if self.authorizer is None:
            return True, "", ""
        key = (who, tuple(sorted(attributes.items())))
        found = self._decided.get(key)
        if found is None:
            user = self.user if who is None else User(who[0], who[1])
            decision = self.authorizer.authorize(user, _request_info(attributes))
            found = (decision.allowed, decision.reason, decision.error)
            self._decided[key] = found
        return found


def _request_info(attributes: dict[str, str]) -> RequestInfo:
    verb = attributes.get("verb", "")
    if "path" in attributes:
        return RequestInfo(attributes["path"], verb)
    return RequestInfo(
        "",
        verb,
        is_resource_request=True,
        api_group=attributes.get("group", ""),
        api_version="*",
        namespace=attributes.get("namespace", ""),
        resource=attributes.get("resource", ""),
        subresource=attributes.get("subresource", ""),
        name=attributes.get("name", ""),
    )


def authorizer_value(attrs: Attributes) -> Obj:
    return authz.authorizer_value(request_resource(attrs))


AuthorizerSource = Callable[[], Authorizer | None]
