"""kube-apiserver's answers to a body that does not decode, and the nesting-depth check that
comes before decoding.

- On create and update a decoding error is 400 BadRequest ``<Kind> in version "<v>" cannot be
  handled as a <Kind>: <error>`` (k8s.io/apiserver ``pkg/endpoints/handlers/create.go`` and
  ``update.go``, ``transformDecodeError`` in ``rest.go``), with the kind and version the body
  claims, defaulted from the request's (``gvkWithDefaults``).
- On a JSON or merge patch it is 422 Invalid ``' "" is invalid: patch: Invalid value:
  "<patched object>": <error>'`` (``pkg/endpoints/handlers/patch.go``), the patched object
  written as Go's ``json.Marshal`` writes it.
- A body whose ``apiVersion`` and ``kind`` cannot be read, or nested deeper than Go's JSON
  scanner allows (10,000 levels), is 400 ``the object provided is unrecognized (must be of type
  <Kind>): <reason> (<the body's start>)`` (``transformDecodeError`` and ``summarizeData``).
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from kubelite.api.catalogue import ResourceInfo
from kubelite.api.encoding import jsoncodec
from kubelite.api.encoding.jsoncodec import MAX_DEPTH
from kubelite.api.errors import APIError, Cause, go_quote

__all__ = [
    "decode_error",
    "depth_error",
    "go_json",
    "json_depth",
    "patch_decode_error",
    "summarize",
    "unrecognized",
]


def _claimed(info: ResourceInfo, obj: dict[str, Any]) -> tuple[str, str]:
    """The kind and version a body claims, defaulted from ``info`` (gvkWithDefaults)."""
    kind = obj.get("kind")
    api_version = obj.get("apiVersion")
    claimed_kind = kind if isinstance(kind, str) and kind else info.kind
    version = info.version
    if isinstance(api_version, str) and api_version:
        version = api_version.rpartition("/")[2] or info.version
    return claimed_kind, version


def summarize(raw: bytes, limit: int = 30) -> str:
    """apiserver's summarizeData: the body's start (hex unless it starts with ``{``)."""
    if not raw:
        return "<empty>"
    cut = raw[:limit]
    text = cut.decode("utf-8", "replace") if raw[:1] == b"{" else cut.hex()
    return text + " ..." if len(raw) > limit else text


def unrecognized(info: ResourceInfo, reason: str, raw: bytes) -> APIError:
    return APIError(
        400,
        "BadRequest",
        f"the object provided is unrecognized (must be of type {info.kind}): {reason} "
        f"({summarize(raw)})",
    )


def decode_error(info: ResourceInfo, obj: dict[str, Any], reason: str) -> APIError:
    """400 BadRequest: ``<Kind> in version "<v>" cannot be handled as a <Kind>: <reason>``."""
    kind, version = _claimed(info, obj)
    return APIError(
        400,
        "BadRequest",
        f"{kind} in version {go_quote(version)} cannot be handled as a {info.kind}: {reason}",
    )


def go_json(value: Any) -> str:
    """``json.Marshal`` of a decoded map: keys sorted, compact, ``<``, ``>``, ``&`` escaped."""
    text = jsoncodec.dumps(value, orjson.OPT_SORT_KEYS).decode()
    return (
        text.replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


def patch_decode_error(patched: dict[str, Any], reason: str) -> APIError:
    """422 Invalid for a patch whose result does not decode (patch.go): ``' "" is invalid:
    patch: Invalid value: "<patched object>": <reason>'``."""
    message = f"Invalid value: {go_quote(go_json(patched))}: {reason}"
    return APIError(
        422,
        "Invalid",
        f' "" is invalid: patch: {message}',
        {"causes": [Cause("FieldValueInvalid", message, "patch").as_dict()]},
    )


# --- nesting depth --------------------------------------------------------------------------

_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')
_BRACKET = re.compile(rb"[\[\]{}]")


def json_depth(raw: bytes, limit: int = MAX_DEPTH) -> tuple[int, str]:
    """The deepest nesting of arrays and objects in JSON text (strings skipped), counted up to
    ``limit + 1``, and the bracket that went past ``limit`` (``""`` when none did)."""
    depth = deepest = 0
    for match in _BRACKET.finditer(_STRING.sub(b"", raw)):
        c = match.group()
        if c == b"[" or c == b"{":
            depth += 1
            if depth > deepest:
                deepest = depth
                if depth > limit:
                    return depth, c.decode()
        else:
            depth -= 1
    return deepest, ""


def depth_error(kind: str, raw: bytes, bracket: str) -> APIError:
    """400 for a body nested deeper than Go's JSON scanner allows: the serializer's first read
    (apiVersion and kind, encoding/json) fails with the scanner's syntax error."""
    reason = (
        "couldn't get version/kind; json parse error: "
        f"invalid character '{bracket or '{'}' exceeded max depth"
    )
    return APIError(
        400,
        "BadRequest",
        f"the object provided is unrecognized (must be of type {kind}): {reason} "
        f"({summarize(raw)})",
    )
