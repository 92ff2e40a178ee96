"""CustomResourceDefinitions (apiextensions.k8s.io/v1): the CRD object's own rules, its status,
and the ResourceInfos it declares, one per served version.

A CRD is stored like any other object. What apiextensions-apiserver adds, kubelite does here:

- defaults (``singular``, ``listKind``, ``conversion.strategy: None``) and validation, with the
  422 texts of apiextensions' validation.go for the rules most often hit (name, group, scope,
  names, versions with exactly one storage version, structural schemas, scale paths, printer
  column types; group, scope, plural and kind are immutable);
- the status its controllers write: ``acceptedNames``, ``storedVersions`` and the conditions
  ``NamesAccepted`` and ``Established`` (set at once, with the write itself: kubelite serves a
  CRD's kinds as soon as it is stored), or NamesAccepted False when another kind of the group
  already uses the plural or kind;
- the ``customresourcecleanup.apiextensions.k8s.io`` finalizer, so that deleting a CRD first
  deletes its objects (:mod:`kubelite.api.controllers.crd`) and then the CRD;
- :func:`infos`: the declaration of each served version as a ResourceInfo, so custom objects go
  through the same registry, routes, discovery, OpenAPI and Table code as built-in kinds.

Conversion: ``None`` rewrites apiVersion; ``Webhook`` (its rules in
:mod:`kubelite.api.kinds.apiextensions.crdconversion`) puts the webhook in every served version's
ResourceInfo, and the kind table gives the kind's storages the converter that calls it.
"""

from __future__ import annotations

from typing import Any

import orjson

from kubelite.api import errors
from kubelite.api.catalogue import STANDARD_VERBS, Catalogue, Column, ResourceInfo
from kubelite.api.errors import Cause
from kubelite.api.kinds.apiextensions import crdconversion as crd_conversion
from kubelite.api.kinds.apiextensions import crdrules as rules_check
from kubelite.api.machinery.names import (
    DNS1035_MESSAGE,
    SUBDOMAIN_MESSAGE,
    is_dns1035,
    is_subdomain,
)

Obj = dict[str, Any]

GROUP = "apiextensions.k8s.io"
PLURAL = "customresourcedefinitions"
KIND = "CustomResourceDefinition"
CLEANUP_FINALIZER = "customresourcecleanup.apiextensions.k8s.io"
SCOPES = ("Cluster", "Namespaced")
COLUMN_TYPES = ("boolean", "date", "integer", "number", "string")
_KIND_PATTERN = "[a-z]([-a-z0-9]*[a-z0-9])?"
#: the Age column of a CRD without additionalPrinterColumns (apiextensions' defaulting)
AGE = Column("Age", "date", json_path=".metadata.creationTimestamp", render="age")


# --- defaults and validation -------------------------------------------------------------------


def apply_defaults(crd: Obj) -> Obj:
    spec = crd.get("spec")
    if not isinstance(spec, dict):
        return crd
    names = spec.get("names")
    if isinstance(names, dict) and isinstance(names.get("kind"), str) and names["kind"]:
        names.setdefault("singular", names["kind"].lower())
        names.setdefault("listKind", names["kind"] + "List")
    crd_conversion.apply_defaults(spec)
    return crd


def validate(crd: Obj, old: Obj | None = None) -> None:
    """Raise kube-apiserver's 422 for an invalid CRD (or an invalid change of ``old``)."""
    causes = _causes(crd)
    spec = crd.get("spec")
    if isinstance(spec, dict):
        old_spec = old.get("spec") if old is not None else None
        causes += crd_conversion.causes(
            spec,
            old_spec if isinstance(old_spec, dict) else None,
            old_established=old is not None and is_established(old),
        )
    if old is not None:
        causes += _immutable(old, crd)
    if causes:
        name = str((crd.get("metadata") or {}).get("name", ""))
        raise errors.invalid(KIND, GROUP, name, causes)


def _invalid(field: str, value: Any, message: str) -> Cause:
    return Cause("FieldValueInvalid", f"Invalid value: {_go(value)}: {message}", field)


def _required(field: str, message: str = "") -> Cause:
    text = "Required value" + (f": {message}" if message else "")
    return Cause("FieldValueRequired", text, field)


def _unsupported(field: str, value: Any, supported: tuple[str, ...]) -> Cause:
    listed = ", ".join(f'"{s}"' for s in supported)
    return Cause(
        "FieldValueNotSupported",
        f"Unsupported value: {_go(value)}: supported values: {listed}",
        field,
    )


