"""Stored objects: where an object lives in the store and the bytes it is kept as.

Storage keys: ``/registry/<plural>/<namespace>/<name>`` for the core group and
``/registry/<group>/<plural>/<namespace>/<name>`` otherwise (cluster-scoped kinds have no
namespace segment); a kind served at several versions uses its storage group's keys
(ResourceInfo.key_group). Stored bodies are JSON at the kind's storage version, without
``metadata.resourceVersion``; it is stamped from the storage revision on every read.

Conversion between a kind's served version and its storage version happens here, in one of two
ways. Synchronously (:func:`encode`, :func:`decode`): the built-in conversions of
:mod:`kubelite.api.encoding.conversion`, and a custom resource's apiVersion rewritten (conversion
strategy None). Or through a :class:`VersionConverter` outside the process (a CRD's conversion
webhook), by a :class:`Codec`, which the generic store, lists and watch caches read and write
through: objects are sent without resourceVersion, as kube-apiserver's storage codec sends them,
and a list's page is converted in one call.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, Protocol

import orjson

from kubelite.api import errors
from kubelite.api.catalogue import ResourceInfo
from kubelite.api.encoding import jsoncodec
from kubelite.api.encoding import resourceversion as rv
from kubelite.api.encoding.conversion import to_version
from kubelite.storage import KeyValue

Obj = dict[str, Any]


_NOW: list[Any] = [0, ""]  # the last second formatted, and its text


def now() -> str:
    """The time, RFC 3339 in seconds (UTC), as Kubernetes writes timestamps."""
    second = int(time.time())
    if second != _NOW[0]:
        _NOW[:] = [second, datetime.fromtimestamp(second, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")]
    return str(_NOW[1])


def storage_prefix(info: ResourceInfo, namespace: str | None) -> str:
    group = info.key_group
    base = f"/registry/{group}/{info.plural}/" if group else f"/registry/{info.plural}/"
    if info.namespaced and namespace:
        return f"{base}{namespace}/"
    return base


def storage_key(info: ResourceInfo, namespace: str | None, name: str) -> str:
    return storage_prefix(info, namespace) + name


def clone(obj: Obj) -> Obj:
    """A deep copy of a JSON object (:func:`jsoncodec.clone`)."""
    copied: Obj = jsoncodec.clone(obj)
    return copied


def clone_value(value: Any) -> Any:
    """A deep copy of any JSON value."""
    return jsoncodec.clone(value)


def same_content(new: Obj, current: Obj) -> bool:
    """Whether an update's object is the stored one but for its resourceVersion and the order
    of keys (kube compares canonical encodings, in which key order cannot differ). A boolean
    never equals a number here (``True == 1`` in Python, not in JSON)."""
    a, b = _without_version(new), _without_version(current)
    if not jsoncodec.equal(a, b):
        return False  # the common case: a real change, found by one C-level comparison
    sort = orjson.OPT_SORT_KEYS
    return jsoncodec.dumps(a, sort) == jsoncodec.dumps(b, sort)


def _without_version(obj: Obj) -> Obj:
    meta = obj.get("metadata")
    if not isinstance(meta, dict) or "resourceVersion" not in meta:
        return obj
    return {**obj, "metadata": {k: v for k, v in meta.items() if k != "resourceVersion"}}


def encode(obj: Obj, info: ResourceInfo) -> bytes:
    """The stored bytes of ``obj``: at the kind's storage version, without resourceVersion."""
    body = (
        to_version(obj, info.storage_api_version, builtin=info.builtin)
        if info.storage_version
        else copy.copy(obj)
    )
    body["metadata"] = dict(body.get("metadata") or {})
    body["metadata"].pop("resourceVersion", None)
    return jsoncodec.dumps(body)


def from_storage(value: bytes, info: ResourceInfo) -> Obj:
    """A stored value as ``info``'s version serves it (no resourceVersion stamped)."""
    obj: Obj = jsoncodec.loads(value)
    if info.builtin and not info.storage_version:
        return obj
    # A custom resource is checked whatever the storage version is now: objects written before
    # a CRD moved its storage version stay at the old one until they are written again.
    return to_version(obj, info.group_version, builtin=info.builtin)


def decode(kv: KeyValue, info: ResourceInfo) -> Obj:
    return rv.stamp(from_storage(kv.value, info), kv.mod_revision)


def same_stored(a: bytes, b: bytes, info: ResourceInfo) -> bool:
    """Whether two stored values hold the same object. Bytes compare for a kind stored at its
    own version; a converted one may come back with its keys in another order."""
    return a == b or (
        bool(info.storage_version) and jsoncodec.equal(jsoncodec.loads(a), jsoncodec.loads(b))
    )


def meta_of(obj: Obj) -> dict[str, Any]:
    meta = obj.get("metadata")
    if meta is None:
        meta = obj["metadata"] = {}
    if not isinstance(meta, dict):
        raise errors.bad_request("metadata must be an object")
    return meta


class VersionConverter(Protocol):
    """Converts objects of one kind to another of its versions, outside the process (a CRD's
    conversion webhook), in one call. Objects already at ``api_version`` come back as they are.
    Raises :class:`errors.APIError`."""

    async def __call__(self, objs: list[Obj], api_version: str) -> list[Obj]: ...


class Codec:
    """How one served version (``info``) reads its stored objects and writes new ones: without
    ``converter``, by :func:`decode` and :func:`encode`; with one, through it (the read answered
    at ``info``'s version, the write stored at the storage version)."""

    __slots__ = ("converter", "info")

    def __init__(self, info: ResourceInfo, converter: VersionConverter | None = None) -> None:
        self.info = info
        self.converter = converter

    @property
    def converts(self) -> bool:
        """Whether reads and writes may call out of the process."""
        return self.converter is not None

    async def read(self, value: bytes, revision: int) -> Obj:
        """A stored value at this version, stamped with ``revision``."""
        if self.converter is None:
            return rv.stamp(from_storage(value, self.info), revision)
        converted = await self.converter([jsoncodec.loads(value)], self.info.group_version)
        return rv.stamp(converted[0], revision)

    async def decode(self, kv: KeyValue) -> Obj:
        return await self.read(kv.value, kv.mod_revision)

    async def decode_all(self, kvs: Sequence[KeyValue]) -> list[Obj]:
        """A page of stored values at this version (one conversion call for the page)."""
        if self.converter is None:
            return [decode(kv, self.info) for kv in kvs]
        if not kvs:
            return []
        loaded = [jsoncodec.loads(kv.value) for kv in kvs]
        converted = await self.converter(loaded, self.info.group_version)
        return [rv.stamp(obj, kv.mod_revision) for obj, kv in zip(converted, kvs, strict=True)]

    async def encode(self, obj: Obj) -> bytes:
        """The stored bytes of ``obj`` (at the storage version, without resourceVersion)."""
        if self.converter is None:
            return encode(obj, self.info)
        body = _without_version(obj)
        target = self.info.storage_api_version
        if body.get("apiVersion") != target:
            body = (await self.converter([body], target))[0]
        return jsoncodec.dumps(body)
