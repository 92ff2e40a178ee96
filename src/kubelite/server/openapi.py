"""OpenAPI documents generated from the catalogue: v3 (``/openapi/v3`` and one document per served
group-version, ``/openapi/v3/api/v1``, ``/openapi/v3/apis/<group>/<version>``) and v2
(``/openapi/v2``, one Swagger 2.0 document for everything, as JSON or as gnostic's protobuf).

Both are built from one model of the paths kube-apiserver serves for each resource, so that
OpenAPI tools load them and kubectl finds what it looks for:

- **Paths and operations.** Per resource: the collection (``get`` = list, with ``watch`` as a
  query parameter; ``post`` = create; ``delete`` = deletecollection), the item (``get``,
  ``put``, ``patch``, ``delete``), the all-namespaces list of a namespaced kind, and each served
  subresource (``status``, ``scale``, ``binding``...) with its verbs. Each path declares its path
  parameters (``name``, ``namespace``: ``in: path``, required) and ``pretty``; each operation
  its query parameters, request body, responses, ``operationId`` (``patchCoreV1NamespacedPod``),
  ``x-kubernetes-action`` and ``x-kubernetes-group-version-kind``. Only the verbs a kind has get
  operations (a TokenReview is create-only).
- **Default validation** (``create -f``, ``apply``, ``replace``, ``edit``): kubectl 1.29+ looks,
  in the group-version's v3 document, for a ``patch`` operation carrying the kind's
  ``x-kubernetes-group-version-kind`` and a ``fieldValidation`` parameter; kubectl 1.27/1.28 (and
  1.29+ for a kind missing from v3, such as a custom resource whose CRD is in the same file) do
  the same in v2. Finding one, kubectl sends ``fieldValidation=Strict`` and leaves validation to
  the server (:mod:`kubelite.api.validation`); else it validates against the v2 definitions
  itself, skipping kinds v2 does not define, so applying a CRD and its objects from one file ends
  on kubectl's own ``resource mapping not found ... ensure CRDs are installed first``.
- **patch** declares its request body's content types (JSON patch, merge patch, apply; strategic
  merge for built-in kinds only, as kube-apiserver): kubectl 1.27+ computes the strategic merge
  patch of ``apply`` from v3 when the kind's ``patch`` accepts it, else from v2.
- **explain** finds the kind's schema by its ``x-kubernetes-group-version-kind``
  (``components.schemas`` in v3, ``definitions`` in v2 for ``--output plaintext-openapiv2`` and
  kubectl 1.27/1.28) and follows ``$ref``/``allOf`` from there.

Schemas come from kubernetes-validate's JSON Schema 2020-12 definitions
(:func:`kubelite.api.catalogue.load_schema_definitions`). For v3 they are converted to OpenAPI 3.0
style: refs ``#/$defs/X`` become ``#/components/schemas/X`` (wrapped in ``allOf`` when the ref
has siblings, as kube-apiserver publishes them), ``type: [t, "null"]`` becomes ``type: t``. For v2
refs become ``#/definitions/X`` (siblings kept, as kube's v2 has them), IntOrString and Quantity
become kube's v2 ``type: string`` (``format: int-or-string``), and a custom resource's schema goes
through apiextensions' v2 conversion (no ``allOf``/``oneOf``/``anyOf``/``not``; nullable and
preserve-unknown-fields nodes lose what kubectl's v2 parser cannot take). A v3 document holds only
the definitions reachable from its kinds (plus their List kinds, ``Status``, ``DeleteOptions``
and ``Patch``); the v2 document those of every kind. A kind without a built-in definition (a
CRD's) gets the schema ``schema_source`` returns for it (else its ResourceInfo's, else an open
object), with ``apiVersion``, ``kind`` and ``metadata`` (ObjectMeta) declared as kube does, and a
List kind of its own. Documents are cached in memory, keyed by the ResourceInfos (and custom
schemas), so adding a CRD yields fresh documents.

The v2 protobuf form (``Accept: application/com.github.proto-openapi.spec.v2@v1.0+protobuf``, the
only form client-go's ``OpenAPISchema`` asks for, in every kubectl from 1.27 to 1.37) is gnostic's
``openapi.v2.Document`` (github.com/google/gnostic-models, openapiv2/OpenAPIv2.proto), encoded by
hand below as kube-openapi's ``ToProtoBinary`` produces it: vendor extensions, defaults, enums
and examples are ``Any`` messages whose ``yaml`` field holds the value (JSON text, which YAML
parsers read). Both forms carry the same ETag, the SHA-512 of the JSON form, as kube-openapi's
handler does.
"""

from __future__ import annotations

import hashlib
import json
import struct
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import orjson

from kubelite.api.catalogue import (
    KUBERNETES_VERSION,
    Catalogue,
    ResourceInfo,
    custom_schema,
    load_schema_definitions,
)

__all__ = [
    "ROOT_PATH",
    "V2_PATH",
    "V2_PROTOBUF",
    "SchemaSource",
    "Swagger",
    "clear_cache",
    "convert_schema",
    "document_hash",
    "group_version_path",
    "negotiate_v2",
    "openapi_document",
    "swagger",
    "swagger_protobuf",
]

ROOT_PATH = "/openapi/v3"
V2_PATH = "/openapi/v2"
#: The media types kube-openapi serves /openapi/v2 as (the ``@`` form is what client-go sends;
#: the response always names the ``.`` form).
V2_JSON = "application/json"
V2_PROTOBUF = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
_V2_PROTOBUF_DEPRECATED = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"

