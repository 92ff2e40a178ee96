"""A custom resource version's structural schema at work: defaulting, pruning, validation and
CEL rules, as apiextensions-apiserver applies them on every create and update.

:func:`compiled` turns a ResourceInfo's schema (JSON text) into a :class:`CompiledSchema` once
per distinct schema (cached): a jsonschema Draft 4 validator (OpenAPI v3.0 schemas are Draft 4
with extensions), extended for ``nullable``, ``x-kubernetes-int-or-string`` and
``x-kubernetes-list-type: set|map``; and the CEL programs of every ``x-kubernetes-validations``
rule, compiled with the ``common-expression-language`` package (Rust; about 7 µs an evaluation
here, against 820 µs for the pure-Python cel-python).

Order, as in kube-apiserver: prune unknown fields (and nulls where the field is not nullable),
apply defaults, then validate the schema and the CEL rules. Errors become one 422 with a cause per
field, in kube-apiserver's texts (go-openapi's messages as apiextensions converts them).
"""

from __future__ import annotations

import base64
import functools
import re
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import cel
import jsonschema
import orjson
from jsonschema import Draft4Validator
from jsonschema.exceptions import ValidationError

from kubelite.api.errors import Cause

Obj = dict[str, Any]
_ROOT_KEPT = ("apiVersion", "kind", "metadata")
_JSON_TYPES = {
    "object": dict,
    "array": list,
    "string": str,
    "boolean": bool,
    "null": type(None),
}


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


def _is_type(value: Any, kind: str) -> bool:
    if kind == "integer":
        return (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, float) and value.is_integer()
        )
    if kind == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    expected = _JSON_TYPES.get(kind)
    return expected is not None and isinstance(value, expected)


# --- the jsonschema validator, extended -----------------------------------------------------


def _type(validator: Any, types: Any, instance: Any, schema: Obj) -> Iterator[ValidationError]:
    if instance is None and schema.get("nullable") is True:
        return
    names = types if isinstance(types, list) else [types]
    if not any(_is_type(instance, t) for t in names):
        yield ValidationError(f"type:{names[0]}")


def _int_or_string(
    validator: Any, enabled: Any, instance: Any, schema: Obj
) -> Iterator[ValidationError]:
    if enabled is True and "type" not in schema:
        if instance is None and schema.get("nullable") is True:
            return
        if not (_is_type(instance, "integer") or isinstance(instance, str)):
            yield ValidationError("type:integer-or-string")


def _list_type(validator: Any, kind: Any, instance: Any, schema: Obj) -> Iterator[ValidationError]:
    if not isinstance(instance, list):
        return
    seen: list[Any] = []
    keys = schema.get("x-kubernetes-list-map-keys") or []
    for index, item in enumerate(instance):
        if kind == "set":
            marker = item
        elif kind == "map" and isinstance(item, dict):
            marker = {k: item.get(k) for k in keys}
        else:
            continue
        if marker in seen:
            yield ValidationError(
                f"duplicate:{orjson.dumps(marker).decode()}", instance=item, path=(index,)
            )
        else:
            seen.append(marker)


def _embedded(
    validator: Any, enabled: Any, instance: Any, schema: Obj
) -> Iterator[ValidationError]:
    """An embedded object (a Pod template in a CR, say) must name its apiVersion and kind."""
    if enabled is True and isinstance(instance, dict):
        for field in ("apiVersion", "kind"):
            if not instance.get(field):
                yield ValidationError(f"embedded:{field}", path=(field,))


_FORMATS = jsonschema.FormatChecker(formats=())


@_FORMATS.checks("date-time", raises=ValueError)
def _date_time(value: object) -> bool:
    if isinstance(value, str):
        datetime.fromisoformat(value.replace("Z", "+00:00"))
    return True


@_FORMATS.checks("date", raises=ValueError)
def _date(value: object) -> bool:
    if isinstance(value, str) and not re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
        raise ValueError(value)
    return True


