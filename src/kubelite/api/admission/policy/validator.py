"""One ValidatingAdmissionPolicy compiled, and evaluated for one (binding, param) of one write
(apiserver ``pkg/admission/plugin/policy/validating/validator.go``, ``plugin.go``
compilePolicy):

- ``matchConditions``: any false skips the policy; otherwise errors decide by failurePolicy.
- each of ``validations``: true admits; an error denies or admits by failurePolicy with the
  error's text; anything else denies with the ``messageExpression``'s result (trimmed; left
  out when it errs, is empty, longer than 5 KiB or spans lines), else ``message`` (trimmed),
  else ``failed expression: <expression>``, and the validation's ``reason`` (default
  ``Invalid``).
- each of ``auditAnnotations``: a non-empty string is published, null or empty is not, any
  other type is a denial ``valueExpression '<e>' resulted in unsupported return type: <t>.
  Return type must be either string or null.``
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

from kubelite.api import cel
from kubelite.api.admission.policy.expressions import (
    BOOL,
    NULL,
    PARAMS,
    STRING,
    Budget,
    EvaluationError,
    Expression,
    compile_one,
    compile_variables,
    declared,
    evaluate,
)
from kubelite.api.cel import authz
from kubelite.api.cel.composition import Frame, composing
from kubelite.api.cel.values import type_name

Obj = dict[str, Any]

ADMIT, DENY = "admit", "deny"
EVAL_ADMIT, EVAL_ERROR, EVAL_DENY = "admit", "error", "deny"
PUBLISH, EXCLUDE, ERROR = "publish", "exclude", "error"
IGNORE, FAIL = "Ignore", "Fail"
INVALID = "Invalid"
#: kube's MaxEvaluatedMessageExpressionSizeBytes
MAX_MESSAGE_BYTES = 5 * 1024
#: kube's RuntimeCELCostBudget and RuntimeCELCostBudgetMatchConditions
RUNTIME_BUDGET = 10_000_000
MATCH_CONDITIONS_BUDGET = 2_500_000


class Decision(NamedTuple):
    action: str
    evaluation: str
    message: str = ""
    reason: str = ""


class AuditAnnotation(NamedTuple):
    key: str
    action: str
    value: str = ""
    error: str = ""


class Result(NamedTuple):
    decisions: list[Decision]
    annotations: list[AuditAnnotation]


class Validation(NamedTuple):
    expression: Expression
    message: str
    message_expression: Expression | None
    reason: str


@dataclass
class CompiledPolicy:
    """A policy's expressions compiled (each kept with its compile error, if any)."""

    name: str
    failure_policy: str
    has_params: bool
    variables: dict[str, cel.Compiled | str]
    match_conditions: list[tuple[str, Expression]]
    validations: list[Validation] = field(default_factory=list)
    audit_annotations: list[tuple[str, Expression]] = field(default_factory=list)

    def error_action(self) -> str:
        return ADMIT if self.failure_policy == IGNORE else DENY


def failure_policy_of(spec: Obj) -> str:
    policy = spec.get("failurePolicy")
    return policy if isinstance(policy, str) and policy else FAIL


def _items(spec: Obj, key: str) -> list[Obj]:
    values = spec.get(key)
    return [v for v in values if isinstance(v, dict)] if isinstance(values, list) else []


def compile_common(policy: Obj) -> CompiledPolicy:
    """What validating and mutating policies share: variables and matchConditions."""
    spec = policy.get("spec") or {}
    has_params = isinstance(spec.get("paramKind"), dict)
    names = declared(has_params, has_authorizer=True)
    variables = compile_variables(spec.get("variables"), names)
    conditions = [
        (
            str(c.get("name", "")),
            compile_one(str(c.get("expression", "")), names, variables, [BOOL]),
        )
        for c in _items(spec, "matchConditions")
    ]
    name = str((policy.get("metadata") or {}).get("name", ""))
    return CompiledPolicy(name, failure_policy_of(spec), has_params, variables, conditions)


def compile_policy(policy: Obj) -> CompiledPolicy:
    """A ValidatingAdmissionPolicy compiled (kube's compilePolicy)."""
    compiled = compile_common(policy)
    spec = policy.get("spec") or {}
    names = declared(compiled.has_params, has_authorizer=True)
    without_authorizer = declared(compiled.has_params, has_authorizer=False)
    composited = compiled.variables
    for v in _items(spec, "validations"):
        source = str(v.get("messageExpression") or "")
        message_expression = (
            compile_one(source, without_authorizer, composited, [STRING]) if source else None
        )
        compiled.validations.append(
            Validation(
                compile_one(str(v.get("expression", "")), names, composited, [BOOL]),
                str(v.get("message") or ""),
                message_expression,
                str(v.get("reason") or ""),
            )
        )
    for a in _items(spec, "auditAnnotations"):
        source = str(a.get("valueExpression", ""))
        expression = compile_one(source, names, composited, [STRING, NULL])
        compiled.audit_annotations.append((str(a.get("key", "")), expression))
    return compiled