_DEFS_PREFIX = "#/$defs/"
_COMPONENTS_PREFIX = "#/components/schemas/"
_DEFINITIONS_PREFIX = "#/definitions/"
_META = "io.k8s.apimachinery.pkg.apis.meta.v1."
_STATUS = _META + "Status"
_DELETE_OPTIONS = _META + "DeleteOptions"
_PATCH = _META + "Patch"
_OBJECT_META = _META + "ObjectMeta"
_LIST_META = _META + "ListMeta"
#: Definitions every group-version document carries, as kube-apiserver's do.
_ALWAYS = (_STATUS, _DELETE_OPTIONS, _PATCH)
_INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
_QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
_INFO = {"title": "Kubernetes", "version": f"v{KUBERNETES_VERSION}.0"}

#: A function giving the OpenAPI v3 schema of a kind without a built-in definition (a CRD's
#: ``openAPIV3Schema`` for that version), or None if it has none.
SchemaSource = Callable[[ResourceInfo], dict[str, Any] | None]

# --- parameters -----------------------------------------------------------------------------

_DRY_RUN = (
    "When present, indicates that modifications should not be persisted. An invalid or "
    "unrecognized dryRun directive will result in an error response and no further processing "
    "of the request. Valid values are: - All: all dry run stages will be processed"
)
_FIELD_VALIDATION = (
    "fieldValidation instructs the server on how to handle objects in the request "
    "(POST/PUT/PATCH) containing unknown or duplicate fields. Valid values are: - Ignore: This "
    "will ignore any unknown fields that are silently dropped from the object, and will ignore "
    "all but the last duplicate field that the decoder encounters. - Warn: This will send a "
    "warning via the standard warning response header for each unknown field that is dropped "
    "from the object, and for each duplicate field that is encountered. The request will still "
    "succeed if there are no other errors, and will only persist the last of any duplicate "
    "fields. This is the default. - Strict: This will fail the request with a BadRequest error "
    "if any unknown fields would be dropped from the object, or if any duplicate fields are "
    "present. The error returned from the server will contain all unknown and duplicate fields "
    "encountered."
)

#: Query parameters: name -> (type, description), kube-apiserver's.
_QUERY: dict[str, tuple[str, str]] = {
    "allowWatchBookmarks": (
        "boolean",
        'allowWatchBookmarks requests watch events with type "BOOKMARK". Servers that do not '
        "implement bookmarks may ignore this flag and bookmarks are sent at the server's "
        "discretion.",
    ),
    "continue": (
        "string",
        "The continue option should be set when retrieving more results from the server. Since "
        "this value is server defined, clients may only use the continue value from a previous "
        "query result with identical query parameters (except for the value of continue).",
    ),
    "dryRun": ("string", _DRY_RUN),
    "fieldManager": (
        "string",
        "fieldManager is a name associated with the actor or entity that is making these "
        "changes. The value must be less than or 128 characters long, and only contain "
        "printable characters, as defined by https://golang.org/pkg/unicode/#IsPrint.",
    ),
    "fieldSelector": (
        "string",
        "A selector to restrict the list of returned objects by their fields. Defaults to "
        "everything.",
    ),
    "fieldValidation": ("string", _FIELD_VALIDATION),
    "force": (
        "boolean",
        'Force is going to "force" Apply requests. It means user will re-acquire conflicting '
        "fields owned by other people. Force flag must be unset for non-apply patch requests.",
    ),
    "gracePeriodSeconds": (
        "integer",
        "The duration in seconds before the object should be deleted. Value must be "
        "non-negative integer. The value zero indicates delete immediately. If this value is "
        "nil, the default grace period for the specified type will be used. Defaults to a per "
        "object value if not specified. zero means delete immediately.",
    ),
    "ignoreStoreReadErrorWithClusterBreakingPotential": (
        "boolean",
        "if set to true, it will trigger an unsafe deletion of the resource in case the normal "
        "deletion flow fails with a corrupt object error.",
    ),
    "labelSelector": (
        "string",
        "A selector to restrict the list of returned objects by their labels. Defaults to "
        "everything.",
    ),
    "limit": (
        "integer",
        "limit is a maximum number of responses to return for a list call. If more items "
        "exist, the server will set the `continue` field on the list metadata to a value that "
        "can be used with the same initial query to retrieve the next set of results.",
    ),
    "orphanDependents": (
        "boolean",
        "Deprecated: please use the PropagationPolicy, this field will be deprecated in 1.7. "
        'Should the dependent objects be orphaned. If true/false, the "orphan" finalizer will '
        "be added to/removed from the object's finalizers list. Either this field or "
        "PropagationPolicy may be set, but not both.",
    ),
    "pretty": (
        "string",
        "If 'true', then the output is pretty printed. Defaults to 'false' unless the "
        "user-agent indicates a browser or command-line HTTP tool (curl and wget).",
    ),
    "propagationPolicy": (
        "string",
        "Whether and how garbage collection will be performed. Either this field or "
        "OrphanDependents may be set, but not both. Acceptable values are: 'Orphan' - orphan "
        "the dependents; 'Background' - allow the garbage collector to delete the dependents in "
        "the background; 'Foreground' - a cascading policy that deletes all dependents in the "
        "foreground.",
    ),
    "resourceVersion": (
        "string",
        "resourceVersion sets a constraint on what resource versions a request may be served "
        "from. See https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions "
        "for details. Defaults to unset",
    ),
    "resourceVersionMatch": (
        "string",
        "resourceVersionMatch determines how resourceVersion is applied to list calls. It is "
        "highly recommended that resourceVersionMatch be set for list calls where "
        "resourceVersion is set. Defaults to unset",
    ),
    "sendInitialEvents": (
        "boolean",
        "`sendInitialEvents=true` may be set together with `watch=true`. In that case, the "
        "watch stream will begin with synthetic events to produce the current state of objects "
        'in the collection. Once all such events have been sent, a synthetic "Bookmark" event '
        "will be sent.",
    ),
    "timeoutSeconds": (
        "integer",
        "Timeout for the list/watch call. This limits the duration of the call, regardless of "
        "any activity or inactivity.",
    ),
    "watch": (
        "boolean",
        "Watch for changes to the described resources and return them as a stream of add, "
        "update, and remove notifications. Specify resourceVersion.",
    ),
}

