"""A custom resource version's structural schema at work: defaulting, pruning, validation and
CEL rules, as apiextensions-apiserver applies them on every create and update.

:func:`compiled` turns a ResourceInfo's schema (JSON text) into a :class:`CompiledSchema` once
per distinct schema (cached): a jsonschema validator (:mod:`kubelite.api.apiextensions.validator`,
imported with the first schema so that start-up does not pay for jsonschema) and the CEL programs of
every ``x-kubernetes-validations`` rule, compiled in :mod:`kubelite.api.cel` (kube's CEL
environment over the ``common-expression-language`` package; imported on first use too).
A rule's runtime error is reported as apiextensions reports it (``Invalid value: "object":
no such key: x evaluating rule: <rule>``), not as the rule's message; the runtime cost budget
of one object's validation stops the rules when it runs out.

Order, as in kube-apiserver: prune unknown fields (and nulls where the field is not nullable),
apply defaults, then validate the schema and the CEL rules. Errors become one 422 with a cause per
field, in kube-apiserver's texts (go-openapi's messages as apiextensions converts them).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import Any

import orjson

from kubelite.api.catalogue import parse_schema
from kubelite.api.errors import Cause, go_quote

Obj = dict[str, Any]
_ROOT_KEPT = ("apiVersion", "kind", "metadata")


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


# --- kube-apiserver's texts -------------------------------------------------------------------


def _path(parts: Any) -> str:
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _go(value: Any) -> str:
    if isinstance(value, str):
        return orjson.dumps(value).decode()
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if value is None:
        return '"null"'
    return f'"{_type_name(value)}"'


# --- pruning and defaulting -------------------------------------------------------------------


def _child(schema: Obj, key: str) -> Obj | None:
    """The schema of an object's member ``key``: its property's, else additionalProperties'."""
    properties = schema.get("properties")
    sub = properties.get(key) if isinstance(properties, dict) else None
    if sub is None:
        sub = schema.get("additionalProperties")
    return sub if isinstance(sub, dict) else None


def _preserves(schema: Obj) -> bool:
    return schema.get("x-kubernetes-preserve-unknown-fields") is True


def _prune(schema: Obj, node: Any, path: list[Any], pruned: list[str], root: bool) -> None:
    if isinstance(node, dict):
        additional = schema.get("additionalProperties")
        embedded = schema.get("x-kubernetes-embedded-resource") is True
        for key in list(node):
            child = node[key]
            if root and key in _ROOT_KEPT:
                continue
            sub = _child(schema, key)
            if sub is None:
                if embedded and key in _ROOT_KEPT:
                    continue
                if not _preserves(schema) and additional is not True:
                    del node[key]
                    pruned.append(_path([*path, key]))
                continue
            if child is None and sub.get("nullable") is not True:
                del node[key]  # null where null is not allowed: pruned, then defaulted
                continue
            _prune(sub, child, [*path, key], pruned, False)
    elif isinstance(node, list):
        items = schema.get("items")
        if isinstance(items, dict):
            for index, item in enumerate(node):
                _prune(items, item, [*path, index], pruned, False)


def _default(schema: Obj, node: Any) -> None:
    if isinstance(node, dict):
        properties = schema.get("properties")
        if isinstance(properties, dict):
            for key, sub in properties.items():
                if key not in node and isinstance(sub, dict) and "default" in sub:
                    node[key] = orjson.loads(orjson.dumps(sub["default"]))
        for key, child in node.items():
            sub = _child(schema, key)
            if sub is not None:
                _default(sub, child)
    elif isinstance(node, list):
        items = schema.get("items")
        if isinstance(items, dict):
            for item in node:
                _default(items, item)


# --- CEL ------------------------------------------------------------------------------------


#: the variables of a CRD validation rule
RULE_VARIABLES = ("self", "oldSelf")


def compile_rule(rule: str) -> Any:
    """A rule's compiled form (:mod:`kubelite.api.cel`; raises :class:`kubelite.api.cel.
    CompileError`, a ValueError, with cel-go's issues text when the rule does not compile)."""
    from kubelite.api import cel

    return cel.compile_expression(rule, RULE_VARIABLES)


