"""JSON merge patch (RFC 7386), ``Content-Type: application/merge-patch+json``.

An object patch merges into an object key by key, recursively; ``null`` removes a key; any other
patch value (a list, a string, ``null`` at the top) replaces the target whole. Lists are never
merged. Kubernetes uses it for every kind, including custom resources.
"""

from __future__ import annotations

import copy
from typing import Any

__all__ = ["json_merge_patch"]


def json_merge_patch(original: Any, patch: Any) -> Any:
    """Return ``original`` patched by ``patch`` (RFC 7386 ``MergePatch``). Inputs are not modified;
    the result shares no containers with them. Keys keep the original's order, new keys follow."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    target: dict[str, Any] = original if isinstance(original, dict) else {}
    result: dict[str, Any] = {}
    for key, value in target.items():
        if key not in patch:
            result[key] = copy.deepcopy(value)
        elif patch[key] is not None:
            result[key] = json_merge_patch(value, patch[key])
    for key, value in patch.items():
        if key not in target and value is not None:
            result[key] = json_merge_patch(None, value)
    return result
