"""OpenAPI v3: the ``/openapi/v3`` root (each group-version's ``serverRelativeURL`` with its
hash) and one document per group-version, cached by content."""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterable
from typing import Any

from kubelite.api.catalogue import (
    Catalogue,
    ResourceInfo,
    load_schema_definitions,
)
from kubelite.server.openapi.model import (
    RESPONSE_TEXT,
    Op,
    PathItem,
    SchemaSource,
    build_model,
    customs_key,
    group_version_path,
    operation_tag,
    path_param_text,
    ref_names,
)
from kubelite.server.openapi.parameters import QUERY
from kubelite.server.openapi.schemas import (
    COMPONENTS_PREFIX,
    DELETE_OPTIONS,
    INFO,
    convert_schema,
    reachable_definitions,
)

ROOT_PATH = "/openapi/v3"

_lock = threading.Lock()
_cache: dict[tuple[Any, ...], tuple[dict[str, Any], str]] = {}
_CACHE_LIMIT = 256


# --- OpenAPI v3 -------------------------------------------------------------------------------


def _v3_parameter(name: str) -> dict[str, Any]:
    kind, text = QUERY[name]
    return {
        "name": name,
        "in": "query",
        "description": text,
        "schema": {"type": kind, "uniqueItems": True},
    }


def _v3_content(types: Iterable[str], ref: dict[str, Any]) -> dict[str, Any]:
    return {t: {"schema": ref} for t in types}


def _v3_operation(op: Op) -> dict[str, Any]:
    out: dict[str, Any] = {
        "tags": [operation_tag(op.gvk["group"], op.gvk["version"])],
        "description": op.description,
        "operationId": op.operation_id,
    }
    if op.params:
        out["parameters"] = [_v3_parameter(p) for p in op.params]
    if op.body is not None:
        ref = {"$ref": COMPONENTS_PREFIX + op.body}
        types = op.consumes or ("*/*",)
        body: dict[str, Any] = {"content": _v3_content(types, ref)}
        if op.body != DELETE_OPTIONS:
            body["required"] = True
        out["requestBody"] = body
    responses: dict[str, Any] = {}
    for code, schema in op.responses:
        response: dict[str, Any] = {"description": RESPONSE_TEXT.get(code, "OK")}
        if schema is not None:
            ref = {"$ref": COMPONENTS_PREFIX + schema}
            response["content"] = _v3_content(op.produces, ref)
        responses[code] = response
    responses["401"] = {"description": "Unauthorized"}
    out["responses"] = responses
    out["x-kubernetes-action"] = op.action
    out["x-kubernetes-group-version-kind"] = dict(op.gvk)
    return out


def _v3_path_parameters(path: PathItem) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [
        {
            "name": name,
            "in": "path",
            "description": path_param_text(name, path.kind),
            "required": True,
            "schema": {"type": "string", "uniqueItems": True},
        }
        for name in path.path_params
    ]
    out.append(_v3_parameter("pretty"))
    return out


def _build(infos: tuple[ResourceInfo, ...], source: SchemaSource | None) -> dict[str, Any]:
    definitions = load_schema_definitions()
    model = build_model(infos, source)
    paths: dict[str, Any] = {}
    for path, spec in model.paths.items():
        item: dict[str, Any] = {method: _v3_operation(op) for method, op in spec.ops.items()}
        item["parameters"] = _v3_path_parameters(spec)
        paths[path] = item
    custom_roots = [r for schema in model.custom.values() for r in ref_names(schema)]
    reachable = reachable_definitions([*model.roots, *custom_roots], definitions)
    schemas = {name: convert_schema(definitions[name]) for name in reachable}
    for name, schema in model.custom.items():
        schemas[name] = convert_schema(schema)
    return {
        "openapi": "3.0.0",
        "info": dict(INFO),
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {
                "BearerToken": {
                    "type": "apiKey",
                    "description": "Bearer Token authentication",
                    "name": "authorization",
                    "in": "header",
                }
            },
        },
        "security": [{"BearerToken": []}],
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
    key = (infos, customs_key(infos, source))
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
    """The v3 document at ``path`` (``/openapi/v3`` or ``/openapi/v3/<api|apis>/...``; a
    trailing slash is ignored), or None if there is none there (``/openapi/v2`` is
    :func:`swagger`'s).

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


def clear_cache() -> None:
    with _lock:
        _cache.clear()
