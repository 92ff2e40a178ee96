"""Every :class:`~kubelite.api.machinery.rest.ObjectUpdate` a write hands a storage, built in one
place, for the HTTP handlers and the writers inside kubelite (the registry's verbs, which
controllers call) alike: a PUT's replacement, a PATCH's patched object, a server-side apply's merged
one, and a controller's read-modify-write (:func:`mutation`).

An object that comes out of a patch or an apply of a request is decoded as the kind's Go struct
before the store sees it, as kube's patcher decodes what it patched (``patch.go``): unknown
fields and nulls dropped, a value of the wrong type a 422 showing the patched object. What a
caller inside kubelite builds is taken as built.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

from kubelite.api import errors
from kubelite.api.catalogue import ResourceInfo
from kubelite.api.encoding import decodeerrors, decoding, jsoncodec
from kubelite.api.encoding.stored import clone
from kubelite.api.machinery import validation
from kubelite.api.machinery.objectmeta import replacement
from kubelite.api.machinery.patching import Applied, apply_update, patch_update
from kubelite.api.machinery.rest import ObjectUpdate, Warnings

Obj = dict[str, Any]


def put(info: ResourceInfo, namespace: str | None, name: str, body: Obj) -> ObjectUpdate:
    """A PUT's update: the body, whatever is stored (its name and namespace checked against the
    request's here, as kube's handler checks them before calling the storage)."""
    return replacement(info, namespace, name, body)


def patch(
    info: ResourceInfo,
    name: str,
    patch_type: str,
    body: Any,
    *,
    schema: ResourceInfo | None,
    decode_as: ResourceInfo | None = None,
    field_validation: str = validation.IGNORE,
    warnings: Warnings | None = None,
) -> ObjectUpdate:
    """A PATCH's update (:func:`kubelite.api.machinery.patching.patch_update`): ``body`` applied to
    the current object on every try. ``decode_as``: the kind a request's patched object is decoded
    as (a built-in kind's struct, a custom resource's metadata; a view's own kind, Scale);
    None: taken as patched."""
    update = patch_update(
        info, name, patch_type, body, schema=schema, field_validation=field_validation,
        warnings=warnings,
    )  # fmt: skip
    if decode_as is None or not decoding.decodes(decode_as):
        return update
    return _decoded(decode_as, update)


def apply(
    info: ResourceInfo,
    namespace: str | None,
    name: str,
    applied: Applied,
    manager: str,
    *,
    force: bool,
    decode_as: ResourceInfo | None = None,
    field_validation: str = validation.WARN,
    warnings: Warnings | None = None,
    subresource: str = "",
    reset: tuple[str, ...] = (),
) -> ObjectUpdate:
    """A server-side apply's update (:func:`kubelite.api.machinery.patching.apply_update`) of
    ``info``'s objects (a view's kind when the apply is to one). ``decode_as``: the built-in kind
    the merged object of a request is decoded as; None (a custom resource, a view, a configuration
    built inside kubelite): taken as merged."""
    update = apply_update(
        info, namespace, name, applied, manager, force=force, field_validation=field_validation,
        warnings=warnings, subresource=subresource, reset=reset,
    )  # fmt: skip
    if decode_as is None or not decoding.builtin(decode_as):
        return update
    return _decoded(decode_as, update)


def mutation(info: ResourceInfo, name: str, change: Callable[[Obj], None]) -> ObjectUpdate:
    """A read-modify-write of the object ``name`` of ``info``: ``change`` edits a copy of the
    current object in place, on every try (it may raise an APIError: a precondition of its
    own, such as the uid it expects); 404 when there is none."""

    async def mutated(current: Obj | None) -> Obj:
        if current is None:
            raise errors.not_found(info.plural, info.group, name)
        obj = clone(current)
        change(obj)
        return obj

    return mutated


def _decoded(info: ResourceInfo, update: ObjectUpdate) -> ObjectUpdate:
    """``update`` with its result decoded as ``info``'s Go struct: unknown fields and nulls
    dropped; a value of the wrong type is 422 with the patched object (patch.go)."""

    async def checked(current: Obj | None) -> Obj:
        patched = await update(current)
        try:
            before: Any = jsoncodec.dumps(patched)  # the message shows the object before pruning
        except orjson.JSONEncodeError:
            before = None
        try:
            decoding.check(info, patched)
        except decoding.DecodeError as exc:
            shown = jsoncodec.loads(before) if before is not None else patched
            raise decodeerrors.patch_decode_error(shown, str(exc)) from None
        return patched

    return checked
