"""Objects are plain dicts, as they arrive on the wire; these are the small typed helpers for
their metadata, and :class:`Ref`, which names one object without holding it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

import orjson

Object = dict[str, Any]


class Ref(NamedTuple):
    """One object by apiVersion, kind, name and namespace (None: the client's default
    namespace, for namespaced kinds)."""

    api_version: str
    kind: str
    name: str
    namespace: str | None = None


def metadata(obj: Mapping[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}


def name_of(obj: Mapping[str, Any]) -> str:
    return str(metadata(obj).get("name", ""))


def namespace_of(obj: Mapping[str, Any]) -> str | None:
    namespace = metadata(obj).get("namespace")
    return str(namespace) if namespace else None


def resource_version(obj: Mapping[str, Any]) -> str:
    return str(metadata(obj).get("resourceVersion", ""))


def labels_of(obj: Mapping[str, Any]) -> dict[str, str]:
    found = metadata(obj).get("labels")
    return found if isinstance(found, dict) else {}


def annotations_of(obj: Mapping[str, Any]) -> dict[str, str]:
    found = metadata(obj).get("annotations")
    return found if isinstance(found, dict) else {}


def ref_of(obj: Mapping[str, Any]) -> Ref:
    """The :class:`Ref` of an object that carries apiVersion, kind and metadata.name."""
    api_version, kind, name = obj.get("apiVersion"), obj.get("kind"), name_of(obj)
    if not api_version or not kind or not name:
        raise ValueError("the object needs apiVersion, kind and metadata.name")
    return Ref(str(api_version), str(kind), name, namespace_of(obj))


def key_of(obj: Mapping[str, Any]) -> str:
    """client-go's MetaNamespaceKeyFunc: ``namespace/name``, or ``name`` when cluster-scoped."""
    meta = obj.get("metadata") or {}  # inlined: an informer calls this once per event
    namespace, name = meta.get("namespace"), meta.get("name", "")
    return f"{namespace}/{name}" if namespace else str(name)


def split_key(key: str) -> tuple[str | None, str]:
    """The inverse of :func:`key_of`: (namespace or None, name)."""
    namespace, _, name = key.rpartition("/")
    return namespace or None, name


def deep_copy(obj: Mapping[str, Any]) -> Object:
    """A copy that shares nothing with ``obj`` (JSON data only; several times faster than
    ``copy.deepcopy``)."""
    copied: Object = orjson.loads(orjson.dumps(obj))
    return copied
