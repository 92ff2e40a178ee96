"""The ``scale`` subresource: an ``autoscaling/v1`` Scale view of a kind's ``spec.replicas``.

``kubectl scale`` sends ``PATCH .../scale {"spec":{"replicas":3}}`` and expects a Scale back.
Reads build the view from the object; writes patch or replace the view, then write only
``spec.replicas`` back through the registry's one compare-and-swap loop.
"""

from __future__ import annotations

from typing import Any

from kubelite.api import errors
from kubelite.api import resourceversion as rv
from kubelite.api.catalogue import ResourceInfo, json_path_values
from kubelite.api.patching import apply_patch
from kubelite.api.registry import Registry
from kubelite.api.stored import Obj, clone


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


def _paths(info: ResourceInfo) -> tuple[str, str, str]:
    return info.scale_paths or BUILTIN_PATHS


def _at(obj: Obj, path: str) -> Any:
    values = json_path_values(path, obj) if path else []
    return values[0] if values else None


def to_scale(obj: Obj, info: ResourceInfo) -> Obj:
    meta = obj.get("metadata", {})
    spec_path, status_path, selector_path = _paths(info)
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


def _set(obj: Obj, path: str, value: Any) -> None:
    """Set ``.a.b.c`` in ``obj``, making the objects on the way."""
    keys = path.lstrip(".").split(".")
    node = obj
    for key in keys[:-1]:
        child = node.get(key)
        if not isinstance(child, dict):
            child = node[key] = {}
        node = child
    node[keys[-1]] = value


async def get_scale(registry: Registry, info: ResourceInfo, ns: str | None, name: str) -> Obj:
    return to_scale(await registry.get(info, ns, name), info)


async def write_scale(
    registry: Registry,
    info: ResourceInfo,
    ns: str | None,
    name: str,
    *,
    body: Obj | None = None,
    patch_type: str = "",
    patch: Any = None,
) -> Obj:
    """PUT (``body``) or PATCH (``patch_type``, ``patch``) the Scale; returns the new Scale."""

    async def apply(current: Obj) -> Obj | None:
        scale = to_scale(current, info)
        if body is not None:
            new = body
        else:
            new = apply_patch(info, scale, patch_type, patch, schema=False)
        if not isinstance(new, dict):
            raise errors.bad_request("the patched Scale is not a JSON object")
        requested = rv.of(new)
        if requested and requested != scale["metadata"].get("resourceVersion"):
            raise errors.conflict(info.plural, info.group, name)
        replicas = (new.get("spec") or {}).get("replicas")
        if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
            raise errors.invalid(
                "Scale",
                "autoscaling",
                name,
                [
                    errors.Cause(
                        "FieldValueInvalid",
                        f"Invalid value: {replicas}: must be greater than or equal to 0",
                        "spec.replicas",
                    )
                ],
            )
        original = clone(current)
        _set(current, _paths(info)[0], replicas)
        return registry.updated_object(info, original, current, "")

    obj, _ = await registry.guaranteed_update(info, ns, name, apply)
    return to_scale(obj, info)
