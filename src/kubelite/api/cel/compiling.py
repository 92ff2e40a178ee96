"""Compiling: parse, then check every function and variable an expression references against
the environment (cel-go's ``compilation failed`` texts), and the result type where it shows."""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from kubelite.api.cel.composition import VARIABLES, rewrite_variables, variable_references
from kubelite.api.cel.environment import _MACROS, _TYPE_NAMES, known_functions
from kubelite.api.cel.macros import _MacroRewrite
from kubelite.api.cel.objects import rewrite_objects_mapped
from kubelite.api.cel.syntax import _rewrite_optionals, _Token, _tokens
from kubelite.api.cel.values import CompileError

#: the guard standing for the static cost estimate: no rule longer than this is compiled
MAX_EXPRESSION_LENGTH = 10_000


#: cel-go's longest snippet (in UTF-8 bytes) shown under an issue
_MAX_SNIPPET = 16384


def _issue(source: str, pos: int, message: str) -> str:
    """One cel-go issue: ``ERROR: <input>:line:col: message`` and the snippet with a caret
    (cel-go's wide dot U+FF0E under each character that is more than one byte in UTF-8, and
    its wide caret U+FF3E under one)."""
    line_start = source.rfind("\n", 0, pos) + 1
    line_end = source.find("\n", pos)
    line = source[line_start : line_end if line_end >= 0 else len(source)]
    column = pos - line_start
    number = source.count("\n", 0, pos) + 1
    head = f"ERROR: <input>:{number}:{column + 1}: {message}"
    if len(line.encode("utf-8", "surrogatepass")) > _MAX_SNIPPET:
        return head
    snippet = line.replace("\t", " ")
    dots = "".join("." if ord(c) < 0x80 else "\uff0e" for c in snippet[:column])
    caret = "\uff3e" if column < len(snippet) and ord(snippet[column]) >= 0x80 else "^"
    return f"{head}\n | {snippet}\n | {dots}{caret}"


def _parse_error(source: str, exc: Exception) -> str:
    text = str(exc)
    at = text.find("ERROR: ")
    body = text[at:] if at >= 0 else text
    return "\n".join(" " + line if line.startswith("| ") else line for line in body.split("\n"))


def _depth(source: str) -> int:
    """The deepest nesting of comprehensions (the cost guard's exponent)."""
    tokens = _tokens(source)
    depth = deepest = 0
    stack: list[bool] = []
    for i, tok in enumerate(tokens):
        if tok.text in "([{" and tok.kind == "punct":
            macro = tok.text == "(" and i >= 2 and tokens[i - 1].text in _MACROS
            macro = macro and tokens[i - 2].text == "."
            stack.append(macro)
            depth += macro
            deepest = max(deepest, depth)
        elif tok.text in ")]}" and tok.kind == "punct" and stack:
            depth -= stack.pop()
    return deepest


def _check(source: str, variables: frozenset[str]) -> list[tuple[int, str]]:
    """Undeclared references: (position, message)."""
    tokens = _tokens(source)
    known = known_functions()
    namespaces = {name.split(".")[0] for name in known if "." in name}
    bound: set[str] = set()
    for i, tok in enumerate(tokens[:-3]):
        if (
            tok.text == "."
            and tokens[i + 1].text in _MACROS
            and tokens[i + 2].text == "("
            and tokens[i + 3].kind == "ident"
        ):
            bound.add(tokens[i + 3].text)
    issues: list[tuple[int, str]] = []
    for i, tok in enumerate(tokens):
        before = tokens[i - 1].text if i else ""
        after = tokens[i + 1].text if i + 1 < len(tokens) else ""
        if tok.kind != "ident":
            continue
        if before == ".?":
            continue
        if before == ".":
            if after == "(":
                qualifier = tokens[i - 2] if i >= 2 else None
                qualified = (
                    qualifier is not None
                    and qualifier.kind == "ident"
                    and (i < 3 or tokens[i - 3].text != ".")
                    and qualifier.text in namespaces
                    and qualifier.text not in variables
                )
                name = f"{qualifier.text}.{tok.text}" if qualified and qualifier else tok.text
                if name not in known:
                    issues.append(
                        (tokens[i + 1].pos, f"undeclared reference to '{name}' (in container '')")
                    )
            continue
        if after == "(":
            if tok.text not in known:
                issues.append(
                    (tokens[i + 1].pos, f"undeclared reference to '{tok.text}' (in container '')")
                )
            continue
        if tok.text in variables or tok.text in bound or tok.text in _TYPE_NAMES:
            continue
        if tok.text in namespaces and after == "." and tok.text not in variables:
            continue
        if after == ":" and before in ("{", ","):
            pass  # a map key is an expression too: fall through to the check
        issues.append((tok.pos, f"undeclared reference to '{tok.text}' (in container '')"))
    return issues