_LIST_PARAMS = (
    "allowWatchBookmarks",
    "continue",
    "fieldSelector",
    "labelSelector",
    "limit",
    "resourceVersion",
    "resourceVersionMatch",
    "sendInitialEvents",
    "timeoutSeconds",
    "watch",
)
_WRITE_PARAMS = ("dryRun", "fieldManager", "fieldValidation")
_PATCH_PARAMS = (*_WRITE_PARAMS, "force")
_DELETE_PARAMS = (
    "dryRun",
    "gracePeriodSeconds",
    "ignoreStoreReadErrorWithClusterBreakingPotential",
    "orphanDependents",
    "propagationPolicy",
)
_DELETE_COLLECTION_PARAMS = (
    "continue",
    "dryRun",
    "fieldSelector",
    "gracePeriodSeconds",
    "ignoreStoreReadErrorWithClusterBreakingPotential",
    "labelSelector",
    "limit",
    "orphanDependents",
    "propagationPolicy",
    "resourceVersion",
    "resourceVersionMatch",
    "sendInitialEvents",
    "timeoutSeconds",
)

_PATCH_TYPES = (
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
)
_CUSTOM_PATCH_TYPES = (
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/apply-patch+yaml",
)
_PRODUCES = ("application/json", "application/yaml")
_WATCH_PRODUCES = (*_PRODUCES, "application/json;stream=watch")

_lock = threading.Lock()
_cache: dict[tuple[Any, ...], tuple[dict[str, Any], str]] = {}
_v2_cache: dict[tuple[Any, ...], Swagger] = {}
_CACHE_LIMIT = 256


def clear_cache() -> None:
    """Forget every generated document (tests; documents are otherwise keyed by content)."""
    with _lock:
        _cache.clear()
        _v2_cache.clear()


def group_version_path(group: str, version: str) -> str:
    """``api/v1`` for the core group, else ``apis/<group>/<version>``: the key under
    ``/openapi/v3``'s ``paths`` and the suffix of the document's URL."""
    return f"apis/{group}/{version}" if group else f"api/{version}"


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
            if value.startswith(_DEFS_PREFIX):
                value = _DEFINITIONS_PREFIX + value[len(_DEFS_PREFIX) :]
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


def _definition_v2(name: str, definition: dict[str, Any]) -> dict[str, Any]:
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


def _custom_v2(node: Any) -> Any:
    """A custom resource's (OpenAPI v3, structural) schema converted as apiextensions-apiserver
    converts it for v2 (controller/openapi/v2 ToStructuralOpenAPIV2), so that kubectl's v2
    parser, which rejects arrays without items and unknown types, takes it."""
    if isinstance(node, list):
        return [_custom_v2(item) for item in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "$ref" and isinstance(value, str):
            if value.startswith(_DEFS_PREFIX):
                value = _DEFINITIONS_PREFIX + value[len(_DEFS_PREFIX) :]
            out[key] = value
        elif key in ("allOf", "oneOf", "anyOf", "not", "nullable"):
            continue
        elif key == "properties" and isinstance(value, dict):
            out["properties"] = {name: _custom_v2(sub) for name, sub in value.items()}
        elif key in _VERBATIM or key.startswith("x-"):
            out[key] = value
        elif key in _V2_KEYWORDS:
            out[key] = _custom_v2(value)
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


def _refs(node: Any, found: set[str]) -> None:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str) and value.startswith(_DEFS_PREFIX):
                found.add(value[len(_DEFS_PREFIX) :])
            elif key == "properties" and isinstance(value, dict):
                for sub in value.values():  # property names are not keywords ("default")
                    _refs(sub, found)
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


_gvk_index_cache: dict[int, dict[tuple[str, str, str], str]] = {}


def _gvk_index(definitions: dict[str, Any]) -> dict[tuple[str, str, str], str]:
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


# --- the model: kinds, paths and operations ---------------------------------------------------


def _gvk(group: str, version: str, kind: str) -> dict[str, str]:
    return {"group": group, "version": version, "kind": kind}


def _custom_name(info: ResourceInfo) -> str:
    """The component name of a kind without a built-in definition: reversed group, as the
    apiextensions-apiserver names CRD schemas (``com.example.v1.Widget``)."""
    reversed_group = ".".join(reversed(info.group.split("."))) if info.group else "core"
    return f"{reversed_group}.{info.version}.{info.kind}"


