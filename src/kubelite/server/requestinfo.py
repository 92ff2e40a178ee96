"""The request info: what a request asks, parsed once from its method, path and query by
kube-apiserver's rules (RequestInfoFactory), for every later filter and the handlers.

    /api/v1[/watch][/namespaces/{ns}]/{resource}[/{name}[/{subresource}]]
    /apis/{group}/{version}[/watch][/namespaces/{ns}]/{resource}[/{name}[/{subresource}]]

``/api/v1/namespaces/{name}`` is the namespace itself (its namespace is its own name, as RBAC
expects), and ``/api/v1/namespaces/{name}/status`` or ``/finalize`` its subresources. Anything
else (``/version``, ``/healthz``, discovery roots, ``/openapi/v3``) is a non-resource request
whose verb is the lower-case HTTP method.
"""

from __future__ import annotations

from kubelite.api.machinery.request import RequestInfo

#: The path segment that scopes a resource to a namespace (part of the URL grammar).
NAMESPACES_SEGMENT = "namespaces"
#: Subresources of the namespace itself: ``/api/v1/namespaces/{name}/{subresource}``.
NAMESPACE_SUBRESOURCES = frozenset({"status", "finalize"})
_METHOD_VERBS = {
    "POST": "create",
    "GET": "get",
    "HEAD": "get",
    "PUT": "update",
    "PATCH": "patch",
    "DELETE": "delete",
}


def request_info(method: str, path: str, watch_flag: bool) -> RequestInfo:
    """The request info of ``method path``; ``watch_flag``: the ``watch`` query parameter is
    true."""
    parts = [p for p in path.split("/") if p]
    if len(parts) >= 2 and parts[0] == "api":
        prefix, group, version, rest = "api", "", parts[1], parts[2:]
    elif len(parts) >= 3 and parts[0] == "apis":
        prefix, group, version, rest = "apis", parts[1], parts[2], parts[3:]
    else:
        return RequestInfo(path=path, verb=method.lower())
    verb = _METHOD_VERBS.get(method, "")
    legacy_watch = bool(rest) and rest[0] == "watch"
    if legacy_watch:
        rest = rest[1:]
        verb = "watch"
    if not rest:
        return RequestInfo(path=path, verb=method.lower())
    namespace, namespace_path = "", False
    if rest[0] == NAMESPACES_SEGMENT and len(rest) >= 2:
        namespace = rest[1]
        if len(rest) > 2 and rest[2] not in NAMESPACE_SUBRESOURCES:
            rest, namespace_path = rest[2:], True
    if len(rest) > 3:
        return RequestInfo(path=path, verb=method.lower())
    resource = rest[0]
    name = rest[1] if len(rest) >= 2 else ""
    subresource = rest[2] if len(rest) == 3 else ""
    if verb == "get" and not name:  # a GET of one object stays a get, ?watch or not
        verb = "watch" if watch_flag else "list"
    elif verb == "delete" and not name:
        verb = "deletecollection"
    return RequestInfo(
        path, verb, True, prefix, group, version, namespace, resource, subresource, name,
        namespace_path, legacy_watch,
    )  # fmt: skip