_OUT_OF_BUDGET = (
    "validation failed due to running out of cost budget, no further validation rules will be run"
)


class _Budget:
    """kube's runtime cost budget of one object's validation (RuntimeCELCostBudget)."""

    def __init__(self, remaining: int) -> None:
        self.remaining = remaining
        self.exhausted = False


def _rule_error_string(rule: Obj) -> str:
    message = rule.get("message")
    return (
        message.strip()
        if isinstance(message, str) and message
        else str(rule.get("rule", "")).strip()
    )


#: kube's MaxEvaluatedMessageExpressionSizeBytes (k8s.io/apiserver/pkg/apis/cel/config.go)
MAX_MESSAGE_BYTES = 5 * 1024


def _message_expression(
    rule: Obj, context: dict[str, Any], type_shown: str, budget: _Budget
) -> str | Cause | None:
    """A failed rule's messageExpression evaluated (apiextensions' evalMessageExpression): its
    trimmed string; None when there is none, or it errs, is no string, is empty, longer than
    5KiB or spans lines (the rule's message stands instead); a Cause (its field set later)
    when it runs out of cost, which stops the object's validation."""
    from kubelite.api import cel

    source = rule.get("messageExpression")
    if not isinstance(source, str) or not source:
        return None
    compiled = compile_rule(source)
    try:
        result, cost = cel.evaluate(compiled, context)
    except cel.EvalError as exc:
        if exc.kind != "cost":
            return None
        budget.exhausted = True
        text = (
            "no further validation rules will be run due to call cost exceeds limit for "
            f"messageExpression: {go_quote(source)}"
        )
        return Cause("FieldValueInvalid", f"Invalid value: {type_shown}: {text}", "")
    if cost > budget.remaining:
        budget.exhausted = True
        text = (
            "messageExpression evaluation failed due to running out of cost budget, no further "
            "validation rules will be run"
        )
        return Cause("FieldValueInvalid", f"Invalid value: {type_shown}: {text}", "")
    budget.remaining -= cost
    if not isinstance(result, str):
        return None
    trimmed = result.strip()
    if not trimmed or "\n" in trimmed or len(trimmed.encode()) > MAX_MESSAGE_BYTES:
        return None
    return trimmed


def _reason_cause(reason: Any, shown: str, detail: str, where: str) -> Cause:
    """A failed rule's error by its ``reason`` (apiextensions' fieldErrorForReason)."""
    if reason == "FieldValueForbidden":
        return Cause("FieldValueForbidden", f"Forbidden: {detail}", where)
    if reason == "FieldValueRequired":
        return Cause("FieldValueRequired", f"Required value: {detail}", where)
    if reason == "FieldValueDuplicate":
        return Cause("FieldValueDuplicate", f"Duplicate value: {shown}", where)
    return Cause("FieldValueInvalid", f"Invalid value: {shown}: {detail}", where)


