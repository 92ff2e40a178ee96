"""The ``scale`` subresource: an ``autoscaling/v1`` Scale view of a kind's ``spec.replicas``.

``kubectl scale`` sends ``PATCH .../scale {"spec":{"replicas":3}}`` and expects a Scale back.
Reads build the view from the object; writes patch or replace the view, then write only
``spec.replicas`` back through the registry's one compare-and-swap loop.
"""

from __future__ import annotations

from typing import Any

from kubelite.api import errors
from kubelite.api import resourceversion as rv
from kubelite.api.catalogue import ResourceInfo
from kubelite.api.registry import Obj, Registry, apply_patch, clone


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


def to_scale(obj: Obj) -> Obj:
    meta = obj.get("metadata", {})
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    keep = ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {k: meta[k] for k in keep if k in meta},
        "spec": {"replicas": int(spec.get("replicas", 1))},
        "status": {
            "replicas": int(status.get("replicas", 0)),
            "selector": selector_string(spec.get("selector")),
        },
    }


async def get_scale(registry: Registry, info: ResourceInfo, ns: str | None, name: str) -> Obj:
    return to_scale(await registry.get(info, ns, name))


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
        scale = to_scale(current)
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
        current.setdefault("spec", {})["replicas"] = replicas
        return registry.updated_object(info, original, current, "")

    obj, _ = await registry.guaranteed_update(info, ns, name, apply)
    return to_scale(obj)
