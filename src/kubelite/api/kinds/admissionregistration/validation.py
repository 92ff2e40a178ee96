"""Validation: ValidatingAdmissionPolicy, MutatingAdmissionPolicy and their bindings
(pkg/apis/admissionregistration/validation): the fields each needs, and every CEL expression
compiled as the admission plugins will compile it (:mod:`kubelite.api.admission.policy`), so a
policy that does not compile is refused when it is written (``spec.validations[0].expression:
Invalid value: "...": compilation failed: ERROR: <input>:1:5: ...``), as kube refuses it.

Not checked (kube checks them too): the rules' operations, groups, versions and resources
beyond their presence, resourceNames as path segments, paramKind's group and version as DNS
names, expression cost estimates.
"""

from __future__ import annotations

import re
from typing import Any

from kubelite.api.admission.policy.expressions import (
    BOOL,
    NULL,
    STRING,
    compile_one,
    compile_variables,
    declared,
)
from kubelite.api.admission.policy.mutations import checked_mutation
from kubelite.api.errors import Cause
from kubelite.api.kinds.validation.fields import (
    Obj,
    as_dict,
    as_list,
    as_str,
    duplicate,
    forbidden,
    invalid,
    not_supported,
    required,
    selector_causes,
    too_many,
)
from kubelite.api.machinery.metavalidation import qualified_name_errors
from kubelite.api.machinery.names import path_segment_errors, subdomain_errors

GROUP = "admissionregistration.k8s.io"
FAILURE_POLICIES = ("Fail", "Ignore")
MATCH_POLICIES = ("Equivalent", "Exact")
REASONS = ("Forbidden", "Invalid", "RequestEntityTooLarge", "Unauthorized")
ACTIONS = ("Audit", "Deny", "Warn")
PATCH_TYPES = ("ApplyConfiguration", "JSONPatch")
REINVOCATION_POLICIES = ("IfNeeded", "Never")
MUTATING_OPERATIONS = ("*", "CREATE", "UPDATE")
MAX_MATCH_CONDITIONS, MAX_AUDIT_ANNOTATIONS = 64, 20
_CEL_IDENTIFIER = re.compile(r"^[_a-zA-Z][_a-zA-Z0-9]*$")
_CEL_RESERVED = frozenset(
    {"true", "false", "null", "in", "as", "break", "const", "continue", "else", "for",
     "function", "if", "import", "let", "loop", "package", "namespace", "return", "var", "void",
     "while"}
)  # fmt: skip


def _compiled(path: str, source: str, error: str) -> list[Cause]:
    return [invalid(path, source, error)] if error else []


def _common(spec: Obj, *, mutating: bool) -> tuple[list[Cause], tuple[str, ...], Any]:
    """failurePolicy, paramKind, matchConstraints, matchConditions and variables; returns the
    causes, the variables CEL declares and the composited variables compiled."""
    causes: list[Cause] = []
    policy = spec.get("failurePolicy")
    if policy is None:
        causes.append(required("spec.failurePolicy"))
    elif policy not in FAILURE_POLICIES:
        causes.append(not_supported("spec.failurePolicy", policy, FAILURE_POLICIES))
    param_kind = spec.get("paramKind")
    if param_kind is not None:
        kind = as_dict(param_kind)
        for key in ("apiVersion", "kind"):
            if not as_str(kind.get(key)):
                causes.append(required(f"spec.paramKind.{key}"))
    constraints = spec.get("matchConstraints")
    if constraints is None:
        causes.append(required("spec.matchConstraints"))
    else:
        causes += match_resources_causes(as_dict(constraints), "spec.matchConstraints")
        rules = as_list(as_dict(constraints).get("resourceRules"))
        if not rules:
            causes.append(required("spec.matchConstraints.resourceRules"))
        for rule in rules if mutating else ():
            for op in as_list(as_dict(rule).get("operations")):
                if op not in MUTATING_OPERATIONS:
                    at = "spec.matchConstraints.resourceRules.operations"
                    causes.append(not_supported(at, op, MUTATING_OPERATIONS))
    names = declared(param_kind is not None, has_authorizer=True)
    conditions = as_list(spec.get("matchConditions"))
    if len(conditions) > MAX_MATCH_CONDITIONS:
        causes.append(too_many("spec.matchConditions", len(conditions), MAX_MATCH_CONDITIONS))
    seen: set[str] = set()
    for i, condition in enumerate(conditions):
        at, condition = f"spec.matchConditions[{i}]", as_dict(condition)
        source = as_str(condition.get("expression")).strip()
        if not source:
            causes.append(required(f"{at}.expression"))
        else:
            causes += _compiled(
                f"{at}.expression", source, compile_one(source, names, (), [BOOL]).error
            )
        name = as_str(condition.get("name"))
        if not name:
            causes.append(required(f"{at}.name"))
        else:
            causes += [invalid(f"{at}.name", name, m) for m in qualified_name_errors(name)]
            if name in seen:
                causes.append(duplicate(f"{at}.name", name))
            seen.add(name)
    variables = as_list(spec.get("variables"))
    compiled = compile_variables(variables, names)
    for i, variable in enumerate(variables):
        at, variable = f"spec.variables[{i}]", as_dict(variable)
        name = as_str(variable.get("name"))
        if not name.strip():
            causes.append(required(f"{at}.name", "name is not specified"))
        elif not _CEL_IDENTIFIER.match(name) or name in _CEL_RESERVED:
            causes.append(invalid(f"{at}.name", name, "name is not a valid CEL identifier"))
        source = as_str(variable.get("expression"))
        if not source.strip():
            causes.append(required(f"{at}.expression", "expression is not specified"))
        elif isinstance(error := compiled.get(name), str):
            causes.append(invalid(f"{at}.expression", source, error))
    return causes, names, compiled


