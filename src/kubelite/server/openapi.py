"""OpenAPI v3 documents generated from the catalogue: ``/openapi/v3`` and one document per served
group-version (``/openapi/v3/api/v1``, ``/openapi/v3/apis/<group>/<version>``).

They are deliberately minimal: just what kubectl 1.29+ reads.

- **Default validation** (``create -f``, ``apply``, ``replace``, ``edit``) looks, in the
  group-version's document, for a path whose ``patch`` operation carries
  ``x-kubernetes-group-version-kind`` naming the kind and a ``fieldValidation`` query parameter;
  finding one, kubectl sends ``fieldValidation=Strict`` and leaves validation to the server
  (:mod:`kubelite.api.validation`).
- **explain** finds the kind's schema in ``components.schemas`` by its
  ``x-kubernetes-group-version-kind`` and follows ``$ref``/``allOf`` from there.
- The ``patch`` operations declare **no** ``requestBody``: kubectl would then compute strategic
  merge patches from v3 (shared/spec/client-requirements.md, "OpenAPI").

``/openapi/v2`` is not served (kubectl asks for it as protobuf only, and 1.29+ need v3 alone).

Schemas come from kubernetes-validate's JSON Schema 2020-12 definitions
(:func:`kubelite.api.catalogue.load_schema_definitions`) converted to OpenAPI 3.0 style: refs
``#/$defs/X`` become ``#/components/schemas/X`` (wrapped in ``allOf`` when the ref has siblings,
as kube-apiserver publishes them), ``type: [t, "null"]`` becomes ``type: t``. A document holds
only the definitions reachable from its kinds (plus their List kinds, ``Status`` and
``DeleteOptions``). A kind without a built-in definition (a CRD's) gets the schema that
``schema_source`` returns for it, else an open object. Documents are cached in memory, keyed by
the group-version's ResourceInfos (and custom schemas), so adding a CRD yields fresh documents.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable, Iterable
from typing import Any

from kubelite.api.catalogue import (
    Catalogue,
    ResourceInfo,
    custom_schema,
    load_schema_definitions,
)

__all__ = [
    "ROOT_PATH",
    "SchemaSource",
    "clear_cache",
    "convert_schema",
    "document_hash",
    "group_version_path",
    "openapi_document",
]

ROOT_PATH = "/openapi/v3"
_DEFS_PREFIX = "#/$defs/"
_COMPONENTS_PREFIX = "#/components/schemas/"
_META = "io.k8s.apimachinery.pkg.apis.meta.v1."
#: Definitions every group-version document carries, as kube-apiserver's do.
_ALWAYS = (_META + "Status", _META + "DeleteOptions")
_SCALE = "io.k8s.api.autoscaling.v1.Scale"

#: A function giving the OpenAPI v3 schema of a kind without a built-in definition (a CRD's
#: ``openAPIV3Schema`` for that version), or None if it has none.
SchemaSource = Callable[[ResourceInfo], dict[str, Any] | None]

_PARAMETERS: list[dict[str, Any]] = [
    {
        "name": "dryRun",
        "in": "query",
        "description": "When present, indicates that modifications should not be persisted. "
        "Valid values are: - All: all dry run stages will be processed",
        "schema": {"type": "string", "uniqueItems": True},
    },
    {
        "name": "fieldManager",
        "in": "query",
        "description": "fieldManager is a name associated with the actor or entity that is "
        "making these changes.",
        "schema": {"type": "string", "uniqueItems": True},
    },
    {
        "name": "fieldValidation",
        "in": "query",
        "description": "fieldValidation instructs the server on how to handle objects in the "
        "request (POST/PUT/PATCH) containing unknown or duplicate fields. Valid values are: "
        "- Ignore: This will ignore any unknown fields that are silently dropped from the "
        "object, and will ignore all but the last duplicate field that the decoder "
        "encounters. - Warn: This will send a warning via the standard warning response "
        "header for each unknown field that is dropped from the object, and for each "
        "duplicate field that is encountered. The request will still succeed if there are "
        "no other errors, and will only persist the last of any duplicate fields. This is "
        "the default. - Strict: This will fail the request with a BadRequest error if any "
        "unknown fields would be dropped from the object, or if any duplicate fields are "
        "present. The error returned from the server will contain all unknown and "
        "duplicate fields encountered.",
        "schema": {"type": "string", "uniqueItems": True},
    },
    {
        "name": "force",
        "in": "query",
        "description": 'Force is going to "force" Apply requests. It means user will '
        "re-acquire conflicting fields owned by other people.",
        "schema": {"type": "boolean", "uniqueItems": True},
    },
]

_lock = threading.Lock()
_cache: dict[tuple[Any, ...], tuple[dict[str, Any], str]] = {}
_CACHE_LIMIT = 256


def clear_cache() -> None:
    """Forget every generated document (tests; documents are otherwise keyed by content)."""
    with _lock:
        _cache.clear()


def group_version_path(group: str, version: str) -> str:
    """``api/v1`` for the core group, else ``apis/<group>/<version>``: the key under
    ``/openapi/v3``'s ``paths`` and the suffix of the document's URL."""
    return f"apis/{group}/{version}" if group else f"api/{version}"


def _convert(node: Any) -> Any:
    if isinstance(node, list):
        return [_convert(item) for item in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    ref = node.get("$ref")
    for key, value in node.items():
        if key == "$ref":
            continue
        if key == "type" and isinstance(value, list):
            types = [t for t in value if t != "null"]
            if len(types) == 1:
                out["type"] = types[0]
            continue  # several types: leave it untyped, as OpenAPI 3.0 cannot say it
        if key == "enum" and isinstance(value, list):
            out["enum"] = [v for v in value if v is not None]
            continue
        if key == "properties" and isinstance(value, dict):
            out["properties"] = {name: _convert(sub) for name, sub in value.items()}
            continue
        if key in ("description", "default", "example", "x-kubernetes-group-version-kind"):
            out[key] = value
            continue
        out[key] = _convert(value)
    if isinstance(ref, str):
        target = (
            _COMPONENTS_PREFIX + ref[len(_DEFS_PREFIX) :] if ref.startswith(_DEFS_PREFIX) else ref
        )
        if not out:
            return {"$ref": target}
        return {"allOf": [{"$ref": target}], **out}
    return out


def convert_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A JSON Schema 2020-12 definition (kubernetes-validate's) in OpenAPI 3.0 style."""
    converted = _convert(schema)
    assert isinstance(converted, dict)
    return converted


