"""The Scale view: an ``autoscaling/v1`` Scale built from a kind's ``spec.replicas`` (or a
CRD's scale paths), and the path a new replica count is written back to. ``kubectl scale``
sends ``PATCH .../scale {"spec":{"replicas":3}}`` and expects a Scale back; the storage that
serves it is :class:`kubelite.api.machinery.subresources.ScaleREST`.
"""

from __future__ import annotations

from typing import Any, Final

from kubelite.api.catalogue import ResourceInfo, json_path_values
from kubelite.api.encoding.stored import Obj
from kubelite.api.fieldmanager.fieldpath import FieldSet, Path
from kubelite.api.fieldmanager.managedfields import (
    is_member,
    raw_identity,
    raw_order,
    stored_entries,
    touches,
)

#: The Scale kind, for what server-side apply to ``/scale`` needs of it (its type and schema).
SCALE_INFO = ResourceInfo(
    group="autoscaling",
    version="v1",
    kind="Scale",
    plural="scale",
    namespaced=True,
    schema_ref="io.k8s.api.autoscaling.v1.Scale",
)


def selector_string(selector: Any) -> str:
    """A LabelSelector as the string form Scale.status.selector carries."""
    if not isinstance(selector, dict):
        return ""
    terms = [f"{k}={v}" for k, v in sorted((selector.get("matchLabels") or {}).items())]
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr.get("key", ""), expr.get("operator", ""), expr.get("values") or []
        if op == "In":
            terms.append(f"{key} in ({','.join(values)})")
        elif op == "NotIn":
            terms.append(f"{key} notin ({','.join(values)})")
        elif op == "Exists":
            terms.append(key)
        elif op == "DoesNotExist":
            terms.append(f"!{key}")
    return ",".join(terms)


#: A built-in kind's scale paths; a custom resource's come from its CRD (ResourceInfo.scale_paths).
BUILTIN_PATHS = (".spec.replicas", ".status.replicas", ".spec.selector")


def scale_paths(info: ResourceInfo) -> tuple[str, str, str]:
    return info.scale_paths or BUILTIN_PATHS


def _at(obj: Obj, path: str) -> Any:
    values = json_path_values(path, obj) if path else []
    return values[0] if values else None


def to_scale(obj: Obj, info: ResourceInfo) -> Obj:
    meta = obj.get("metadata", {})
    spec_path, status_path, selector_path = scale_paths(info)
    keep = ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
    replicas = _at(obj, spec_path)
    current = _at(obj, status_path)
    selector = _at(obj, selector_path)
    if info.builtin:
        replicas = 1 if replicas is None else replicas
        selector = selector_string(selector)
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {k: meta[k] for k in keep if k in meta},
        "spec": {"replicas": int(replicas or 0)},
        "status": {
            "replicas": int(current or 0),
            "selector": selector if isinstance(selector, str) else "",
        },
    }


def set_path(obj: Obj, path: str, value: Any) -> None:
    """Set ``.a.b.c`` in ``obj``, making the objects on the way."""
    keys = path.lstrip(".").split(".")
    node = obj
    for key in keys[:-1]:
        child = node.get(key)
        if not isinstance(child, dict):
            child = node[key] = {}
        node = child
    node[keys[-1]] = value


# -- ownership of the replica count (apimachinery's ScaleHandler) --------------------------

_SCALE_REPLICAS: Final = ("f:spec", "f:replicas")


def _node_at(trie: dict[str, Any], path: Path) -> Any:
    node: Any = trie
    for element in path:
        node = node.get(element) if isinstance(node, dict) else None
    return node


def _trie(path: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for element in reversed(path):
        out = {element: out}
    return out


def to_scale_entries(parent: Any, replicas: Path) -> list[dict[str, Any]]:
    """A Scale view's managedFields: every entry of the parent that owns its replica count,
    owning the Scale's ``spec.replicas`` (apimachinery's ScaleHandler.ToSubresource)."""
    return [
        {**raw, "apiVersion": SCALE_INFO.group_version, "fieldsV1": _trie(_SCALE_REPLICAS)}
        for raw in stored_entries(parent)
        if is_member(_node_at(raw["fieldsV1"], replicas))
    ]


def from_scale_entries(
    parent: Any, scale: Any, replicas: Path, api_version: str
) -> list[dict[str, Any]]:
    """The parent's managedFields after a write through its Scale view: the replica count is
    owned by the Scale's owners of ``spec.replicas``, nobody else (ScaleHandler.ToParent)."""
    path = FieldSet.of(replicas)
    out: dict[str, dict[str, Any]] = {}
    for raw in stored_entries(parent):
        if touches(raw["fieldsV1"], path):
            rest = FieldSet.from_fields_v1(raw["fieldsV1"]).difference(path)
            if rest.empty():
                continue
            raw = {**raw, "fieldsV1": rest.to_fields_v1()}
        out[raw_identity(raw)] = raw
    for raw in stored_entries(scale):
        if is_member(_node_at(raw["fieldsV1"], _SCALE_REPLICAS)):
            mapped = {**raw, "apiVersion": api_version, "fieldsV1": _trie(replicas)}
            out[raw_identity(mapped)] = mapped
    return sorted(out.values(), key=raw_order)