def match_resources_causes(match: Obj, path: str) -> list[Cause]:
    causes: list[Cause] = []
    policy = match.get("matchPolicy")
    if policy is None:
        causes.append(required(f"{path}.matchPolicy"))
    elif policy not in MATCH_POLICIES:
        causes.append(not_supported(f"{path}.matchPolicy", policy, MATCH_POLICIES))
    for key in ("namespaceSelector", "objectSelector"):
        if match.get(key) is None:
            causes.append(required(f"{path}.{key}"))
        else:
            causes += selector_causes(match[key], f"{path}.{key}")
    return causes


def validate_validating_policy(obj: Obj, old: Obj | None) -> list[Cause]:
    spec = as_dict(obj.get("spec"))
    causes, names, variables = _common(spec, mutating=False)
    without_authorizer = tuple(n for n in names if n != "authorizer")
    validations = as_list(spec.get("validations"))
    annotations = as_list(spec.get("auditAnnotations"))
    if not validations and not annotations:
        detail = "validations or auditAnnotations must contain at least one item"
        return [
            *causes,
            required("spec.validations", detail),
            required("spec.auditAnnotations", detail),
        ]
    for i, validation in enumerate(validations):
        at, validation = f"spec.validations[{i}]", as_dict(validation)
        source = as_str(validation.get("expression"))
        if not source.strip():
            causes.append(required(f"{at}.expression", "expression is not specified"))
        else:
            error = compile_one(source, names, variables, [BOOL]).error
            causes += _compiled(f"{at}.expression", source, error)
        message_expression = as_str(validation.get("messageExpression"))
        if message_expression and not message_expression.strip():
            causes.append(
                invalid(
                    f"{at}.messageExpression", message_expression, "must be non-empty if specified"
                )
            )
        elif message_expression:
            error = compile_one(message_expression, without_authorizer, variables, [STRING]).error
            causes += _compiled(f"{at}.messageExpression", message_expression, error)
        message = as_str(validation.get("message"))
        if message and not message.strip():
            causes.append(
                invalid(f"{at}.message", message, "message must be non-empty if specified")
            )
        elif re.search(r"[\n\r]", message.strip()):
            causes.append(invalid(f"{at}.message", message, "message must not contain line breaks"))
        reason = validation.get("reason")
        if reason is not None and reason not in REASONS:
            causes.append(not_supported(f"{at}.reason", reason, REASONS))
    if len(annotations) > MAX_AUDIT_ANNOTATIONS:
        most = f"must not have more than {MAX_AUDIT_ANNOTATIONS} auditAnnotations"
        causes.append(invalid("spec.auditAnnotations", annotations, most))
    policy_name = as_str(as_dict(obj.get("metadata")).get("name"))
    keys: set[str] = set()
    for i, annotation in enumerate(annotations):
        at, annotation = f"spec.auditAnnotations[{i}]", as_dict(annotation)
        key = as_str(annotation.get("key"))
        causes += [
            invalid(f"{at}.key", f"{policy_name}/{key}", m)
            for m in qualified_name_errors(f"{policy_name}/{key}")
        ]
        source = as_str(annotation.get("valueExpression"))
        if not source.strip():
            causes.append(required(f"{at}.valueExpression", "valueExpression is not specified"))
        else:
            error = compile_one(source.strip(), names, variables, [STRING, NULL]).error
            causes += _compiled(f"{at}.valueExpression", source, error)
        if key in keys:
            causes.append(duplicate(f"{at}.key", key))
        keys.add(key)
    return causes