def _go(value: Any) -> str:
    """A value as Go's field errors print it (strings quoted, numbers bare)."""
    if isinstance(value, str):
        return orjson.dumps(value).decode()
    if value is None:
        return '"null"'
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return orjson.dumps(value).decode()


def _causes(crd: Obj) -> list[Cause]:
    causes: list[Cause] = []
    spec = crd.get("spec")
    if not isinstance(spec, dict):
        return [_required("spec")]
    group = spec.get("group")
    found = spec.get("names")
    names: Obj = found if isinstance(found, dict) else {}
    plural = names.get("plural") if isinstance(names.get("plural"), str) else ""
    name = (crd.get("metadata") or {}).get("name", "")
    if isinstance(group, str) and plural and name != f"{plural}.{group}":
        causes.append(_invalid("metadata.name", name, 'must be spec.names.plural+"."+spec.group'))
    if not isinstance(group, str) or not group:
        causes.append(_required("spec.group"))
    elif "." not in group:
        causes.append(_invalid("spec.group", group, "should be a domain with at least one dot"))
    elif not is_subdomain(group):
        causes.append(_invalid("spec.group", group, SUBDOMAIN_MESSAGE))
    scope = spec.get("scope")
    if scope not in SCOPES:
        if not scope:
            causes.append(_required("spec.scope"))
        else:
            causes.append(_unsupported("spec.scope", scope, SCOPES))
    causes += _names_causes(names)
    causes += _versions_causes(spec.get("versions"))
    return causes


def _names_causes(names: Obj) -> list[Cause]:
    causes: list[Cause] = []
    for field in ("plural", "singular"):
        value = names.get(field)
        if not value:
            if field == "plural":
                causes.append(_required(f"spec.names.{field}"))
        elif not isinstance(value, str) or not is_dns1035(value):
            causes.append(_invalid(f"spec.names.{field}", value, DNS1035_MESSAGE))
    for field in ("kind", "listKind"):
        value = names.get(field)
        if not value:
            causes.append(_required(f"spec.names.{field}"))
        elif not isinstance(value, str) or not is_dns1035(value.lower()):
            message = f"may have mixed case, but should otherwise match: {_KIND_PATTERN}"
            causes.append(_invalid(f"spec.names.{field}", value, message))
    if names.get("kind") and names.get("kind") == names.get("listKind"):
        causes.append(
            _invalid(
                "spec.names.listKind", names["listKind"], "kind and listKind may not be the same"
            )
        )
    for index, short in enumerate(names.get("shortNames") or []):
        if not isinstance(short, str) or not is_dns1035(short):
            causes.append(_invalid(f"spec.names.shortNames[{index}]", short, DNS1035_MESSAGE))
    return causes


def _go_versions(versions: Any) -> str:
    """The versions as Go's %#v prints them in kube-apiserver's message (pointers as
    addresses, which differ from run to run there too)."""
    if not isinstance(versions, list) or not versions:
        return "[]apiextensions.CustomResourceDefinitionVersion(nil)"
    parts = []
    for v in versions:
        v = v if isinstance(v, dict) else {}
        schema = "(0xc000a1e000)" if v.get("schema") else "(nil)"
        subresources = "(0xc000a1e010)" if v.get("subresources") else "(nil)"
        parts.append(
            "apiextensions.CustomResourceDefinitionVersion{"
            f"Name:{orjson.dumps(str(v.get('name', ''))).decode()}, "
            f"Served:{str(bool(v.get('served'))).lower()}, "
            f"Storage:{str(bool(v.get('storage'))).lower()}, "
            f"Deprecated:{str(bool(v.get('deprecated'))).lower()}, "
            "DeprecationWarning:(*string)(nil), "
            f"Schema:(*apiextensions.CustomResourceValidation){schema}, "
            f"Subresources:(*apiextensions.CustomResourceSubresources){subresources}, "
            "AdditionalPrinterColumns:[]apiextensions.CustomResourceColumnDefinition(nil), "
            "SelectableFields:[]apiextensions.SelectableField(nil)}"
        )
    return "[]apiextensions.CustomResourceDefinitionVersion{" + ", ".join(parts) + "}"