def _refs(node: Any, found: set[str]) -> None:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str) and value.startswith(_DEFS_PREFIX):
                found.add(value[len(_DEFS_PREFIX) :])
            elif key not in ("description", "enum", "default", "example"):
                _refs(value, found)
    elif isinstance(node, list):
        for item in node:
            _refs(item, found)


def _reachable(roots: Iterable[str], definitions: dict[str, Any]) -> list[str]:
    seen: set[str] = set()
    pending = [r for r in roots if r in definitions]
    while pending:
        name = pending.pop()
        if name in seen:
            continue
        seen.add(name)
        found: set[str] = set()
        _refs(definitions[name], found)
        pending.extend(found - seen)
    return sorted(seen)


def _item_path(info: ResourceInfo) -> str:
    base = f"/apis/{info.group}/{info.version}" if info.group else f"/api/{info.version}"
    if info.namespaced:
        return f"{base}/namespaces/{{namespace}}/{info.plural}/{{name}}"
    return f"{base}/{info.plural}/{{name}}"


def _operation_id(info: ResourceInfo) -> str:
    """``patchCoreV1NamespacedConfigMap``, ``patchRbacAuthorizationV1ClusterRole``."""
    group = info.group.removesuffix(".k8s.io").replace("-", ".")
    words = "".join(w[:1].upper() + w[1:] for w in group.split(".") if w) or "Core"
    scope = "Namespaced" if info.namespaced else ""
    return f"patch{words}{info.version.capitalize()}{scope}{info.kind}"


def _gvk(info: ResourceInfo) -> dict[str, str]:
    return {"group": info.group, "version": info.version, "kind": info.kind}


def _custom_schema(info: ResourceInfo, source: SchemaSource | None) -> dict[str, Any]:
    schema = source(info) if source is not None else None
    if schema is None:
        schema = custom_schema(info)
    if schema is None:
        schema = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    return {**schema, "x-kubernetes-group-version-kind": [_gvk(info)]}


def _custom_name(info: ResourceInfo) -> str:
    """The component name of a kind without a built-in definition: reversed group, as the
    apiextensions-apiserver names CRD schemas (``com.example.v1.Widget``)."""
    reversed_group = ".".join(reversed(info.group.split("."))) if info.group else "core"
    return f"{reversed_group}.{info.version}.{info.kind}"


