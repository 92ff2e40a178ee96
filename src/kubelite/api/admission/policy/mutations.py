"""A MutatingAdmissionPolicy's mutations compiled and applied (apiserver
``pkg/admission/plugin/policy/mutating/compilation.go`` and ``patch/{json_patch,smd}.go``):

- ``JSONPatch``: the expression returns a list of ``JSONPatch{op, path, from, value}``, applied
  to the object as RFC 6902; a failing ``test`` leaves the object as it was; any other failure
  is ``JSON Patch: <error>``.
- ``ApplyConfiguration``: the expression returns ``Object{...}``, merged into the object by
  server-side apply's rules for the kind's schema (:func:`kubelite.api.fieldmanager.typed.merge`):
  maps and associative lists merged, other values replaced. A configuration that sets an atomic
  list, map or struct is refused (``may not mutate atomic arrays, maps or structs: <paths>``), one
  that does not fit the schema too (``failed to convert patch object to typed object: <error>``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import jsonpatch
import jsonpointer

from kubelite.api.admission.policy.expressions import Expression, compile_one, declared
from kubelite.api.admission.policy.validator import CompiledPolicy, compile_common
from kubelite.api.catalogue import ResourceInfo
from kubelite.api.cel.objects import JSON_PATCH, OBJECT, plain, type_errors
from kubelite.api.cel.objects import type_name as constructed
from kubelite.api.cel.values import type_name
from kubelite.api.fieldmanager.shapes import LIST, MAP, Shape, shape_of
from kubelite.api.fieldmanager.typed import MISSING, TypedError, merge, to_set
from kubelite.api.patch.json_patch import apply as apply_json_patch

Obj = dict[str, Any]

APPLY_CONFIGURATION, JSON_PATCH_TYPE = "ApplyConfiguration", "JSONPatch"
IF_NEEDED = "IfNeeded"


class MutationError(Exception):
    """A mutation failed; ``str()`` is kube's text."""


@dataclass
class Mutation:
    patch_type: str
    expression: Expression


@dataclass
class CompiledMutatingPolicy(CompiledPolicy):
    mutations: list[Mutation] = field(default_factory=list)
    reinvocation: str = "Never"


def compile_mutating_policy(policy: Obj) -> CompiledMutatingPolicy:
    """A MutatingAdmissionPolicy compiled (kube's compilePolicy)."""
    common = compile_common(policy)
    compiled = CompiledMutatingPolicy(**vars(common))
    spec = policy.get("spec") or {}
    compiled.reinvocation = str(spec.get("reinvocationPolicy") or "Never")
    names = declared(compiled.has_params, has_authorizer=True)
    for mutation in spec.get("mutations") or []:
        if not isinstance(mutation, dict):
            continue
        patch_type = str(mutation.get("patchType") or "")
        key = {APPLY_CONFIGURATION: "applyConfiguration", JSON_PATCH_TYPE: "jsonPatch"}
        holder = mutation.get(key.get(patch_type, ""))
        source = str(holder.get("expression") or "") if isinstance(holder, dict) else ""
        expression = checked_mutation(source, patch_type, names, compiled.variables)
        compiled.mutations.append(Mutation(patch_type, expression))
    return compiled


def checked_mutation(
    source: str, patch_type: str, names: Sequence[str], variables: Iterable[str]
) -> Expression:
    """A mutation's expression compiled (its constructions rewritten) and its type checked."""
    if patch_type not in (APPLY_CONFIGURATION, JSON_PATCH_TYPE):
        return Expression(source, None, f"unsupported patchType {patch_type!r}")
    expression = compile_one(source, names, variables, constructions=True)
    if expression.compiled is not None:
        expression = _checked_type(expression, patch_type)
    return expression


def _checked_type(expression: Expression, patch_type: str) -> Expression:
    """kube's ReturnTypes, where kubelite sees the type: Object, or list(JSONPatch)."""
    from kubelite.api import cel

    kind = _constructed_root(expression.source) or cel.result_kind(expression.source)
    if kind is None or kind == "map" or kind == OBJECT:
        return expression
    if patch_type == APPLY_CONFIGURATION:
        return expression._replace(compiled=None, error=f"must evaluate to Object but got {kind}")
    if patch_type == JSON_PATCH_TYPE and kind != "list":
        why = f"must evaluate to list(JSONPatch) but got {kind}"
        return expression._replace(compiled=None, error=why)
    return expression


