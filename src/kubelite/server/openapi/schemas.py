"""Schema conversion: kubernetes-validate's JSON Schema 2020-12 definitions into OpenAPI 3.0
(v3) and Swagger 2.0 (v2) form, a custom resource's schema through apiextensions' v2 conversion,
and the definitions reachable from a set of roots."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kubelite.api.catalogue import (
    KUBERNETES_VERSION,
)

DEFS_PREFIX = "#/$defs/"
COMPONENTS_PREFIX = "#/components/schemas/"
DEFINITIONS_PREFIX = "#/definitions/"
_META = "io.k8s.apimachinery.pkg.apis.meta.v1."
STATUS = _META + "Status"
DELETE_OPTIONS = _META + "DeleteOptions"
PATCH = _META + "Patch"
OBJECT_META = _META + "ObjectMeta"
LIST_META = _META + "ListMeta"
#: Definitions every group-version document carries, as kube-apiserver's do.
ALWAYS = (STATUS, DELETE_OPTIONS, PATCH)
_INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
_QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
INFO = {"title": "Kubernetes", "version": f"v{KUBERNETES_VERSION}.0"}


# --- schema conversion ----------------------------------------------------------------------

_VERBATIM = ("description", "default", "example", "x-kubernetes-group-version-kind")


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
        if key in _VERBATIM:
            out[key] = value
            continue
        out[key] = _convert(value)
    if isinstance(ref, str):
        target = COMPONENTS_PREFIX + ref[len(DEFS_PREFIX) :] if ref.startswith(DEFS_PREFIX) else ref
        if not out:
            return {"$ref": target}
        return {"allOf": [{"$ref": target}], **out}
    return out


def convert_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A JSON Schema 2020-12 definition (kubernetes-validate's) in OpenAPI 3.0 style."""
    converted = _convert(schema)
    assert isinstance(converted, dict)
    return converted


#: Keywords of a Swagger 2.0 Schema Object (besides ``x-`` extensions); others are dropped.
_V2_KEYWORDS = frozenset(
    {
        "$ref",
        "format",
        "title",
        "description",
        "default",
        "multipleOf",
        "maximum",
        "exclusiveMaximum",
        "minimum",
        "exclusiveMinimum",
        "maxLength",
        "minLength",
        "pattern",
        "maxItems",
        "minItems",
        "uniqueItems",
        "maxProperties",
        "minProperties",
        "required",
        "enum",
        "additionalProperties",
        "type",
        "items",
        "allOf",
        "properties",
        "discriminator",
        "readOnly",
        "example",
    }
)


def _convert_v2(node: Any) -> Any:
    """A built-in definition (JSON Schema 2020-12) as kube-apiserver's Swagger 2.0 has it."""
    if isinstance(node, list):
        return [_convert_v2(item) for item in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "$ref" and isinstance(value, str):
            if value.startswith(DEFS_PREFIX):
                value = DEFINITIONS_PREFIX + value[len(DEFS_PREFIX) :]
            out[key] = value
        elif key == "type" and isinstance(value, list):
            types = [t for t in value if t != "null"]
            if len(types) == 1:
                out["type"] = types[0]
        elif key == "enum" and isinstance(value, list):
            out["enum"] = [v for v in value if v is not None]
        elif key == "properties" and isinstance(value, dict):
            out["properties"] = {name: _convert_v2(sub) for name, sub in value.items()}
        elif key in _VERBATIM or key.startswith("x-"):
            out[key] = value
        elif key in _V2_KEYWORDS:
            out[key] = _convert_v2(value)
    return out


def definition_v2(name: str, definition: dict[str, Any]) -> dict[str, Any]:
    if name == _INT_OR_STRING:  # v3's oneOf [integer, string]; kube's v2 says this
        return {
            "description": definition.get("description", "IntOrString"),
            "type": "string",
            "format": "int-or-string",
        }
    if name == _QUANTITY:
        return {"description": definition.get("description", "Quantity"), "type": "string"}
    converted = _convert_v2(definition)
    assert isinstance(converted, dict)
    return converted


def custom_v2(node: Any) -> Any:
    """A custom resource's (OpenAPI v3, structural) schema converted as apiextensions-apiserver
    converts it for v2 (controller/openapi/v2 ToStructuralOpenAPIV2), so that kubectl's v2
    parser, which rejects arrays without items and unknown types, takes it."""
    if isinstance(node, list):
        return [custom_v2(item) for item in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "$ref" and isinstance(value, str):
            if value.startswith(DEFS_PREFIX):
                value = DEFINITIONS_PREFIX + value[len(DEFS_PREFIX) :]
            out[key] = value
        elif key in ("allOf", "oneOf", "anyOf", "not", "nullable"):
            continue
        elif key == "properties" and isinstance(value, dict):
            out["properties"] = {name: custom_v2(sub) for name, sub in value.items()}
        elif key in _VERBATIM or key.startswith("x-"):
            out[key] = value
        elif key in _V2_KEYWORDS:
            out[key] = custom_v2(value)
    if node.get("nullable") is True:
        for key in ("type", "items", "properties"):
            out.pop(key, None)
    if node.get("x-kubernetes-preserve-unknown-fields") is True:
        out.pop("items", None)
        out.pop("properties", None)
    if out.get("type") == "array" and not isinstance(out.get("items"), dict):
        out.pop("type")
        out.pop("items", None)
    if out.get("type") not in (None, "object", "array", "string", "number", "integer", "boolean"):
        out.pop("type")
    properties = node.get("properties")
    if isinstance(properties, dict) and isinstance(out.get("required"), list):
        nullable = {k for k, v in properties.items() if isinstance(v, dict) and v.get("nullable")}
        out["required"] = [r for r in out["required"] if r not in nullable]
        if not out["required"]:
            del out["required"]
    return out


def collect_refs(node: Any, found: set[str]) -> None:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str) and value.startswith(DEFS_PREFIX):
                found.add(value[len(DEFS_PREFIX) :])
            elif key == "properties" and isinstance(value, dict):
                for sub in value.values():  # property names are not keywords ("default")
                    collect_refs(sub, found)
            elif key not in ("description", "enum", "default", "example"):
                collect_refs(value, found)
    elif isinstance(node, list):
        for item in node:
            collect_refs(item, found)


def reachable_definitions(roots: Iterable[str], definitions: dict[str, Any]) -> list[str]:
    seen: set[str] = set()
    pending = [r for r in roots if r in definitions]
    while pending:
        name = pending.pop()
        if name in seen:
            continue
        seen.add(name)
        found: set[str] = set()
        collect_refs(definitions[name], found)
        pending.extend(found - seen)
    return sorted(seen)


_gvk_index_cache: dict[int, dict[tuple[str, str, str], str]] = {}


def gvk_index(definitions: dict[str, Any]) -> dict[tuple[str, str, str], str]:
    """(group, version, kind) -> the built-in definition carrying that GVK."""
    key = id(definitions)
    index = _gvk_index_cache.get(key)
    if index is None:
        index = {}
        for name, definition in definitions.items():
            for gvk in definition.get("x-kubernetes-group-version-kind") or ():
                triple = (gvk.get("group", ""), gvk.get("version", ""), gvk.get("kind", ""))
                index.setdefault(triple, name)
        _gvk_index_cache.clear()
        _gvk_index_cache[key] = index
    return index
