"""Whether a webhook is called for a write, and with what (kube's ``webhook/generic/webhook.go``
``ShouldCallHook`` and the versioned attributes of ``admission/attributes.go``).

:meth:`Matcher.invocation` decides per webhook, in kube's order of outcomes: ``rules`` at the
request's resource; with ``matchPolicy: Equivalent`` (the default) also at each resource
sharing the request's storage (Event at ``v1`` and ``events.k8s.io/v1``, HorizontalPodAutoscaler
at ``autoscaling/v1`` and ``v2``, each served version of a custom resource), the object then
converted to that version; then ``namespaceSelector`` (the namespace's labels, from the
server's namespaces held in memory, the admission policies' :class:`NamespaceMirror`),
``objectSelector`` and ``matchConditions``.

:class:`Views` are kube's versioned attributes: the object and old object in the version an
invocation names, converted once per version and write. A ``scale`` write is seen as the
``autoscaling/v1`` Scale kube sends; a patched Scale sets the parent's replicas.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from kubelite.api import errors
from kubelite.api.admission.policy.activation import request_resource
from kubelite.api.admission.rules import (
    NamespaceLookup,
    namespace_selected,
    object_selected,
    rule_matches,
)
from kubelite.api.admission.webhooks.conditions import ConditionError, conditions_match
from kubelite.api.admission.webhooks.review import Target, admission_request, request_kind
from kubelite.api.admission.webhooks.source import Hook
from kubelite.api.catalogue import Catalogue, ResourceInfo
from kubelite.api.cel import authz
from kubelite.api.encoding.conversion import ConversionError, to_version
from kubelite.api.machinery import scale
from kubelite.api.machinery.admission import NAMESPACES, Attributes

Obj = dict[str, Any]
SCALE = "scale"
#: (obj, api_version, builtin) -> obj at api_version
Converter = Callable[..., Obj]


class Invocation(NamedTuple):
    """A webhook to call, and the resource it matched the write at."""

    hook: Hook
    info: ResourceInfo
    target: Target


def internal_error(text: str) -> errors.APIError:
    """apimachinery's ``NewInternalError``: 500 ``Internal error occurred: <text>``."""
    return errors.APIError(
        500, "InternalError", f"Internal error occurred: {text}", {"causes": [{"message": text}]}
    )


def forbidden(attrs: Attributes, why: str) -> errors.APIError:
    """apimachinery's ``NewForbidden`` for the request's resource (without a name when the
    write has none)."""
    info = attrs.info
    resource = errors.qualified(info.plural, info.group)
    details: Obj = {}
    if attrs.name:
        details["name"] = attrs.name
    if info.group:
        details["group"] = info.group
    details["kind"] = info.plural
    named = f' "{attrs.name}"' if attrs.name else ""
    return errors.APIError(403, "Forbidden", f"{resource}{named} is forbidden: {why}", details)


def equivalents(catalogue: Catalogue, info: ResourceInfo) -> list[ResourceInfo]:
    """The other resources stored with ``info`` (kube's EquivalentResourcesFor)."""
    return [
        other
        for other in catalogue
        if other.plural == info.plural
        and other.key_group == info.key_group
        and (other.group, other.version) != (info.group, info.version)
        and other.builtin == info.builtin
    ]


def _loosely(rule: Obj) -> Obj:
    return {**rule, "apiGroups": ["*"], "apiVersions": ["*"]}


