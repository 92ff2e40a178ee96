"""The model both OpenAPI versions are built from: per resource, the paths kube-apiserver serves
and each path's operations (verbs, parameters, bodies, responses, operationId), and the schemas
of kinds without a built-in definition (a CRD's)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from kubelite.api.catalogue import (
    ResourceInfo,
    custom_schema,
    load_schema_definitions,
)
from kubelite.server.openapi.parameters import (
    CUSTOM_PATCH_TYPES,
    DELETE_COLLECTION_PARAMS,
    DELETE_PARAMS,
    LIST_PARAMS,
    PATCH_PARAMS,
    PATCH_TYPES,
    PRODUCES,
    WATCH_PRODUCES,
    WRITE_PARAMS,
)
from kubelite.server.openapi.schemas import (
    ALWAYS,
    DEFS_PREFIX,
    DELETE_OPTIONS,
    LIST_META,
    OBJECT_META,
    PATCH,
    STATUS,
    collect_refs,
    gvk_index,
    reachable_definitions,
)

#: A function giving the OpenAPI v3 schema of a kind without a built-in definition (a CRD's
#: ``openAPIV3Schema`` for that version), or None if it has none.
SchemaSource = Callable[[ResourceInfo], dict[str, Any] | None]


def group_version_path(group: str, version: str) -> str:
    """``api/v1`` for the core group, else ``apis/<group>/<version>``: the key under
    ``/openapi/v3``'s ``paths`` and the suffix of the document's URL."""
    return f"apis/{group}/{version}" if group else f"api/{version}"


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
            "metadata": {"$ref": DEFS_PREFIX + OBJECT_META, "description": _METADATA_TEXT},
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
                "items": {"$ref": DEFS_PREFIX + item},
            },
            "kind": {"type": "string", "description": _KIND_TEXT},
            "metadata": {"$ref": DEFS_PREFIX + LIST_META, "description": _METADATA_TEXT},
        },
        "x-kubernetes-group-version-kind": [_gvk(info.group, info.version, info.list_kind)],
    }


@dataclass(frozen=True)
class Op:
    """One operation of one path, for both documents."""

    action: str  # x-kubernetes-action: get list post put patch delete deletecollection
    operation_id: str
    description: str
    gvk: dict[str, str]
    params: tuple[str, ...] = ()
    body: str | None = None  # the request body's definition
    responses: tuple[tuple[str, str | None], ...] = ()  # (code, definition or None)
    consumes: tuple[str, ...] = ()  # request media types (patch)
    produces: tuple[str, ...] = PRODUCES


@dataclass
class PathItem:
    path_params: tuple[str, ...]
    kind: str  # for the path parameters' descriptions
    ops: dict[str, Op] = field(default_factory=dict)  # HTTP method (lower case) -> operation


@dataclass
class _Model:
    paths: dict[str, PathItem]
    roots: list[str]  # built-in definitions the documents need
    custom: dict[str, dict[str, Any]]  # custom definitions (catalogue's JSON Schema style)

    def reachable(self, definitions: dict[str, Any]) -> list[str]:
        """The built-in definitions a document of this model holds: those its roots and its
        custom schemas refer to, and theirs in turn."""
        custom_roots = [r for schema in self.custom.values() for r in ref_names(schema)]
        return reachable_definitions([*self.roots, *custom_roots], definitions)


def _words(group: str) -> str:
    """``Core``, ``Apps``, ``RbacAuthorization``, ``CertManagerIo``: a group in operation ids."""
    group = group.removesuffix(".k8s.io").replace("-", ".")
    return "".join(w[:1].upper() + w[1:] for w in group.split(".") if w) or "Core"


def operation_tag(group: str, version: str) -> str:
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


def build_model(infos: Iterable[ResourceInfo], source: SchemaSource | None) -> _Model:
    definitions = load_schema_definitions()
    index = gvk_index(definitions)
    model = _Model({}, list(ALWAYS), {})
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
        patch_types: tuple[str, ...] = PATCH_TYPES
    else:
        name = _custom_name(info)
        model.custom[name] = _custom_schema(info, source)
        list_name = name + "List"
        model.custom[list_name] = _custom_list_schema(info, name)
        model.roots += [OBJECT_META, LIST_META]
        patch_types = CUSTOM_PATCH_TYPES
    verbs = set(info.verbs)
    gvk = _gvk(info.group, info.version, info.kind)
    scope_params: tuple[str, ...] = ("namespace",) if info.namespaced else ()
    kind = info.kind

    collection = PathItem(scope_params, kind)
    if "list" in verbs and list_name:
        collection.ops["get"] = Op(
            "list",
            _operation_id(info, "list"),
            f"list or watch objects of kind {kind}",
            gvk,
            LIST_PARAMS,
            responses=(("200", list_name),),
            produces=WATCH_PRODUCES,
        )
        if info.namespaced:
            everywhere = PathItem((), kind)
            everywhere.ops["get"] = Op(
                "list",
                _operation_id(info, "list", "ForAllNamespaces").replace("Namespaced", "", 1),
                f"list or watch objects of kind {kind}",
                gvk,
                LIST_PARAMS,
                responses=(("200", list_name),),
                produces=WATCH_PRODUCES,
            )
            model.paths[f"{_base(info)}/{info.plural}"] = everywhere
    if "create" in verbs:
        collection.ops["post"] = Op(
            "post",
            _operation_id(info, "create"),
            f"create {_article(kind)} {kind}",
            gvk,
            WRITE_PARAMS,
            body=name,
            responses=(("200", name), ("201", name), ("202", name)),
        )
    if "deletecollection" in verbs:
        collection.ops["delete"] = Op(
            "deletecollection",
            _operation_id(info, "deleteCollection"),
            f"delete collection of {kind}",
            gvk,
            DELETE_COLLECTION_PARAMS,
            body=DELETE_OPTIONS,
            responses=(("200", STATUS),),
        )
    if collection.ops:
        model.paths[_collection_path(info)] = collection

    item = PathItem(("name", *scope_params), kind)
    if "get" in verbs:
        item.ops["get"] = Op(
            "get",
            _operation_id(info, "read"),
            f"read the specified {kind}",
            gvk,
            responses=(("200", name),),
        )
    if "update" in verbs:
        item.ops["put"] = Op(
            "put",
            _operation_id(info, "replace"),
            f"replace the specified {kind}",
            gvk,
            WRITE_PARAMS,
            body=name,
            responses=(("200", name), ("201", name)),
        )
    if "patch" in verbs:
        item.ops["patch"] = Op(
            "patch",
            _operation_id(info, "patch"),
            f"partially update the specified {kind}",
            gvk,
            PATCH_PARAMS,
            body=PATCH,
            responses=(("200", name), ("201", name)),
            consumes=patch_types,
        )
    if "delete" in verbs:
        item.ops["delete"] = Op(
            "delete",
            _operation_id(info, "delete"),
            f"delete {_article(kind)} {kind}",
            gvk,
            DELETE_PARAMS,
            body=DELETE_OPTIONS,
            responses=(("200", STATUS), ("202", STATUS)),
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
        path = PathItem(item.path_params, kind)
        for verb in sub.verbs:
            if verb == "get":
                path.ops["get"] = Op(
                    "get",
                    _operation_id(info, "read", suffix),
                    f"read {sub_name} of the specified {kind}",
                    sub_gvk,
                    responses=(("200", sub_schema),),
                )
            elif verb == "update":
                path.ops["put"] = Op(
                    "put",
                    _operation_id(info, "replace", suffix),
                    f"replace {sub_name} of the specified {kind}",
                    sub_gvk,
                    WRITE_PARAMS,
                    body=sub_schema,
                    responses=(("200", sub_schema), ("201", sub_schema)),
                )
            elif verb == "patch":
                path.ops["patch"] = Op(
                    "patch",
                    _operation_id(info, "patch", suffix),
                    f"partially update {sub_name} of the specified {kind}",
                    sub_gvk,
                    PATCH_PARAMS,
                    body=PATCH,
                    responses=(("200", sub_schema), ("201", sub_schema)),
                    consumes=patch_types,
                )
            elif verb == "create":
                path.ops["post"] = Op(
                    "post",
                    _operation_id(info, "create", suffix),
                    f"create {sub_name} of {_article(kind)} {kind}",
                    sub_gvk,
                    WRITE_PARAMS,
                    body=sub_schema,
                    responses=(("200", sub_schema), ("201", sub_schema), ("202", sub_schema)),
                )
        if path.ops:
            model.paths[f"{_item_path(info)}/{sub_name}"] = path


def _article(word: str) -> str:
    return "an" if word[:1] in "AEIOU" else "a"


def path_param_text(name: str, kind: str) -> str:
    if name == "namespace":
        return "object name and auth scope, such as for teams and projects"
    return f"name of the {kind}"


RESPONSE_TEXT = {"200": "OK", "201": "Created", "202": "Accepted"}


def ref_names(schema: dict[str, Any]) -> set[str]:
    found: set[str] = set()
    collect_refs(schema, found)
    return found


def customs_key(infos: tuple[ResourceInfo, ...], source: SchemaSource | None) -> tuple[str, ...]:
    return tuple(
        json.dumps(source(i), sort_keys=True) if source is not None else ""
        for i in infos
        if not i.schema_ref
    )
