"""gnostic's ``openapi.v2.Document`` protobuf, encoded by hand as kube-openapi's
``ToProtoBinary`` produces it."""

from __future__ import annotations

import json
import struct
from typing import Any

# --- gnostic openapi.v2.Document, hand-encoded ------------------------------------------------
#
# Field numbers from gnostic-models' openapiv2/OpenAPIv2.proto. proto3: zero values are not
# written, except the members of a oneof (AdditionalPropertiesItem.boolean).


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1  # negative int64s as ten bytes, as Go writes them
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _tag_bytes(number: int, wire: int) -> bytes:
    return _varint(number << 3 | wire)


def _pb_len(number: int, payload: bytes) -> bytes:
    return _tag_bytes(number, 2) + _varint(len(payload)) + payload


def _pb_str(number: int, value: Any) -> bytes:
    if not isinstance(value, str) or not value:
        return b""
    return _pb_len(number, value.encode())


def _pb_strs(number: int, values: Any) -> bytes:
    if not isinstance(values, list):
        return b""
    return b"".join(_pb_len(number, v.encode()) for v in values if isinstance(v, str))


def _pb_bool(number: int, value: Any) -> bytes:
    return _tag_bytes(number, 0) + b"\x01" if value is True else b""


def _pb_int(number: int, value: Any) -> bytes:
    if isinstance(value, bool) or not isinstance(value, int | float) or not value:
        return b""
    return _tag_bytes(number, 0) + _varint(int(value))


def _pb_double(number: int, value: Any) -> bytes:
    if isinstance(value, bool) or not isinstance(value, int | float) or not value:
        return b""
    return _tag_bytes(number, 1) + struct.pack("<d", float(value))


def _yaml_text(value: Any) -> str:
    """A value as gnostic's ``Any.yaml`` carries it: JSON is YAML (flow style), and what
    kubectl's readers (yaml.Unmarshal) parse."""
    return json.dumps(value, ensure_ascii=False) + "\n"


def _pb_any(number: int, value: Any) -> bytes:
    """An ``Any`` message: ``yaml`` (2) holds the value."""
    return _pb_len(number, _pb_str(2, _yaml_text(value)))


def _pb_vendor(number: int, node: dict[str, Any]) -> bytes:
    """The ``x-`` keys of ``node`` as repeated NamedAny (name=1, value=2)."""
    return b"".join(
        _pb_len(number, _pb_str(1, key) + _pb_any(2, value))
        for key, value in node.items()
        if key.startswith("x-")
    )


def _pb_schema(node: dict[str, Any]) -> bytes:
    out = bytearray()
    out += _pb_str(1, node.get("$ref"))
    out += _pb_str(2, node.get("format"))
    out += _pb_str(3, node.get("title"))
    out += _pb_str(4, node.get("description"))
    if "default" in node:
        out += _pb_any(5, node["default"])
    out += _pb_double(6, node.get("multipleOf"))
    out += _pb_double(7, node.get("maximum"))
    out += _pb_bool(8, node.get("exclusiveMaximum"))
    out += _pb_double(9, node.get("minimum"))
    out += _pb_bool(10, node.get("exclusiveMinimum"))
    out += _pb_int(11, node.get("maxLength"))
    out += _pb_int(12, node.get("minLength"))
    out += _pb_str(13, node.get("pattern"))
    out += _pb_int(14, node.get("maxItems"))
    out += _pb_int(15, node.get("minItems"))
    out += _pb_bool(16, node.get("uniqueItems"))
    out += _pb_int(17, node.get("maxProperties"))
    out += _pb_int(18, node.get("minProperties"))
    out += _pb_strs(19, node.get("required"))
    for value in node.get("enum") or ():
        out += _pb_any(20, value)
    additional = node.get("additionalProperties")
    if isinstance(additional, dict):  # AdditionalPropertiesItem: oneof schema=1, boolean=2
        out += _pb_len(21, _pb_len(1, _pb_schema(additional)))
    elif isinstance(additional, bool):
        out += _pb_len(21, _tag_bytes(2, 0) + (b"\x01" if additional else b"\x00"))
    kind = node.get("type")
    if isinstance(kind, str):  # TypeItem: repeated string value=1
        out += _pb_len(22, _pb_len(1, kind.encode()))
    items = node.get("items")
    if isinstance(items, dict):  # ItemsItem: repeated Schema schema=1
        out += _pb_len(23, _pb_len(1, _pb_schema(items)))
    for sub in node.get("allOf") or ():
        if isinstance(sub, dict):
            out += _pb_len(24, _pb_schema(sub))
    properties = node.get("properties")
    if isinstance(properties, dict):  # Properties: repeated NamedSchema additional_properties=1
        named = b"".join(
            _pb_len(1, _pb_str(1, name) + _pb_len(2, _pb_schema(sub)))
            for name, sub in properties.items()
            if isinstance(sub, dict)
        )
        out += _pb_len(25, named)
    out += _pb_str(26, node.get("discriminator"))
    out += _pb_bool(27, node.get("readOnly"))
    if "example" in node:
        out += _pb_any(30, node["example"])
    out += _pb_vendor(31, node)
    return bytes(out)