def _custom_schema(info: ResourceInfo, source: SchemaSource | None) -> dict[str, Any]:
    """A custom kind's schema as kube-apiserver publishes it: its own, with ``apiVersion``,
    ``kind`` and ``metadata`` declared (refs in the catalogue's ``#/$defs/`` form)."""
    schema = source(info) if source is not None else None
    if schema is None:
        schema = custom_schema(info)
    if schema is None:
        schema = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        properties = {}
    if schema.get("x-kubernetes-preserve-unknown-fields") is not True or properties:
        properties = {
            **properties,
            "apiVersion": {"type": "string", "description": _API_VERSION_TEXT},
            "kind": {"type": "string", "description": _KIND_TEXT},
            "metadata": {"$ref": _DEFS_PREFIX + _OBJECT_META, "description": _METADATA_TEXT},
        }
        schema = {**schema, "properties": properties}
    return {
        **schema,
        "x-kubernetes-group-version-kind": [_gvk(info.group, info.version, info.kind)],
    }


_API_VERSION_TEXT = (
    "APIVersion defines the versioned schema of this representation of an object. Servers "
    "should convert recognized schemas to the latest internal value, and may reject "
    "unrecognized values. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources"
)
_KIND_TEXT = (
    "Kind is a string value representing the REST resource this object represents. Servers may "
    "infer this from the endpoint the client submits requests to. Cannot be updated. In "
    "CamelCase. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds"
)
_METADATA_TEXT = (
    "Standard object's metadata. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"
)


def _custom_list_schema(info: ResourceInfo, item: str) -> dict[str, Any]:
    return {
        "description": f"{info.list_kind} is a list of {info.kind}",
        "type": "object",
        "required": ["items"],
        "properties": {
            "apiVersion": {"type": "string", "description": _API_VERSION_TEXT},
            "items": {
                "type": "array",
                "description": f"List of {info.plural}. More info: "
                "https://git.k8s.io/community/contributors/devel/sig-architecture/"
                "api-conventions.md",
                "items": {"$ref": _DEFS_PREFIX + item},
            },
            "kind": {"type": "string", "description": _KIND_TEXT},
            "metadata": {"$ref": _DEFS_PREFIX + _LIST_META, "description": _METADATA_TEXT},
        },
        "x-kubernetes-group-version-kind": [_gvk(info.group, info.version, info.list_kind)],
    }


@dataclass(frozen=True)
class _Op:
    """One operation of one path, for both documents."""

    action: str  # x-kubernetes-action: get list post put patch delete deletecollection
    operation_id: str
    description: str
    gvk: dict[str, str]
    params: tuple[str, ...] = ()
    body: str | None = None  # the request body's definition
    responses: tuple[tuple[str, str | None], ...] = ()  # (code, definition or None)
    consumes: tuple[str, ...] = ()  # request media types (patch)
    produces: tuple[str, ...] = _PRODUCES


@dataclass
class _Path:
    path_params: tuple[str, ...]
    kind: str  # for the path parameters' descriptions
    ops: dict[str, _Op] = field(default_factory=dict)  # HTTP method (lower case) -> operation


@dataclass
class _Model:
    paths: dict[str, _Path]
    roots: list[str]  # built-in definitions the documents need
    custom: dict[str, dict[str, Any]]  # custom definitions (catalogue's JSON Schema style)


def _words(group: str) -> str:
    """``Core``, ``Apps``, ``RbacAuthorization``, ``CertManagerIo``: a group in operation ids."""
    group = group.removesuffix(".k8s.io").replace("-", ".")
    return "".join(w[:1].upper() + w[1:] for w in group.split(".") if w) or "Core"


def _tag(group: str, version: str) -> str:
    words = _words(group)
    return f"{words[:1].lower()}{words[1:]}_{version}"


def _operation_id(info: ResourceInfo, verb: str = "patch", suffix: str = "") -> str:
    """``patchCoreV1NamespacedConfigMap``, ``readAppsV1NamespacedDeploymentScale``."""
    scope = "Namespaced" if info.namespaced else ""
    words = _words(info.group)
    return f"{verb}{words}{info.version.capitalize()}{scope}{info.kind}{suffix}"


def _base(info: ResourceInfo) -> str:
    return f"/apis/{info.group}/{info.version}" if info.group else f"/api/{info.version}"


def _item_path(info: ResourceInfo) -> str:
    base = _base(info)
    if info.namespaced:
        return f"{base}/namespaces/{{namespace}}/{info.plural}/{{name}}"
    return f"{base}/{info.plural}/{{name}}"


def _collection_path(info: ResourceInfo) -> str:
    base = _base(info)
    if info.namespaced:
        return f"{base}/namespaces/{{namespace}}/{info.plural}"
    return f"{base}/{info.plural}"


def _model(infos: Iterable[ResourceInfo], source: SchemaSource | None) -> _Model:
    definitions = load_schema_definitions()
    index = _gvk_index(definitions)
    model = _Model({}, list(_ALWAYS), {})
    for info in infos:
        _add_resource(model, info, source, definitions, index)
    return model


