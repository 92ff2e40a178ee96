"""YAML request bodies read as kube-apiserver reads them (sigs.k8s.io/yaml: YAML converted to
JSON), on PyYAML's safe loader, imported with the first YAML body.

What differs from PyYAML's own reading, to match Go's: timestamps and ``!!binary`` stay strings,
keys become strings (``1: a`` is ``{"1": "a"}``), NaN and infinities are refused (JSON has none),
aliases are bounded as go-yaml v2 bounds them (below), and with ``strict`` a key repeated in one
mapping is an error (UnmarshalStrict).

Aliases: PyYAML shares an aliased value, but everything after the reading (JSON, validation,
storage) writes it out once per alias, so a few kilobytes of nested aliases stand for gigabytes.
go-yaml (sigs.k8s.io/yaml's goyaml.v2, ``decode.go``) counts the nodes it decodes and those it
decodes through an alias, and refuses the document ("document contains excessive aliasing") as
soon as more than 100 of them came through aliases, more than 1,000 in all, and the aliased
share passes ``allowedAliasRatio``: 99% up to 400,000 nodes, down to 10% at 4,000,000. The same
count is made here over the composed node graph, before anything is built: at most about
400,000 nodes come from aliases, whatever the document's size. An alias inside its own anchor
is go-yaml's "anchor '<name>' value contains itself".
"""

from __future__ import annotations

import base64
import functools
import json
import math
import re
from typing import Any

__all__ = ["DuplicateKey", "YAMLError", "load"]

_TIMESTAMP = "tag:yaml.org,2002:timestamp"
_MERGE = "tag:yaml.org,2002:merge"
#: go-yaml v2's alias_ratio_range_low and _high (decode.go)
_RATIO_LOW = 400_000
_RATIO_HIGH = 4_000_000


class YAMLError(ValueError):
    """A body that is not YAML kube-apiserver would read, with go-yaml's kind of message."""


class DuplicateKey(YAMLError):
    """A key repeated in one mapping, under strict reading."""


def load(raw: bytes, *, strict: bool = False) -> Any:
    """The JSON value of a YAML document; :class:`YAMLError` when it has none."""
    import yaml

    value = None
    try:
        loader = _loaders()[strict](raw)
        try:  # yaml.load's steps, the aliases counted between composing and building
            node = loader.get_single_node()
            if node is not None:
                _check_aliases(node, raw)
                value = loader.construct_document(node)
        finally:
            loader.dispose()
    except DuplicateKey:
        raise
    except (yaml.YAMLError, RecursionError, UnicodeDecodeError, TypeError) as exc:
        raise YAMLError(f"yaml: {exc}") from None
    _check_numbers(value)
    return value


def _excessive(decoded: int, aliased: int) -> bool:
    """go-yaml v2's test, made after each node it decodes (decode.go ``unmarshal``)."""
    if aliased <= 100 or decoded <= 1000:
        return False
    if decoded <= _RATIO_LOW:
        allowed = 0.99
    elif decoded >= _RATIO_HIGH:
        allowed = 0.10
    else:
        allowed = 0.99 - 0.89 * (decoded - _RATIO_LOW) / (_RATIO_HIGH - _RATIO_LOW)
    return aliased / decoded > allowed


def _check_aliases(root: Any, raw: bytes) -> None:
    """go-yaml's count of decoded and aliased nodes (see the module's docstring), over the
    node graph PyYAML composed, where an alias is its anchor's node once more: the first edge
    to a node, in the document's order, defines it, the later ones are aliases.

    The document is walked once, and each node's count (itself and all go-yaml decodes below
    it) kept once its children are done: an alias adds its anchor's count at once. Within an
    alias both counts rise by one per node, so the aliased share only grows and the allowed
    share only shrinks: testing at the end of the alias says what testing at each of its
    nodes would."""
    if b"*" not in raw:
        return  # no alias
    import yaml

    scalar = yaml.ScalarNode
    counts: dict[int, int] = {}  # the nodes done
    below: dict[int, int] = {}  # the nodes being walked, and what was decoded below them so far
    decoded, aliased = 1, 0  # the document node
    # a node, its parent's id, whether its children are done
    pending: list[tuple[Any, int, bool]] = [(root, 0, False)]
    while pending:
        node, parent, leaving = pending.pop()
        key = id(node)
        if leaving:
            counts[key] = count = below.pop(key)
        elif key in counts:  # an alias: its node, then its anchor's node, all aliased
            count = counts[key]
            decoded += 1
            if _excessive(decoded, aliased):
                break
            decoded, aliased = decoded + count, aliased + count
            count += 1
        elif key in below:
            raise YAMLError(f"yaml: anchor '{_anchor(node, raw)}' value contains itself")
        else:
            decoded += 1
            if isinstance(node, scalar):
                counts[key] = count = 1
            else:
                below[key] = 1
                pending.append((node, parent, True))
                pending.extend((child, key, False) for child in reversed(_children(node)))
                count = 0
        if _excessive(decoded, aliased):
            break
        if parent in below:
            below[parent] += count
    else:
        return
    raise YAMLError("yaml: document contains excessive aliasing")