def _build(infos: tuple[ResourceInfo, ...], source: SchemaSource | None) -> dict[str, Any]:
    definitions = load_schema_definitions()
    roots: list[str] = list(_ALWAYS)
    custom: dict[str, dict[str, Any]] = {}
    paths: dict[str, Any] = {}
    for info in infos:
        if info.schema_ref and info.schema_ref in definitions:
            name = info.schema_ref
            roots.append(name)
            list_name = name + "List"
            if list_name in definitions:
                roots.append(list_name)
        else:
            name = _custom_name(info)
            custom[name] = _custom_schema(info, source)
            roots.append(_META + "ObjectMeta")
        if "scale" in info.subresources:
            roots.append(_SCALE)
        ref = {"$ref": _COMPONENTS_PREFIX + name}
        paths[_item_path(info)] = {
            "patch": {
                "description": f"partially update the specified {info.kind}",
                "operationId": _operation_id(info),
                "parameters": [dict(p) for p in _PARAMETERS],
                "responses": {
                    "200": {
                        "description": "OK",
                        "content": {"application/json": {"schema": ref}},
                    }
                },
                "x-kubernetes-action": "patch",
                "x-kubernetes-group-version-kind": _gvk(info),
            }
        }
    schemas = {name: convert_schema(definitions[name]) for name in _reachable(roots, definitions)}
    for name, schema in custom.items():
        schemas[name] = convert_schema(schema)
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "v1.31.0"},
        "paths": paths,
        "components": {"schemas": schemas},
    }


def _digest(document: dict[str, Any]) -> str:
    data = json.dumps(document, sort_keys=True, separators=(",", ":")).encode()
    return hashlib.sha512(data).hexdigest().upper()


def _group_versions(catalogue: Catalogue) -> dict[tuple[str, str], tuple[ResourceInfo, ...]]:
    out: dict[tuple[str, str], list[ResourceInfo]] = {}
    for info in catalogue:
        out.setdefault((info.group, info.version), []).append(info)
    return {key: tuple(infos) for key, infos in out.items()}


def _document(
    infos: tuple[ResourceInfo, ...], source: SchemaSource | None
) -> tuple[dict[str, Any], str]:
    customs = tuple(
        json.dumps(source(i), sort_keys=True) if source is not None else ""
        for i in infos
        if not i.schema_ref
    )
    key = (infos, customs)
    with _lock:
        cached = _cache.get(key)
    if cached is not None:
        return cached
    document = _build(infos, source)
    entry = (document, _digest(document))
    with _lock:
        if len(_cache) >= _CACHE_LIMIT:
            _cache.clear()
        _cache[key] = entry
    return entry


def openapi_document(
    catalogue: Catalogue,
    path: str,
    query: dict[str, str],
    *,
    schema_source: SchemaSource | None = None,
) -> dict[str, Any] | None:
    """The document at ``path`` (``/openapi/v3`` or ``/openapi/v3/<api|apis>/...``; a trailing
    slash is ignored), or None if there is none there (including ``/openapi/v2``: answer 404).

    ``query`` may carry ``hash``; documents are served whatever it says (kube-apiserver
    redirects a stale hash; clients follow the root's ``serverRelativeURL`` anyway). The
    returned dict is shared and cached: never mutate it.
    """
    del query  # accepted for the handler's convenience; no parameter changes the document
    path = path.rstrip("/")
    groups = _group_versions(catalogue)
    if path == ROOT_PATH:
        listed: dict[str, Any] = {}
        for (group, version), infos in groups.items():
            _, digest = _document(infos, schema_source)
            key = group_version_path(group, version)
            listed[key] = {"serverRelativeURL": f"{ROOT_PATH}/{key}?hash={digest}"}
        return {"paths": listed}
    prefix = ROOT_PATH + "/"
    if not path.startswith(prefix):
        return None
    parts = path[len(prefix) :].split("/")
    if len(parts) == 2 and parts[0] == "api":
        group, version = "", parts[1]
    elif len(parts) == 3 and parts[0] == "apis" and parts[1]:
        group, version = parts[1], parts[2]
    else:
        return None
    gv_infos = groups.get((group, version))
    if not gv_infos:
        return None
    document, _ = _document(gv_infos, schema_source)
    return document


def document_hash(
    catalogue: Catalogue,
    group: str,
    version: str,
    *,
    schema_source: SchemaSource | None = None,
) -> str | None:
    """The hash ``/openapi/v3`` lists for a group-version (an ETag), or None if unserved."""
    infos = _group_versions(catalogue).get((group, version))
    if not infos:
        return None
    return _document(infos, schema_source)[1]
