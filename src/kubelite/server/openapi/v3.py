"""OpenAPI v3: the ``/openapi/v3`` root (each group-version's ``serverRelativeURL`` with its
hash) and one document per group-version, cached by content."""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import orjson

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
)
from kubelite.server.openapi.parameters import QUERY
from kubelite.server.openapi.schemas import (
    COMPONENTS_PREFIX,
    DELETE_OPTIONS,
    INFO,
    convert_schema,
)

ROOT_PATH = "/openapi/v3"
V3_JSON = "application/json"

_lock = threading.Lock()
_cache: dict[tuple[Any, ...], V3Document] = {}
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
    reachable = model.reachable(definitions)
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


@dataclass(frozen=True, slots=True)
class V3Document:
    """One group-version's document: the dict, its JSON (keys sorted, so the same content is
    the same bytes), the ETag (the SHA-512 of the JSON, upper-case hex, unquoted: also the
    ``hash`` the root lists) and when it was built (``Last-Modified``). Shared and cached: never
    mutate it."""

    document: dict[str, Any]
    json: bytes
    etag: str
    built: float


def _encoded(document: dict[str, Any]) -> V3Document:
    data = orjson.dumps(document, option=orjson.OPT_SORT_KEYS)
    return V3Document(document, data, hashlib.sha512(data).hexdigest().upper(), time.time())


def _group_versions(catalogue: Catalogue) -> dict[tuple[str, str], tuple[ResourceInfo, ...]]:
    out: dict[tuple[str, str], list[ResourceInfo]] = {}
    for info in catalogue:
        out.setdefault((info.group, info.version), []).append(info)
    return {key: tuple(infos) for key, infos in out.items()}


def _document(infos: tuple[ResourceInfo, ...], source: SchemaSource | None) -> V3Document:
    key = (infos, customs_key(infos, source))
    with _lock:
        cached = _cache.get(key)
    if cached is not None:
        return cached
    entry = _encoded(_build(infos, source))
    with _lock:
        if len(_cache) >= _CACHE_LIMIT:
            _cache.clear()
        _cache[key] = entry
    return entry


def root(catalogue: Catalogue, *, schema_source: SchemaSource | None = None) -> dict[str, Any]:
    """``/openapi/v3``: each served group-version's ``serverRelativeURL``, with its hash."""
    listed: dict[str, Any] = {}
    for (group, version), infos in _group_versions(catalogue).items():
        key = group_version_path(group, version)
        digest = _document(infos, schema_source).etag
        listed[key] = {"serverRelativeURL": f"{ROOT_PATH}/{key}?hash={digest}"}
    return {"paths": listed}


def group_version_document(
    catalogue: Catalogue, path: str, *, schema_source: SchemaSource | None = None
) -> V3Document | None:
    """The document at ``/openapi/v3/api/<v>`` or ``/openapi/v3/apis/<group>/<v>`` (a trailing
    slash is ignored), or None if no group-version is served there."""
    prefix = ROOT_PATH + "/"
    if not path.startswith(prefix):
        return None
    parts = path.rstrip("/")[len(prefix) :].split("/")
    if len(parts) == 2 and parts[0] == "api":
        group, version = "", parts[1]
    elif len(parts) == 3 and parts[0] == "apis" and parts[1]:
        group, version = parts[1], parts[2]
    else:
        return None
    infos = _group_versions(catalogue).get((group, version))
    return _document(infos, schema_source) if infos else None


def openapi_document(
    catalogue: Catalogue, path: str, *, schema_source: SchemaSource | None = None
) -> dict[str, Any] | None:
    """The v3 document at ``path`` (the root or a group-version's), or None if there is none
    there (``/openapi/v2`` is :func:`swagger`'s). Shared and cached: never mutate it."""
    if path.rstrip("/") == ROOT_PATH:
        return root(catalogue, schema_source=schema_source)
    found = group_version_document(catalogue, path, schema_source=schema_source)
    return None if found is None else found.document


def negotiate_v3(accept: str) -> str | None:
    """``application/json`` when ``accept`` takes JSON (``*/*`` and ``application/*`` do; no
    header means ``*/*``), else None: kubelite does not serve the v3 protobuf form, which no
    client it serves asks for (client-go's openapi3 asks for JSON), so such a request gets 406
    rather than a body it cannot read."""
    for part in (accept or "*/*").split(","):
        fields = [f.strip() for f in part.split(";")]
        media = fields[0].lower()
        quality = next(
            (v for k, _, v in (f.partition("=") for f in fields[1:]) if k.strip() == "q"), "1"
        )
        if media in ("application/json", "application/*", "*/*") and quality.strip() not in (
            "0",
            "0.0",
            "0.00",
            "0.000",
        ):
            return V3_JSON
    return None


def clear_cache() -> None:
    with _lock:
        _cache.clear()
