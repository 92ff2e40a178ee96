"""The admission seam: plugins that see every write after the kind's strategy prepared it and
may change it (mutating) or refuse it (validating), as kube-apiserver's admission chain does.

The generic store calls :meth:`Admission.admit` after defaults and before the kind's
``prepare_for_create``/``prepare_for_update`` and validation, and :meth:`Admission.validate`
after validation, just before the write, for create, update (PUT, PATCH and subresources) and
delete (kube-apiserver's order, shared/spec/admission.md §1). Both run inside the
optimistic loop, so they may run more than once for one request, and for dry-run requests too
(``Attributes.dry_run`` says so). A plugin refuses by raising an
:class:`~kubelite.api.errors.APIError`. A mutating plugin that changed the object may ask for
a second round of the mutating plugins (:class:`Reinvocation`, kube's reinvocation).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple, Protocol

from kubelite.api.authn import User
from kubelite.api.catalogue import ResourceInfo
from kubelite.api.request import RequestInfo
from kubelite.api.rest import Warnings

Obj = dict[str, Any]

CREATE, UPDATE, DELETE = "CREATE", "UPDATE", "DELETE"


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


class Reinvocation:
    """kube's ReinvocationContext: a plugin that changed the object after another plugin
    that may need to see the change ran sets :attr:`should_reinvoke`; the chain then runs the
    mutating plugins once more with :attr:`is_reinvoke` set (a plugin with state of its own
    keeps it in :attr:`values`, by plugin name)."""

    __slots__ = ("is_reinvoke", "should_reinvoke", "values")

    def __init__(self) -> None:
        self.is_reinvoke = False
        self.should_reinvoke = False
        self.values: dict[str, Any] = {}


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
        """The mutating plugins in order; once more if one asks for it (kube's reinvoker:
        the second round runs every plugin again, those with a reinvocation policy of their
        own apply it)."""
        if not self.mutating:
            return
        context = Reinvocation()
        attrs = attrs._replace(reinvocation=context)
        for plugin in self.mutating:
            await plugin.admit(attrs)
        if context.should_reinvoke:
            context.is_reinvoke = True
            for plugin in self.mutating:
                await plugin.admit(attrs)

    async def validate(self, attrs: Attributes) -> None:
        for plugin in self.validating:
            await plugin.validate(attrs)