#: the result types of calls whose type cel-go's checker knows whatever their arguments
_RESULT_KINDS = {
    "size": "int", "int": "int", "uint": "uint", "double": "double", "bool": "bool",
    "has": "bool", "matches": "bool", "startsWith": "bool", "endsWith": "bool",
    "all": "bool", "exists": "bool", "exists_one": "bool", "existsOne": "bool",
    "map": "list", "filter": "list", "duration": "google.protobuf.Duration",
    "timestamp": "google.protobuf.Timestamp", "string": "string",
    # the authorizer library's decisions
    "allowed": "bool", "errored": "bool", "reason": "string", "error": "string",
}  # fmt: skip
_COMPARISONS = frozenset({"==", "!=", "<", "<=", ">", ">=", "in", "&&", "||"})


def _literal_kind(tok: _Token) -> str | None:
    if tok.kind == "string":
        return "bytes" if "b" in tok.text.split(tok.text[-1])[0].lower() else "string"
    if tok.kind == "number":
        if tok.text[-1] in "uU":
            return "uint"
        hexadecimal = tok.text.lower().startswith("0x")
        return "double" if not hexadecimal and any(c in tok.text for c in ".eE") else "int"
    return {"true": "bool", "false": "bool", "null": "null_type"}.get(tok.text)


def result_kind(source: str) -> str | None:
    """The type of ``source``'s result where it shows without the schema's types (a literal, a
    comparison or logical operator at the top, a call whose result type is fixed), else None.
    cel-go's checker knows every rule's type; kubelite's stands for it where it can be sure:
    for ``cel expression must evaluate to a bool`` and ``messageExpression must evaluate to a
    string`` (apiextensions' compileRule)."""
    tokens = _tokens(source)
    if not tokens:
        return None
    closing: dict[int, int] = {}
    opened: list[int] = []
    top: list[int] = []
    for i, tok in enumerate(tokens):
        if not opened:
            top.append(i)
        if tok.kind == "punct" and tok.text in ("(", "[", "{", "[?"):
            opened.append(i)
        elif tok.kind == "punct" and tok.text in (")", "]", "}") and opened:
            closing[opened.pop()] = i
    texts = [tokens[i].text for i in top]
    if "?" in texts:
        return None
    if any(text in _COMPARISONS for text in texts):
        return "bool"
    last = len(tokens) - 1
    if len(tokens) == 1:
        return _literal_kind(tokens[0])
    if any(text in ("+", "-", "*", "/", "%") for text in texts[1:]):
        return None
    if texts[0] == "!":
        return "bool"
    if closing.get(0) == last and tokens[0].text in ("[", "{"):
        return "list" if tokens[0].text == "[" else "map"
    call = next((i for i, j in closing.items() if j == last and tokens[i].text == "("), None)
    if call is not None and call >= 1 and tokens[call - 1].kind == "ident":
        name = tokens[call - 1].text
        member = call >= 2 and tokens[call - 2].text == "."
        if call == 1 or member:
            return _RESULT_KINDS.get(name)
    return None


@dataclass(frozen=True)
class Compiled:
    """A compiled expression: the program, what it references, its comprehension depth, and
    for each variable it only ever selects fields of (``object.spec``, ``object.?metadata``),
    those fields: evaluation hands the program only them (:func:`projections`)."""

    source: str
    program: Any
    variables: frozenset[str]
    depth: int
    fields: tuple[tuple[str, frozenset[str]], ...] = ()


_BEFORE = frozenset({"(", ",", "&&", "||", "?", ":", "["})
_AFTER = frozenset({")", ",", "&&", "||", "?", ":", "]"})


