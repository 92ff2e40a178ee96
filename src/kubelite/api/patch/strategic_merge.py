"""Kubernetes strategic merge patch, applied the way kube-apiserver applies it.

``application/strategic-merge-patch+json`` is JSON merge patch (RFC 7386) plus per-field rules
that the OpenAPI schema carries in ``x-kubernetes-patch-strategy`` and
``x-kubernetes-patch-merge-key``. This module follows apimachinery's ``pkg/util/strategicpatch``
(``StrategicMergeMapPatch``, server side):

* Maps merge recursively; ``null`` deletes a key. A field with strategy ``replace`` is replaced.
* Lists with strategy ``merge`` and a merge key merge item by item: patch items whose key matches
  an item are merged into it, the others are added. Lists of primitives with strategy ``merge``
  become the union. Every other list is replaced by the patch list.
* Order of a merged list: patch items take the patch's order, the server's items keep theirs, and
  a server item goes before a patch item only if both were on the server in that order. So items
  the server does not know yet come *first* (``[a, b]`` patched with ``[c]`` gives ``[c, a, b]``;
  kubectl's docs show the added container ahead of the old one) unless ``$setElementOrder`` says
  otherwise.
* Directives: ``$patch: replace`` (in a map: the map becomes the patch; in a list item: the list
  becomes the patch's other items), ``$patch: delete`` (in a map: it becomes ``{}``; in a list
  item: every item with that merge key goes), ``$retainKeys: [...]`` (drop the map's keys not
  listed; strategy ``retainKeys``), ``$deleteFromPrimitiveList/<field>: [...]``,
  ``$setElementOrder/<field>: [...]`` (listed items take that order, the server's unlisted items
  are interleaved as above). ``$patch: merge`` is accepted in a map as the default (apimachinery
  says "unknown patch type") and rejected in a list item, as apimachinery does.

A merging list costs what the lists hold: a patch item finds the item it merges into through an
index by merge key (apimachinery scans the list for each, n * m comparisons, which in Python let
a body of a few hundred kilobytes hold the server for minutes), and merge keys that are maps,
lists or null, which a merge may change, fall back to the scan.

Deliberate differences from apimachinery, all on odd input (the tests compare the rest with
``kubectl patch --local``): a ``$``-key the schema does not declare is an error (apimachinery
stores it; strict field validation rejects it later); a value added where the original has none
is merged into an empty value, so directives inside it are applied instead of being stored or
dropping the value; ``$deleteFromPrimitiveList`` runs after the list's own patch (apimachinery
picks by Go map order), must be a list of scalars and null items in merging lists are errors
(apimachinery ignores the former and panics on the latter); empty lists with ``$setElementOrder``
are not an error; and where apimachinery's order comes from Go slice aliasing (``$patch: delete``
items plus ``$setElementOrder``) or an inconsistent comparator (empty ``$setElementOrder``),
kubelite applies the rule above to the original list.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Hashable, Mapping
from typing import Any, Final

__all__ = ["Schema", "StrategicMergeError", "strategic_merge"]

_PATCH: Final = "$patch"
_RETAIN_KEYS: Final = "$retainKeys"
_DELETE_PREFIX: Final = "$deleteFromPrimitiveList"
_ORDER_PREFIX: Final = "$setElementOrder"
_REF_PREFIXES: Final = ("/definitions/", "/components/schemas/", "/$defs/")
_DROP: Final = object()  # a value that removes its key instead of being stored


class StrategicMergeError(ValueError):
    """A malformed strategic merge patch. ``code`` is the HTTP status kube-apiserver answers with.

    * 400 BadRequest: ``$retainKeys`` not a list, or a patched key missing from it;
      ``$deleteFromPrimitiveList``/``$setElementOrder`` keys without ``/<field>`` or with a bad
      value; a patch body that is not a JSON object.
    * 422 (reason Invalid): lists of lists.
    * 500 (reason Unknown; kubectl prints "Error from server: ..."): everything else apimachinery
      reports, which kube-apiserver does not map: an item without its merge key, an unknown
      ``$patch`` value, type mismatches, a ``$setElementOrder`` list that contradicts the patch.
      These are client errors; kubelite may prefer 400 for them.
    """

    def __init__(self, message: str, code: int = 500) -> None:
        super().__init__(message)
        self.code = code


class Schema:
    """One node of an OpenAPI v2/v3 (or JSON Schema ``$defs``) document, resolving ``$ref``.

    ``definitions`` maps definition names to nodes; a ``$ref`` such as
    ``#/definitions/io.k8s.api.core.v1.PodSpec``, ``#/components/schemas/...`` or
    ``/api/_definitions.json#/$defs/...`` is looked up there by its last segment. ``allOf``
    wrappers are followed too. A ``$ref`` that cannot be resolved raises :class:`KeyError`.
    """

    __slots__ = ("_chain", "_definitions", "_node")

    def __init__(self, node: Mapping[str, Any], definitions: Mapping[str, Mapping[str, Any]]):
        self._node = node
        self._definitions = definitions
        self._chain: list[Mapping[str, Any]] | None = None

    @classmethod
    def from_definitions(cls, definitions: Mapping[str, Mapping[str, Any]], name: str) -> Schema:
        """The schema of the definition called ``name``."""
        if name not in definitions:
            raise KeyError(f"no schema definition named {name!r}")
        return cls(definitions[name], definitions)

    def _nodes(self) -> list[Mapping[str, Any]]:
        """This node and every node it stands for via ``$ref`` and ``allOf``, outermost first."""
        if self._chain is None:
            chain: list[Mapping[str, Any]] = []
            pending: list[Mapping[str, Any]] = [self._node]
            while pending and len(chain) < 64:
                node = pending.pop(0)
                if any(node is seen for seen in chain):
                    continue
                chain.append(node)
                ref = node.get("$ref")
                if isinstance(ref, str):
                    pending.append(self._resolve(ref))
                pending.extend(n for n in node.get("allOf") or () if isinstance(n, Mapping))
            self._chain = chain
        return self._chain

    def _resolve(self, ref: str) -> Mapping[str, Any]:
        fragment = ref.partition("#")[2]
        for prefix in _REF_PREFIXES:
            if fragment.startswith(prefix):
                name = fragment[len(prefix) :].replace("~1", "/").replace("~0", "~")
                if name in self._definitions:
                    return self._definitions[name]
        raise KeyError(f"cannot resolve $ref {ref!r}")

    def _first(self, key: str) -> Any:
        return next((node[key] for node in self._nodes() if key in node), None)

    def field(self, name: str) -> Schema | None:
        """The schema of property ``name``; ``None`` when the object does not declare it.

        ``additionalProperties`` answers for every name; an object with neither ``properties``
        nor ``additionalProperties`` (``RawExtension``, ``JSON``) takes any field, schemaless."""
        for node in self._nodes():
            properties = node.get("properties")
            if isinstance(properties, Mapping) and isinstance(properties.get(name), Mapping):
                return Schema(properties[name], self._definitions)
        extra = self._first("additionalProperties")
        if isinstance(extra, Mapping):
            return Schema(extra, self._definitions)
        types = self._first("type")
        is_object = types is None or "object" in ([types] if isinstance(types, str) else types)
        free_form = self._first("x-kubernetes-preserve-unknown-fields") is True or (
            self._first("properties") is None and extra in (None, True)
        )
        return Schema({}, self._definitions) if is_object and free_form else None

    def items(self) -> Schema | None:
        """The schema of the items of this list, if it has one."""
        items = self._first("items")
        return Schema(items, self._definitions) if isinstance(items, Mapping) else None

    @property
    def patch_strategy(self) -> set[str]:
        """``x-kubernetes-patch-strategy`` split on commas, e.g. ``{"merge", "retainKeys"}``."""
        strategy = self._first("x-kubernetes-patch-strategy")
        if not isinstance(strategy, str):
            return set()
        return {part.strip() for part in strategy.split(",") if part.strip()}

    @property
    def merge_key(self) -> str | None:
        """``x-kubernetes-patch-merge-key``, the key that identifies items of a merging list."""
        key = self._first("x-kubernetes-patch-merge-key")
        return key if isinstance(key, str) and key else None


def strategic_merge(
    original: dict[str, Any], patch: dict[str, Any], schema: Schema | None
) -> dict[str, Any]:
    """Apply strategic merge ``patch`` to ``original`` (schema: the object's kind) and return the
    result. Neither input is modified. ``schema=None`` merges without any field rules.

    Raises :class:`StrategicMergeError` for malformed patches."""
    if not isinstance(original, dict) or not isinstance(patch, dict):
        raise StrategicMergeError(
            "a strategic merge patch and its target must be JSON objects", 400
        )
    return _merge_map(copy.deepcopy(original), copy.deepcopy(patch), schema, "")


# Both arguments of the helpers below are private copies that they may change and return.


def _merge_map(
    original: dict[str, Any], patch: dict[str, Any], schema: Schema | None, path: str
) -> dict[str, Any]:
    if _PATCH in patch:
        directive = patch.pop(_PATCH)
        if directive == "delete":
            return {}
        if directive == "replace":
            return _merge_map({}, patch, schema, path)
        if directive != "merge":
            raise _error(path, f"unknown patch type: {directive!r} in map: {patch}")
    _apply_retain_keys(original, patch, path)
    _apply_element_order(original, patch, schema, path)
    deletions: dict[str, Any] = {}
    for key, value in patch.items():
        if key.startswith(_DELETE_PREFIX):
            deletions[_target(key, _DELETE_PREFIX, path)] = value
            continue
        sub = schema.field(key) if schema is not None else None
        where = _join(path, key)
        if key.startswith("$") and sub is None:
            raise _error(path, f"unknown patch directive {key!r}", 400)
        if value is None:
            original.pop(key, None)
            continue
        current, strategy = original.get(key), _strategy(sub)
        result: Any
        if isinstance(current, dict) and isinstance(value, dict) and "replace" not in strategy:
            result = _merge_map(current, value, sub, where)
        elif isinstance(current, list) and isinstance(value, list) and "merge" in strategy:
            result = _merge_list(current, value, sub, where)
        else:  # nothing to merge with, or a field whose patch replaces it
            result = _fresh(value, sub, where)
        if result is _DROP:
            original.pop(key, None)
        else:
            original[key] = result
    for key, values in deletions.items():
        _delete_from_primitive_list(original, key, values, _join(path, key))
    return original


def _fresh(value: Any, schema: Schema | None, path: str) -> Any:
    """``value`` from the patch where the original has nothing to merge it with: nulls and
    directives are applied against an empty value; list items carrying ``$patch`` are dropped."""
    if isinstance(value, dict):
        if value.get(_PATCH) == "delete":
            return _DROP
        return _merge_map({}, value, schema, path)
    if isinstance(value, list):
        items = schema.items() if schema is not None else None
        return [
            _fresh(item, items, f"{path}[{i}]")
            for i, item in enumerate(value)
            if not (isinstance(item, dict) and _PATCH in item)
        ]
    return value


def _merge_list(
    original: list[Any], patch: list[Any], schema: Schema | None, path: str
) -> list[Any]:
    """Merge two lists of a field with strategy ``merge``."""
    if not original and not patch:
        return original
    merge_key = schema.merge_key if schema is not None else None
    if not _is_list_of_maps(original + patch, path):
        if merge_key:
            raise _error(path, f"list items must be maps with merge key {merge_key!r}")
        return _order(_dedupe(original + patch), patch, original, None, path)
    if not merge_key:
        raise _error(path, "cannot merge lists of maps without a merge key")
    items = schema.items() if schema is not None else None
    original, patch = _list_directives(original, patch, merge_key, items, path)
    if any(isinstance(o.get(merge_key, ""), (dict, list, type(None))) for o in original + patch):
        # a key that is a map, a list or null may change as its item merges: scan for each
        return _merge_list_slowly(original, patch, merge_key, items, path)
    merged = list(original)
    # each patch item merges into the first item with its key, found through an index (a list
    # of n items patched with m would otherwise take n * m comparisons, m * m when all are new)
    first: dict[Hashable, int] = {}
    for n, o in enumerate(merged):
        if merge_key in o:
            first.setdefault(_token(o[merge_key]), n)
    for i, item in enumerate(patch):
        token = _token(_key_of(item, merge_key, path))
        at = first.get(token)
        if at is None:
            first[token] = len(merged)
            merged.append(_fresh(item, items, f"{path}[{i}]"))
        else:
            merged[at] = _merge_map(merged[at], item, items, f"{path}[{i}]")
    return _order(merged, patch, original, merge_key, path)


def _merge_list_slowly(
    original: list[Any], patch: list[Any], merge_key: str, items: Schema | None, path: str
) -> list[Any]:
    """:func:`_merge_list`'s merge, each patch item found by a scan of the items so far."""
    merged = list(original)
    for i, item in enumerate(patch):
        token = _token(_key_of(item, merge_key, path))
        at = next(
            (n for n, o in enumerate(merged) if merge_key in o and _token(o[merge_key]) == token),
            None,
        )
        if at is None:
            merged.append(_fresh(item, items, f"{path}[{i}]"))
        else:
            merged[at] = _merge_map(merged[at], item, items, f"{path}[{i}]")
    return _order(merged, patch, original, merge_key, path)


def _list_directives(
    original: list[Any], patch: list[Any], merge_key: str, items: Schema | None, path: str
) -> tuple[list[Any], list[Any]]:
    """Apply the ``$patch`` items of a merging list; return the original and the other items."""
    rest: list[Any] = []
    replace = False
    deleted: set[Hashable] = set()
    for item in patch:
        if _PATCH not in item:
            rest.append(item)
        elif item[_PATCH] == "delete":
            deleted.add(_token(_key_of(item, merge_key, path)))
        elif item[_PATCH] == "replace":
            replace = True
        elif item[_PATCH] == "merge":
            raise _error(path, "merging lists cannot yet be specified in the patch")
        else:
            raise _error(path, f"unknown patch type: {item[_PATCH]!r} in map: {item}")
    if replace:
        return [_fresh(item, items, f"{path}[{i}]") for i, item in enumerate(rest)], []
    if deleted:
        original = [o for o in original if not (merge_key in o and _token(o[merge_key]) in deleted)]
    return original, rest


def _order(
    merged: list[Any], order: list[Any], server: list[Any], merge_key: str | None, path: str
) -> list[Any]:
    """apimachinery's ``normalizeElementOrder``: items named in ``order`` follow it, the others
    keep their order in ``server``; a server item precedes an ordered item only if it preceded it
    on the server."""

    def ident(item: Any) -> Hashable:
        return _token(_key_of(item, merge_key, path) if merge_key else item)

    def positions(items: list[Any]) -> dict[Hashable, int]:
        out: dict[Hashable, int] = {}
        for n, item in enumerate(items):
            out.setdefault(ident(item), n)
        return out

    wanted, on_server = positions(order), positions(server)
    ordered = sorted((m for m in merged if ident(m) in wanted), key=lambda m: wanted[ident(m)])
    rest = sorted(
        (m for m in merged if ident(m) not in wanted),
        key=lambda m: on_server.get(ident(m), len(server)),
    )
    out: list[Any] = []
    r = o = 0
    while r < len(rest) and o < len(ordered):
        left, right = on_server.get(ident(rest[r])), on_server.get(ident(ordered[o]))
        if left is not None and right is not None and left < right:
            out.append(rest[r])
            r += 1
        else:
            out.append(ordered[o])
            o += 1
    return out + rest[r:] + ordered[o:]


def _apply_retain_keys(original: dict[str, Any], patch: dict[str, Any], path: str) -> None:
    if _RETAIN_KEYS not in patch:
        return
    keep = patch.pop(_RETAIN_KEYS)
    if not isinstance(keep, list):
        raise _error(path, "invalid patch format of retainKeys: $retainKeys must be a list", 400)
    kept = {k for k in keep if isinstance(k, str)}
    for key, value in patch.items():
        if value is None or key.startswith((_DELETE_PREFIX, _ORDER_PREFIX)) or key in kept:
            continue
        raise _error(
            path, f"invalid patch format of retainKeys: {key!r} is not in $retainKeys", 400
        )
    for key in [k for k in original if k not in kept]:
        del original[key]


def _apply_element_order(
    original: dict[str, Any], patch: dict[str, Any], schema: Schema | None, path: str
) -> None:
    """Merge each list named by a ``$setElementOrder/<field>`` and put it in that order."""
    for directive in [k for k in patch if k.startswith(_ORDER_PREFIX)]:
        order = patch.pop(directive)
        key = _target(directive, _ORDER_PREFIX, path)
        where = _join(path, key)
        if not isinstance(order, list):
            raise _error(path, f"invalid patch format of setElementOrder list: {directive!r}", 400)
        in_original, in_patch = key in original, key in patch
        server, items = original.get(key, []), patch.get(key, [])
        if not isinstance(server, list) or not isinstance(items, list):
            raise _error(where, f"{directive} names a field that is not a list")
        sub = schema.field(key) if schema is not None else None
        merge_key = sub.merge_key if sub is not None else None
        _check_order(items, order, merge_key, where)
        if in_original and in_patch and "merge" in _strategy(sub):
            merged = _merge_list(server, items, sub, where)
        elif in_patch:
            merged = _fresh(items, sub, where)
        elif in_original:
            merged = server
        else:
            continue
        original[key] = _order(merged, order, server, merge_key, where)
        patch.pop(key, None)


def _check_order(items: list[Any], order: list[Any], merge_key: str | None, path: str) -> None:
    """The patch's items must appear in ``$setElementOrder`` and in the same relative order."""
    if not order:
        return

    def ident(value: Any) -> Hashable:
        return _token(_key_of(value, merge_key, path) if merge_key else value)

    pending = [i for i in items if not (isinstance(i, dict) and _PATCH in i)]
    at = 0
    for entry in order:
        if at == len(pending):
            return
        if ident(pending[at]) == ident(entry):
            at += 1
    if at < len(pending):
        raise _error(
            path, f"the order in patch list {items} doesn't match $setElementOrder {order}"
        )


def _delete_from_primitive_list(original: dict[str, Any], key: str, values: Any, path: str) -> None:
    if not isinstance(values, list) or any(isinstance(v, (dict, list)) for v in values):
        raise _error(
            path, "invalid patch format of primitive list: expected a list of scalars", 400
        )
    current = original.get(key)
    if isinstance(current, list):
        drop = {_token(v) for v in values}
        original[key] = [v for v in current if _token(v) not in drop]


def _is_list_of_maps(items: list[Any], path: str) -> bool:
    kinds = {_kind(item) for item in items}
    if "list" in kinds:
        raise _error(path, "lists of lists are not supported", 422)
    if "null" in kinds or len(kinds) > 1:
        raise _error(path, f"list element types are not identical: {', '.join(sorted(kinds))}")
    return kinds == {"map"}


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, dict):
        return "map"
    return "list" if isinstance(value, list) else type(value).__name__


