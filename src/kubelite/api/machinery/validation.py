"""Server-side field validation: the ``fieldValidation`` query parameter of create, update and
patch (``Strict``, ``Warn``, ``Ignore``), as kube-apiserver's strict decoding does it.

kube-apiserver decodes a request body into the kind's Go struct with sigs.k8s.io/json's
``UnmarshalStrict``, which records (in document order, each text once, at most 100):

- ``unknown field "<path>"`` for a key a struct does not declare;
- ``duplicate field "<path>"`` for a key repeated in one JSON object (struct, map or free-form).

A path joins keys with ``.`` and list indexes as ``[i]``; map keys are part of it
(``spec.template.spec.containers[0].foo``, ``metadata.labels`` never: a map has no unknown keys).
Types are not checked here (a type mismatch is a different, non-strict error), and neither are
the insides of opaque values: ``x-kubernetes-preserve-unknown-fields``, ``FieldsV1``
(managedFields), ``RawExtension`` and untyped JSON.

What the handlers do with them (staging/src/k8s.io/apiserver/pkg/endpoints/handlers):

- ``Strict`` on create/update: 400 BadRequest, ``<Kind> in version "<v>" cannot be handled as a
  <Kind>: strict decoding error: unknown field "foo", unknown field "spec.bar"`` (create.go and
  update.go ``transformDecodeError``; apimachinery ``runtime.NewStrictDecodingError`` joins with
  ``", "``). ``<Kind>``/``<v>`` first come from the body's ``kind``/``apiVersion``.
- ``Strict`` on a JSON merge / JSON patch / strategic merge patch: 422 Invalid,
  ``' "" is invalid: patch: Invalid value: "<patched object>": strict decoding error: ...'``
  (patch.go); see :func:`patch_validation_error`.
- ``Warn``: the request succeeds, and each text becomes a response header
  ``Warning: 299 - "unknown field \\"foo\\""`` (:func:`warning_headers`).
- ``Ignore``: nothing. An **absent** (or empty) parameter means ``Warn`` (handlers/rest.go
  ``fieldValidation``); kubectl sends ``Strict`` (default ``--validate``) or ``Ignore``.
- Any other value: 422 Invalid, ``CreateOptions.meta.k8s.io "" is invalid: fieldValidation:
  Unsupported value: "X": supported values: "", "Ignore", "Strict", "Warn"`` (``UpdateOptions``,
  ``PatchOptions`` likewise; apimachinery ``ValidateFieldValidation``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from typing import Any

from kubelite.api.catalogue import ResourceInfo, custom_schema, load_schema_definitions
from kubelite.api.errors import APIError, Cause, go_quote
from kubelite.api.memo import IdentityMemo

__all__ = [
    "IGNORE",
    "STRICT",
    "WARN",
    "directive",
    "field_validation_error",
    "invalid_directive",
    "patch_validation_error",
    "strict_errors",
    "unknown_fields",
    "warning_headers",
    "warnings_for",
]

STRICT, WARN, IGNORE = "Strict", "Warn", "Ignore"
#: kube-apiserver's allowed values, sorted as its error message lists them.
_ALLOWED = ("", IGNORE, STRICT, WARN)
_OPTIONS_KIND = {"create": "CreateOptions", "update": "UpdateOptions", "patch": "PatchOptions"}
_OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
_DEFS_PREFIX = "#/$defs/"
#: Definitions whose Go types decode themselves from raw JSON: nothing inside is checked.
_OPAQUE = frozenset(
    {
        "io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1",
        "io.k8s.apimachinery.pkg.runtime.RawExtension",
    }
)
#: sigs.k8s.io/json stops recording strict errors after this many.
MAX_ERRORS = 100
#: apiserver's warning recorder (endpoints/filters/warning.go) truncates past these.
_WARNING_TOTAL_RUNES = 4 * 1024
_WARNING_ITEM_RUNES = 256


def directive(query: dict[str, str], operation: str = "create") -> str:
    """The field validation directive of a request: ``Strict``, ``Warn`` or ``Ignore``.

    Absent or empty means ``Warn``. Any other value raises :func:`invalid_directive` for
    ``operation`` (``create``, ``update`` or ``patch``).
    """
    value = query.get("fieldValidation", "")
    if value not in _ALLOWED:
        raise invalid_directive(value, operation)
    return value or WARN


def invalid_directive(value: str, operation: str = "create") -> APIError:
    """422 Invalid for a ``fieldValidation`` value kube-apiserver does not know."""
    kind = _OPTIONS_KIND.get(operation, "CreateOptions")
    supported = ", ".join(go_quote(v) for v in _ALLOWED)
    detail = f"Unsupported value: {go_quote(value)}: supported values: {supported}"
    return APIError(
        422,
        "Invalid",
        f'{kind}.meta.k8s.io "" is invalid: fieldValidation: {detail}',
        {
            "group": "meta.k8s.io",
            "kind": kind,
            "causes": [
                Cause("FieldValueNotSupported", detail, "fieldValidation").as_dict(),
            ],
        },
    )


# --- finding unknown and duplicate fields ---------------------------------------------------


class _Pairs(list[tuple[str, Any]]):
    """A JSON object as decoded, keys in order and repeats kept (object_pairs_hook)."""


def _members(node: Any) -> Iterable[tuple[str, Any]] | None:
    if isinstance(node, _Pairs):
        return node
    if isinstance(node, dict):
        return node.items()
    return None


def _join(stack: str, key: str) -> str:
    return f"{stack}.{key}" if stack else key


#: schema node -> (the node resolved, opaque): see :meth:`_Walker.resolve`
_RESOLVED: IdentityMemo[tuple[dict[str, Any], bool]] = IdentityMemo(50_000)


class _Walker:
    def __init__(self, definitions: dict[str, Any]) -> None:
        self.definitions = definitions
        self.found: list[tuple[str, str]] = []  # (kind, path): "unknown"/"duplicate"
        self._seen: set[tuple[str, str]] = set()

    def record(self, kind: str, path: str) -> None:
        if len(self.found) < MAX_ERRORS and (kind, path) not in self._seen:
            self._seen.add((kind, path))
            self.found.append((kind, path))

    def resolve(self, schema: dict[str, Any]) -> tuple[dict[str, Any], bool]:
        """Follow ``$ref`` and a lone ``allOf``; the flag says the value is opaque. Resolved
        once per schema node (schemas are shared and never change)."""
        cached = _RESOLVED.get(schema)
        if cached is not None:
            return cached
        return _RESOLVED.put(self._resolve(schema), schema)

    def _resolve(self, schema: dict[str, Any]) -> tuple[dict[str, Any], bool]:
        for _ in range(64):
            ref = schema.get("$ref")
            if isinstance(ref, str) and ref.startswith(_DEFS_PREFIX):
                name = ref[len(_DEFS_PREFIX) :]
                target = self.definitions.get(name)
                if name in _OPAQUE or not isinstance(target, dict):
                    return schema, True
                schema = target
                continue
            all_of = schema.get("allOf")
            if (
                isinstance(all_of, list)
                and len(all_of) == 1
                and isinstance(all_of[0], dict)
                and "properties" not in schema
            ):
                rest = {k: v for k, v in schema.items() if k != "allOf"}
                schema = {**all_of[0], **rest}
                continue
            break
        return schema, False

    def walk(self, schema: dict[str, Any], node: Any, stack: str) -> None:
        if not isinstance(node, dict | list):
            return  # a scalar has no fields (its type is checked elsewhere)
        schema, opaque = self.resolve(schema)
        if opaque:
            return
        members = _members(node)
        if members is not None:
            self.object(schema, members, stack)
        elif isinstance(node, list):
            items = schema.get("items")
            if isinstance(items, dict):
                for index, item in enumerate(node):
                    self.walk(items, item, f"{stack}[{index}]")
            elif "type" not in schema or schema.get("x-kubernetes-preserve-unknown-fields"):
                self.free_form(node, stack)

    def object(
        self, schema: dict[str, Any], members: Iterable[tuple[str, Any]], stack: str
    ) -> None:
        properties = schema.get("properties")
        additional = schema.get("additionalProperties")
        preserve = schema.get("x-kubernetes-preserve-unknown-fields") is True
        if not isinstance(properties, dict):
            types = schema.get("type")
            is_object = types == "object" or (isinstance(types, list) and "object" in types)
            if not isinstance(additional, dict) and (preserve or not is_object):
                # untyped JSON or preserved: free-form; a scalar: a type error, not ours
                self.free_form(members, stack)
                return
            properties = {}  # a map, or an object with no fields (an empty Go struct)
        seen: set[str] = set()
        mapped = isinstance(additional, dict)
        for key, value in members:
            known = key in properties
            if known or mapped or preserve:
                if key in seen:
                    self.record("duplicate", _join(stack, key))
                seen.add(key)
                if not isinstance(value, dict | list):
                    continue  # a known field, a map entry or a preserved one, holding a scalar
            path = _join(stack, key)
            if known:
                self.walk(properties[key], value, path)
            elif isinstance(additional, dict):
                self.walk(additional, value, path)
            elif preserve:
                self.free_form(value, path)
            else:
                self.record("unknown", path)

    def free_form(self, node: Any, stack: str) -> None:
        members = _members(node)
        if members is not None:
            seen: set[str] = set()
            for key, value in members:
                if key in seen:
                    self.record("duplicate", _join(stack, key))
                seen.add(key)
                self.free_form(value, _join(stack, key))
        elif isinstance(node, list):
            for index, item in enumerate(node):
                self.free_form(item, f"{stack}[{index}]")


_OPEN_KIND: dict[str, Any] = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}


#: (the kind's info, the schema given) -> the kind schema
_KIND_SCHEMAS: IdentityMemo[dict[str, Any]] = IdentityMemo(4096)


def _kind_schema(info: ResourceInfo, schema: dict[str, Any] | None) -> dict[str, Any]:
    """:func:`_make_kind_schema`, once per kind and schema (both shared and unchanging)."""
    cached = _KIND_SCHEMAS.get(info, schema)
    if cached is not None:
        return cached
    return _KIND_SCHEMAS.put(_make_kind_schema(info, schema), info, schema)


def _make_kind_schema(info: ResourceInfo, schema: dict[str, Any] | None) -> dict[str, Any]:
    if schema is None:
        schema = custom_schema(info)
    if schema is None and info.schema_ref:
        found = load_schema_definitions().get(info.schema_ref)
        schema = found if isinstance(found, dict) else None
    if schema is None:
        schema = _OPEN_KIND
    # Every kind's metadata decodes into ObjectMeta (a CRD's schema may say less about it).
    properties = dict(schema.get("properties") or {})
    properties["metadata"] = {"$ref": _DEFS_PREFIX + _OBJECT_META}
    properties.setdefault("apiVersion", {"type": "string"})
    properties.setdefault("kind", {"type": "string"})
    return {**schema, "properties": properties}


def _find(
    info: ResourceInfo, body: bytes | str | dict[str, Any], schema: dict[str, Any] | None
) -> list[tuple[str, str]]:
    if isinstance(body, bytes | str):
        try:
            node: Any = json.loads(body, object_pairs_hook=_Pairs)
        except ValueError:
            return []
    else:
        node = body
    walker = _Walker(load_schema_definitions())
    walker.walk(_kind_schema(info, schema), node, "")
    return walker.found


_KEY_TOKEN = re.compile(rb'"\s*:')


def _key_count(node: Any) -> int:
    """The keys of every object in ``node``, counted without recursion (bodies may nest
    thousands deep); empty containers and scalars are not entered (managedFields' FieldsV1 is
    mostly ``{}``)."""
    count = 0
    pending = [node]
    while pending:
        value = pending.pop()
        if type(value) is dict:
            count += len(value)
            pending.extend(v for v in value.values() if v and type(v) in (dict, list))
        elif type(value) is list:
            pending.extend(v for v in value if v and type(v) in (dict, list))
    return count


def may_repeat_keys(raw: bytes, decoded: Any) -> bool:
    """False when ``raw`` (which decoded to ``decoded``) certainly has no repeated key: it has
    no more ``"...":`` tokens than ``decoded`` has keys. True means "look closer": a repeat, or a
    string value that happens to contain ``":``. Lets the common body skip the slow
    pair-preserving decode."""
    return len(_KEY_TOKEN.findall(raw)) != _key_count(decoded)


def strict_errors(
    info: ResourceInfo, body: bytes | str | dict[str, Any], schema: dict[str, Any] | None = None
) -> list[str]:
    """The strict decoding errors for a request body, in document order, as kube-apiserver
    words them: ``unknown field "spec.foo"``, ``duplicate field "data.a"``.

    ``body`` is the raw JSON (duplicates can only be seen there) or an already decoded object
    (unknown fields only). ``schema`` overrides the kind's built-in definition: a CRD passes its
    version's ``openAPIV3Schema`` (structural-schema keywords). A kind with neither accepts any
    field, except in ``metadata`` (always ObjectMeta). A body that is not JSON gives no errors:
    decoding it fails elsewhere.
    """
    return [f"{kind} field {go_quote(path)}" for kind, path in _find(info, body, schema)]


def unknown_fields(
    info: ResourceInfo, obj: dict[str, Any] | bytes | str, schema: dict[str, Any] | None = None
) -> list[str]:
    """The paths of ``obj``'s fields that ``info``'s schema does not declare, in document order
    (``foo``, ``spec.template.spec.containers[0].foo``)."""
    return [path for kind, path in _find(info, obj, schema) if kind == "unknown"]


# --- the answers ----------------------------------------------------------------------------


def _texts(fields: Iterable[str]) -> Iterator[str]:
    """Accept error texts (``unknown field "x"``) or bare paths (``x``, from unknown_fields)."""
    for item in fields:
        if item.startswith(("unknown field ", "duplicate field ")):
            yield item
        else:
            yield f"unknown field {go_quote(item)}"


def field_validation_error(
    info: ResourceInfo, fields: Iterable[str], obj: dict[str, Any] | None = None
) -> APIError:
    """400 BadRequest for a create or update under ``fieldValidation=Strict``.

    ``fields``: :func:`strict_errors` texts or :func:`unknown_fields` paths. The message names
    the kind and version the body claimed (``obj``'s ``kind``/``apiVersion``), else ``info``'s.
    """
    kind, version = info.kind, info.version
    if obj is not None:
        claimed_kind = obj.get("kind")
        claimed_version = obj.get("apiVersion")
        if isinstance(claimed_kind, str) and claimed_kind:
            kind = claimed_kind
        if isinstance(claimed_version, str) and claimed_version:
            version = claimed_version.rpartition("/")[2]
    detail = "strict decoding error: " + ", ".join(_texts(fields))
    return APIError(
        400,
        "BadRequest",
        f"{kind} in version {go_quote(version)} cannot be handled as a {info.kind}: {detail}",
    )


def patch_validation_error(patched: dict[str, Any], fields: Iterable[str]) -> APIError:
    """422 Invalid for a JSON merge / JSON patch under ``fieldValidation=Strict``: kube words it
    ``' "" is invalid: patch: Invalid value: "<patched JSON>": strict decoding error: ...'``
    (for strategic merge, Go prints the *patch* map with ``%+v`` instead; we print JSON)."""
    detail = "strict decoding error: " + ", ".join(_texts(fields))
    value = json.dumps(patched, separators=(",", ":"), ensure_ascii=False)
    message = f"Invalid value: {go_quote(value)}: {detail}"
    return APIError(
        422,
        "Invalid",
        f' "" is invalid: patch: {message}',
        {"causes": [Cause("FieldValueInvalid", message, "patch").as_dict()]},
    )


def warnings_for(fields: Iterable[str]) -> list[str]:
    """The warning texts for ``fieldValidation=Warn``: one per error, the error's own text."""
    out: list[str] = []
    for text in _texts(fields):
        if text not in out:
            out.append(text)
    return out


def warning_headers(warnings: Iterable[str]) -> list[tuple[bytes, bytes]]:
    """``Warning`` response headers, as kube-apiserver's recorder writes them:
    ``299 - "unknown field \\"foo\\""`` (``"`` and ``\\`` escaped), duplicates dropped, and
    every text cut to 256 characters once they total more than 4096."""
    texts: list[str] = []
    for text in warnings:
        if text and text not in texts:
            texts.append(text)
    if sum(len(t) for t in texts) > _WARNING_TOTAL_RUNES:
        texts = [t[:_WARNING_ITEM_RUNES] for t in texts]
    return [(b"warning", _warning_value(t).encode()) for t in texts]


def _warning_value(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    return f'299 - "{escaped}"'
