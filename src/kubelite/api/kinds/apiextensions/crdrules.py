"""A CRD schema's ``x-kubernetes-validations`` rules as apiextensions checks them at CRD
create and update: the rule's own fields (``ValidateCustomResourceDefinitionOpenAPISchema`` in
pkg/apis/apiextensions/validation/validation.go), then the rule and its ``messageExpression``
compiled (``compileRule`` in pkg/apiserver/schema/cel/compilation.go)."""

from __future__ import annotations

from typing import Any

from kubelite.api.apiextensions import schema as crschema
from kubelite.api.errors import Cause, go_quote

Obj = dict[str, Any]


def _go_rule(rule: Obj) -> str:
    """An apiextensions.ValidationRule as Go's %#v prints it (pointers as kube prints them)."""

    def pointer(kind: str, value: Any) -> str:
        return f"(*{kind})(nil)" if value is None else f"(*{kind})(0xc000000000)"

    def text(key: str) -> str:
        value = rule.get(key)
        return go_quote(value if isinstance(value, str) else "")

    return (
        f"apiextensions.ValidationRule{{Rule:{text('rule')}, Message:{text('message')}, "
        f"MessageExpression:{text('messageExpression')}, "
        f"Reason:{pointer('apiextensions.FieldValueErrorReason', rule.get('reason'))}, "
        f"FieldPath:{text('fieldPath')}, "
        f"OptionalOldSelf:{pointer('bool', rule.get('optionalOldSelf'))}}}"
    )


def _text(rule: Obj, key: str) -> str:
    value = rule.get(key)
    return value if isinstance(value, str) else ""


def rule_schema_causes(at: str, rule: Obj) -> list[Cause]:
    """The rule's fields: a rule, a message without line breaks (or one when the rule has them),
    a non-blank messageExpression if one is given."""
    text, message = _text(rule, "rule"), _text(rule, "message")
    causes: list[Cause] = []
    if not text.strip():
        causes.append(
            Cause("FieldValueRequired", "Required value: rule is not specified", f"{at}.rule")
        )
    elif message and not message.strip():
        causes.append(
            Cause(
                "FieldValueInvalid",
                f"Invalid value: {go_quote(message)}: must be non-empty if specified",
                f"{at}.message",
            )
        )
    elif "\n" in message.strip():
        causes.append(
            Cause(
                "FieldValueInvalid",
                f"Invalid value: {go_quote(message)}: must not contain line breaks",
                f"{at}.message",
            )
        )
    elif "\n" in text.strip() and not message.strip():
        causes.append(
            Cause(
                "FieldValueRequired",
                "Required value: message must be specified if rule contains line breaks",
                f"{at}.message",
            )
        )
    expression = _text(rule, "messageExpression")
    if expression and not expression.strip():
        causes.append(
            Cause(
                "FieldValueRequired",
                "Required value: messageExpression must be non-empty if specified",
                f"{at}.messageExpression",
            )
        )
    return causes


def rule_cel_causes(at: str, rule: Obj) -> list[Cause]:
    """The rule compiled, then its messageExpression (only once the rule compiles, as kube's
    compileRule returns at the rule's first error)."""
    from kubelite.api import cel

    text = _text(rule, "rule")
    if not text.strip():
        return []
    try:
        crschema.compile_rule(text)
    except ValueError as exc:
        return [_invalid(f"{at}.rule", rule, f"compilation failed: {exc}")]
    kind = cel.result_kind(text)
    if kind is not None and kind != "bool":
        return [_invalid(f"{at}.rule", rule, "cel expression must evaluate to a bool")]
    expression = _text(rule, "messageExpression")
    if not expression:
        return []
    try:
        crschema.compile_rule(expression)
    except ValueError as exc:
        detail = f"messageExpression compilation failed: {exc}"
        return [_invalid(f"{at}.messageExpression", rule, detail)]
    kind = cel.result_kind(expression)
    if kind is not None and kind != "string":
        detail = "messageExpression must evaluate to a string"
        return [_invalid(f"{at}.messageExpression", rule, detail)]
    return []


def _invalid(field: str, rule: Obj, detail: str) -> Cause:
    return Cause("FieldValueInvalid", f"Invalid value: {_go_rule(rule)}: {detail}", field)
