"""``meta.k8s.io/v1`` Table responses, which ``kubectl get`` asks for in its Accept header.

Columns come from the kind's declaration (:attr:`ResourceInfo.table_columns`, rendered by
:func:`render_cell`). Each row carries the object's metadata as a
PartialObjectMetadata (``rows[].object``), without which ``get -A`` shows no namespace and
``--show-labels`` nothing.

A cell (:func:`render_cell`): each :class:`Column` names a JSON path into the object (the
subset of kubectl JSONPath used by CRD ``additionalPrinterColumns``: ``.field``, ``['field']``,
``[n]``, ``[*]`` and ``[?(@.a.b==literal)]``) and a ``render`` mode: ``value``, ``age``,
``count``, ``sum`` or ``ratio`` (documented on :func:`render_cell`). A CRD printer column maps to
``value``, except ``type: date`` columns, which CRs render as ``age``.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from kubelite.api.catalogue import Column, ResourceInfo, json_path_values

CONTENT_TYPE = b"application/json;as=Table;v=v1;g=meta.k8s.io"


def wants_table(accept: str) -> bool:
    """Whether the Accept header asks for a Table (``as=Table;g=meta.k8s.io``)."""
    for part in accept.split(","):
        params = {p.strip() for p in part.split(";")[1:]}
        if "as=Table" in params and "g=meta.k8s.io" in params:
            return True
    return False


def _partial(obj: dict[str, Any], include: str) -> dict[str, Any] | None:
    if include == "None":
        return None
    if include == "Object":
        return obj
    return {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": obj.get("metadata", {}),
    }


def table(
    info: ResourceInfo,
    objects: list[dict[str, Any]],
    resource_version: str,
    *,
    include_object: str = "Metadata",
    continue_token: str = "",
    remaining_item_count: int | None = None,
) -> dict[str, Any]:
    now = datetime.now(UTC)
    columns = info.table_columns
    rows = []
    for obj in objects:
        row: dict[str, Any] = {"cells": [render_cell(c, obj, now) for c in columns]}
        partial = _partial(obj, include_object)
        if partial is not None:
            row["object"] = partial
        rows.append(row)
    metadata: dict[str, Any] = {"resourceVersion": resource_version}
    if continue_token:
        metadata["continue"] = continue_token
    if remaining_item_count is not None:
        metadata["remainingItemCount"] = remaining_item_count
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": metadata,
        "columnDefinitions": [c.definition() for c in columns],
        "rows": rows,
    }


def human_duration(seconds: float) -> str:
    """A duration as kubectl's AGE column shows it (apimachinery ``duration.HumanDuration``):
    ``45s``, ``2m10s``, ``15m``, ``3h12m``, ``20h``, ``4d3h``, ``120d``, ``3y10d``."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        return f"{minutes}m{s % 60}s" if s % 60 else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = s // 3600
    if hours < 8:
        return f"{hours}h{minutes % 60}m" if minutes % 60 else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        return f"{hours // 24}d{hours % 24}h" if hours % 24 else f"{hours // 24}d"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = hours // 24
        return f"{days // 365}y{days % 365}d" if days % 365 else f"{days // 365}y"
    return f"{hours // 24 // 365}y"


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _ratio_side(path: str, obj: Any) -> int | float:
    values = json_path_values(path, obj)
    if values and all(_is_number(v) for v in values):
        total: int | float = sum(values)
        return total
    return len(values)


def _scalar(value: Any) -> Any:
    if isinstance(value, dict | list):
        return json.dumps(value, separators=(",", ":"), sort_keys=True)
    return value


def render_cell(column: Column, obj: dict[str, Any], now: datetime | None = None) -> Any:
    """The Table cell ``column`` shows for ``obj`` (a JSON string, number, bool or null).

    By ``column.render``:

    - ``value``: the value at ``json_path``; several matches are joined with ``,``; none gives
      ``column.default``. Maps and lists are rendered as compact JSON.
    - ``age``: the RFC 3339 time at ``json_path`` as :func:`human_duration` of ``now - time``
      (``now`` defaults to the current time); absent or unparseable gives ``column.default``.
    - ``count``: how many nodes the comma-separated paths match together; a path without
      brackets that ends at a map or list counts its entries (``.data,.binaryData`` counts keys;
      ``.secrets[*]`` counts items; ``[?(...)]`` counts the items that pass).
    - ``sum``: the sum of the numbers matched (0 if none).
    - ``ratio``: ``json_path`` is ``<a>/<b>``; the cell is ``"<a>/<b>"`` where each side is the
      sum of its matches if they are numbers, else how many there are (``0`` if none).
    - ``node-status``, ``node-roles``: a Node's STATUS and ROLES (:func:`node_status`,
      :func:`node_roles`; ``json_path`` unused).
    """
    render = column.render
    if render == "value":
        values = json_path_values(column.json_path, obj)
        if not values:
            return column.default
        if len(values) == 1:
            return _scalar(values[0])
        return ",".join(str(_scalar(v)) for v in values)
    if render == "age":
        values = json_path_values(column.json_path, obj)
        if not values or not isinstance(values[0], str):
            return column.default
        try:
            then = datetime.fromisoformat(values[0].replace("Z", "+00:00"))
        except ValueError:
            return column.default
        if then.tzinfo is None:
            then = then.replace(tzinfo=UTC)
        current = now if now is not None else datetime.now(UTC)
        return human_duration((current - then).total_seconds())
    if render == "count":
        total = 0
        for path in column.json_path.split(","):
            for value in json_path_values(path, obj):
                bare = "[" not in path  # a path to a map or list itself counts its entries
                total += len(value) if bare and isinstance(value, dict | list) else 1
        return total
    if render == "sum":
        return sum(v for v in json_path_values(column.json_path, obj) if _is_number(v))
    if render == "ratio":
        numerator, _, denominator = column.json_path.partition("/")
        return f"{_ratio_side(numerator, obj)}/{_ratio_side(denominator, obj)}"
    if render == "node-status":
        return node_status(obj)
    if render == "node-roles":
        return node_roles(obj)
    raise ValueError(f"unknown render mode {render!r} for column {column.name!r}")


#: the node-role label prefix and the old role label printNode reads
NODE_ROLE_PREFIX, NODE_ROLE_LABEL = "node-role.kubernetes.io/", "kubernetes.io/role"


def node_status(node: dict[str, Any]) -> str:
    """printNode's STATUS (pkg/printers/internalversion/printers.go): ``Ready`` or
    ``NotReady`` from the Ready condition (``Unknown`` without one), then
    ``SchedulingDisabled`` when ``spec.unschedulable``."""
    status = []
    for condition in (node.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Ready":
            status = ["Ready" if condition.get("status") == "True" else "NotReady"]
    if not status:
        status = ["Unknown"]
    if (node.get("spec") or {}).get("unschedulable"):
        status.append("SchedulingDisabled")
    return ",".join(status)


def node_roles(node: dict[str, Any]) -> str:
    """printNode's ROLES (``findNodeRoles``): the ``node-role.kubernetes.io/<role>`` labels and
    ``kubernetes.io/role``, sorted and joined with ``,``; ``<none>`` without any."""
    roles = set()
    for key, value in ((node.get("metadata") or {}).get("labels") or {}).items():
        if key.startswith(NODE_ROLE_PREFIX) and key[len(NODE_ROLE_PREFIX) :]:
            roles.add(key[len(NODE_ROLE_PREFIX) :])
        elif key == NODE_ROLE_LABEL and value:
            roles.add(value)
    return ",".join(sorted(roles)) or "<none>"