def _rules(
    schema: Obj,
    new: Any,
    old: Any,
    has_old: bool,
    path: list[Any],
    out: list[Cause],
    budget: _Budget,
) -> None:
    from kubelite.api import cel

    if new is None or budget.exhausted:
        return
    where_node = _path(path)
    type_shown = _go(str(schema.get("type") or ""))
    for rule in schema.get("x-kubernetes-validations") or []:
        text = rule.get("rule", "")
        if not isinstance(text, str) or not text.strip():
            continue
        compiled = compile_rule(text)
        transition = "oldSelf" in compiled.variables
        if transition and not has_old:
            continue
        context = {"self": new, "oldSelf": old} if transition else {"self": new}
        if budget.remaining <= 0:
            message = _OUT_OF_BUDGET
            out.append(
                Cause("FieldValueInvalid", f"Invalid value: {type_shown}: {message}", where_node)
            )
            budget.exhausted = True
            return
        try:
            ok, cost = cel.evaluate(compiled, context)
        except cel.EvalError as exc:
            error = _rule_error_string(rule)
            if exc.kind == "overload":
                message = (
                    f"'{exc}': call arguments did not match a supported operator, function or "
                    f"macro signature for rule: {error}"
                )
            elif exc.kind == "cost":
                message = (
                    f"'{exc}': no further validation rules will be run due to call cost exceeds "
                    f"limit for rule: {error}"
                )
                budget.exhausted = True
            else:
                message = f"{exc} evaluating rule: {error}"
            out.append(
                Cause("FieldValueInvalid", f"Invalid value: {type_shown}: {message}", where_node)
            )
            if budget.exhausted:
                return
            continue
        budget.remaining -= cost
        if budget.remaining < 0:
            message = _OUT_OF_BUDGET
            out.append(
                Cause("FieldValueInvalid", f"Invalid value: {type_shown}: {message}", where_node)
            )
            budget.exhausted = True
            return
        if ok is not True:
            where = where_node
            field = rule.get("fieldPath")
            if field:
                where = where + field if where else field.lstrip(".")
            message_context = {"self": new, "oldSelf": old} if has_old else {"self": new}
            detail = _message_expression(rule, message_context, type_shown, budget)
            if isinstance(detail, Cause):  # out of budget: no further rules run
                out.append(Cause(detail.reason, detail.message, where))
                return
            if detail is None:
                message = rule.get("message")
                detail = (
                    message.strip()
                    if isinstance(message, str) and message
                    else f"failed rule: {text.strip()}"
                )
            shown = _go(new) if not isinstance(new, dict | list) else f'"{_type_name(new)}"'
            out.append(_reason_cause(rule.get("reason"), shown, detail, where))
    if isinstance(new, dict):
        for key, child in new.items():
            sub = _child(schema, key)
            if sub is not None:
                before_exists = has_old and isinstance(old, dict) and key in old
                before = old.get(key) if before_exists else None
                _rules(sub, child, before, before_exists, [*path, key], out, budget)
    elif isinstance(new, list):
        items = schema.get("items")
        if isinstance(items, dict):
            for index, item in enumerate(new):
                _rules(items, item, None, False, [*path, index], out, budget)


def _all_rules(schema: Any) -> Iterator[str]:
    if not isinstance(schema, dict):
        return
    for rule in schema.get("x-kubernetes-validations") or []:
        if isinstance(rule, dict) and isinstance(rule.get("rule"), str):
            yield rule["rule"]
    for child in (schema.get("properties") or {}).values():
        yield from _all_rules(child)
    yield from _all_rules(schema.get("items"))
    yield from _all_rules(schema.get("additionalProperties"))


class CompiledSchema:
    """One custom resource version's schema, ready to apply to objects."""

    def __init__(self, schema: Obj) -> None:
        from kubelite.api.apiextensions.validator import (
            Validator,  # jsonschema loads with the first CRD
        )

        self.schema = schema
        self.validator = Validator(schema)
        self.has_rules = False
        for rule in _all_rules(schema):
            if rule.strip():
                compile_rule(rule)  # fail now, not on the first object
            self.has_rules = True

    def prune(self, obj: Obj) -> list[str]:
        """Drop unknown fields in place; returns their paths."""
        pruned: list[str] = []
        _prune(self.schema, obj, [], pruned, True)
        return pruned

    def default(self, obj: Obj) -> None:
        _default(self.schema, obj)

    def errors(self, obj: Obj, old: Obj | None = None) -> list[Cause]:
        causes: list[Cause] = []
        body = {k: v for k, v in obj.items() if k != "metadata"}
        causes += self.validator.causes(body)
        if self.has_rules and not causes:
            from kubelite.api.cel import RUNTIME_BUDGET

            budget = _Budget(RUNTIME_BUDGET)
            _rules(self.schema, obj, old, old is not None, [], causes, budget)
        return causes


@functools.lru_cache(maxsize=256)
def compiled(schema_json: str) -> CompiledSchema:
    """The compiled form of a schema (JSON text, as ResourceInfo.schema holds it)."""
    return CompiledSchema(parse_schema(schema_json) if schema_json else {})