def _versions_causes(versions: Any) -> list[Cause]:
    causes: list[Cause] = []
    items = versions if isinstance(versions, list) else []
    storage = [v for v in items if isinstance(v, dict) and v.get("storage") is True]
    if len(storage) != 1:
        causes.append(
            Cause(
                "FieldValueInvalid",
                f"Invalid value: {_go_versions(versions)}: must have exactly one version marked "
                "as storage version",
                "spec.versions",
            )
        )
    seen: set[str] = set()
    for index, version in enumerate(items):
        at = f"spec.versions[{index}]"
        if not isinstance(version, dict):
            causes.append(_invalid(at, version, "must be an object"))
            continue
        name = version.get("name")
        if not isinstance(name, str) or not is_dns1035(name):
            causes.append(_invalid(f"{at}.name", name, DNS1035_MESSAGE))
        elif name in seen:
            causes.append(_invalid(f"{at}.name", name, "must be unique"))
        else:
            seen.add(name)
        causes += _schema_causes(at, version.get("schema"))
        causes += _subresource_causes(at, version.get("subresources"))
        for c_index, column in enumerate(version.get("additionalPrinterColumns") or []):
            causes += _column_causes(f"{at}.additionalPrinterColumns[{c_index}]", column)
    return causes


def _schema_causes(at: str, schema: Any) -> list[Cause]:
    root = (schema or {}).get("openAPIV3Schema") if isinstance(schema, dict) else None
    path = f"{at}.schema.openAPIV3Schema"
    if not isinstance(root, dict):
        return [_required(path, "schemas are required")]
    causes: list[Cause] = []
    if "type" not in root:
        causes.append(_required(f"{path}.type", "must not be empty at the root"))
    elif root["type"] != "object":
        causes.append(_invalid(f"{path}.type", root["type"], "must be object at the root"))
    meta = (root.get("properties") or {}).get("metadata")
    if isinstance(meta, dict) and set(meta.get("properties") or {}) - {"name", "generateName"}:
        causes.append(
            Cause(
                "FieldValueForbidden",
                "Forbidden: must not specify anything other than name and generateName, but "
                "metadata is implicitly specified",
                f"{path}.properties[metadata]",
            )
        )
    causes += _structural(path, root, root=True)
    return causes


def _structural(path: str, node: Obj, *, root: bool = False) -> list[Cause]:
    """The schema's errors, then its rules' compile errors (apiextensions' OpenAPISchemaErrorList:
    SchemaErrors before CELErrors)."""
    schema_causes: list[Cause] = []
    cel_causes: list[Cause] = []
    _walk(path, node, root, schema_causes, cel_causes)
    return schema_causes + cel_causes


def _walk(path: str, node: Obj, root: bool, schema_causes: list[Cause], cel: list[Cause]) -> None:
    """Every node says its type, unless it is int-or-string or preserves unknown fields."""
    before = len(schema_causes)
    typed = (
        "type" in node
        or node.get("x-kubernetes-int-or-string") is True
        or node.get("x-kubernetes-preserve-unknown-fields") is True
    )
    if not typed and not root:
        schema_causes.append(_required(f"{path}.type", "must not be empty for specified fields"))
    for key, child in (node.get("properties") or {}).items():
        if isinstance(child, dict) and not (root and key == "metadata"):
            _walk(f"{path}.properties[{key}]", child, False, schema_causes, cel)
    items = node.get("items")
    if isinstance(items, dict):
        _walk(f"{path}.items", items, False, schema_causes, cel)
    additional = node.get("additionalProperties")
    if isinstance(additional, dict):
        _walk(f"{path}.additionalProperties", additional, False, schema_causes, cel)
        if node.get("properties"):
            schema_causes.append(
                Cause(
                    "FieldValueForbidden",
                    "Forbidden: additionalProperties and properties are mutual exclusive",
                    f"{path}.additionalProperties",
                )
            )
    rules = [r if isinstance(r, dict) else {} for r in node.get("x-kubernetes-validations") or []]
    for index, rule in enumerate(rules):
        schema_causes += rules_check.rule_schema_causes(
            f"{path}.x-kubernetes-validations[{index}]", rule
        )
    # kube compiles a node's rules only when it and the nodes under it have no schema errors
    if len(schema_causes) == before:
        for index, rule in enumerate(rules):
            cel += rules_check.rule_cel_causes(f"{path}.x-kubernetes-validations[{index}]", rule)


