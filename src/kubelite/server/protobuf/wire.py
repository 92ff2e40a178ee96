"""The protobuf wire format, read: base-128 varints and a message split into its fields (field
number, wire type, value), as Go's google.golang.org/protobuf ``encoding/protowire/wire.go``
reads them. Used by the request decoder (:mod:`kubelite.server.protobuf.decoder`) and by the
tests that read the served ``/openapi/v2`` protobuf back."""

from __future__ import annotations

__all__ = ["FIXED32", "FIXED64", "LEN", "VARINT", "Value", "read_fields", "read_varint"]

VARINT, FIXED64, LEN, FIXED32 = 0, 1, 2, 5
Value = int | bytes


def read_varint(data: bytes, pos: int) -> tuple[int, int]:
    """Return (value, next position) of the base-128 varint at ``pos``."""
    result = shift = 0
    while True:
        if pos >= len(data):
            raise ValueError("truncated varint")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
        if shift >= 70:
            raise ValueError("varint longer than 10 bytes")


def read_fields(data: bytes) -> list[tuple[int, int, Value]]:
    """Split one message into (field number, wire type, value) triples: varints and fixed
    widths as ints, length-delimited fields as bytes."""
    fields: list[tuple[int, int, Value]] = []
    pos = 0
    while pos < len(data):
        key, pos = read_varint(data, pos)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise ValueError("field number 0")
        value: Value
        if wire == VARINT:
            value, pos = read_varint(data, pos)
        elif wire in (FIXED64, FIXED32):
            width = 8 if wire == FIXED64 else 4
            if pos + width > len(data):
                raise ValueError("truncated fixed-width field")
            value = int.from_bytes(data[pos : pos + width], "little")
            pos += width
        elif wire == LEN:
            length, pos = read_varint(data, pos)
            if pos + length > len(data):
                raise ValueError(f"field {number} runs past the end of its message")
            value = data[pos : pos + length]
            pos += length
        else:
            raise ValueError(f"unsupported wire type {wire} (field {number})")
        fields.append((number, wire, value))
    return fields