def _token(value: Any) -> Hashable:
    """An identity for JSON equality: ``1 == 1.0`` but ``1 != True != "1"``."""
    if isinstance(value, (dict, list)):
        return ("json", json.dumps(value, sort_keys=True))
    return (_kind(value), value)


def _key_of(item: Any, merge_key: str | None, path: str) -> Any:
    if not isinstance(item, dict):
        raise _error(path, f"expected a map with merge key {merge_key!r}, got {item!r}")
    if merge_key not in item:
        raise _error(path, f"map: {item} does not contain declared merge key: {merge_key}")
    return item[merge_key]


def _dedupe(items: list[Any]) -> list[Any]:
    seen: set[Hashable] = set()
    out = []
    for item in items:
        if _token(item) not in seen:
            seen.add(_token(item))
            out.append(item)
    return out


def _strategy(schema: Schema | None) -> set[str]:
    return schema.patch_strategy if schema is not None else set()


def _target(key: str, prefix: str, path: str) -> str:
    head, slash, field = key.partition("/")
    if not slash or head != prefix:
        kind = "primitive list" if prefix == _DELETE_PREFIX else "setElementOrder list"
        raise _error(path, f"invalid patch format of {kind}: {key!r}", 400)
    return field


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _error(path: str, message: str, code: int = 500) -> StrategicMergeError:
    return StrategicMergeError(f"{path}: {message}" if path else message, code)