def _null_check(tokens: list[_Token], i: int) -> bool:
    """Whether token ``i`` is the whole operand of ``== null`` or ``!= null`` (either side)."""

    def text(j: int) -> str:
        return tokens[j].text if 0 <= j < len(tokens) else ""

    def bounded(before: int, after: int) -> bool:
        return (before < 0 or text(before) in _BEFORE) and (
            after >= len(tokens) or text(after) in _AFTER
        )

    if text(i + 1) in ("==", "!=") and text(i + 2) == "null":
        return bounded(i - 1, i + 3)
    if text(i - 1) in ("==", "!=") and text(i - 2) == "null":
        return bounded(i - 3, i + 1)
    return False


def projections(source: str, variables: frozenset[str]) -> tuple[tuple[str, frozenset[str]], ...]:
    """The variables of ``source`` used only as ``v.field`` or ``v.?field`` (never whole,
    indexed or as a call's target), each with the fields selected. Handing the program a map of
    only those fields changes no result (a field selection reads nothing else) and spares the
    conversion of the rest of a large object into CEL values, the bulk of an evaluation's cost
    when an admission policy reads ``object.spec`` of an object with managedFields."""
    tokens = _tokens(source)
    found: dict[str, set[str] | None] = {}
    for i, tok in enumerate(tokens):
        if tok.kind != "ident" or tok.text not in variables:
            continue
        if i and tokens[i - 1].text in (".", ".?"):
            continue  # a field of the same name
        if _null_check(tokens, i):
            found.setdefault(tok.text, set())  # ``v == null`` reads no field of v
            continue
        after = [t.text for t in tokens[i + 1 : i + 4]]
        selected = len(after) >= 2 and after[0] in (".", ".?") and tokens[i + 2].kind == "ident"
        if selected and not (len(after) == 3 and after[2] == "("):
            fields = found.setdefault(tok.text, set())
            if fields is not None:
                fields.add(after[1])
        else:
            found[tok.text] = None
    return tuple((name, frozenset(f)) for name, f in sorted(found.items()) if f is not None)


@functools.lru_cache(maxsize=4096)
def _compile(
    original: str,
    variables: frozenset[str],
    composited: frozenset[str] | None = None,
    constructions: bool = False,
) -> Compiled:
    import cel  # on first use: the package also imports its CLI (~250 ms)

    if len(original) > MAX_EXPRESSION_LENGTH:
        raise CompileError(
            f"expression is longer than kubelite's limit of {MAX_EXPRESSION_LENGTH} characters "
            "(it stands for kube's estimated cost limit)"
        )
    try:  # syntax errors first, at the source's positions
        program = cel.compile(_rewrite_optionals(original))
    except ValueError as exc:
        raise CompileError(_parse_error(original, exc)) from None
    source, back = original, None
    if constructions:
        source, back = rewrite_objects_mapped(original)
        program = cel.compile(_rewrite_optionals(source))
    rewrite = _MacroRewrite(source)
    expanded = rewrite.run()
    if composited is not None:
        variables |= {VARIABLES}
    issues = rewrite.issues or [
        (rewrite.source_position(pos), message) for pos, message in _check(expanded, variables)
    ]
    if composited is not None and not issues:
        issues = [
            (pos, f"undefined field '{name}'")
            for pos, name in variable_references(source)
            if name not in composited
        ]
    if issues:
        if back is not None:
            issues = [(back(pos), message) for pos, message in issues]
        issues.sort()
        raise CompileError("\n".join(_issue(original, pos, message) for pos, message in issues))
    if composited is not None:
        expanded = rewrite_variables(expanded)
    if expanded != source:
        program = cel.compile(_rewrite_optionals(expanded))
    depth = _depth(source)
    used = frozenset(v for v in program.variables() if v in variables)
    return Compiled(original, program, used, depth, projections(expanded, used))


def compile_expression(
    source: str,
    variables: Iterable[str] = ("self",),
    *,
    composited: Iterable[str] | None = None,
    constructions: bool = False,
) -> Compiled:
    """Compile ``source`` with the given variables declared (raises :class:`CompileError`).
    ``composited``: the names of the composited variables in scope, read lazily as
    ``variables.<name>`` (:mod:`.composition`; None: no ``variables``); ``constructions``:
    ``Object{...}`` and ``JSONPatch{...}`` are values (:mod:`.objects`)."""
    names = None if composited is None else frozenset(composited)
    return _compile(source, frozenset(variables), names, constructions)