@_FORMATS.checks("byte", raises=ValueError)
def _byte(value: object) -> bool:
    if isinstance(value, str):
        base64.b64decode(value, validate=True)
    return True


@_FORMATS.checks("uuid", raises=ValueError)
def _uuid(value: object) -> bool:
    if isinstance(value, str) and not re.fullmatch(
        r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}", value
    ):
        raise ValueError(value)
    return True


_Validator = jsonschema.validators.extend(  # type: ignore[no-untyped-call]
    Draft4Validator,
    {
        "type": _type,
        "x-kubernetes-int-or-string": _int_or_string,
        "x-kubernetes-list-type": _list_type,
        "x-kubernetes-embedded-resource": _embedded,
    },
)


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


def _causes(error: ValidationError) -> list[Cause]:
    path = _path(error.absolute_path)
    value: Any = error.instance
    keyword = error.validator
    limit: Any = error.validator_value
    schema = error.schema if isinstance(error.schema, dict) else {}

    def invalid(message: str, shown: str | None = None) -> Cause:
        return Cause("FieldValueInvalid", f"Invalid value: {shown or _go(value)}: {message}", path)

    if keyword == "required":
        missing = [k for k in limit if not isinstance(value, dict) or k not in value]
        return [
            Cause("FieldValueRequired", "Required value", _path([*error.absolute_path, k]))
            for k in missing
        ]
    if keyword in ("type", "x-kubernetes-int-or-string"):
        wanted = str(error.message).split(":", 1)[1]
        actual = _type_name(value)
        return [invalid(f'{path} in body must be of type {wanted}: "{actual}"', f'"{actual}"')]
    if keyword == "enum":
        supported = ", ".join(_go(v) for v in limit)
        return [
            Cause(
                "FieldValueNotSupported",
                f"Unsupported value: {_go(value)}: supported values: {supported}",
                path,
            )
        ]
    if keyword == "pattern":
        return [invalid(f"{path} in body should match '{limit}'")]
    if keyword == "format":
        return [invalid(f"{path} in body must be of type {limit}: {_go(value)}")]
    if keyword == "minimum":
        exclusive = schema.get("exclusiveMinimum") is True
        word = "greater than" if exclusive else "greater than or equal to"
        return [invalid(f"{path} in body should be {word} {limit}")]
    if keyword == "maximum":
        exclusive = schema.get("exclusiveMaximum") is True
        word = "less than" if exclusive else "less than or equal to"
        return [invalid(f"{path} in body should be {word} {limit}")]
    if keyword == "multipleOf":
        return [invalid(f"{path} in body should be a multiple of {limit}")]
    if keyword == "maxLength":
        return [Cause("FieldValueTooLong", f"Too long: may not be more than {limit} bytes", path)]
    if keyword == "minLength":
        return [invalid(f"{path} in body should be at least {limit} chars long")]
    if keyword == "maxItems":
        return [
            Cause(
                "FieldValueTooMany",
                f"Too many: {len(value)}: must have at most {limit} items",
                path,
            )
        ]
    if keyword == "minItems":
        return [invalid(f"{path} in body should have at least {limit} items")]
    if keyword == "maxProperties":
        return [
            Cause(
                "FieldValueTooMany",
                f"Too many: {len(value)}: must have at most {limit} items",
                path,
            )
        ]
    if keyword == "minProperties":
        return [invalid(f"{path} in body should have at least {limit} properties")]
    if keyword == "uniqueItems":
        return [Cause("FieldValueDuplicate", f"Duplicate value: {_go(value)}", path)]
    if keyword == "x-kubernetes-embedded-resource":
        return [Cause("FieldValueRequired", "Required value: must not be empty", path)]
    if keyword == "x-kubernetes-list-type":
        marker = orjson.loads(str(error.message).split(":", 1)[1])
        if isinstance(marker, dict):
            shown = (
                "map[string]interface {}{"
                + ", ".join(f"{_go(k)}:{_go(v)}" for k, v in marker.items())
                + "}"
            )
        else:
            shown = _go(marker)
        return [Cause("FieldValueDuplicate", f"Duplicate value: {shown}", path)]
    return [invalid(str(error.message))]


