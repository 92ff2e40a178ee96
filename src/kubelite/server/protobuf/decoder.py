"""The table-driven decoder of kubectl's protobuf objects: a message is declared as plain data,
``{field number: F(json name, kind, ...)}`` (the tables are :mod:`kubelite.server.protobuf.core`
and :mod:`kubelite.server.protobuf.groups`, after k8s.io/api's ``generated.proto``), and
:func:`decode_message` turns the wire format into the dict kubectl would have sent as JSON:

- singular strings, integers and booleans are omitted when zero, like Go's ``omitempty``, unless
  ``keep`` (pointer fields, and the few fields without ``omitempty``: Go's protobuf marshaller
  writes pointers only when set and always writes value fields);
- nested messages are emitted whenever present, even when empty (``"status": {}``), as
  encoding/json does for struct fields;
- maps are repeated entries with key=1 and value=2; ``bytes`` become base64 strings;
- Quantity is a message whose field 1 is the string form; IntOrString is type=1, intVal=2,
  strVal=3; Time is seconds=1, nanos=2 and becomes an RFC 3339 string (omitted when zero)
  (k8s.io/apimachinery ``pkg/api/resource/generated.proto``, ``pkg/util/intstr/generated.proto``,
  ``pkg/apis/meta/v1/generated.proto``);
- ``inline`` messages (Go's ``json:",inline"`` embedding) merge into their parent;
- unknown field numbers are skipped and logged at debug level.
"""

from __future__ import annotations

import base64
import logging
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from kubelite.server.protobuf.wire import LEN, VARINT, Value, read_fields, read_varint

__all__ = [
    "BOOL",
    "BYTES",
    "INT",
    "INT_OR_STR",
    "QUANTITY",
    "STR",
    "TIME",
    "F",
    "Kind",
    "Message",
    "decode_message",
]

log = logging.getLogger(__name__)

# Scalar and well-known kinds.
STR = "string"
INT = "int"  # int32/int64 varints, signed
BOOL = "bool"
BYTES = "bytes"  # base64 in JSON
TIME = "time"  # meta/v1 Time {seconds=1, nanos=2}
QUANTITY = "quantity"  # resource.Quantity {string=1}
INT_OR_STR = "intorstr"  # intstr.IntOrString {type=1, intVal=2, strVal=3}


@dataclass(frozen=True)
class F:
    """One field: its JSON name and kind (a scalar name above or a nested message table)."""

    name: str
    kind: Kind
    repeated: bool = False
    map: bool = False  # map<string, kind>: repeated entries {key=1, value=2}
    keep: bool = False  # emit zero values too (pointer fields, or no omitempty)
    null: bool = False  # repeated field without omitempty: JSON null when absent
    inline: bool = False  # Go ``json:",inline"``: merge the message's fields into the parent


Message = dict[int, F]
Kind = str | Message


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def _scalar(kind: str, wire: int, value: Value, where: str) -> Any:
    if kind in (INT, BOOL):
        if wire != VARINT or not isinstance(value, int):
            raise ValueError(f"{where}: expected a varint")
        return _signed(value) if kind == INT else value != 0
    if wire != LEN or not isinstance(value, bytes):
        raise ValueError(f"{where}: expected a length-delimited field")
    if kind == STR:
        try:
            return value.decode()
        except UnicodeDecodeError as exc:
            raise ValueError(f"{where}: invalid UTF-8") from exc
    if kind == BYTES:
        return base64.b64encode(value).decode()
    if kind == QUANTITY:
        return _decode({1: F("string", STR)}, value, where, []).get("string", "0")
    if kind == TIME:
        parts = _decode({1: F("seconds", INT), 2: F("nanos", INT)}, value, where, [])
        if not parts:
            return None
        moment = datetime.fromtimestamp(parts.get("seconds", 0), tz=UTC)
        return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
    if kind == INT_OR_STR:
        parts = _decode(
            {1: F("type", INT), 2: F("intVal", INT), 3: F("strVal", STR)}, value, where, []
        )
        return parts.get("strVal", "") if parts.get("type") == 1 else parts.get("intVal", 0)
    raise AssertionError(f"unknown kind {kind}")


def _value(kind: Kind, wire: int, value: Value, where: str, unknown: list[str]) -> Any:
    if isinstance(kind, str):
        return _scalar(kind, wire, value, where)
    if wire != LEN or not isinstance(value, bytes):
        raise ValueError(f"{where}: expected an embedded message")
    return _decode(kind, value, where, unknown)


def _decode(message: Message, data: bytes, where: str, unknown: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for number, wire, value in read_fields(data):
        field = message.get(number)
        if field is None:
            unknown.append(f"{where}.{number}")
            continue
        here = f"{where}.{field.name}" if field.name else where
        if field.map:
            if wire != LEN or not isinstance(value, bytes):
                raise ValueError(f"{here}: expected a map entry")
            entry = {n: (w, v) for n, w, v in read_fields(value)}
            key = _scalar(STR, *entry[1], here) if 1 in entry else ""
            item = _value(field.kind, *entry[2], here, unknown) if 2 in entry else _empty(field)
            out.setdefault(field.name, {})[key] = item
        elif field.repeated:
            items = out.setdefault(field.name, [])
            if wire == LEN and field.kind == INT:  # packed
                pos, packed = 0, value
                assert isinstance(packed, bytes)
                while pos < len(packed):
                    number_value, pos = read_varint(packed, pos)
                    items.append(_signed(number_value))
            else:
                items.append(_value(field.kind, wire, value, here, unknown))
        elif field.inline:
            out.update(_value(field.kind, wire, value, here, unknown))
        else:
            out[field.name] = _value(field.kind, wire, value, here, unknown)
    for field in message.values():  # Go's omitempty, and null for absent non-omitempty lists
        if field.name not in out:
            if field.null:
                out[field.name] = None
        elif _omitted_when_zero(field) and out[field.name] in ("", 0, None):  # False == 0
            del out[field.name]
    return out


def _omitted_when_zero(field: F) -> bool:
    return field.kind in (STR, INT, BOOL, BYTES, TIME) and not (
        field.keep or field.repeated or field.map
    )


def _empty(field: F) -> Any:
    """The value of a map entry that carries no value field (the kind's zero value)."""
    return {STR: "", BYTES: "", INT: 0, BOOL: False, QUANTITY: "0"}.get(
        field.kind if isinstance(field.kind, str) else "", {}
    )


def decode_message(message: Message, data: bytes, where: str = "") -> dict[str, Any]:
    """Decode one protobuf message by its table; unknown fields are skipped and logged."""
    unknown: list[str] = []
    result = _decode(message, data, where, unknown)
    if unknown:
        log.debug("protobuf body: skipped unknown fields %s", ", ".join(unknown))
    return result
