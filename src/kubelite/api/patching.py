"""PATCH bodies applied to an object: JSON patch (RFC 6902, jsonpatch), JSON merge patch
(RFC 7386) and strategic merge patch (built-in kinds, driven by their OpenAPI schema)."""

from __future__ import annotations

import functools
from typing import Any

import jsonpatch
import jsonpointer

from kubelite.api import errors, validation
from kubelite.api.catalogue import ResourceInfo, load_schema_definitions
from kubelite.api.errors import APIError
from kubelite.api.merge_patch import json_merge_patch
from kubelite.api.rest import ObjectUpdate, Warnings
from kubelite.api.stored import Obj
from kubelite.api.strategic_merge import Schema, StrategicMergeError, strategic_merge


def apply_patch(
    info: ResourceInfo, current: Obj, patch_type: str, patch: Any, *, schema: bool = True
) -> Any:
    """``current`` patched by one of the three patch formats (never mutates ``current``).
    ``schema=False`` applies a strategic merge patch without the kind's field rules (views such
    as Scale, whose schema is not the kind's)."""
    if patch_type == "application/json-patch+json":
        if not isinstance(patch, list):
            raise errors.bad_request("json patch must be a list of operations")
        if len(patch) > 10000:
            raise errors.too_large(
                "The allowed maximum operations in a JSON patch is 10000, got " + str(len(patch))
            )
        try:
            return jsonpatch.apply_patch(current, patch)
        except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException, TypeError):
            raise APIError(
                422, "Invalid", "the server rejected our request due to an error in our request", {}
            )
    if patch_type == "application/merge-patch+json":
        return json_merge_patch(current, patch)
    if schema and not info.strategic_merge:
        raise errors.unsupported_media_type(
            [
                "application/json-patch+json",
                "application/merge-patch+json",
                "application/apply-patch+yaml",
            ]
        )
    if not isinstance(patch, dict):
        raise errors.bad_request("a strategic merge patch must be a JSON object")
    try:
        return strategic_merge(current, patch, _patch_schema(info.schema_ref) if schema else None)
    except StrategicMergeError as exc:
        if exc.code == 422:
            raise APIError(422, "Invalid", str(exc), {})
        raise errors.bad_request(str(exc))


@functools.cache
def _patch_schema(name: str) -> Schema:
    return Schema.from_definitions(load_schema_definitions(), name)


def patch_update(
    info: ResourceInfo,
    name: str,
    patch_type: str,
    patch: Any,
    *,
    schema: ResourceInfo | None,
    field_validation: str = validation.IGNORE,
    warnings: Warnings | None = None,
) -> ObjectUpdate:
    """A PATCH's update: the patch applied to the current object, on every try of the optimistic
    loop (so a patch without a resourceVersion never conflicts). ``schema`` is the kind of the
    patched objects (None for views such as Scale: no strategic merge schema, no field
    validation); ``field_validation`` checks the patched object's fields as kube's patcher does
    (Strict: 422; Warn: ``warnings``)."""

    async def apply(current: Obj | None) -> Obj:
        if current is None:
            raise errors.not_found(info.plural, info.group, name)
        patched = apply_patch(schema or info, current, patch_type, patch, schema=schema is not None)
        if not isinstance(patched, dict):
            raise errors.bad_request("the patched object is not a JSON object")
        checked = schema is not None and bool(schema.schema_ref or schema.schema)
        if schema is not None and checked and field_validation != validation.IGNORE:
            found = validation.strict_errors(schema, patched)
            if found and field_validation == validation.STRICT:
                raise validation.patch_validation_error(patched, found)
            if warnings is not None:
                warnings.texts[:] = validation.warnings_for(found)
        metadata = patched.setdefault("metadata", {})
        if not isinstance(metadata, dict):
            raise errors.bad_request("metadata must be an object")
        return patched

    return apply