# --- pruning and defaulting -------------------------------------------------------------------


def _preserves(schema: Obj) -> bool:
    return schema.get("x-kubernetes-preserve-unknown-fields") is True


def _prune(schema: Obj, node: Any, path: list[Any], pruned: list[str], root: bool) -> None:
    if isinstance(node, dict):
        properties = schema.get("properties")
        additional = schema.get("additionalProperties")
        embedded = schema.get("x-kubernetes-embedded-resource") is True
        for key in list(node):
            child = node[key]
            if root and key in _ROOT_KEPT:
                continue
            sub = properties.get(key) if isinstance(properties, dict) else None
            if sub is None and isinstance(additional, dict):
                sub = additional
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
        additional = schema.get("additionalProperties")
        for key, child in node.items():
            sub = properties.get(key) if isinstance(properties, dict) else None
            if sub is None and isinstance(additional, dict):
                sub = additional
            if isinstance(sub, dict):
                _default(sub, child)
    elif isinstance(node, list):
        items = schema.get("items")
        if isinstance(items, dict):
            for item in node:
                _default(items, item)


# --- CEL ------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=4096)
def compile_rule(rule: str) -> Any:
    """A CEL program (raises ValueError with the compiler's message when the rule is bad)."""
    return cel.compile(rule)


def _rules(
    schema: Obj, new: Any, old: Any, has_old: bool, path: list[Any], out: list[Cause]
) -> None:
    for rule in schema.get("x-kubernetes-validations") or []:
        text = rule.get("rule", "")
        transition = "oldSelf" in text
        if transition and not has_old:
            continue
        context = {"self": new, "oldSelf": old} if transition else {"self": new}
        try:
            ok = compile_rule(text).execute(context)
        except Exception as exc:
            ok, reason = False, f"{text}: {exc}"
        else:
            reason = ""
        if ok is not True:
            message = rule.get("message") or reason or f"failed rule: {text}"
            where = _path(path)
            field = rule.get("fieldPath")
            if field:
                where = where + field if where else field.lstrip(".")
            shown = _go(new) if not isinstance(new, dict | list) else f'"{_type_name(new)}"'
            out.append(Cause("FieldValueInvalid", f"Invalid value: {shown}: {message}", where))
    if isinstance(new, dict):
        properties = schema.get("properties")
        additional = schema.get("additionalProperties")
        for key, child in new.items():
            sub = properties.get(key) if isinstance(properties, dict) else None
            if sub is None and isinstance(additional, dict):
                sub = additional
            if isinstance(sub, dict):
                before_exists = has_old and isinstance(old, dict) and key in old
                before = old.get(key) if before_exists else None
                _rules(sub, child, before, before_exists, [*path, key], out)
    elif isinstance(new, list):
        items = schema.get("items")
        if isinstance(items, dict):
            for index, item in enumerate(new):
                _rules(items, item, None, False, [*path, index], out)


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
        self.schema = schema
        self.validator = _Validator(schema, format_checker=_FORMATS)
        self.has_rules = False
        for rule in _all_rules(schema):
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
        for error in sorted(self.validator.iter_errors(body), key=lambda e: list(e.absolute_path)):
            causes += _causes(error)
        if self.has_rules and not causes:
            _rules(self.schema, obj, old, old is not None, [], causes)
        return causes


@functools.lru_cache(maxsize=256)
def compiled(schema_json: str) -> CompiledSchema:
    """The compiled form of a schema (JSON text, as ResourceInfo.schema holds it)."""
    schema = orjson.loads(schema_json) if schema_json else {}
    return CompiledSchema(schema)
