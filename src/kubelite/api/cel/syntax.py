"""CEL's tokens (string literals whole, raw ones with their backslashes as plain characters,
so a rewrite never touches their text) and the
optional-field syntax ``a.?b``/``a[?k]`` rewritten to calls the Rust library parses."""

from __future__ import annotations

import re
from dataclasses import dataclass

#: the function the optional-field syntax is rewritten to
_OPT_SELECT = "kubeliteOptionalSelect"

_TOKEN = re.compile(
    r"""(?P<space>\s+)
    |(?P<comment>//[^\n]*)
    |(?P<raw>(?:[rR][bB]?|[bB][rR])('''.*?'''|\"\"\".*?\"\"\"|'[^'\n]*'|"[^"\n]*"))
    |(?P<string>[bB]?('''(?:\\.|[^\\])*?'''|\"\"\"(?:\\.|[^\\])*?\"\"\"|'(?:\\.|[^'\\\n])*'|"(?:\\.|[^"\\\n])*"))
    |(?P<number>\d[\w.]*)
    |(?P<ident>[A-Za-z_][A-Za-z0-9_]*)
    |(?P<punct>\.\?|\[\?|&&|\|\||==|!=|<=|>=|.)""",
    re.VERBOSE | re.DOTALL,
)


@dataclass(frozen=True)
class _Token:
    kind: str
    text: str
    pos: int


def _tokens(source: str) -> list[_Token]:
    out: list[_Token] = []
    for match in _TOKEN.finditer(source):
        kind = match.lastgroup or "punct"
        if kind in ("space", "comment"):
            continue
        if kind == "raw":  # a raw string: backslashes are plain characters
            kind = "string"
        out.append(_Token(kind, match.group(), match.start()))
    return out


def _rewrite_optionals(source: str) -> str:
    """``a.?b`` -> ``a.kubeliteOptionalSelect("b")``, ``a[?k]`` -> the same call with ``k``."""
    tokens = _tokens(source)
    if not any(t.text in (".?", "[?") for t in tokens):
        return source
    pieces: list[str] = []
    last = 0
    closers: list[bool] = []  # per open bracket: is it a rewritten [? (closes with ')')
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok.text == ".?" and i + 1 < len(tokens) and tokens[i + 1].kind == "ident":
            name = tokens[i + 1]
            pieces.append(source[last : tok.pos])
            pieces.append(f'.{_OPT_SELECT}("{name.text}")')
            last = name.pos + len(name.text)
            i += 2
            continue
        if tok.text == "[?":
            pieces.append(source[last : tok.pos])
            pieces.append(f".{_OPT_SELECT}(")
            last = tok.pos + 2
            closers.append(True)
        elif tok.text == "[":
            closers.append(False)
        elif tok.text == "]" and closers and closers.pop():
            pieces.append(source[last : tok.pos])
            pieces.append(")")
            last = tok.pos + 1
        i += 1
    pieces.append(source[last:])
    return "".join(pieces)
