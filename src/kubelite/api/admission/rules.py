"""Which admission webhooks and policies a write concerns: the rules both kinds of configuration
share (apiserver ``pkg/admission/plugin/webhook/predicates/rules``, ``.../namespace``,
``.../object``).

- :func:`rule_matches`: one ``RuleWithOperations`` (webhooks' ``rules[]``, policies'
  ``resourceRules[]``): operations, API groups and versions, resources (``*`` is every resource
  without a subresource, ``*/*`` every one with any, ``pods/*`` pods and each of its
  subresources), and scope (a Namespace itself counts as cluster-scoped).
- :func:`exempt`: the admission configuration kinds, never sent to webhooks or policies.
- :func:`selector_matches`: a ``namespaceSelector`` or ``objectSelector`` against labels.
- :func:`namespace_selected` and :func:`object_selected`: kube's rules for what labels those
  selectors see (a namespaced request: its namespace's; a Namespace: its own; anything else
  cluster-scoped: always selected; an object: the new object's or else the old one's).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from kubelite.api.machinery.admission import NAMESPACES, Attributes
from kubelite.api.machinery.selectors import SelectorError, label_selector_of

Obj = dict[str, Any]

ADMISSION_GROUP = "admissionregistration.k8s.io"
#: kube's ``IsExemptAdmissionConfigurationResource``
EXEMPT_RESOURCES = frozenset(
    {
        "validatingwebhookconfigurations",
        "mutatingwebhookconfigurations",
        "validatingadmissionpolicies",
        "validatingadmissionpolicybindings",
        "mutatingadmissionpolicies",
        "mutatingadmissionpolicybindings",
    }
)
#: (name) -> the labels of that namespace, or None when it does not exist
NamespaceLabels = Callable[[str], Awaitable[Mapping[str, str] | None]]
#: (name) -> that Namespace, or None when it does not exist (the server's namespaces held in
#: memory: ``kubelite.api.admission.policy.NamespaceMirror.get``, kube's namespace lister)
NamespaceLookup = Callable[[str], Awaitable[Obj | None]]


def exempt(attrs: Attributes) -> bool:
    return attrs.info.group == ADMISSION_GROUP and attrs.info.plural in EXEMPT_RESOURCES


def _strings(rule: Obj, key: str) -> list[str]:
    values = rule.get(key)
    return [v for v in values if isinstance(v, str)] if isinstance(values, list) else []


def rule_matches(rule: Obj, attrs: Attributes, version: str | None = None) -> bool:
    """One rule against the write; ``version`` the version the write is matched at (default
    the request's)."""
    operations = _strings(rule, "operations")
    if "*" not in operations and attrs.operation not in operations:
        return False
    groups = _strings(rule, "apiGroups")
    if "*" not in groups and attrs.info.group not in groups:
        return False
    versions = _strings(rule, "apiVersions")
    if "*" not in versions and (version or attrs.info.version) not in versions:
        return False
    if not _resource_matches(_strings(rule, "resources"), attrs.info.plural, attrs.subresource):
        return False
    return _scope_matches(rule.get("scope"), attrs)


def _resource_matches(resources: list[str], resource: str, subresource: str) -> bool:
    for entry in resources:
        res, _, sub = entry.partition("/")
        if (res in ("*", resource)) and (sub in ("*", subresource)):
            return True
    return False


def _scope_matches(scope: Any, attrs: Attributes) -> bool:
    if scope is None or scope == "*":
        return True
    is_namespace = attrs.info.plural == NAMESPACES and attrs.info.group == ""
    if scope == "Namespaced":
        return not is_namespace and bool(attrs.namespace)
    if scope == "Cluster":
        return is_namespace or not attrs.namespace
    return False


def selector_matches(selector: Any, labels: Mapping[str, str]) -> bool:
    """A LabelSelector object against ``labels`` (absent or ``{}``: everything); one that does
    not parse matches nothing."""
    if not isinstance(selector, dict) or not selector:
        return True
    try:
        return label_selector_of(selector).matches(labels)
    except SelectorError:
        return False


def labels_of(obj: Obj | None) -> dict[str, str]:
    meta = (obj or {}).get("metadata")
    labels = meta.get("labels") if isinstance(meta, dict) else None
    return {str(k): str(v) for k, v in labels.items()} if isinstance(labels, dict) else {}


async def namespace_selected(
    selector: Any, attrs: Attributes, namespace_labels: NamespaceLabels
) -> bool:
    """kube's ``MatchNamespaceSelector``."""
    if not isinstance(selector, dict) or not selector:
        return True
    is_namespace = attrs.info.plural == NAMESPACES and attrs.info.group == ""
    if is_namespace:
        return selector_matches(selector, labels_of(attrs.obj if attrs.obj else attrs.old))
    if not attrs.namespace:
        return True  # cluster-scoped: the selector does not apply
    labels = await namespace_labels(attrs.namespace)
    return selector_matches(selector, labels or {})


def object_selected(selector: Any, attrs: Attributes) -> bool:
    """kube's ``MatchObjectSelector``: the new object's labels, or else the old object's."""
    if not isinstance(selector, dict) or not selector:
        return True
    if attrs.obj is not None and selector_matches(selector, labels_of(attrs.obj)):
        return True
    return attrs.old is not None and selector_matches(selector, labels_of(attrs.old))
