"""Object construction for mutating admission policies (apiserver ``pkg/cel/mutation``):
``Object{spec: Object.spec{replicas: 1}}`` and ``JSONPatch{op: "add", path: "/x", value: 1}``.

The Rust library parses message construction but cannot evaluate it, so :func:`rewrite_objects`
turns each construction into a map literal marked with its type name
(``{"@kubelite.type": "Object.spec", "replicas": 1}``), field names quoted. After evaluation,
:func:`type_errors` checks kube's rule that each nested ``Object.<path>`` names its place
(``Object.spec`` under ``spec`` of ``Object``), and :func:`plain` strips the marks. Also
``jsonpatch.escapeKey`` (``~`` -> ``~0``, ``/`` -> ``~1``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubelite.api.cel.syntax import _tokens
from kubelite.api.cel.values import _no_overload

TYPE = "@kubelite.type"
OBJECT, JSON_PATCH = "Object", "JSONPatch"
_ROOTS = (OBJECT, JSON_PATCH)


def rewrite_objects(source: str) -> str:
    """Each ``Object[.field...]{f: v}`` and ``JSONPatch{f: v}`` as a marked map literal."""
    return rewrite_objects_mapped(source)[0]


def rewrite_objects_mapped(source: str) -> tuple[str, Callable[[int], int]]:
    """:func:`rewrite_objects`, and a function from a position of the rewritten text to the
    source's (for cel-go's issue texts, which show the source)."""
    tokens = _tokens(source)
    if not any(t.text in _ROOTS for t in tokens):
        return source, lambda pos: pos
    pieces: list[tuple[str, int, bool]] = []  # text, source position, copied?
    last = 0
    braces: list[bool] = []  # per open brace: a construction (its field names get quoted)

    def copy(end: int) -> None:
        if end > last:
            pieces.append((source[last:end], last, True))

    for i, tok in enumerate(tokens):
        if tok.text == "{":
            start = _type_name_start(tokens, i)
            if start is None:
                braces.append(False)
                continue
            name = "".join(t.text for t in tokens[start:i])
            copy(tokens[start].pos)
            empty = i + 1 < len(tokens) and tokens[i + 1].text == "}"
            text = f'{{"{TYPE}": "{name}"' + ("" if empty else ", ")
            pieces.append((text, tokens[start].pos, False))
            last = tok.pos + 1
            braces.append(True)
        elif tok.text == "}" and braces:
            braces.pop()
        elif (
            tok.kind == "ident"
            and braces
            and braces[-1]
            and i + 1 < len(tokens)
            and tokens[i + 1].text == ":"
            and tokens[i - 1].text in ("{", ",")
        ):
            copy(tok.pos)
            pieces.append((f'"{tok.text}"', tok.pos, False))
            last = tok.pos + len(tok.text)
    copy(len(source))

    def back(pos: int) -> int:
        at = 0
        for text, origin, copied in pieces:
            if pos < at + len(text):
                return origin + (pos - at) if copied else origin
            at += len(text)
        return len(source)

    return "".join(text for text, _, _ in pieces), back


def _type_name_start(tokens: list[Any], brace: int) -> int | None:
    """The first token of the type name before the ``{`` at ``brace``, if one is there."""
    j = brace - 1
    if j < 0 or tokens[j].kind != "ident":
        return None
    while j >= 2 and tokens[j - 1].text == "." and tokens[j - 2].kind == "ident":
        j -= 2
    if j > 0 and tokens[j - 1].text in (".", ".?"):
        return None
    return j if tokens[j].text in _ROOTS else None


def type_name(value: Any) -> str | None:
    """The type a constructed value was marked with, or None for any other value."""
    if isinstance(value, dict):
        name = value.get(TYPE)
        return name if isinstance(name, str) else None
    return None


def type_errors(value: Any, path: list[str] | None = None) -> list[str]:
    """kube's CheckTypeNamesMatchFieldPathNames: every constructed object under a constructed
    root must be named after its field path from that root."""
    found: list[str] = []
    name = type_name(value)
    if path is None:
        path = [name] if name else []
    if name is not None:
        expected = ".".join(path)
        if name != expected:
            found.append(
                f'unexpected type name "{name}", expected "{expected}", which matches field '
                "name path from root Object type"
            )
        for key, sub in value.items():
            if key != TYPE:
                found.extend(type_errors(sub, [*path, str(key)]))
    elif isinstance(value, list):
        for item in value:
            found.extend(type_errors(item, path))
    elif isinstance(value, dict):
        for sub in value.values():
            found.extend(type_errors(sub, path))
    return found


def plain(value: Any) -> Any:
    """``value`` without the construction marks."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items() if k != TYPE}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def _escape_key(key: Any) -> str:
    if not isinstance(key, str):
        raise _no_overload()
    return key.replace("~", "~0").replace("/", "~1")


FUNCTIONS = {"jsonpatch.escapeKey": _escape_key}
