"""resourceVersion: parsed and stamped here and nowhere else.

To clients a resourceVersion is an opaque decimal string; to kubelite it is the storage revision
(the object's mod_revision, or a list's store revision). It is stripped from stored bodies and
stamped on every object read.
"""

from __future__ import annotations

from typing import Any


class BadResourceVersion(ValueError):
    def __init__(self, value: str) -> None:
        self.value = value
        super().__init__(f'strconv.ParseUint: parsing "{value}": invalid syntax')


def parse(value: str | None) -> int:
    """``None``, ``""`` and ``"0"`` are 0 (unset); otherwise a non-negative integer."""
    if value is None or value == "":
        return 0
    if not value.isdigit() or not value.isascii():
        raise BadResourceVersion(value)
    return int(value)


def format_rv(revision: int) -> str:
    return str(revision)


def stamp(obj: dict[str, Any], revision: int) -> dict[str, Any]:
    """Set ``metadata.resourceVersion`` (in place) and return the object."""
    obj.setdefault("metadata", {})["resourceVersion"] = str(revision)
    return obj


def strip(obj: dict[str, Any]) -> dict[str, Any]:
    """Remove ``metadata.resourceVersion`` (in place): stored bodies never carry it."""
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        meta.pop("resourceVersion", None)
    return obj


def of(obj: dict[str, Any]) -> str:
    """The resourceVersion string an object carries ("" when none)."""
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        value = meta.get("resourceVersion")
        if isinstance(value, str):
            return value
    return ""
