"""Evaluating a compiled expression: the cost guard standing for kube's cost limits, and the
library's errors turned into cel-go's texts."""

from __future__ import annotations

import re
from typing import Any

from kubelite.api.cel.compiling import Compiled
from kubelite.api.cel.environment import _activation, _context
from kubelite.api.cel.values import EvalError

#: kube's limits (k8s.io/apiserver/pkg/apis/cel/config.go)
PER_CALL_LIMIT = 1_000_000
RUNTIME_BUDGET = 10_000_000
STATIC_CRD_LIMIT = 100_000_000


def _size(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + sum(_size(v) + 1 for v in value.values())
    if isinstance(value, list):
        return 1 + sum(_size(v) for v in value)
    if isinstance(value, str):
        return 1 + len(value) // 64
    return 1


def estimated_cost(compiled: Compiled, activation: dict[str, Any]) -> int:
    """The guard standing for cel-go's actual cost: the size of the data the expression can
    traverse, raised to the power of its comprehension nesting (at least 1). An upper bound of
    the same order as cel-go's cost for the quadratic (and worse) rules kube's limits catch."""
    size = sum(_size(activation[name]) for name in compiled.variables if name in activation)
    return int(max(1, size) ** max(1, compiled.depth))


def _translate(exc: Exception) -> EvalError:
    text = str(exc)
    if isinstance(exc, KeyError):
        key = exc.args[0] if exc.args else ""
        return EvalError(f"no such key: {key}")
    if isinstance(exc, ZeroDivisionError):
        return EvalError("modulus by zero" if "modulo" in text else "division by zero")
    if isinstance(exc, OverflowError):
        return EvalError("integer overflow")
    if isinstance(exc, IndexError):
        return EvalError(text)
    if isinstance(exc, TypeError) and text.startswith("No such overload"):
        return EvalError("no such overload", "overload")
    match = re.match(
        r"Function '([^']*)' error: (?:Python function call failed: (?:\w+\.)*(\w+): )?(.*?)"
        r"(?:\. Check function arguments and their types\.)?$",
        text,
        re.DOTALL,
    )
    if match:
        _name, kind, message = match.groups()
        bad_regex = re.match(r"'(.*)' not a valid regex:.*\nerror: (.*)$", message, re.DOTALL)
        if bad_regex:
            return EvalError(f"error parsing regexp: {bad_regex[2]}: `{bad_regex[1]}`")
        if kind == "_Fail" or kind is None:
            kind_name = "overload" if message.startswith("no such overload") else "other"
            return EvalError(message, kind_name)
        return EvalError(message)
    if text.startswith("Undefined variable or function"):
        return EvalError("no such overload", "overload")
    return EvalError(text)


#: names declared on the shared context as null: the variable resolver cannot answer null (the
#: library reads its None as "undefined"), so a variable that is null falls back to these
_NULLS: set[str] = set()


def _declare_nulls(context: Any, activation: dict[str, Any]) -> None:
    """Let variables be null (admission's ``oldObject`` on a create, ``object`` on a delete):
    the resolver answers every value but null; for null the library falls back to the context's
    own variables, where each such name is declared null once."""
    for name, value in activation.items():
        if value is None and name not in _NULLS:
            context.add_variable(name, None)
            _NULLS.add(name)


def evaluate(
    compiled: Compiled, activation: dict[str, Any], *, limit: int = PER_CALL_LIMIT
) -> tuple[Any, int]:
    """Evaluate; returns the result and the cost charged (raises :class:`EvalError`)."""
    cost = estimated_cost(compiled, activation)
    if cost > limit:
        raise EvalError("operation cancelled: actual cost limit exceeded", "cost")
    context = _context()
    _declare_nulls(context, activation)
    _activation.values = activation  # read by the context's variable resolver
    try:
        return compiled.program.execute(context), cost
    except Exception as exc:  # the library raises builtin exception types
        raise _translate(exc) from None
    finally:
        _activation.values = {}
