"""The jsonschema half of a custom resource's schema check (loaded with the first CRD):
a Draft 4 validator (OpenAPI v3.0 schemas are Draft 4 with extensions) extended for
``nullable``, ``x-kubernetes-int-or-string``, ``x-kubernetes-list-type: set|map`` and
``x-kubernetes-embedded-resource``, and its errors in kube-apiserver's texts (go-openapi's
messages as apiextensions converts them)."""

from __future__ import annotations

import base64
import re
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import jsonschema
import orjson
from jsonschema import Draft4Validator
from jsonschema.exceptions import ValidationError

from kubelite.api.apiextensions.schema import Obj, _go, _path, _type_name
from kubelite.api.errors import Cause

_JSON_TYPES = {
    "object": dict,
    "array": list,
    "string": str,
    "boolean": bool,
    "null": type(None),
}


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


_Extended = jsonschema.validators.extend(  # type: ignore[no-untyped-call]
    Draft4Validator,
    {
        "type": _type,
        "x-kubernetes-int-or-string": _int_or_string,
        "x-kubernetes-list-type": _list_type,
        "x-kubernetes-embedded-resource": _embedded,
    },
)


# --- kube-apiserver's texts ---------------------------------------------------------------


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
    if keyword in ("maxItems", "maxProperties"):
        message = f"Too many: {len(value)}: must have at most {limit} items"
        return [Cause("FieldValueTooMany", message, path)]
    if keyword == "minItems":
        return [invalid(f"{path} in body should have at least {limit} items")]
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


class Validator:
    """One schema's validator, compiled once."""

    def __init__(self, schema: Obj) -> None:
        self._validator = _Extended(schema, format_checker=_FORMATS)

    def causes(self, body: Obj) -> list[Cause]:
        errors = sorted(self._validator.iter_errors(body), key=lambda e: list(e.absolute_path))
        return [cause for error in errors for cause in _causes(error)]
