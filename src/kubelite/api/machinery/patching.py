"""PATCH bodies applied to an object: JSON patch (RFC 6902, jsonpatch), JSON merge patch
(RFC 7386), strategic merge patch (built-in kinds, driven by their OpenAPI schema) and
server-side apply (``application/apply-patch+yaml``: :func:`apply_update`, over
:mod:`kubelite.api.fieldmanager.managedfields`)."""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import jsonpatch
import jsonpointer
import orjson

from kubelite.api import errors
from kubelite.api.catalogue import ResourceInfo, load_schema_definitions
from kubelite.api.encoding import yamlbody
from kubelite.api.encoding.stored import Obj
from kubelite.api.errors import APIError
from kubelite.api.fieldmanager import managedfields
from kubelite.api.fieldmanager.apply import BadConfiguration, apply
from kubelite.api.machinery import validation
from kubelite.api.machinery.objectmeta import check_name_and_namespace
from kubelite.api.machinery.rest import ObjectUpdate, Warnings
from kubelite.api.patch import json_patch
from kubelite.api.patch.merge_patch import json_merge_patch
from kubelite.api.patch.strategic_merge import Schema, StrategicMergeError, strategic_merge

APPLY_PATCH = "application/apply-patch+yaml"
#: ``maxJSONPatchOperations`` (k8s.io/apiserver pkg/endpoints/handlers/patch.go)
MAX_JSON_PATCH_OPERATIONS = 10000


def apply_patch(
    info: ResourceInfo, current: Obj, patch_type: str, patch: Any, *, schema: bool = True
) -> Any:
    """``current`` patched by one of the three patch formats (never mutates ``current``).
    ``schema=False`` applies a strategic merge patch without the kind's field rules (views such
    as Scale, whose schema is not the kind's)."""
    if patch_type == "application/json-patch+json":
        if not isinstance(patch, list):
            raise errors.bad_request("json patch must be a list of operations")
        if len(patch) > MAX_JSON_PATCH_OPERATIONS:
            raise errors.entity_too_large(
                f"The allowed maximum operations in a JSON patch is {MAX_JSON_PATCH_OPERATIONS}, "
                f"got {len(patch)}"
            )
        try:
            return json_patch.apply(current, patch)
        except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException, TypeError):
            # json-patch's own text (a failed test, a missing path, the copy limit) is not
            # shown: kube answers NewGenericServerResponse(422, ...) without it (patch.go)
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


# -- server-side apply -------------------------------------------------------------------------


class Applied(NamedTuple):
    """An apply body: the configuration, and the strict-decoding complaint about it (a key
    repeated in a mapping; "" when none), which kube reports only once the apply succeeded."""

    config: Obj
    duplicate: str = ""


def decode_apply(raw: bytes, field_validation: str) -> Applied:
    """An apply body (YAML or JSON) as an object. 400 ``error decoding patch`` when it is not
    one; a key repeated in a mapping is noted under Strict and Warn."""
    try:
        config = orjson.loads(raw)
        repeats = validation.may_repeat_keys(raw, config)
    except orjson.JSONDecodeError:
        config = _yaml(raw, strict=False)
        repeats = True
    if not isinstance(config, dict):
        raise errors.bad_request("error decoding patch: the apply configuration must be an object")
    duplicate = ""
    if repeats and field_validation != validation.IGNORE:
        try:
            yamlbody.load(raw, strict=True)
        except yamlbody.DuplicateKey as exc:
            duplicate = str(exc)
        except yamlbody.YAMLError:
            pass  # JSON that YAML reads otherwise (tabs): orjson's reading stands
    return Applied(config, duplicate)


def _yaml(raw: bytes, *, strict: bool) -> Any:
    try:
        return yamlbody.load(raw, strict=strict)
    except yamlbody.YAMLError as exc:
        raise errors.bad_request(f"error decoding patch: {exc}") from None


def apply_update(
    info: ResourceInfo,
    namespace: str | None,
    name: str,
    body: Applied,
    manager: str,
    *,
    force: bool,
    field_validation: str = validation.WARN,
    warnings: Warnings | None = None,
    subresource: str = "",
    reset: tuple[str, ...] = (),
) -> ObjectUpdate:
    """A server-side apply's update: ``body``'s configuration applied to the current object by
    ``manager`` (:func:`kubelite.api.fieldmanager.apply.apply`), creating it when absent. A repeated
    key found when decoding is a 400 under Strict and a warning under Warn, once the apply
    itself succeeded (conflicts come first, as in kube)."""
    reset_fields = managedfields.reset_set(reset)
    config = body.config

    async def applied(current: Obj | None) -> Obj:
        meta = config.get("metadata")
        meta = meta if isinstance(meta, dict) else {}
        if current is None and meta.get("uid"):
            raise errors.conflict(
                info.plural,
                info.group,
                name,
                f"uid mismatch: the provided object specified uid {meta['uid']}, and no "
                "existing object was found",
            )
        where = f"{namespace or ''}/{meta.get('name', name)}; {info.group}/{info.version}, "
        where += f"Kind={info.kind}"
        try:
            merged = apply(
                info, current, config, manager, force=force, subresource=subresource,
                reset=reset_fields,
            )  # fmt: skip
        except BadConfiguration as exc:
            # the client's configuration does not fit the schema: kube answers this text as a
            # 500 (kubernetes/kubernetes#122480); its proposed fix, a 400
            raise errors.bad_request(f"failed to create typed patch object ({where}): {exc}")
        except ValueError as exc:
            raise errors.internal(f"failed to create typed live object ({where}): {exc}")
        merged_name = (merged.get("metadata") or {}).get("name", "")
        if merged_name != name:
            raise errors.bad_request(
                f"the name of the object ({merged_name}) does not match the name on the URL "
                f"({name})"
            )
        check_name_and_namespace(info, namespace, name, merged)
        if body.duplicate and field_validation == validation.STRICT:
            raise errors.bad_request(f"error strict decoding patch: {body.duplicate}")
        if body.duplicate and warnings is not None and body.duplicate not in warnings.texts:
            warnings.texts.append(body.duplicate)
        return merged

    return applied