class Views:
    """One write's objects per version (kube's VersionedAttributes), for one dispatch. A
    mutating dispatch changes the view it patched (:meth:`replace`), later ones convert from it,
    and :meth:`write_back` puts the result into the write's object."""

    def __init__(self, attrs: Attributes, convert: Converter = to_version) -> None:
        self.attrs = attrs
        self.convert = convert
        self._views: dict[str, tuple[Obj | None, Obj | None]] = {}
        self.current: str | None = None
        self.dirty = False

    def _at(self, obj: Obj | None, api_version: str, builtin: bool) -> Obj | None:
        if obj is None:
            return None
        if self.attrs.subresource == SCALE:
            return scale.to_scale(obj, self.attrs.info)
        try:
            return self.convert(obj, api_version, builtin=builtin)
        except ConversionError as exc:
            raise internal_error(str(exc)) from None

    def get(self, invocation: Invocation) -> tuple[Obj | None, Obj | None]:
        """(object, old object) in the version of ``invocation``."""
        info = invocation.info
        key = info.group_version
        found = self._views.get(key)
        if found is None:
            source = self.attrs.obj
            if self.dirty and self.current is not None and self.current != key:
                source = self._views[self.current][0]
            found = (
                self._at(source, key, info.builtin),
                self._at(self.attrs.old, key, info.builtin),
            )
            if self.dirty:  # the other versions are stale once one was patched
                self._views = {}
            self._views[key] = found
        self.current = key
        return found

    def replace(self, invocation: Invocation, obj: Obj) -> None:
        key = invocation.info.group_version
        self._views = {key: (obj, self._views[key][1])}
        self.current = key
        self.dirty = True

    def write_back(self) -> bool:
        """Put the patched object into the write's object (in place); whether there was one."""
        target = self.attrs.obj
        if not self.dirty or self.current is None or target is None:
            return False
        patched = self._views[self.current][0]
        assert patched is not None
        info = self.attrs.info
        if self.attrs.subresource == SCALE:
            spec_path = scale.scale_paths(info)[0]
            replicas = (patched.get("spec") or {}).get("replicas")
            scale.set_path(target, spec_path, replicas)
            return True
        try:
            converted = self.convert(patched, info.group_version, builtin=info.builtin)
        except ConversionError as exc:
            raise internal_error(str(exc)) from None
        target.clear()
        target.update(converted)
        return True


class Matcher:
    """Decides per webhook (:meth:`invocation`); one per write and dispatch, as it keeps the
    namespace's labels it read."""

    def __init__(
        self,
        attrs: Attributes,
        catalogue: Catalogue,
        namespaces: NamespaceLookup,
        checks: authz.Checker | None = None,
    ) -> None:
        self.attrs = attrs
        self.catalogue = catalogue
        self.namespaces = namespaces
        #: the match conditions' authorizer checks (None: every check allowed)
        self.checks = checks
        self._equivalents: list[ResourceInfo] | None = None
        self._labels: dict[str, Mapping[str, str]] = {}

    def _equivalent_infos(self) -> list[ResourceInfo]:
        if self._equivalents is None:
            info = self.attrs.info
            self._equivalents = [] if self.attrs.subresource == SCALE else (
                equivalents(self.catalogue, info)
            )  # fmt: skip
        return self._equivalents

    async def namespace_labels(self, name: str) -> Mapping[str, str]:
        """The labels of namespace ``name``; kube answers 404 when it does not exist."""
        labels = self._labels.get(name)
        if labels is None:
            namespace = await self.namespaces(name)
            if namespace is None:
                raise errors.not_found(NAMESPACES, "", name)
            raw = (namespace.get("metadata") or {}).get("labels") or {}
            labels = {str(k): str(v) for k, v in raw.items()}
            self._labels[name] = labels
        return labels

    def _matched_info(self, hook: Hook) -> ResourceInfo | None:
        attrs = self.attrs
        rules = hook.rules
        if any(rule_matches(rule, attrs) for rule in rules):
            return attrs.info
        if hook.exact:
            return None
        for rule in rules:
            if not rule_matches(_loosely(rule), attrs):
                continue
            for other in self._equivalent_infos():
                if rule_matches(rule, attrs._replace(info=other)):
                    return other
        return None

    def target(self, info: ResourceInfo) -> Target:
        if self.attrs.subresource == SCALE:
            kind = request_kind(self.attrs)
        else:
            kind = {"group": info.group, "version": info.version, "kind": info.kind}
        return Target(info.group, info.version, info.plural, kind)

    async def invocation(self, hook: Hook, views: Views) -> Invocation | None:
        """The invocation of ``hook`` for this write, None when it is not called; raises the
        APIError kube answers when a selector's namespace is missing or the match conditions
        fail under ``failurePolicy: Fail``."""
        info = self._matched_info(hook)
        if info is None:
            return None
        attrs = self.attrs
        if not await namespace_selected(
            hook.spec.get("namespaceSelector"), attrs, self.namespace_labels
        ):
            return None
        if not object_selected(hook.spec.get("objectSelector"), attrs):
            return None
        invocation = Invocation(hook, info, self.target(info))
        if hook.match_conditions:
            obj, old = views.get(invocation)
            request = admission_request(attrs, invocation.target, None, None)
            del request["object"], request["oldObject"]
            try:
                called = conditions_match(
                    hook.match_conditions, obj, old, request, hook.ignores_failures,
                    self.checks, request_resource(attrs),
                )  # fmt: skip
            except ConditionError as exc:
                raise forbidden(attrs, str(exc)) from None
            if not called:
                return None
        return invocation
