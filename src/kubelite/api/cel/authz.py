"""Kubernetes' authorizer library (apiserver ``pkg/cel/library/authz.go``), the ``authorizer``
variable of admission policies and webhook match conditions:

``authorizer.group(g).resource(r)[.subresource(s)][.namespace(n)][.name(x)].check(verb)``,
``authorizer.path(p).check(httpVerb)``, ``authorizer.serviceAccount(ns, name)`` (the same checks
as that service account), and a decision's ``allowed()``, ``reason()``, ``error()`` and
``errored()``; ``authorizer.requestResource`` is the request's own resource check.

The values travel through CEL as maps marked ``@kubelite.authz`` (see :mod:`.values`). A check
asks whatever :func:`checking` installed for the evaluation under way: a callable taking the
user to check for (None: the request's; else (name, groups) of a service account) and the
attributes (``path`` and ``verb``, or ``group``, ``resource``, ``subresource``, ``namespace``,
``name``, ``verb``, ``fieldSelector``, ``labelSelector``) and answering (allowed, reason,
error). Without one, every check is allowed (kube's AlwaysAllow).
"""

from __future__ import annotations

import contextlib
import re
import threading
from collections.abc import Callable, Iterator
from typing import Any

from kubelite.api.cel.values import _Fail, _no_overload

_AUTHZ = "@kubelite.authz"
AUTHORIZER, GROUP_CHECK, RESOURCE_CHECK = "Authorizer", "GroupCheck", "ResourceCheck"
PATH_CHECK, DECISION = "PathCheck", "Decision"
#: (user or None, attributes) -> (allowed, reason, error)
Checker = Callable[[tuple[str, tuple[str, ...]] | None, dict[str, str]], tuple[bool, str, str]]
_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


class _Checking(threading.local):
    checker: Checker | None = None


_checking = _Checking()


@contextlib.contextmanager
def checking(checker: Checker | None) -> Iterator[None]:
    """Install ``checker`` for the checks of the evaluations inside the block (None: every
    check is allowed)."""
    outer, _checking.checker = _checking.checker, checker
    try:
        yield
    finally:
        _checking.checker = outer


def _value(kind: str, **fields: Any) -> dict[str, Any]:
    return {_AUTHZ: {"type": kind, **fields}}


def authorizer_value(request_resource: dict[str, str] | None = None) -> dict[str, Any]:
    """The ``authorizer`` variable; ``request_resource`` (group, resource, subresource,
    namespace, name of the request) makes ``authorizer.requestResource``."""
    value = _value(AUTHORIZER, user=None)
    if request_resource is not None:
        value["requestResource"] = _value(RESOURCE_CHECK, user=None, **request_resource)
    return value


def _of(value: Any, kind: str) -> dict[str, Any]:
    fields = value.get(_AUTHZ) if isinstance(value, dict) else None
    if not isinstance(fields, dict) or fields.get("type") != kind:
        raise _no_overload()
    return fields


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise _no_overload()
    return value


def _path(authz: Any, path: Any) -> dict[str, Any]:
    fields = _of(authz, AUTHORIZER)
    if not _text(path).strip():
        raise _Fail("path must not be empty")
    return _value(PATH_CHECK, user=fields["user"], path=path)


def _group(authz: Any, group: Any) -> dict[str, Any]:
    fields = _of(authz, AUTHORIZER)
    return _value(GROUP_CHECK, user=fields["user"], group=_text(group))


def _service_account(authz: Any, namespace: Any, name: Any) -> dict[str, Any]:
    _of(authz, AUTHORIZER)
    namespace, name = _text(namespace), _text(name)
    if not (len(name) <= 253 and _SUBDOMAIN.match(name)):
        raise _Fail("Invalid service account name")
    if not (len(namespace) <= 63 and _LABEL.match(namespace)):
        raise _Fail("Invalid service account namespace")
    user = [
        f"system:serviceaccount:{namespace}:{name}",
        ["system:serviceaccounts", f"system:serviceaccounts:{namespace}"],
    ]
    return _value(AUTHORIZER, user=user)


def _resource(group_check: Any, resource: Any) -> dict[str, Any]:
    fields = _of(group_check, GROUP_CHECK)
    if not _text(resource).strip():
        raise _Fail("resource must not be empty")
    return _value(
        RESOURCE_CHECK, user=fields["user"], group=fields["group"], resource=resource,
        subresource="", namespace="", name="",
    )  # fmt: skip


def _setter(key: str) -> Callable[[Any, Any], dict[str, Any]]:
    def set_field(resource_check: Any, text: Any) -> dict[str, Any]:
        fields = _of(resource_check, RESOURCE_CHECK)
        return {_AUTHZ: {**fields, key: _text(text)}}

    return set_field


def _check(target: Any, verb: Any) -> dict[str, Any]:
    verb = _text(verb)
    fields = target.get(_AUTHZ) if isinstance(target, dict) else None
    if not isinstance(fields, dict) or fields.get("type") not in (PATH_CHECK, RESOURCE_CHECK):
        raise _no_overload()
    attributes = {k: v for k, v in fields.items() if k not in ("type", "user")}
    attributes["verb"] = verb
    user = fields.get("user")
    who = (str(user[0]), tuple(user[1])) if isinstance(user, list) else None
    checker = _checking.checker
    allowed, reason, error = (True, "", "") if checker is None else checker(who, attributes)
    return _value(DECISION, allowed=allowed, reason=reason, error=error)


def _allowed(decision: Any) -> bool:
    return bool(_of(decision, DECISION)["allowed"])


def _reason(decision: Any) -> str:
    return str(_of(decision, DECISION)["reason"])


def _error(decision: Any) -> str:
    return str(_of(decision, DECISION)["error"])


def _errored(decision: Any) -> bool:
    return bool(_of(decision, DECISION)["error"])


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "path": _path,
    "group": _group,
    "serviceAccount": _service_account,
    "resource": _resource,
    "subresource": _setter("subresource"),
    "namespace": _setter("namespace"),
    "name": _setter("name"),
    "fieldSelector": _setter("fieldSelector"),
    "labelSelector": _setter("labelSelector"),
    "check": _check,
    "allowed": _allowed,
    "reason": _reason,
    "error": _error,
    "errored": _errored,
}
