"""The verbs a resource storage may serve, as small interfaces (kube-apiserver's
``registry/rest``), and the values passed to them.

A resource or subresource is served by one object, its *storage*. What the storage implements
is what it serves: :func:`verbs` reads it off the object, and the HTTP layer answers 405 for a
verb the storage lacks and lists exactly these verbs in discovery. A storage never names HTTP;
it takes a :class:`Context` (namespace, user, the request) and options, and returns objects.

Updates take an :class:`ObjectUpdate`: a function from the current object to the desired one
(kube's ``UpdatedObjectInfo``), which never changes the current object it is given. A PUT's
returns its body; a PATCH's applies the patch to the current object (every writer's are built
by :mod:`kubelite.api.machinery.updates`); a subresource's (scale) maps its view back onto the
parent. The generic store runs it inside its one optimistic loop, so every retry starts from the
object it read.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, runtime_checkable

from kubelite.api.catalogue import ResourceInfo, Subresource
from kubelite.api.machinery.listing import ListOptions
from kubelite.api.machinery.request import RequestInfo
from kubelite.api.machinery.user import ADMIN, User

if TYPE_CHECKING:
    from kubelite.api.machinery.listing import ListScan
    from kubelite.api.machinery.watchevents import WatchEvent

Obj = dict[str, Any]
Matcher = Callable[[Obj], bool]

#: Propagation policies a DELETE may ask for (metav1.DeletionPropagation).
FOREGROUND, BACKGROUND, ORPHAN = "Foreground", "Background", "Orphan"
PROPAGATION_POLICIES = (FOREGROUND, BACKGROUND, ORPHAN)


class Context(NamedTuple):
    """Who asks and where: the request's namespace (None for a cluster-scoped resource), the
    authenticated user, and the request info when the call comes from an HTTP request
    (controllers inside kubelite call storages without one)."""

    namespace: str | None = None
    user: User = ADMIN
    request: RequestInfo | None = None
    #: the request's audit annotations, which admission adds to (None: not audited)
    audit_annotations: dict[str, str] | None = None


class GetOptions(NamedTuple):
    resource_version: str | None = None


@dataclass(slots=True)
class Warnings:
    """Warnings a verb collects for the response's ``Warning`` headers."""

    texts: list[str] = field(default_factory=list)


class WriteOptions(NamedTuple):
    """CreateOptions, UpdateOptions and PatchOptions: what kubelite reads of them.

    ``field_manager`` is the writer recorded in managedFields ("unknown" when empty).
    ``apply``: the update is a server-side apply, whose ObjectUpdate computes managedFields
    itself (and may create the object). ``patch``: the update comes from a patch, so a uid in
    the patched object is an immutable field (422), not a precondition (a PUT's 409)."""

    dry_run: bool = False
    field_manager: str = ""
    apply: bool = False
    patch: bool = False
    #: where the write's warnings go (the response's Warning headers); None: dropped
    warnings: Warnings | None = None
    #: the options as the client sent them (``dryRun``, ``fieldManager``, ``fieldValidation``
    #: of meta.k8s.io/v1), what kube's handlers give admission; None: a write of the server's
    sent: Obj | None = None
    #: called with the resource and the name where the update's resourceVersion precondition
    #: has just held (the uid checked before), before anything is admitted or written: it may
    #: refuse the write as a lost race would (the server's ``--inject conflicts=P``)
    preconditions_held: Callable[[ResourceInfo, str], None] | None = None


class DeleteOptions(NamedTuple):
    dry_run: bool = False
    precondition_uid: str = ""
    precondition_resource_version: str = ""
    propagation_policy: str | None = None
    orphan_dependents: bool | None = None
    #: where the delete's warnings go (the response's Warning headers); None: dropped
    warnings: Warnings | None = None
    #: the DeleteOptions as the client sent them (meta.k8s.io/v1 fields), what kube's handlers
    #: give admission; None: a delete of the server's
    sent: Obj | None = None
    #: ``gracePeriodSeconds`` (None: the kind's default, for kinds deleted gracefully: pods)
    grace_period_seconds: int | None = None


class WatchOptions(NamedTuple):
    matcher: Matcher | None = None
    resource_version: str | None = None
    send_initial_events: bool | None = None
    allow_bookmarks: bool = False


class ObjectUpdate(Protocol):
    """The desired object given the current one (None when none is stored: a create-on-update).
    It must not change ``current``, which the strategy, validation and admission compare the
    new object with: it returns a new object (the body, or a changed copy). It may be called
    again when the optimistic loop retries."""

    def __call__(self, current: Obj | None) -> Awaitable[Obj]: ...


# -- the verbs -----------------------------------------------------------------------------------