def _children(node: Any) -> list[Any]:
    """The children go-yaml decodes of a collection node, in its order: a mapping's keys and
    values, but not a merge key (``<<``), nor a merged list (go-yaml decodes its items, last
    first)."""
    import yaml

    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    out: list[Any] = []
    for key, value in node.value:
        if key.tag != _MERGE or not isinstance(key, yaml.ScalarNode):
            out.append(key)
        elif isinstance(value, yaml.SequenceNode):
            out += reversed(value.value)
            continue
        out.append(value)
    return out


def _anchor(node: Any, raw: bytes) -> str:
    """The anchor a node was defined with, read back from the text at its start."""
    text = raw.decode("utf-8", "replace")
    match = re.match(r"(?:![^\s]*\s+)?&([^\s\[\]{},]+)", text[node.start_mark.index :])
    return match[1] if match else ""


def _check_numbers(value: Any) -> None:
    """Refuse NaN and infinities (each shared value is looked at once)."""
    pending, seen = [value], set()
    while pending:
        node = pending.pop()
        if isinstance(node, dict | list):
            if id(node) in seen:
                continue
            seen.add(id(node))
            pending.extend(node.values() if isinstance(node, dict) else node)
        elif isinstance(node, float) and not math.isfinite(node):
            raise YAMLError(f"json: unsupported value: {_go_float(node)}")


def _go_float(number: float) -> str:
    return "NaN" if math.isnan(number) else ("+Inf" if number > 0 else "-Inf")


def _key(key: Any) -> str:
    """A mapping key as sigs.k8s.io/yaml writes it into JSON."""
    if isinstance(key, str):
        return key
    if isinstance(key, bool):
        return "true" if key else "false"
    if key is None:
        return "null"
    if isinstance(key, int | float):
        return json.dumps(key)
    raise TypeError(f"invalid map key: {key!r}")


@functools.cache
def _loaders() -> dict[bool, Any]:
    """The lenient and the strict loader classes."""
    import yaml

    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    built: dict[bool, Any] = {}
    for strict in (False, True):

        class Loader(base):  # type: ignore[misc,valid-type]
            pass

        Loader.yaml_implicit_resolvers = {
            first: [(tag, pattern) for tag, pattern in resolvers if tag != _TIMESTAMP]
            for first, resolvers in base.yaml_implicit_resolvers.items()
        }
        Loader.add_constructor(
            yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping_constructor(strict)
        )
        Loader.add_constructor(_TIMESTAMP, lambda loader, node: loader.construct_scalar(node))
        Loader.add_constructor("tag:yaml.org,2002:binary", _binary)
        built[strict] = Loader
    return built


def _mapping_constructor(strict: bool) -> Any:
    def construct(loader: Any, node: Any) -> dict[str, Any]:
        loader.flatten_mapping(node)
        out: dict[str, Any] = {}
        for key_node, value_node in node.value:
            key = _key(loader.construct_object(key_node, deep=True))
            if strict and key in out:
                raise DuplicateKey(
                    f"yaml: unmarshal errors:\n  line {key_node.start_mark.line + 1}: key "
                    f"{json.dumps(key)} already set in map"
                )
            out[key] = loader.construct_object(value_node, deep=True)
        return out

    return construct


def _binary(loader: Any, node: Any) -> str:
    """``!!binary``: its bytes, as the string go-yaml makes of them."""
    text = loader.construct_scalar(node)
    try:
        return base64.b64decode(text).decode("utf-8", "replace")
    except ValueError:
        raise TypeError(f"cannot decode !!binary: {text!r}") from None
