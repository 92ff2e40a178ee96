"""Composited variables, as kube's CompositedCompiler has them for admission policies
(apiserver ``pkg/admission/plugin/cel/composition.go``): a policy's ``spec.variables``, read
as ``variables.<name>`` and evaluated lazily, at most once per evaluation of the policy.

- At compile time, ``variables.<name>`` must name a declared variable (cel-go's ``undefined
  field '<name>'`` otherwise), and the program reads it through a function
  (``kubeliteVariable("<name>")``), so a variable is evaluated only when an expression reaches
  it (``false && variables.bad`` is false, not an error).
- At run time, a :class:`Frame` binds the variables' compiled programs to one activation, and
  :func:`composing` makes it current; the first read of a variable evaluates it with that
  activation, later reads reuse its value, or its error
  (``composited variable "<name>" fails to evaluate: <error>``; one that did not compile:
  ``... fails to compile: <issues>``). The cost of each evaluation adds to the frame's
  :attr:`Frame.cost`, which the policy's budget is charged with.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Mapping
from typing import Any

from kubelite.api.cel.syntax import _tokens
from kubelite.api.cel.values import EvalError, _Fail

VARIABLES = "variables"
#: the function ``variables.<name>`` is rewritten to
_VARIABLE = "kubeliteVariable"


def variable_references(source: str) -> list[tuple[int, str]]:
    """Each ``variables.<name>`` of ``source``: (position of its dot, name)."""
    tokens = _tokens(source)
    found: list[tuple[int, str]] = []
    for i, tok in enumerate(tokens[:-2]):
        if tok.kind != "ident" or tok.text != VARIABLES:
            continue
        if i and tokens[i - 1].text in (".", ".?"):
            continue
        dot, name = tokens[i + 1], tokens[i + 2]
        if dot.text == "." and name.kind == "ident":
            found.append((dot.pos, name.text))
    return found


def rewrite_variables(source: str) -> str:
    """``variables.x`` -> ``kubeliteVariable("x")``, the lazy read."""
    tokens = _tokens(source)
    pieces: list[str] = []
    last = 0
    for i, tok in enumerate(tokens[:-2]):
        if tok.kind != "ident" or tok.text != VARIABLES:
            continue
        if i and tokens[i - 1].text in (".", ".?"):
            continue
        dot, name = tokens[i + 1], tokens[i + 2]
        if dot.text == "." and name.kind == "ident" and tok.pos >= last:
            pieces.append(source[last : tok.pos])
            pieces.append(f'{_VARIABLE}("{name.text}")')
            last = name.pos + len(name.text)
    pieces.append(source[last:])
    return "".join(pieces)


class Frame:
    """One evaluation's variables: the compiled programs (or their compile errors' texts) by
    name, the activation they run with, the values and errors so far, and the cost they took.
    ``limit``: the cost one variable's evaluation may take."""

    def __init__(self, variables: Mapping[str, Any], activation: dict[str, Any], limit: int):
        self.variables = variables
        self.activation = activation
        self.limit = limit
        self.values: dict[str, Any] = {}
        self.cost = 0

    def value(self, name: str) -> Any:
        if name not in self.values:
            self.values[name] = self._evaluate(name)
        found = self.values[name]
        if isinstance(found, _Failed):
            raise _Fail(found.text)
        return found

    def _evaluate(self, name: str) -> Any:
        from kubelite.api.cel.evaluating import evaluate

        compiled = self.variables.get(name)
        if compiled is None:
            return _Failed(f"no such key: {name}")
        if isinstance(compiled, str):
            return _Failed(f'composited variable "{name}" fails to compile: {compiled}')
        try:
            result, cost = evaluate(compiled, self.activation, limit=self.limit)
        except EvalError as exc:
            return _Failed(f'composited variable "{name}" fails to evaluate: {exc}')
        self.cost += cost
        return result


class _Failed:
    def __init__(self, text: str) -> None:
        self.text = text


class _Frames(threading.local):
    stack: list[Frame]

    def __init__(self) -> None:
        self.stack = []


_frames = _Frames()


@contextlib.contextmanager
def composing(frame: Frame) -> Iterator[Frame]:
    """Make ``frame`` the one ``variables.<name>`` reads from in the evaluations inside the
    block (a frame keeps its values across blocks: one frame per evaluation of a policy)."""
    _frames.stack.append(frame)
    try:
        yield frame
    finally:
        _frames.stack.pop()


def _variable(name: Any) -> Any:
    """The function ``variables.<name>`` reads through."""
    if not _frames.stack or not isinstance(name, str):
        raise _Fail(f"no such key: {name}")
    return _frames.stack[-1].value(name)