class Storage(Protocol):
    """Every storage: the resource it belongs to, and the kind of the objects it takes and
    returns when that is the resource's own (None for views such as Scale or TokenRequest:
    no field validation, no strategic merge schema, no Table columns)."""

    info: ResourceInfo

    @property
    def object_info(self) -> ResourceInfo | None: ...


@runtime_checkable
class SpeaksOwnKind(Protocol):
    """A subresource whose kind the catalogue does not know (kubelite's own ``history``): what
    discovery lists for it."""

    subresource_info: Subresource


@runtime_checkable
class Getter(Protocol):
    async def get(self, ctx: Context, name: str, opts: GetOptions) -> Obj: ...


@runtime_checkable
class Lister(Protocol):
    def list(self, ctx: Context, opts: ListOptions) -> ListScan: ...


@runtime_checkable
class Watcher(Protocol):
    def watch(self, ctx: Context, opts: WatchOptions) -> AsyncGenerator[WatchEvent, None]: ...


@runtime_checkable
class Creater(Protocol):
    async def create(self, ctx: Context, body: Obj, opts: WriteOptions) -> Obj: ...


@runtime_checkable
class NamedCreater(Protocol):
    """A create on a named object's subresource (``serviceaccounts/<name>/token``)."""

    async def create_named(self, ctx: Context, name: str, body: Obj, opts: WriteOptions) -> Obj: ...


@runtime_checkable
class Updater(Protocol):
    async def update(
        self, ctx: Context, name: str, update: ObjectUpdate, opts: WriteOptions
    ) -> tuple[Obj, bool]:
        """Returns (the stored object, whether it was created)."""
        ...


@runtime_checkable
class ResetFields(Protocol):
    """A storage whose strategy resets some fields of what it is sent (kube's
    ResetFieldsStrategy): server-side apply counts them as nobody's."""

    def reset_fields(self) -> tuple[str, ...]: ...


@runtime_checkable
class Patcher(Getter, Updater, Protocol):
    """A patch is a read and an update whose ObjectUpdate applies the patch (kube's
    rest.Patcher is Getter plus Updater)."""


@runtime_checkable
class GracefulDeleter(Protocol):
    async def delete(self, ctx: Context, name: str, opts: DeleteOptions) -> tuple[Obj, bool]:
        """Returns (the response: the object or a Status, whether it is gone now)."""
        ...


@runtime_checkable
class CollectionDeleter(Protocol):
    async def delete_collection(
        self, ctx: Context, opts: DeleteOptions, list_opts: ListOptions
    ) -> Obj: ...


class Streamed(NamedTuple):
    """Bytes a storage answers as they are (not an object): their content type and body, and
    for a followed stream (``pods/log?follow=true``) the bytes that come after it, until the
    source ends (the stream is long-running: it also ends when the client goes or the server
    stops)."""

    content_type: str
    body: bytes
    follow: AsyncGenerator[bytes, None] | None = None


@runtime_checkable
class Streamer(Protocol):
    """A subresource whose GET answers bytes of its own content type, given the request's
    query (kube's rest.ResourceStreamer: ``pods/log``, text/plain)."""

    async def stream(self, ctx: Context, name: str, query: Mapping[str, str]) -> Streamed: ...


@runtime_checkable
class Connecter(Protocol):
    """A subresource that connects the client to something running, for GET and POST alike
    (kube's rest.Connecter: ``pods/exec``, ``pods/attach``, ``pods/portforward``)."""

    async def connect(self, ctx: Context, name: str, query: Mapping[str, str]) -> Streamed: ...


#: Each verb and the interface that serves it. ``create`` on a subresource is a NamedCreater.
VERB_INTERFACES: tuple[tuple[str, type], ...] = (
    ("create", Creater),
    ("delete", GracefulDeleter),
    ("deletecollection", CollectionDeleter),
    ("get", Getter),
    ("list", Lister),
    ("patch", Patcher),
    ("update", Updater),
    ("watch", Watcher),
)


_IMPLEMENTS: dict[tuple[type, type], bool] = {}


def implements(storage: object, interface: type) -> bool:
    """``isinstance(storage, interface)`` for a verb interface, remembered per class: what a
    storage serves is what its class defines (a Protocol check costs microseconds, and the
    handlers ask on every request)."""
    key = (type(storage), interface)
    found = _IMPLEMENTS.get(key)
    if found is None:
        found = _IMPLEMENTS[key] = isinstance(storage, interface)
    return found


def verbs(storage: object) -> tuple[str, ...]:
    """The verbs ``storage`` serves, sorted: what it implements."""
    found = {verb for verb, interface in VERB_INTERFACES if implements(storage, interface)}
    if implements(storage, NamedCreater):
        found.add("create")
    if implements(storage, Streamer):
        found.add("get")
    if implements(storage, Connecter):
        found.update(("create", "get"))
    return tuple(sorted(found))