def _add_resource(
    model: _Model,
    info: ResourceInfo,
    source: SchemaSource | None,
    definitions: dict[str, Any],
    index: dict[tuple[str, str, str], str],
) -> None:
    if info.schema_ref and info.schema_ref in definitions:
        name = info.schema_ref
        model.roots.append(name)
        list_name = name + "List"
        if list_name not in definitions:
            list_name = index.get((info.group, info.version, info.list_kind), "")
        if list_name:
            model.roots.append(list_name)
        patch_types: tuple[str, ...] = _PATCH_TYPES
    else:
        name = _custom_name(info)
        model.custom[name] = _custom_schema(info, source)
        list_name = name + "List"
        model.custom[list_name] = _custom_list_schema(info, name)
        model.roots += [_OBJECT_META, _LIST_META]
        patch_types = _CUSTOM_PATCH_TYPES
    verbs = set(info.verbs)
    gvk = _gvk(info.group, info.version, info.kind)
    scope_params: tuple[str, ...] = ("namespace",) if info.namespaced else ()
    kind = info.kind

    collection = _Path(scope_params, kind)
    if "list" in verbs and list_name:
        collection.ops["get"] = _Op(
            "list",
            _operation_id(info, "list"),
            f"list or watch objects of kind {kind}",
            gvk,
            _LIST_PARAMS,
            responses=(("200", list_name),),
            produces=_WATCH_PRODUCES,
        )
        if info.namespaced:
            everywhere = _Path((), kind)
            everywhere.ops["get"] = _Op(
                "list",
                _operation_id(info, "list", "ForAllNamespaces").replace("Namespaced", "", 1),
                f"list or watch objects of kind {kind}",
                gvk,
                _LIST_PARAMS,
                responses=(("200", list_name),),
                produces=_WATCH_PRODUCES,
            )
            model.paths[f"{_base(info)}/{info.plural}"] = everywhere
    if "create" in verbs:
        collection.ops["post"] = _Op(
            "post",
            _operation_id(info, "create"),
            f"create {_article(kind)} {kind}",
            gvk,
            _WRITE_PARAMS,
            body=name,
            responses=(("200", name), ("201", name), ("202", name)),
        )
    if "deletecollection" in verbs:
        collection.ops["delete"] = _Op(
            "deletecollection",
            _operation_id(info, "deleteCollection"),
            f"delete collection of {kind}",
            gvk,
            _DELETE_COLLECTION_PARAMS,
            body=_DELETE_OPTIONS,
            responses=(("200", _STATUS),),
        )
    if collection.ops:
        model.paths[_collection_path(info)] = collection

    item = _Path(("name", *scope_params), kind)
    if "get" in verbs:
        item.ops["get"] = _Op(
            "get",
            _operation_id(info, "read"),
            f"read the specified {kind}",
            gvk,
            responses=(("200", name),),
        )
    if "update" in verbs:
        item.ops["put"] = _Op(
            "put",
            _operation_id(info, "replace"),
            f"replace the specified {kind}",
            gvk,
            _WRITE_PARAMS,
            body=name,
            responses=(("200", name), ("201", name)),
        )
    if "patch" in verbs:
        item.ops["patch"] = _Op(
            "patch",
            _operation_id(info, "patch"),
            f"partially update the specified {kind}",
            gvk,
            _PATCH_PARAMS,
            body=_PATCH,
            responses=(("200", name), ("201", name)),
            consumes=patch_types,
        )
    if "delete" in verbs:
        item.ops["delete"] = _Op(
            "delete",
            _operation_id(info, "delete"),
            f"delete {_article(kind)} {kind}",
            gvk,
            _DELETE_PARAMS,
            body=_DELETE_OPTIONS,
            responses=(("200", _STATUS), ("202", _STATUS)),
        )
    if item.ops:
        model.paths[_item_path(info)] = item

    details = {s.name: s for s in info.known_subresources}
    for sub_name in info.subresources:
        sub = details.get(sub_name)
        if sub is None:
            continue
        if (sub.group, sub.version, sub.kind) == (info.group, info.version, info.kind):
            sub_schema = name
        else:
            sub_schema = index.get((sub.group, sub.version, sub.kind), "")
            if not sub_schema:
                continue
            model.roots.append(sub_schema)
        sub_gvk = _gvk(sub.group, sub.version, sub.kind)
        suffix = sub_name.capitalize()
        path = _Path(item.path_params, kind)
        for verb in sub.verbs:
            if verb == "get":
                path.ops["get"] = _Op(
                    "get",
                    _operation_id(info, "read", suffix),
                    f"read {sub_name} of the specified {kind}",
                    sub_gvk,
                    responses=(("200", sub_schema),),
                )
            elif verb == "update":
                path.ops["put"] = _Op(
                    "put",
                    _operation_id(info, "replace", suffix),
                    f"replace {sub_name} of the specified {kind}",
                    sub_gvk,
                    _WRITE_PARAMS,
                    body=sub_schema,
                    responses=(("200", sub_schema), ("201", sub_schema)),
                )
            elif verb == "patch":
                path.ops["patch"] = _Op(
                    "patch",
                    _operation_id(info, "patch", suffix),
                    f"partially update {sub_name} of the specified {kind}",
                    sub_gvk,
                    _PATCH_PARAMS,
                    body=_PATCH,
                    responses=(("200", sub_schema), ("201", sub_schema)),
                    consumes=patch_types,
                )
            elif verb == "create":
                path.ops["post"] = _Op(
                    "post",
                    _operation_id(info, "create", suffix),
                    f"create {sub_name} of {_article(kind)} {kind}",
                    sub_gvk,
                    _WRITE_PARAMS,
                    body=sub_schema,
                    responses=(("200", sub_schema), ("201", sub_schema), ("202", sub_schema)),
                )
        if path.ops:
            model.paths[f"{_item_path(info)}/{sub_name}"] = path


def _article(word: str) -> str:
    return "an" if word[:1] in "AEIOU" else "a"


def _path_param_text(name: str, kind: str) -> str:
    if name == "namespace":
        return "object name and auth scope, such as for teams and projects"
    return f"name of the {kind}"


