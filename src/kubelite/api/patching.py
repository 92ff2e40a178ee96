"""PATCH bodies applied to an object: JSON patch (RFC 6902, jsonpatch), JSON merge patch
(RFC 7386), strategic merge patch (built-in kinds, driven by their OpenAPI schema) and
server-side apply (``application/apply-patch+yaml``: :func:`apply_update`, over
:mod:`kubelite.api.managedfields`)."""

from __future__ import annotations

import functools
import json
from typing import Any

import jsonpatch
import jsonpointer
import orjson

from kubelite.api import errors, managedfields, validation
from kubelite.api.catalogue import ResourceInfo, load_schema_definitions
from kubelite.api.errors import APIError
from kubelite.api.merge_patch import json_merge_patch
from kubelite.api.rest import ObjectUpdate, Warnings
from kubelite.api.stored import Obj
from kubelite.api.strategic_merge import Schema, StrategicMergeError, strategic_merge
from kubelite.api.typed import TypedError

APPLY_PATCH = "application/apply-patch+yaml"


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


# -- server-side apply -------------------------------------------------------------------------


class _DuplicateKey(ValueError):
    pass


@functools.cache
def _yaml_loaders() -> tuple[Any, Any]:
    """PyYAML's safe loader, and one that refuses a key repeated in a mapping (sigs.k8s.io/yaml's
    UnmarshalStrict); imported on the first YAML body."""
    import yaml

    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class StrictLoader(base):  # type: ignore[misc,valid-type]
        pass

    def strict_mapping(loader: Any, node: Any, deep: bool = False) -> Any:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = loader.construct_object(key_node, deep=True)
            if key in seen:
                raise _DuplicateKey(
                    f"yaml: unmarshal errors:\n  line {key_node.start_mark.line + 1}: key "
                    f"{json.dumps(key)} already set in map"
                )
            seen.add(key)
        return loader.construct_mapping(node, deep=deep)

    StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, strict_mapping)
    return base, StrictLoader


def decode_apply(raw: bytes, field_validation: str, warnings: Warnings) -> Obj:
    """An apply body (YAML or JSON) as an object. 400 ``error decoding patch`` when it is not
    one; a key repeated in a mapping is 400 under Strict and a warning under Warn."""
    try:
        config = orjson.loads(raw)
        repeats = validation.may_repeat_keys(raw, config)
    except orjson.JSONDecodeError:
        config = _yaml(raw, strict=False)
        repeats = True
    if not isinstance(config, dict):
        raise errors.bad_request("error decoding patch: the apply configuration must be an object")
    if repeats and field_validation != validation.IGNORE:
        try:
            _yaml(raw, strict=True)
        except _DuplicateKey as exc:
            if field_validation == validation.STRICT:
                raise errors.bad_request(f"error strict decoding patch: {exc}") from None
            warnings.texts.append(str(exc))
        except errors.APIError:
            pass  # JSON that YAML reads otherwise (tabs): orjson's reading stands
    return config


def _yaml(raw: bytes, *, strict: bool) -> Any:
    import yaml

    loader, strict_loader = _yaml_loaders()
    try:
        return yaml.load(raw, Loader=strict_loader if strict else loader)
    except yaml.YAMLError as exc:
        raise errors.bad_request(f"error decoding patch: {exc}") from None


def apply_update(
    info: ResourceInfo,
    namespace: str | None,
    name: str,
    config: Obj,
    manager: str,
    *,
    force: bool,
    subresource: str = "",
    reset: tuple[str, ...] = (),
) -> ObjectUpdate:
    """A server-side apply's update: ``config`` applied to the current object by ``manager``
    (:func:`kubelite.api.managedfields.apply`), creating it when absent."""
    reset_set = managedfields.reset_set(reset)

    async def apply(current: Obj | None) -> Obj:
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
        try:
            merged = managedfields.apply(
                info, current, config, manager, force=force, subresource=subresource,
                reset=reset_set,
            )  # fmt: skip
        except (TypedError, ValueError) as exc:
            where = f"{namespace or ''}/{meta.get('name', name)}; {_gvk(info)}"
            raise errors.internal(f"failed to create typed patch object ({where}): {exc}")
        merged_name = (merged.get("metadata") or {}).get("name", "")
        if merged_name != name:
            raise errors.bad_request(
                f"the name of the object ({merged_name}) does not match the name on the URL "
                f"({name})"
            )
        return merged

    return apply


def _gvk(info: ResourceInfo) -> str:
    return f"{info.group}/{info.version}, Kind={info.kind}"