def _constructed_root(source: str) -> str | None:
    """The type name of a construction that is the whole expression (``Object.spec{...}``)."""
    from kubelite.api.cel.syntax import _tokens

    tokens = _tokens(source)
    if not tokens or tokens[-1].text != "}":
        return None
    end = 0
    while end + 2 < len(tokens) and tokens[end + 1].text == "." and tokens[end + 2].kind == "ident":
        end += 2
    if tokens[0].text not in (OBJECT, JSON_PATCH) or end + 1 >= len(tokens):
        return None
    if tokens[end + 1].text != "{":
        return None
    depth = 0
    for i in range(end + 1, len(tokens)):
        depth += {"{": 1, "}": -1}.get(tokens[i].text, 0)
        if depth == 0:
            return "".join(t.text for t in tokens[: end + 1]) if i == len(tokens) - 1 else None
    return None


def json_patch(obj: Obj, result: Any) -> Obj:
    """``obj`` patched by the operations a JSONPatch expression returned."""
    if not isinstance(result, list):
        raise MutationError("type mismatch: JSONPatchType.expression should evaluate to array")
    operations: list[Obj] = []
    for item in result:
        if constructed(item) != JSON_PATCH:
            raise MutationError(
                "type mismatch: JSONPatchType.expression should evaluate to array of JSONPatch: "
                f"type conversion error from '{_cel_type(item)}' to 'JSONPatch'"
            )
        operation: Obj = {"op": str(item.get("op", "")), "path": str(item.get("path", ""))}
        if item.get("from"):
            operation["from"] = str(item["from"])
        if "value" in item:
            value = item["value"]
            if constructed(value) is not None:
                errors = type_errors(value)
                if errors:
                    raise MutationError("type mismatch: " + "\n".join(errors))
            operation["value"] = plain(value)
        operations.append(operation)
    try:
        patched: Obj = apply_json_patch(obj, operations)
    except jsonpatch.JsonPatchTestFailed:
        return obj
    except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException, TypeError) as exc:
        raise MutationError(f"JSON Patch: {exc}") from None
    return patched


def apply_configuration(obj: Obj, result: Any, info: ResourceInfo) -> Obj:
    """``obj`` merged with the configuration an ApplyConfiguration expression returned."""
    if constructed(result) != OBJECT:
        raise MutationError(
            f"unsupported return type from ApplyConfiguration expression: {_cel_type(result)}"
        )
    errors = type_errors(result)
    if errors:
        raise MutationError("type mismatch: " + "\n".join(errors))
    config = plain(result)
    config["apiVersion"], config["kind"] = obj.get("apiVersion"), obj.get("kind")
    shape = shape_of(info)
    try:
        to_set(config, shape, strict=True)
    except (TypedError, ValueError) as exc:
        raise MutationError(
            f"error applying patch: failed to convert patch object to typed object: {exc}"
        ) from None
    atomics = _atomics(config, shape, "")
    if atomics:
        raise MutationError(
            "error applying patch: invalid ApplyConfiguration: may not mutate atomic arrays, "
            f"maps or structs: {', '.join(atomics)}"
        )
    merged = merge(obj, config, shape)
    return {} if merged is MISSING else dict(merged)


def _atomics(value: Any, shape: Shape, path: str) -> list[str]:
    """kube's findAtomics: the paths where the configuration sets an atomic list or map."""
    found: list[str] = []
    if isinstance(value, dict) and shape.kind == MAP:
        if shape.atomic:
            found.append(path)
        for key, sub in value.items():
            declared = shape.field(str(key))
            if declared is not None:
                found.extend(_atomics(sub, declared, f"{path}.{key}"))
    elif isinstance(value, list) and shape.kind == LIST:
        if shape.atomic:
            found.append(path)
        for index, item in enumerate(value):
            found.extend(_atomics(item, shape.item, f"{path}[{index}]"))
    return found


def _cel_type(value: Any) -> str:
    name = constructed(value)
    return name if name is not None else type_name(value)