# --- OpenAPI v3 -------------------------------------------------------------------------------


def _v3_parameter(name: str) -> dict[str, Any]:
    kind, text = _QUERY[name]
    return {
        "name": name,
        "in": "query",
        "description": text,
        "schema": {"type": kind, "uniqueItems": True},
    }


def _v3_content(types: Iterable[str], ref: dict[str, Any]) -> dict[str, Any]:
    return {t: {"schema": ref} for t in types}


def _v3_operation(op: _Op) -> dict[str, Any]:
    out: dict[str, Any] = {
        "tags": [_tag(op.gvk["group"], op.gvk["version"])],
        "description": op.description,
        "operationId": op.operation_id,
    }
    if op.params:
        out["parameters"] = [_v3_parameter(p) for p in op.params]
    if op.body is not None:
        ref = {"$ref": _COMPONENTS_PREFIX + op.body}
        types = op.consumes or ("*/*",)
        body: dict[str, Any] = {"content": _v3_content(types, ref)}
        if op.body != _DELETE_OPTIONS:
            body["required"] = True
        out["requestBody"] = body
    responses: dict[str, Any] = {}
    for code, schema in op.responses:
        response: dict[str, Any] = {"description": _RESPONSE_TEXT.get(code, "OK")}
        if schema is not None:
            ref = {"$ref": _COMPONENTS_PREFIX + schema}
            response["content"] = _v3_content(op.produces, ref)
        responses[code] = response
    responses["401"] = {"description": "Unauthorized"}
    out["responses"] = responses
    out["x-kubernetes-action"] = op.action
    out["x-kubernetes-group-version-kind"] = dict(op.gvk)
    return out


_RESPONSE_TEXT = {"200": "OK", "201": "Created", "202": "Accepted"}


def _v3_path_parameters(path: _Path) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [
        {
            "name": name,
            "in": "path",
            "description": _path_param_text(name, path.kind),
            "required": True,
            "schema": {"type": "string", "uniqueItems": True},
        }
        for name in path.path_params
    ]
    out.append(_v3_parameter("pretty"))
    return out