def validate_mutating_policy(obj: Obj, old: Obj | None) -> list[Cause]:
    spec = as_dict(obj.get("spec"))
    causes, names, variables = _common(spec, mutating=True)
    mutations = as_list(spec.get("mutations"))
    if not mutations:
        causes.append(required("spec.mutations", "mutations must contain at least one item"))
    for i, mutation in enumerate(mutations):
        at, mutation = f"spec.mutations[{i}]", as_dict(mutation)
        patch_type = mutation.get("patchType")
        if not patch_type:
            causes.append(required(f"{at}.patchType"))
            continue
        if patch_type not in PATCH_TYPES:
            causes.append(not_supported(f"{at}.patchType", patch_type, PATCH_TYPES))
            continue
        key, other = (
            ("jsonPatch", "applyConfiguration")
            if patch_type == "JSONPatch"
            else ("applyConfiguration", "jsonPatch")
        )
        if mutation.get(key) is None:
            causes.append(
                required(f"{at}.{key}", f"must be specified when patchType is {patch_type}")
            )
        else:
            source = as_str(as_dict(mutation[key]).get("expression")).strip()
            if not source:
                causes.append(required(f"{at}.{key}.expression"))
            else:
                error = checked_mutation(source, str(patch_type), names, variables).error
                causes += _compiled(f"{at}.{key}.expression", source, error)
        if mutation.get(other) is not None:
            why = f"must not be specified when patchType is {patch_type}"
            causes.append(invalid(f"{at}.{other}", "{" + other + "}", why))
    reinvocation = spec.get("reinvocationPolicy")
    if not reinvocation:
        causes.append(required("spec.reinvocationPolicy"))
    elif reinvocation not in REINVOCATION_POLICIES:
        causes.append(not_supported("spec.reinvocationPolicy", reinvocation, REINVOCATION_POLICIES))
    return causes


def _binding_causes(spec: Obj) -> list[Cause]:
    causes: list[Cause] = []
    policy = as_str(spec.get("policyName"))
    if not policy:
        causes.append(required("spec.policyName"))
    else:
        causes += [invalid("spec.policyName", policy, m) for m in subdomain_errors(policy)]
    ref = spec.get("paramRef")
    if ref is not None:
        causes += _param_ref_causes(as_dict(ref))
    if spec.get("matchResources") is not None:
        causes += match_resources_causes(as_dict(spec["matchResources"]), "spec.matchResources")
    return causes


def _param_ref_causes(ref: Obj) -> list[Cause]:
    causes: list[Cause] = []
    name, selector = as_str(ref.get("name")), ref.get("selector")
    if name:
        causes += [invalid("spec.paramRef.name", name, m) for m in path_segment_errors(name)]
        if selector is not None:
            causes.append(
                forbidden("spec.paramRef.name", "name and selector are mutually exclusive")
            )
    if selector is not None:
        causes += selector_causes(selector, "spec.paramRef.selector")
        if name:
            causes.append(
                forbidden("spec.paramRef.selector", "name and selector are mutually exclusive")
            )
    if not name and selector is None:
        causes.append(required("spec.paramRef", "one of name or selector must be specified"))
    action = ref.get("parameterNotFoundAction")
    if not action:
        causes.append(required("spec.paramRef.parameterNotFoundAction"))
    elif action not in ("Deny", "Allow"):
        causes.append(
            not_supported("spec.paramRef.parameterNotFoundAction", action, ("Deny", "Allow"))
        )
    return causes


def validate_validating_binding(obj: Obj, old: Obj | None) -> list[Cause]:
    spec = as_dict(obj.get("spec"))
    causes = _binding_causes(spec)
    actions = as_list(spec.get("validationActions"))
    seen: set[Any] = set()
    for i, action in enumerate(actions):
        if action not in ACTIONS:
            causes.append(not_supported(f"spec.validationActions[{i}]", action, ACTIONS))
        if action in seen:
            causes.append(duplicate(f"spec.validationActions[{i}]", action))
        seen.add(action)
    if "Deny" in seen and "Warn" in seen:
        causes.append(
            invalid(
                "spec.validationActions",
                actions,
                "must not contain both Deny and Warn (repeating the same validation failure "
                "information in the API response and headers serves no purpose)",
            )
        )
    if not seen:
        causes.append(
            required("spec.validationActions", "at least one validation action is required")
        )
    return causes


def validate_mutating_binding(obj: Obj, old: Obj | None) -> list[Cause]:
    return _binding_causes(as_dict(obj.get("spec")))
