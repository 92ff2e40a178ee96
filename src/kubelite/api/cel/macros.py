"""cel-go's macros the Rust library lacks (ext.Bindings' ``cel.bind``, ext.TwoVarComprehensions),
rewritten to comprehensions it has."""

from __future__ import annotations

from collections.abc import Callable

from kubelite.api.cel.syntax import _tokens

_ENTRIES = "kubeliteEntries"
_TO_MAP = "kubeliteToMap"
_MERGE_MAPS = "kubeliteMergeMaps"
#: cel-go's two-variable comprehension macros (ext.TwoVarComprehensions) and their arities
_TWO_VARIABLE = {
    "all": (3,), "exists": (3,), "existsOne": (3,), "exists_one": (3,),
    "transformList": (3, 4), "transformMap": (3, 4), "transformMapEntry": (3, 4),
}  # fmt: skip


class _MacroRewrite:
    """cel-go's macros the Rust library lacks, rewritten to ones it has, token by token (so a
    string literal holding the same text is left alone), each argument rewritten in turn (so
    nested uses expand inside out):

    - ``cel.bind(x, init, body)`` (ext.Bindings) -> ``[init].map(x, body)[0]``: ``init``
      evaluated once and ``x`` scoped to ``body`` as a comprehension variable, shadowing an
      outer ``x`` exactly as cel-go's comprehension accumulator does;
    - ``t.all(i, v, p)`` and the other two-variable comprehensions (ext.TwoVarComprehensions)
      -> a one-variable comprehension over ``t``'s [index or key, value] pairs, ``i`` and ``v``
      bound from the pair as above; ``transformMap`` and ``transformMapEntry`` build their map
      from the list the comprehension makes.

    The pair variable's name (``kl__e0``, ...) is one the source does not hold anywhere, so it
    shadows nothing of the user's. ``offsets`` maps a position of the rewritten text back to the
    source, for cel-go's issue texts."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.tokens = _tokens(source)
        self.issues: list[tuple[int, str]] = []
        self.prefix = "kl__e"
        while self.prefix in source:
            self.prefix = "_" + self.prefix
        self.count = 0
        self.closing: dict[int, int] = {}
        opened: list[int] = []
        for i, tok in enumerate(self.tokens):
            if tok.kind == "punct" and tok.text in ("(", "[", "{", "[?"):
                opened.append(i)
            elif tok.kind == "punct" and tok.text in (")", "]", "}") and opened:
                self.closing[opened.pop()] = i
        self.pieces: list[tuple[str, int, bool]] = []  # text, source position, copied?

    def run(self) -> str:
        self._emit_range(0, len(self.tokens), 0, len(self.source))
        return "".join(text for text, _, _ in self.pieces)

    def source_position(self, pos: int) -> int:
        at = 0
        for text, origin, copied in self.pieces:
            if pos < at + len(text):
                return origin + (pos - at) if copied else origin
            at += len(text)
        return len(self.source)

    def _end(self, i: int) -> int:
        return self.tokens[i].pos + len(self.tokens[i].text)

    def _copy(self, start: int, end: int) -> None:
        if end > start:
            self.pieces.append((self.source[start:end], start, True))

    def _insert(self, text: str, origin: int) -> None:
        self.pieces.append((text, origin, False))

    def _emit_range(self, lo: int, hi: int, start: int, end: int) -> None:
        """Tokens lo..hi (source text start..end), their macros rewritten."""
        cursor = start
        i = lo
        while i < hi:
            done = self._bind(i, cursor) if i + 3 < hi else None
            if done is None and i + 2 < hi:
                done = self._two_variable(i, cursor)
            if done is None:
                i += 1
                continue
            cursor, i = done
        self._copy(cursor, end)

    def _arguments(self, open_index: int) -> list[tuple[int, int]]:
        """The token ranges of a call's arguments (between its parentheses)."""
        close = self.closing.get(open_index, len(self.tokens))
        args: list[tuple[int, int]] = []
        first = j = open_index + 1
        while j < close:
            if j in self.closing:
                j = self.closing[j] + 1
                continue
            if self.tokens[j].text == ",":
                args.append((first, j))
                first = j + 1
            j += 1
        if first < close or args:
            args.append((first, close))
        return args

    def _argument(self, arg: tuple[int, int]) -> None:
        lo, hi = arg
        if lo < hi:
            self._emit_range(lo, hi, self.tokens[lo].pos, self._end(hi - 1))

    def _name(self, arg: tuple[int, int], message: str) -> str:
        lo, hi = arg
        if hi == lo + 1 and self.tokens[lo].kind == "ident":
            return self.tokens[lo].text
        at = self.tokens[hi - 2].pos if hi - lo >= 3 and self.tokens[hi - 2].text == "." else None
        self.issues.append((at if at is not None else self.tokens[min(lo, hi)].pos, message))
        return "_"

    def _bound(self, name: str, value: str, origin: int, body: Callable[[], None]) -> None:
        """``body`` with ``name`` bound to the expression ``value`` (text of the rewrite)."""
        self._insert(f"[{value}].map({name}, ", origin)
        body()
        self._insert(")[0]", origin)

    def _bind(self, i: int, cursor: int) -> tuple[int, int] | None:
        toks = self.tokens
        if not (
            toks[i].text == "cel"
            and toks[i].kind == "ident"
            and (i == 0 or toks[i - 1].text not in (".", ".?"))
            and toks[i + 1].text == "."
            and toks[i + 2].text == "bind"
            and toks[i + 3].text == "("
        ):
            return None
        args = self._arguments(i + 3)
        if len(args) != 3:
            return None
        close = self.closing.get(i + 3, len(toks) - 1)
        name = self._name(args[0], "cel.bind() variable names must be simple identifiers")
        self._copy(cursor, toks[i].pos)
        self._insert("[", toks[i].pos)
        self._argument(args[1])
        self._insert(f"].map({name}, ", toks[i].pos)
        self._argument(args[2])
        self._insert(")[0]", toks[i].pos)
        return self._end(close), close + 1

    def _two_variable(self, i: int, cursor: int) -> tuple[int, int] | None:
        toks = self.tokens
        macro = toks[i + 1].text
        if not (
            toks[i].text == "."
            and toks[i + 1].kind == "ident"
            and macro in _TWO_VARIABLE
            and toks[i + 2].text == "("
        ):
            return None
        args = self._arguments(i + 2)
        if len(args) not in _TWO_VARIABLE[macro]:
            return None
        close = self.closing.get(i + 2, len(toks) - 1)
        first = self._name(args[0], "argument must be a simple name")
        second = self._name(args[1], "argument must be a simple name")
        pair = f"{self.prefix}{self.count}"
        self.count += 1
        origin = toks[i].pos
        self._copy(cursor, origin)

        def bound(arg: tuple[int, int]) -> None:
            self._bound(
                first, f"{pair}[0]", origin,
                lambda: self._bound(second, f"{pair}[1]", origin, lambda: self._argument(arg)),
            )  # fmt: skip

        method = "map" if macro.startswith("transform") else macro
        self._insert(f".{_ENTRIES}().{method}({pair}, ", origin)
        if len(args) == 4:
            bound(args[2])
            self._insert(", ", origin)
        if macro == "transformMap":
            self._insert(f"[{pair}[0], ", origin)
            bound(args[-1])
            self._insert("]", origin)
        else:
            bound(args[-1])
        self._insert(")", origin)
        if macro == "transformMap":
            self._insert(f".{_TO_MAP}()", origin)
        elif macro == "transformMapEntry":
            self._insert(f".{_MERGE_MAPS}()", origin)
        return self._end(close), close + 1