def _subresource_causes(at: str, subresources: Any) -> list[Cause]:
    if not isinstance(subresources, dict):
        return []
    scale = subresources.get("scale")
    if not isinstance(scale, dict):
        return []
    causes: list[Cause] = []
    for field, under in (
        ("specReplicasPath", ".spec."),
        ("statusReplicasPath", ".status."),
        ("labelSelectorPath", None),
    ):
        value = scale.get(field)
        where = f"{at}.subresources.scale.{field}"
        if value is None:
            if field != "labelSelectorPath":
                causes.append(_required(where))
        elif not isinstance(value, str) or (under is not None and not value.startswith(under)):
            causes.append(_invalid(where, value, f"should be a json path under {under}"))
        elif under is None and not value.startswith((".spec.", ".status.")):
            causes.append(
                _invalid(where, value, "should be a json path under either .spec or .status")
            )
    return causes


def _column_causes(at: str, column: Any) -> list[Cause]:
    if not isinstance(column, dict):
        return [_invalid(at, column, "must be an object")]
    causes: list[Cause] = []
    if not column.get("name"):
        causes.append(_required(f"{at}.name"))
    if column.get("type") not in COLUMN_TYPES:
        causes.append(_unsupported(f"{at}.type", column.get("type"), COLUMN_TYPES))
    if not column.get("jsonPath"):
        causes.append(_required(f"{at}.jsonPath"))
    return causes


def _immutable(old: Obj, new: Obj) -> list[Cause]:
    causes = []
    for field in ("group", "scope"):
        before, after = old["spec"].get(field), new["spec"].get(field)
        if before != after:
            causes.append(_invalid(f"spec.{field}", after, "field is immutable"))
    for field in ("plural", "kind"):
        before = (old["spec"].get("names") or {}).get(field)
        after = (new["spec"].get("names") or {}).get(field)
        if before != after:
            causes.append(_invalid(f"spec.names.{field}", after, "field is immutable"))
    return causes


# --- status ------------------------------------------------------------------------------------


def storage_version(crd: Obj) -> str:
    for version in crd["spec"]["versions"]:
        if version.get("storage"):
            return str(version["name"])
    raise ValueError("a validated CRD has a storage version")


def set_status(crd: Obj, catalogue: Catalogue, now: str) -> Obj:
    """Fill in what apiextensions' controllers would: accepted names, stored versions, and the
    NamesAccepted and Established conditions (kept with their times while unchanged)."""
    spec = crd["spec"]
    names = spec["names"]
    status = crd.setdefault("status", {})
    stored = list(status.get("storedVersions") or [])
    current = storage_version(crd)
    if current not in stored:
        stored.append(current)
    status["storedVersions"] = stored
    conflict = _name_conflict(crd, catalogue)
    old = {c.get("type"): c for c in status.get("conditions") or [] if isinstance(c, dict)}
    if conflict is None:
        status["acceptedNames"] = dict(names)
        accepted = _condition(
            old, "NamesAccepted", "True", "NoConflicts", "no conflicts found", now
        )
        established = _condition(
            old,
            "Established",
            "True",
            "InitialNamesAccepted",
            "the initial names have been accepted",
            now,
        )
    else:
        status.setdefault("acceptedNames", {"plural": "", "kind": ""})
        reason, message = conflict
        accepted = _condition(old, "NamesAccepted", "False", reason, message, now)
        established = _condition(
            old, "Established", "False", "NotAccepted", "not all names are accepted", now
        )
    status["conditions"] = [accepted, established]
    return crd


def _condition(
    old: dict[Any, Obj], kind: str, value: str, reason: str, message: str, now: str
) -> Obj:
    before = old.get(kind)
    since = before["lastTransitionTime"] if before and before.get("status") == value else now
    return {
        "type": kind,
        "status": value,
        "lastTransitionTime": since,
        "reason": reason,
        "message": message,
    }


def _name_conflict(crd: Obj, catalogue: Catalogue) -> tuple[str, str] | None:
    spec = crd["spec"]
    group, names = spec["group"], spec["names"]
    own = crd["metadata"].get("name")
    for info in catalogue:
        if info.group != group or _owner(info) == own:
            continue
        if info.plural == names["plural"]:
            return "PluralConflict", f'"{names["plural"]}" is already in use'
        if info.kind == names["kind"]:
            return "KindConflict", f'"{names["kind"]}" is already in use'
    return None


def _owner(info: ResourceInfo) -> str:
    return f"{info.plural}.{info.group}"


