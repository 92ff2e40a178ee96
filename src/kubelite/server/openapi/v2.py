"""OpenAPI v2 (Swagger 2.0): one document for every kind, as JSON or gnostic protobuf, with the
ETag kube-openapi gives it, and the ``Accept`` negotiation of kube-openapi's handler."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterable
from typing import Any

import orjson

from kubelite.api.catalogue import (
    ResourceInfo,
    load_schema_definitions,
)
from kubelite.server.openapi.gnostic import swagger_protobuf
from kubelite.server.openapi.model import (
    RESPONSE_TEXT,
    Op,
    PathItem,
    SchemaSource,
    build_model,
    customs_key,
    operation_tag,
    path_param_text,
)
from kubelite.server.openapi.parameters import QUERY
from kubelite.server.openapi.schemas import (
    DEFINITIONS_PREFIX,
    DELETE_OPTIONS,
    INFO,
    custom_v2,
    definition_v2,
)

V2_PATH = "/openapi/v2"
#: The media types kube-openapi serves /openapi/v2 as (the ``@`` form is what client-go sends;
#: the response always names the ``.`` form).
V2_JSON = "application/json"
V2_PROTOBUF = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
_V2_PROTOBUF_DEPRECATED = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"

_lock = threading.Lock()
_v2_cache: dict[tuple[Any, ...], Swagger] = {}


# --- OpenAPI v2 (Swagger 2.0) -----------------------------------------------------------------


def _v2_query_parameter(name: str) -> dict[str, Any]:
    kind, text = QUERY[name]
    return {"uniqueItems": True, "type": kind, "description": text, "name": name, "in": "query"}


def _v2_operation(op: Op) -> dict[str, Any]:
    out: dict[str, Any] = {
        "description": op.description,
        "consumes": list(op.consumes or ("*/*",)),
        "produces": list(op.produces),
        "schemes": ["https"],
        "tags": [operation_tag(op.gvk["group"], op.gvk["version"])],
        "operationId": op.operation_id,
    }
    params: list[dict[str, Any]] = []
    if op.body is not None:
        body: dict[str, Any] = {
            "name": "body",
            "in": "body",
            "schema": {"$ref": DEFINITIONS_PREFIX + op.body},
        }
        if op.body != DELETE_OPTIONS:
            body["required"] = True
        params.append(body)
    params.extend(_v2_query_parameter(p) for p in op.params)
    if params:
        out["parameters"] = params
    responses: dict[str, Any] = {}
    for code, schema in op.responses:
        response: dict[str, Any] = {"description": RESPONSE_TEXT.get(code, "OK")}
        if schema is not None:
            response["schema"] = {"$ref": DEFINITIONS_PREFIX + schema}
        responses[code] = response
    responses["401"] = {"description": "Unauthorized"}
    out["responses"] = responses
    out["x-kubernetes-action"] = op.action
    out["x-kubernetes-group-version-kind"] = dict(op.gvk)
    return out


def _v2_path_parameters(path: PathItem) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [
        {
            "uniqueItems": True,
            "type": "string",
            "description": path_param_text(name, path.kind),
            "name": name,
            "in": "path",
            "required": True,
        }
        for name in path.path_params
    ]
    out.append(_v2_query_parameter("pretty"))
    return out


def _build_v2(infos: tuple[ResourceInfo, ...], source: SchemaSource | None) -> dict[str, Any]:
    definitions = load_schema_definitions()
    model = build_model(infos, source)
    paths: dict[str, Any] = {}
    for path, spec in sorted(model.paths.items()):
        item: dict[str, Any] = {method: _v2_operation(op) for method, op in spec.ops.items()}
        item["parameters"] = _v2_path_parameters(spec)
        paths[path] = item
    reachable = model.reachable(definitions)
    out_defs = {name: definition_v2(name, definitions[name]) for name in reachable}
    for name, schema in model.custom.items():
        out_defs[name] = custom_v2(schema)
    return {
        "swagger": "2.0",
        "info": dict(INFO),
        "paths": paths,
        "definitions": dict(sorted(out_defs.items())),
        "securityDefinitions": {
            "BearerToken": {
                "type": "apiKey",
                "name": "authorization",
                "in": "header",
                "description": "Bearer Token authentication",
            }
        },
        "security": [{"BearerToken": []}],
    }


class Swagger:
    """The v2 document of one catalogue state: the dict, its JSON bytes, their ETag (the
    SHA-512 of the JSON, upper-case hex, as kube-openapi computes it; unquoted) and, computed on
    first use, the protobuf encoding. Shared and cached: never mutate it."""

    def __init__(self, document: dict[str, Any]) -> None:
        self.document = document
        self.json = orjson.dumps(document)
        self.etag = hashlib.sha512(self.json).hexdigest().upper()
        self._protobuf: bytes | None = None
        self._lock = threading.Lock()

    @property
    def protobuf(self) -> bytes:
        with self._lock:
            if self._protobuf is None:
                self._protobuf = swagger_protobuf(self.document)
            return self._protobuf


def swagger(
    resources: Iterable[ResourceInfo], *, schema_source: SchemaSource | None = None
) -> Swagger:
    """The ``/openapi/v2`` document of every kind in ``resources`` (a catalogue, or a snapshot
    of one: ``tuple(catalogue)``, to build it off the event loop)."""
    infos = tuple(resources)
    key = (infos, customs_key(infos, schema_source))
    with _lock:
        cached = _v2_cache.get(key)
    if cached is not None:
        return cached
    entry = Swagger(_build_v2(infos, schema_source))
    with _lock:
        if len(_v2_cache) >= 8:
            _v2_cache.clear()
        _v2_cache[key] = entry
    return entry


def negotiate_v2(accept: str) -> str | None:
    """The media type ``/openapi/v2`` answers ``accept`` with (:data:`V2_JSON` or
    :data:`V2_PROTOBUF`), or None (406), as kube-openapi's handler chooses: the clauses by
    descending ``q`` (stable), the first one matching JSON, then protobuf (either spelling);
    ``*/*`` and ``application/*`` match JSON; no header means ``*/*``."""
    clauses: list[tuple[float, int, str]] = []
    for position, part in enumerate((accept or "*/*").split(",")):
        fields = [f.strip() for f in part.split(";")]
        media = fields[0].lower()
        if not media:
            continue
        quality = 1.0
        for param in fields[1:]:
            key, _, value = param.partition("=")
            if key.strip().lower() == "q":
                try:
                    quality = float(value.strip())
                except ValueError:
                    quality = 0.0
        if quality > 0:
            clauses.append((-quality, position, media))
    for _, _, media in sorted(clauses):
        major, _, minor = media.partition("/")
        for offered in (V2_JSON, _V2_PROTOBUF_DEPRECATED, V2_PROTOBUF):
            offered_major, _, offered_minor = offered.partition("/")
            if major not in (offered_major, "*") or minor not in (offered_minor, "*"):
                continue
            return V2_JSON if offered == V2_JSON else V2_PROTOBUF
    return None


def clear_cache() -> None:
    with _lock:
        _v2_cache.clear()
