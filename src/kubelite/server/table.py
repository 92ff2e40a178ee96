"""``meta.k8s.io/v1`` Table responses, which ``kubectl get`` asks for in its Accept header.

Columns come from the kind's declaration (:attr:`ResourceInfo.table_columns`, rendered by
:func:`~kubelite.api.catalogue.render_cell`). Each row carries the object's metadata as a
PartialObjectMetadata (``rows[].object``), without which ``get -A`` shows no namespace and
``--show-labels`` nothing.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from kubelite.api.catalogue import ResourceInfo, render_cell

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
