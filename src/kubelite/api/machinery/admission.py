"""The admission seam: plugins that see every write after the kind's strategy prepared it and
may change it (mutating) or refuse it (validating), as kube-apiserver's admission chain does.

The generic store calls :meth:`Admission.admit` after defaults and before the kind's
``prepare_for_create``/``prepare_for_update`` and validation, and :meth:`Admission.validate`
after validation, just before the write, for create, update (PUT, PATCH and subresources) and
delete (kube-apiserver's order: k8s.io/apiserver ``pkg/endpoints/handlers/create.go``,
``update.go``, ``delete.go`` and ``pkg/registry/generic/registry/store.go``). Both run inside the
optimistic loop, so they may run more than once for one request, and for dry-run requests too
(``Attributes.dry_run`` says so). A plugin refuses by raising an
:class:`~kubelite.api.errors.APIError`.

Reinvocation (kube's ``ReinvocationContext``): :meth:`Admission.admit` gives each write one
:class:`Reinvocation`; a plugin that wants the mutating phase run again (a webhook with
``reinvocationPolicy: IfNeeded`` whose output a later plugin changed) sets
``should_reinvoke``, and the whole mutating chain runs once more with ``is_reinvoke`` set, each
plugin deciding from what it kept in ``values`` whether to act again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

from kubelite.api.catalogue import ResourceInfo
from kubelite.api.machinery.request import RequestInfo
from kubelite.api.machinery.rest import Warnings
from kubelite.api.machinery.user import User

Obj = dict[str, Any]

CREATE, UPDATE, DELETE = "CREATE", "UPDATE", "DELETE"


@dataclass(slots=True)
class Reinvocation:
    """One write's mutating phase: whether a plugin asked for a second round, whether this is
    it, and what plugins keep between the rounds (by plugin name)."""

    should_reinvoke: bool = False
    is_reinvoke: bool = False
    values: dict[str, Any] = field(default_factory=dict)


class Attributes(NamedTuple):
    """One write as admission sees it (kube's admission.Attributes)."""

    operation: str
    info: ResourceInfo
    namespace: str | None
    name: str
    #: the object to be stored (None on delete)
    obj: Obj | None
    #: the stored object (None on create)
    old: Obj | None
    user: User
    subresource: str = ""
    dry_run: bool = False
    #: the HTTP request's attributes (None for writes made inside kubelite)
    request: RequestInfo | None = None
    #: where warnings go (the response's Warning headers; None: dropped)
    warnings: Warnings | None = None
    #: the request's audit annotations (None: not audited)
    audit_annotations: dict[str, str] | None = None
    #: the write's field manager (CreateOptions/UpdateOptions ``fieldManager``)
    field_manager: str = ""
    #: the mutating phase's reinvocation state (set by :meth:`Admission.admit`)
    reinvocation: Reinvocation | None = None
    #: the write's options as the client sent them (meta.k8s.io/v1 CreateOptions,
    #: UpdateOptions or DeleteOptions fields, without kind; None: a write of the server's)
    options: dict[str, Any] | None = None


class MutatingPlugin(Protocol):
    async def admit(self, attrs: Attributes) -> None:
        """Change ``attrs.obj`` in place, or raise to refuse."""
        ...


class ValidatingPlugin(Protocol):
    async def validate(self, attrs: Attributes) -> None:
        """Raise to refuse the write."""
        ...


class Admission:
    """The chain: mutating plugins in order, then (after validation) validating plugins."""

    def __init__(
        self,
        mutating: Sequence[MutatingPlugin] = (),
        validating: Sequence[ValidatingPlugin] = (),
    ) -> None:
        self.mutating = list(mutating)
        self.validating = list(validating)

    async def admit(self, attrs: Attributes) -> None:
        """Every mutating plugin in order; once more if one asked for it (kube's reinvoker)."""
        state = attrs.reinvocation
        if state is None:
            state = Reinvocation()
            attrs = attrs._replace(reinvocation=state)
        for plugin in self.mutating:
            await plugin.admit(attrs)
        if state.should_reinvoke and not state.is_reinvoke:
            state.is_reinvoke = True
            for plugin in self.mutating:
                await plugin.admit(attrs)

    async def validate(self, attrs: Attributes) -> None:
        for plugin in self.validating:
            await plugin.validate(attrs)


NAMESPACES = "namespaces"


def request_namespace(info: ResourceInfo, namespace: str | None, name: str) -> str | None:
    """The namespace of a write as kube's admission attributes carry it: the request's, and
    for a Namespace itself its own name (kube's RequestInfo reads ``/api/v1/namespaces/<n>``
    so, and its create handler sets it from the object's name), which webhooks see as
    ``request.namespace`` and policies as ``request.namespace``."""
    if info.group == "" and info.plural == NAMESPACES:
        return name or None
    return namespace