def _build(infos: tuple[ResourceInfo, ...], source: SchemaSource | None) -> dict[str, Any]:
    definitions = load_schema_definitions()
    model = _model(infos, source)
    paths: dict[str, Any] = {}
    for path, spec in model.paths.items():
        item: dict[str, Any] = {method: _v3_operation(op) for method, op in spec.ops.items()}
        item["parameters"] = _v3_path_parameters(spec)
        paths[path] = item
    custom_roots = [r for schema in model.custom.values() for r in _ref_names(schema)]
    reachable = _reachable([*model.roots, *custom_roots], definitions)
    schemas = {name: convert_schema(definitions[name]) for name in reachable}
    for name, schema in model.custom.items():
        schemas[name] = convert_schema(schema)
    return {
        "openapi": "3.0.0",
        "info": dict(_INFO),
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


def _ref_names(schema: dict[str, Any]) -> set[str]:
    found: set[str] = set()
    _refs(schema, found)
    return found


def _digest(document: dict[str, Any]) -> str:
    data = json.dumps(document, sort_keys=True, separators=(",", ":")).encode()
    return hashlib.sha512(data).hexdigest().upper()


def _group_versions(catalogue: Catalogue) -> dict[tuple[str, str], tuple[ResourceInfo, ...]]:
    out: dict[tuple[str, str], list[ResourceInfo]] = {}
    for info in catalogue:
        out.setdefault((info.group, info.version), []).append(info)
    return {key: tuple(infos) for key, infos in out.items()}


def _customs_key(infos: tuple[ResourceInfo, ...], source: SchemaSource | None) -> tuple[str, ...]:
    return tuple(
        json.dumps(source(i), sort_keys=True) if source is not None else ""
        for i in infos
        if not i.schema_ref
    )


def _document(
    infos: tuple[ResourceInfo, ...], source: SchemaSource | None
) -> tuple[dict[str, Any], str]:
    key = (infos, _customs_key(infos, source))
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


# --- OpenAPI v2 (Swagger 2.0) -----------------------------------------------------------------


def _v2_query_parameter(name: str) -> dict[str, Any]:
    kind, text = _QUERY[name]
    return {"uniqueItems": True, "type": kind, "description": text, "name": name, "in": "query"}


def _v2_operation(op: _Op) -> dict[str, Any]:
    out: dict[str, Any] = {
        "description": op.description,
        "consumes": list(op.consumes or ("*/*",)),
        "produces": list(op.produces),
        "schemes": ["https"],
        "tags": [_tag(op.gvk["group"], op.gvk["version"])],
        "operationId": op.operation_id,
    }
    params: list[dict[str, Any]] = []
    if op.body is not None:
        body: dict[str, Any] = {
            "name": "body",
            "in": "body",
            "schema": {"$ref": _DEFINITIONS_PREFIX + op.body},
        }
        if op.body != _DELETE_OPTIONS:
            body["required"] = True
        params.append(body)
    params.extend(_v2_query_parameter(p) for p in op.params)
    if params:
        out["parameters"] = params
    responses: dict[str, Any] = {}
    for code, schema in op.responses:
        response: dict[str, Any] = {"description": _RESPONSE_TEXT.get(code, "OK")}
        if schema is not None:
            response["schema"] = {"$ref": _DEFINITIONS_PREFIX + schema}
        responses[code] = response
    responses["401"] = {"description": "Unauthorized"}
    out["responses"] = responses
    out["x-kubernetes-action"] = op.action
    out["x-kubernetes-group-version-kind"] = dict(op.gvk)
    return out


def _v2_path_parameters(path: _Path) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [
        {
            "uniqueItems": True,
            "type": "string",
            "description": _path_param_text(name, path.kind),
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
    model = _model(infos, source)
    paths: dict[str, Any] = {}
    for path, spec in sorted(model.paths.items()):
        item: dict[str, Any] = {method: _v2_operation(op) for method, op in spec.ops.items()}
        item["parameters"] = _v2_path_parameters(spec)
        paths[path] = item
    custom_roots = [r for schema in model.custom.values() for r in _ref_names(schema)]
    reachable = _reachable([*model.roots, *custom_roots], definitions)
    out_defs = {name: _definition_v2(name, definitions[name]) for name in reachable}
    for name, schema in model.custom.items():
        out_defs[name] = _custom_v2(schema)
    return {
        "swagger": "2.0",
        "info": dict(_INFO),
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
    key = (infos, _customs_key(infos, schema_source))
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


# --- gnostic openapi.v2.Document, hand-encoded ------------------------------------------------
#
# Field numbers from gnostic-models' openapiv2/OpenAPIv2.proto. proto3: zero values are not
# written, except the members of a oneof (AdditionalPropertiesItem.boolean).


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1  # negative int64s as ten bytes, as Go writes them
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _tag_bytes(number: int, wire: int) -> bytes:
    return _varint(number << 3 | wire)


def _pb_len(number: int, payload: bytes) -> bytes:
    return _tag_bytes(number, 2) + _varint(len(payload)) + payload


def _pb_str(number: int, value: Any) -> bytes:
    if not isinstance(value, str) or not value:
        return b""
    return _pb_len(number, value.encode())


def _pb_strs(number: int, values: Any) -> bytes:
    if not isinstance(values, list):
        return b""
    return b"".join(_pb_len(number, v.encode()) for v in values if isinstance(v, str))


def _pb_bool(number: int, value: Any) -> bytes:
    return _tag_bytes(number, 0) + b"\x01" if value is True else b""


def _pb_int(number: int, value: Any) -> bytes:
    if isinstance(value, bool) or not isinstance(value, int | float) or not value:
        return b""
    return _tag_bytes(number, 0) + _varint(int(value))


def _pb_double(number: int, value: Any) -> bytes:
    if isinstance(value, bool) or not isinstance(value, int | float) or not value:
        return b""
    return _tag_bytes(number, 1) + struct.pack("<d", float(value))


def _yaml_text(value: Any) -> str:
    """A value as gnostic's ``Any.yaml`` carries it: JSON is YAML (flow style), and what
    kubectl's readers (yaml.Unmarshal) parse."""
    return json.dumps(value, ensure_ascii=False) + "\n"


def _pb_any(number: int, value: Any) -> bytes:
    """An ``Any`` message: ``yaml`` (2) holds the value."""
    return _pb_len(number, _pb_str(2, _yaml_text(value)))


def _pb_vendor(number: int, node: dict[str, Any]) -> bytes:
    """The ``x-`` keys of ``node`` as repeated NamedAny (name=1, value=2)."""
    return b"".join(
        _pb_len(number, _pb_str(1, key) + _pb_any(2, value))
        for key, value in node.items()
        if key.startswith("x-")
    )


def _pb_schema(node: dict[str, Any]) -> bytes:
    out = bytearray()
    out += _pb_str(1, node.get("$ref"))
    out += _pb_str(2, node.get("format"))
    out += _pb_str(3, node.get("title"))
    out += _pb_str(4, node.get("description"))
    if "default" in node:
        out += _pb_any(5, node["default"])
    out += _pb_double(6, node.get("multipleOf"))
    out += _pb_double(7, node.get("maximum"))
    out += _pb_bool(8, node.get("exclusiveMaximum"))
    out += _pb_double(9, node.get("minimum"))
    out += _pb_bool(10, node.get("exclusiveMinimum"))
    out += _pb_int(11, node.get("maxLength"))
    out += _pb_int(12, node.get("minLength"))
    out += _pb_str(13, node.get("pattern"))
    out += _pb_int(14, node.get("maxItems"))
    out += _pb_int(15, node.get("minItems"))
    out += _pb_bool(16, node.get("uniqueItems"))
    out += _pb_int(17, node.get("maxProperties"))
    out += _pb_int(18, node.get("minProperties"))
    out += _pb_strs(19, node.get("required"))
    for value in node.get("enum") or ():
        out += _pb_any(20, value)
    additional = node.get("additionalProperties")
    if isinstance(additional, dict):  # AdditionalPropertiesItem: oneof schema=1, boolean=2
        out += _pb_len(21, _pb_len(1, _pb_schema(additional)))
    elif isinstance(additional, bool):
        out += _pb_len(21, _tag_bytes(2, 0) + (b"\x01" if additional else b"\x00"))
    kind = node.get("type")
    if isinstance(kind, str):  # TypeItem: repeated string value=1
        out += _pb_len(22, _pb_len(1, kind.encode()))
    items = node.get("items")
    if isinstance(items, dict):  # ItemsItem: repeated Schema schema=1
        out += _pb_len(23, _pb_len(1, _pb_schema(items)))
    for sub in node.get("allOf") or ():
        if isinstance(sub, dict):
            out += _pb_len(24, _pb_schema(sub))
    properties = node.get("properties")
    if isinstance(properties, dict):  # Properties: repeated NamedSchema additional_properties=1
        named = b"".join(
            _pb_len(1, _pb_str(1, name) + _pb_len(2, _pb_schema(sub)))
            for name, sub in properties.items()
            if isinstance(sub, dict)
        )
        out += _pb_len(25, named)
    out += _pb_str(26, node.get("discriminator"))
    out += _pb_bool(27, node.get("readOnly"))
    if "example" in node:
        out += _pb_any(30, node["example"])
    out += _pb_vendor(31, node)
    return bytes(out)


def _pb_parameter(param: dict[str, Any]) -> bytes:
    """A ParametersItem (parameter=1) holding a Parameter: body_parameter=1, or
    non_body_parameter=2 with query (3) or path (4) sub-schemas."""
    where = param.get("in")
    if where == "body":
        body = (
            _pb_str(1, param.get("description"))
            + _pb_str(2, param.get("name"))
            + _pb_str(3, where)
            + _pb_bool(4, param.get("required"))
            + _pb_len(5, _pb_schema(param.get("schema") or {}))
            + _pb_vendor(6, param)
        )
        return _pb_len(1, _pb_len(1, body))
    common = (
        _pb_bool(1, param.get("required"))
        + _pb_str(2, where)
        + _pb_str(3, param.get("description"))
        + _pb_str(4, param.get("name"))
    )
    if where == "path":  # PathParameterSubSchema: type=5, unique_items=19
        sub = common + _pb_str(5, param.get("type")) + _pb_bool(19, param.get("uniqueItems"))
        return _pb_len(1, _pb_len(2, _pb_len(4, sub)))
    # QueryParameterSubSchema: type=6, unique_items=20
    sub = common + _pb_str(6, param.get("type")) + _pb_bool(20, param.get("uniqueItems"))
    return _pb_len(1, _pb_len(2, _pb_len(3, sub)))


def _pb_operation(op: dict[str, Any]) -> bytes:
    out = bytearray()
    out += _pb_strs(1, op.get("tags"))
    out += _pb_str(3, op.get("description"))
    out += _pb_str(5, op.get("operationId"))
    out += _pb_strs(6, op.get("produces"))
    out += _pb_strs(7, op.get("consumes"))
    for param in op.get("parameters") or ():
        out += _pb_len(8, _pb_parameter(param))
    codes = bytearray()  # Responses: repeated NamedResponseValue response_code=1
    for code, response in (op.get("responses") or {}).items():
        body = _pb_str(1, response.get("description"))
        if isinstance(response.get("schema"), dict):  # SchemaItem: schema=1
            body += _pb_len(2, _pb_len(1, _pb_schema(response["schema"])))
        value = _pb_len(1, body)  # ResponseValue: response=1
        codes += _pb_len(1, _pb_str(1, code) + _pb_len(2, value))
    out += _pb_len(9, bytes(codes))
    out += _pb_strs(10, op.get("schemes"))
    out += _pb_vendor(13, op)
    return bytes(out)


_PATH_ITEM_FIELDS = {"get": 2, "put": 3, "post": 4, "delete": 5, "options": 6, "head": 7}


def _pb_path_item(item: dict[str, Any]) -> bytes:
    out = bytearray()
    for method, number in (*_PATH_ITEM_FIELDS.items(), ("patch", 8)):
        op = item.get(method)
        if isinstance(op, dict):
            out += _pb_len(number, _pb_operation(op))
    for param in item.get("parameters") or ():
        out += _pb_len(9, _pb_parameter(param))
    out += _pb_vendor(10, item)
    return bytes(out)


def swagger_protobuf(document: dict[str, Any]) -> bytes:
    """A Swagger 2.0 document (as :func:`swagger` builds them) as gnostic's
    ``openapi.v2.Document`` protobuf."""
    out = bytearray()
    out += _pb_str(1, document.get("swagger"))
    info = document.get("info") or {}
    out += _pb_len(2, _pb_str(1, info.get("title")) + _pb_str(2, info.get("version")))
    paths = b"".join(  # Paths: repeated NamedPathItem path=2
        _pb_len(2, _pb_str(1, path) + _pb_len(2, _pb_path_item(item)))
        for path, item in (document.get("paths") or {}).items()
    )
    out += _pb_len(8, paths)
    definitions = b"".join(  # Definitions: repeated NamedSchema additional_properties=1
        _pb_len(1, _pb_str(1, name) + _pb_len(2, _pb_schema(schema)))
        for name, schema in (document.get("definitions") or {}).items()
    )
    out += _pb_len(9, definitions)
    for requirement in document.get("security") or ():  # SecurityRequirement
        named = b"".join(  # NamedStringArray{name=1, value=StringArray{value=1}}
            _pb_len(1, _pb_str(1, name) + _pb_len(2, _pb_strs(1, scopes)))
            for name, scopes in requirement.items()
        )
        out += _pb_len(12, named)
    security = document.get("securityDefinitions") or {}
    if security:  # SecurityDefinitions: repeated NamedSecurityDefinitionsItem
        named = b""
        for name, scheme in security.items():
            api_key = (  # ApiKeySecurity: type=1 name=2 in=3 description=4
                _pb_str(1, scheme.get("type"))
                + _pb_str(2, scheme.get("name"))
                + _pb_str(3, scheme.get("in"))
                + _pb_str(4, scheme.get("description"))
            )
            named += _pb_len(1, _pb_str(1, name) + _pb_len(2, _pb_len(2, api_key)))
        out += _pb_len(13, named)
    return bytes(out)
