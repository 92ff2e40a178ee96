"""A webhook's ``matchConditions``: CEL expressions over the write that decide whether the
webhook is called (kube's ``webhook/matchconditions/matcher.go`` and the CEL filter of
``admission/plugin/cel``).

The variables are ``object`` (null on a delete), ``oldObject`` (null on a create), both in the
version the webhook matched, ``request``, the AdmissionRequest without its objects, and
``authorizer`` (kube's authorizer library, :mod:`kubelite.api.cel.authz`: checks for the
request's user, ``authorizer.requestResource`` the request's own resource).

Any condition false: the webhook is skipped. Otherwise errors (compilation, evaluation, a
result that is not a bool, the cost budget) fail the write under ``failurePolicy: Fail``
(:class:`ConditionError`, whose text follows ``<resource> "<name>" is forbidden: ``) and
skip the webhook under ``Ignore``.
"""

from __future__ import annotations

from typing import Any

from kubelite.api import cel
from kubelite.api.cel import authz

Obj = dict[str, Any]

VARIABLES = ("object", "oldObject", "request", "authorizer")
#: kube's RuntimeCELCostBudgetMatchConditions: for all of one webhook's conditions together
BUDGET = 2_500_000
OUT_OF_BUDGET = (
    "validation failed due to running out of cost budget, no further validation rules will be run"
)


class ConditionError(Exception):
    """The conditions could not be decided (text: kube's, several joined as ``[a, b]``)."""


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "double"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "list(dyn)"
    if isinstance(value, dict):
        return "map(dyn, dyn)"
    return "null_type" if value is None else type(value).__name__


def _evaluate(expression: str, activation: Obj, budget: int) -> tuple[bool | str, int]:
    """(the result, or the error's text; the cost charged)."""
    try:
        compiled = cel.compile_expression(expression, VARIABLES)
    except cel.CompileError as exc:
        return f"compilation error: compilation failed: {exc}", 0
    try:
        value, cost = cel.evaluate(compiled, activation, limit=min(budget, cel.PER_CALL_LIMIT))
    except cel.EvalError as exc:
        if exc.kind == "cost" and budget < cel.PER_CALL_LIMIT:
            raise ConditionError(OUT_OF_BUDGET) from None
        return f"expression '{expression}' resulted in error: {exc}", 0
    if not isinstance(value, bool):
        return f"compilation error: must evaluate to bool but got {_kind(value)}", cost
    return value, cost


def conditions_match(
    conditions: tuple[tuple[str, str], ...],
    obj: Obj | None,
    old: Obj | None,
    request: Obj,
    ignore_errors: bool,
    checks: authz.Checker | None = None,
    request_resource: dict[str, str] | None = None,
) -> bool:
    """Whether the webhook is called: every condition true (or errors ignored); raises
    :class:`ConditionError` under ``failurePolicy: Fail``. ``checks`` decides the
    ``authorizer`` checks (None: all allowed), ``request_resource`` is the request's resource
    for ``authorizer.requestResource``."""
    activation: Obj = {
        "object": obj,
        "oldObject": old,
        "request": request,
        "authorizer": authz.authorizer_value(request_resource),
    }
    try:
        with authz.checking(checks):
            problems, matched = _decide(conditions, activation, BUDGET)
        if not matched:
            return False
    except ConditionError:
        if ignore_errors:
            return False
        raise
    if problems:
        if ignore_errors:
            return False
        raise ConditionError(problems[0] if len(problems) == 1 else f"[{', '.join(problems)}]")
    return True


def _decide(
    conditions: tuple[tuple[str, str], ...], activation: Obj, budget: int
) -> tuple[list[str], bool]:
    """(the conditions' errors, False when one is false)."""
    problems: list[str] = []
    for _name, expression in conditions:
        result, cost = _evaluate(expression, activation, budget)
        budget -= cost
        if result is False:
            return problems, False
        if isinstance(result, str):
            problems.append(result)
    return problems, True