class Evaluation:
    """One evaluation of a policy (one binding and param of one write): the activation, the
    frame its variables are evaluated in (each at most once) and the authorizer's checks."""

    def __init__(
        self, policy: CompiledPolicy, activation: Obj, checks: authz.Checker | None
    ) -> None:
        self.policy = policy
        self.activation = activation
        if not policy.has_params:
            activation.pop(PARAMS, None)
        self.checks = checks
        self.frame = Frame(policy.variables, activation, RUNTIME_BUDGET)

    def run(self, expression: Expression, budget: Budget) -> Any:
        with composing(self.frame), authz.checking(self.checks):
            return evaluate(expression, self.activation, budget, self.frame)


def match_conditions(evaluation: Evaluation) -> str | None:
    """kube's matchconditions.Matcher: None when every condition is true, ``""`` when one is
    false, else the error (an aggregate of the conditions' errors) for failurePolicy Fail."""
    conditions = evaluation.policy.match_conditions
    if not conditions:
        return None
    budget = Budget(MATCH_CONDITIONS_BUDGET)
    errors: list[str] = []
    for _name, expression in conditions:
        try:
            result = evaluation.run(expression, budget)
        except EvaluationError as exc:
            if exc.budget:
                return "" if evaluation.policy.failure_policy == IGNORE else str(exc)
            errors.append(str(exc))
            continue
        if result is False:
            return ""
    if errors:
        if evaluation.policy.failure_policy == IGNORE:
            return ""
        return errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"
    return None


def validate(evaluation: Evaluation) -> Result:
    """kube's validator.Validate for one (binding, param)."""
    policy = evaluation.policy
    on_error = policy.error_action()
    failed = match_conditions(evaluation)
    if failed == "":
        return Result([], [])
    if failed is not None:
        return Result([Decision(on_error, EVAL_ERROR, failed)], [])
    budget = Budget(RUNTIME_BUDGET)
    decisions: list[Decision] = []
    for validation in policy.validations:
        try:
            result = evaluation.run(validation.expression, budget)
        except EvaluationError as exc:
            if exc.budget:
                return Result([Decision(on_error, EVAL_ERROR, str(exc))], [])
            decisions.append(Decision(on_error, EVAL_ERROR, str(exc)))
            continue
        if result is True:
            decisions.append(Decision(ADMIT, EVAL_ADMIT))
            continue
        try:
            message = _message(evaluation, validation, budget)
        except EvaluationError as exc:
            decisions.append(Decision(on_error, EVAL_ERROR, f"failed messageExpression: {exc}"))
            continue
        decisions.append(Decision(DENY, EVAL_DENY, message, validation.reason or INVALID))
    return Result(decisions, audit_annotations(evaluation))


def _message(evaluation: Evaluation, validation: Validation, budget: Budget) -> str:
    message = ""
    if validation.message_expression is not None:
        try:
            result = evaluation.run(validation.message_expression, budget)
        except EvaluationError as exc:
            if exc.budget:
                raise
            result = None
        if isinstance(result, str):
            message = result.strip()
            if len(message.encode()) > MAX_MESSAGE_BYTES or "\n" in message:
                message = ""
    if not message and validation.message:
        message = validation.message.strip()
    if not message:
        message = f"failed expression: {validation.expression.source.strip()}"
    return message


def audit_annotations(evaluation: Evaluation) -> list[AuditAnnotation]:
    budget = Budget(RUNTIME_BUDGET)
    on_error = EXCLUDE if evaluation.policy.failure_policy == IGNORE else ERROR
    out: list[AuditAnnotation] = []
    for key, expression in evaluation.policy.audit_annotations:
        try:
            value = evaluation.run(expression, budget)
        except EvaluationError as exc:
            out.append(AuditAnnotation(key, on_error, error=str(exc)))
            continue
        if isinstance(value, str):
            value = value.strip()
            out.append(
                AuditAnnotation(key, PUBLISH, value) if value else AuditAnnotation(key, EXCLUDE)
            )
        elif value is None:
            out.append(AuditAnnotation(key, EXCLUDE))
        else:
            error = (
                f"valueExpression '{expression.source}' resulted in unsupported return type: "
                f"{type_name(value)}. Return type must be either string or null."
            )
            out.append(AuditAnnotation(key, ERROR, error=error))
    return out
