"""Values at a JSON path into an object: the subset of kubectl JSONPath that CRD
``additionalPrinterColumns`` and scale subresource paths use (``.field``, ``['field']``, ``[n]``,
``[*]`` and ``[?(@.a.b==literal)]``).
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any

_PATH_TOKEN = re.compile(
    r"""\.(?P<field>[A-Za-z0-9_$-]+)
      | \[(?P<index>-?\d+)\]
      | \[(?P<star>\*)\]
      | \[(?P<quote>['"])(?P<quoted>.*?)(?P=quote)\]
      | \[\?\(@(?P<filter>(?:\.[A-Za-z0-9_$-]+)+)\s*==\s*(?P<literal>[^)]+?)\s*\)\]""",
    re.VERBOSE,
)


@functools.cache
def _parse_path(path: str) -> tuple[tuple[str, Any], ...]:
    tokens: list[tuple[str, Any]] = []
    position = 0
    path = path.strip()
    while position < len(path):
        match = _PATH_TOKEN.match(path, position)
        if match is None:
            raise ValueError(f"unsupported JSON path {path!r} at {position}")
        if match["field"] is not None:
            tokens.append(("field", match["field"]))
        elif match["index"] is not None:
            tokens.append(("index", int(match["index"])))
        elif match["star"] is not None:
            tokens.append(("star", None))
        elif match["quote"] is not None:
            tokens.append(("field", match["quoted"]))
        else:
            literal = match["literal"]
            if literal[:1] == "'" and literal[-1:] == "'":
                value: Any = literal[1:-1]
            else:
                value = json.loads(literal)
            tokens.append(("filter", (tuple(match["filter"].split(".")[1:]), value)))
        position = match.end()
    return tuple(tokens)


def json_path_values(path: str, obj: Any) -> list[Any]:
    """Every value ``path`` matches in ``obj``; missing branches match nothing.

    The path is a subset of kubectl JSONPath without braces: ``.field``, ``['field']``,
    ``[n]`` (negative from the end), ``[*]`` (every item of a list or value of a map) and
    ``[?(@.a.b==literal)]`` (the list items whose ``a.b`` equals a JSON or quoted literal).
    """
    current = [obj]
    for op, arg in _parse_path(path):
        found: list[Any] = []
        for node in current:
            if op == "field":
                if isinstance(node, dict) and arg in node and node[arg] is not None:
                    found.append(node[arg])
            elif op == "index":
                if isinstance(node, list) and -len(node) <= arg < len(node):
                    found.append(node[arg])
            elif op == "star":
                if isinstance(node, list):
                    found.extend(node)
                elif isinstance(node, dict):
                    found.extend(node.values())
            elif isinstance(node, list):  # filter
                keys, expected = arg
                for item in node:
                    value = item
                    for key in keys:
                        value = value.get(key) if isinstance(value, dict) else None
                    if value == expected and type(value) is type(expected):
                        found.append(item)
        current = found
    return current
