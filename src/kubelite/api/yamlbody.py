"""YAML request bodies read as kube-apiserver reads them (sigs.k8s.io/yaml: YAML converted to
JSON), on PyYAML's safe loader, imported with the first YAML body.

What differs from PyYAML's own reading, to match Go's: timestamps and ``!!binary`` stay strings,
keys become strings (``1: a`` is ``{"1": "a"}``), NaN and infinities are refused (JSON has none),
aliases may not expand the document past a budget (go-yaml's "excessive aliasing"), and with
``strict`` a key repeated in one mapping is an error (UnmarshalStrict).
"""

from __future__ import annotations

import base64
import functools
import json
import math
from typing import Any

__all__ = ["DuplicateKey", "YAMLError", "load"]

_TIMESTAMP = "tag:yaml.org,2002:timestamp"
#: Nodes a document may expand to through aliases: generous for manifests, small enough that
#: walking it costs milliseconds.
_MIN_BUDGET = 100_000


class YAMLError(ValueError):
    """A body that is not YAML kube-apiserver would read, with go-yaml's kind of message."""


class DuplicateKey(YAMLError):
    """A key repeated in one mapping, under strict reading."""


def load(raw: bytes, *, strict: bool = False) -> Any:
    """The JSON value of a YAML document; :class:`YAMLError` when it has none."""
    import yaml

    try:
        value = yaml.load(raw, Loader=_loaders()[strict])
    except DuplicateKey:
        raise
    except (yaml.YAMLError, RecursionError, UnicodeDecodeError, TypeError) as exc:
        raise YAMLError(f"yaml: {exc}") from None
    _check(value, max(_MIN_BUDGET, 50 * len(raw)))
    return value


def _check(value: Any, budget: int) -> None:
    """Refuse NaN and infinities, and aliases that expand the document past ``budget``
    nodes."""
    pending = [value]
    while pending:
        budget -= 1
        if budget < 0:
            raise YAMLError("yaml: document contains excessive aliasing")
        node = pending.pop()
        if isinstance(node, dict):
            pending.extend(node.values())
        elif isinstance(node, list):
            pending.extend(node)
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
