"""Admission policies' CEL: compiling each expression of a policy in kube's environment
(apiserver ``pkg/admission/plugin/cel/compile.go``, ``composition.go``) and evaluating it
against one write with kube's error texts (``activation.go``).

The variables every expression sees are ``object``, ``oldObject``, ``request``,
``namespaceObject``, ``params`` (only with a ``paramKind``), ``authorizer`` (not in
validations' ``messageExpression``) and ``variables`` (the policy's ``spec.variables``, each
seeing the ones before it; :mod:`kubelite.api.cel.composition`).

An expression that does not compile is kept with its error (``compilation failed: <issues>``,
or ``must evaluate to bool but got int`` where kubelite sees the type: see
:func:`kubelite.api.cel.result_kind`); evaluating it is an error ``compilation error: <that>``
and the policy's failurePolicy decides, as in kube. A runtime error reads ``expression '<e>'
resulted in error: <cel-go's text>``; the policy's cost budget (kube's
``RuntimeCELCostBudget``, charged with kubelite's estimate) running out reads ``validation
failed due to running out of cost budget, no further validation rules will be run``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

from kubelite.api import cel

OBJECT, OLD_OBJECT, REQUEST, PARAMS = "object", "oldObject", "request", "params"
NAMESPACE_OBJECT, AUTHORIZER = "namespaceObject", "authorizer"
BASE_VARIABLES = (OBJECT, OLD_OBJECT, REQUEST, NAMESPACE_OBJECT)
OUT_OF_BUDGET = (
    "validation failed due to running out of cost budget, no further validation rules will be run"
)
#: cel-go's names of the types kubelite's checker can tell (cel.result_kind)
_TYPE_NAMES = {"list": "list(dyn)", "map": "map(dyn, dyn)"}
BOOL, STRING, NULL = "bool", "string", "null_type"


class Expression(NamedTuple):
    """One compiled expression: the program, or kube's text of why it did not compile."""

    source: str
    compiled: cel.Compiled | None
    error: str = ""


class EvaluationError(Exception):
    """An expression failed; ``str()`` is kube's text. ``budget``: the cost budget ran out
    (kube stops evaluating the policy's other expressions)."""

    def __init__(self, text: str, *, budget: bool = False) -> None:
        super().__init__(text)
        self.budget = budget


def declared(has_params: bool, has_authorizer: bool) -> tuple[str, ...]:
    names: tuple[str, ...] = BASE_VARIABLES
    if has_params:
        names += (PARAMS,)
    if has_authorizer:
        names += (AUTHORIZER,)
    return names


def compile_one(
    source: str,
    variables: Sequence[str],
    composited: Iterable[str],
    returns: Sequence[str] = (),
    *,
    constructions: bool = False,
) -> Expression:
    """``source`` compiled with ``variables`` and the composited variables declared;
    ``returns``: the result types allowed (empty: any); ``constructions``: a mutation's
    ``Object{...}`` and ``JSONPatch{...}`` are values."""
    try:
        compiled = cel.compile_expression(
            source, variables, composited=composited, constructions=constructions
        )
    except cel.CompileError as exc:
        return Expression(source, None, f"compilation failed: {exc}")
    if returns:
        kind = cel.result_kind(source)
        if kind is not None and kind not in returns:
            shown = _TYPE_NAMES.get(kind, kind)
            if len(returns) == 1:
                why = f"must evaluate to {returns[0]} but got {shown}"
            else:
                why = f"must evaluate to one of [{' '.join(returns)}] but got {shown}"
            return Expression(source, None, why)
    return Expression(source, compiled)


def compile_variables(variables: Any, names: Sequence[str]) -> dict[str, cel.Compiled | str]:
    """``spec.variables`` in order, each seeing the ones before it: name -> the program, or
    the text of its compile error."""
    out: dict[str, cel.Compiled | str] = {}
    for variable in variables if isinstance(variables, list) else []:
        if not isinstance(variable, dict):
            continue
        name, source = str(variable.get("name", "")), str(variable.get("expression", ""))
        expression = compile_one(source, names, tuple(out))
        out[name] = expression.compiled if expression.compiled is not None else expression.error
    return out


class Budget:
    """What is left of a cost budget (kube's ``remainingBudget``)."""

    def __init__(self, remaining: int) -> None:
        self.remaining = remaining

    def charge(self, cost: int) -> None:
        self.remaining -= cost
        if self.remaining < 0:
            raise EvaluationError(OUT_OF_BUDGET, budget=True)


def evaluate(
    expression: Expression, activation: dict[str, Any], budget: Budget, frame: Any = None
) -> Any:
    """The expression's result; raises :class:`EvaluationError` with kube's text. ``frame``:
    the composited variables' frame, whose cost is charged too."""
    if expression.compiled is None:
        raise EvaluationError(f"compilation error: {expression.error}")
    before = frame.cost if frame is not None else 0
    try:
        result, cost = cel.evaluate(expression.compiled, activation, limit=max(budget.remaining, 0))
    except cel.EvalError as exc:
        if exc.kind == "cost":
            raise EvaluationError(OUT_OF_BUDGET, budget=True) from None
        _charge_frame(budget, frame, before)
        raise EvaluationError(
            f"expression '{expression.source}' resulted in error: {exc}"
        ) from None
    _charge_frame(budget, frame, before)
    budget.charge(cost)
    return result


def _charge_frame(budget: Budget, frame: Any, before: int) -> None:
    if frame is not None and frame.cost > before:
        budget.charge(frame.cost - before)