def _pb_parameter(param: dict[str, Any]) -> bytes:
    """A ParametersItem (parameter=1) holding a Parameter: body_parameter=1, or
    non_body_parameter=2 with query (3) or path (4) sub-schemas."""
    where = param.get("in")
    if where == "body":
        body = (
            _pb_str(1, param.get("description"))
            + _pb_str(2, param.get("name"))
            + _pb_str(3, where)
            + _pb_bool(4, param.get("required"))
            + _pb_len(5, _pb_schema(param.get("schema") or {}))
            + _pb_vendor(6, param)
        )
        return _pb_len(1, _pb_len(1, body))
    common = (
        _pb_bool(1, param.get("required"))
        + _pb_str(2, where)
        + _pb_str(3, param.get("description"))
        + _pb_str(4, param.get("name"))
    )
    if where == "path":  # PathParameterSubSchema: type=5, unique_items=19
        sub = common + _pb_str(5, param.get("type")) + _pb_bool(19, param.get("uniqueItems"))
        return _pb_len(1, _pb_len(2, _pb_len(4, sub)))
    # QueryParameterSubSchema: type=6, unique_items=20
    sub = common + _pb_str(6, param.get("type")) + _pb_bool(20, param.get("uniqueItems"))
    return _pb_len(1, _pb_len(2, _pb_len(3, sub)))


def _pb_operation(op: dict[str, Any]) -> bytes:
    out = bytearray()
    out += _pb_strs(1, op.get("tags"))
    out += _pb_str(3, op.get("description"))
    out += _pb_str(5, op.get("operationId"))
    out += _pb_strs(6, op.get("produces"))
    out += _pb_strs(7, op.get("consumes"))
    for param in op.get("parameters") or ():
        out += _pb_len(8, _pb_parameter(param))
    codes = bytearray()  # Responses: repeated NamedResponseValue response_code=1
    for code, response in (op.get("responses") or {}).items():
        body = _pb_str(1, response.get("description"))
        if isinstance(response.get("schema"), dict):  # SchemaItem: schema=1
            body += _pb_len(2, _pb_len(1, _pb_schema(response["schema"])))
        value = _pb_len(1, body)  # ResponseValue: response=1
        codes += _pb_len(1, _pb_str(1, code) + _pb_len(2, value))
    out += _pb_len(9, bytes(codes))
    out += _pb_strs(10, op.get("schemes"))
    out += _pb_vendor(13, op)
    return bytes(out)


_PATH_ITEM_FIELDS = {"get": 2, "put": 3, "post": 4, "delete": 5, "options": 6, "head": 7}


def _pb_path_item(item: dict[str, Any]) -> bytes:
    out = bytearray()
    for method, number in (*_PATH_ITEM_FIELDS.items(), ("patch", 8)):
        op = item.get(method)
        if isinstance(op, dict):
            out += _pb_len(number, _pb_operation(op))
    for param in item.get("parameters") or ():
        out += _pb_len(9, _pb_parameter(param))
    out += _pb_vendor(10, item)
    return bytes(out)


def swagger_protobuf(document: dict[str, Any]) -> bytes:
    """A Swagger 2.0 document (as :func:`swagger` builds them) as gnostic's
    ``openapi.v2.Document`` protobuf."""
    out = bytearray()
    out += _pb_str(1, document.get("swagger"))
    info = document.get("info") or {}
    out += _pb_len(2, _pb_str(1, info.get("title")) + _pb_str(2, info.get("version")))
    paths = b"".join(  # Paths: repeated NamedPathItem path=2
        _pb_len(2, _pb_str(1, path) + _pb_len(2, _pb_path_item(item)))
        for path, item in (document.get("paths") or {}).items()
    )
    out += _pb_len(8, paths)
    definitions = b"".join(  # Definitions: repeated NamedSchema additional_properties=1
        _pb_len(1, _pb_str(1, name) + _pb_len(2, _pb_schema(schema)))
        for name, schema in (document.get("definitions") or {}).items()
    )
    out += _pb_len(9, definitions)
    for requirement in document.get("security") or ():  # SecurityRequirement
        named = b"".join(  # NamedStringArray{name=1, value=StringArray{value=1}}
            _pb_len(1, _pb_str(1, name) + _pb_len(2, _pb_strs(1, scopes)))
            for name, scopes in requirement.items()
        )
        out += _pb_len(12, named)
    security = document.get("securityDefinitions") or {}
    if security:  # SecurityDefinitions: repeated NamedSecurityDefinitionsItem
        named = b""
        for name, scheme in security.items():
            api_key = (  # ApiKeySecurity: type=1 name=2 in=3 description=4
                _pb_str(1, scheme.get("type"))
                + _pb_str(2, scheme.get("name"))
                + _pb_str(3, scheme.get("in"))
                + _pb_str(4, scheme.get("description"))
            )
            named += _pb_len(1, _pb_str(1, name) + _pb_len(2, _pb_len(2, api_key)))
        out += _pb_len(13, named)
    return bytes(out)