def is_established(crd: Obj) -> bool:
    for condition in (crd.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Established":
            return bool(condition.get("status") == "True")
    return False


# --- the declared kinds ----------------------------------------------------------------------


def infos(crd: Obj) -> list[ResourceInfo]:
    """One ResourceInfo per served version of an established CRD (none otherwise). A CRD being
    deleted keeps its kinds served until it is gone, so its objects' finalizers can run."""
    if not is_established(crd):
        return []
    return _infos(crd, served_only=True)


def storage_info(crd: Obj) -> ResourceInfo:
    """The ResourceInfo of the storage version, served or not (to reach every object)."""
    storage = storage_version(crd)
    return next(i for i in _infos(crd, served_only=False) if i.version == storage)


def _infos(crd: Obj, *, served_only: bool) -> list[ResourceInfo]:
    from kubelite.api.catalogue.fieldlabels import FieldLabel
    from kubelite.api.machinery.selectors import json_path_keys

    spec = crd["spec"]
    names = spec["names"]
    group = spec["group"]
    storage = storage_version(crd)
    schemas = {
        str(v["name"]): orjson.dumps(
            (v.get("schema") or {}).get("openAPIV3Schema") or {}, option=orjson.OPT_SORT_KEYS
        ).decode()
        for v in spec["versions"]
    }
    conversion = crd_conversion.conversion_text(crd, storage, schemas[storage])
    out = []
    for version in spec["versions"]:
        if served_only and not version.get("served"):
            continue
        subresources = version.get("subresources") or {}
        served_subs = tuple(s for s in ("scale", "status") if isinstance(subresources.get(s), dict))
        scale = subresources.get("scale") or {}
        scale_paths: tuple[str, str, str] | tuple[()] = (
            (
                scale.get("specReplicasPath", ""),
                scale.get("statusReplicasPath", ""),
                scale.get("labelSelectorPath", ""),
            )
            if "scale" in served_subs
            else ()
        )
        # apiextensions' crConverter.ConvertFieldLabel: metadata.name, metadata.namespace when
        # namespaced, and this version's selectableFields, each the jsonPath without its dot
        selectable = [
            str(f["jsonPath"])
            for f in version.get("selectableFields") or ()
            if isinstance(f, dict) and isinstance(f.get("jsonPath"), str)
        ]
        meta = ("metadata.name", "metadata.namespace")[: 2 if spec["scope"] == "Namespaced" else 1]
        field_labels = tuple(FieldLabel.at(name) for name in meta) + tuple(
            FieldLabel(path.removeprefix("."), (json_path_keys(path),)) for path in selectable
        )
        out.append(
            ResourceInfo(
                group=group,
                version=version["name"],
                kind=names["kind"],
                plural=names["plural"],
                namespaced=spec["scope"] == "Namespaced",
                singular=names.get("singular") or names["kind"].lower(),
                verbs=STANDARD_VERBS,
                subresources=served_subs,
                short_names=tuple(names.get("shortNames") or ()),
                categories=tuple(names.get("categories") or ()),
                list_kind=names.get("listKind") or names["kind"] + "List",
                table_columns=_columns(version.get("additionalPrinterColumns")),
                builtin=False,
                storage_version="" if version["name"] == storage else f"{group}/{storage}",
                schema=schemas[str(version["name"])],
                scale_paths=scale_paths,
                field_labels=field_labels,
                conversion=conversion,
            )
        )
    return out


def _columns(columns: Any) -> tuple[Column, ...]:
    name = Column(
        "Name",
        "string",
        "name",
        "Name must be unique within a namespace. Is required when creating resources, although "
        "some resources may allow a client to request the generation of an appropriate name "
        "automatically. Name is primarily intended for creation idempotence and configuration "
        "definition. Cannot be updated. More info: "
        "https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names",
        json_path=".metadata.name",
    )
    if not columns:
        return (name, AGE)
    out = [name]
    for column in columns:
        kind = column.get("type", "string")
        out.append(
            Column(
                column["name"],
                kind,
                column.get("format", ""),
                column.get("description", ""),
                int(column.get("priority", 0)),
                json_path=column.get("jsonPath", ""),
                render="age" if kind == "date" else "value",
            )
        )
    return tuple(out)


__all__ = [
    "CLEANUP_FINALIZER",
    "GROUP",
    "KIND",
    "PLURAL",
    "apply_defaults",
    "infos",
    "is_established",
    "set_status",
    "storage_info",
    "storage_version",
    "validate",
]
