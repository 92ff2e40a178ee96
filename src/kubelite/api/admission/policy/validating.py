"""The ValidatingAdmissionPolicy admission plugin (apiserver
``pkg/admission/plugin/policy/validating/dispatcher.go``):
every write (create, update, delete, any subresource) but those of the admission configuration
kinds, against every policy that has bindings.

For each policy whose ``matchConstraints`` match, each of its bindings whose
``matchResources`` match, each of the binding's params: the policy's decisions
(:mod:`.validator`), applied per the binding's ``validationActions``:

- ``Deny``: the write is refused with the first denial, ``<resource> "<name>" is forbidden:
  ValidatingAdmissionPolicy '<p>' with binding '<b>' denied request: <msg>``, the validation's
  reason and its code (403 Forbidden, 401 Unauthorized, 413 RequestEntityTooLarge, else 422),
  and one cause holding the text after ``is forbidden: ``;
- ``Warn``: a Warning header ``Validation failed for ValidatingAdmissionPolicy '<p>' with
  binding '<b>': <msg>``;
- ``Audit``: an entry of the audit annotation ``validation.policy.admission.k8s.io/
  validation_failure`` (a JSON list, at most 50).

A policy's or binding's configuration error (no params with ``Deny``, a paramKind that names no
resource, a selector error) denies as ``failed to configure policy|binding: <error>`` under
failurePolicy Fail and is ignored under Ignore. Audit annotations of the policies are
published as ``<policy>/<key>``, distinct values joined with ``, ``.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from kubelite.api import errors
from kubelite.api.admission.policy import activation as act
from kubelite.api.admission.policy.activation import AuthorizerChecks, AuthorizerSource
from kubelite.api.admission.policy.expressions import (
    AUTHORIZER,
    NAMESPACE_OBJECT,
    OBJECT,
    OLD_OBJECT,
    PARAMS,
    REQUEST,
)
from kubelite.api.admission.policy.matching import Matched, Matcher, Namespaces, PolicyConfigError
from kubelite.api.admission.policy.params import collect_params, param_kind_of, resolve_param_kind
from kubelite.api.admission.policy.source import Hook, PolicySet
from kubelite.api.admission.policy.validator import (
    DENY,
    IGNORE,
    INVALID,
    PUBLISH,
    CompiledPolicy,
    Decision,
    Evaluation,
    validate,
)
from kubelite.api.admission.rules import exempt
from kubelite.api.catalogue import Catalogue, ResourceInfo
from kubelite.api.encoding import conversion
from kubelite.api.errors import APIError
from kubelite.api.machinery import scale
from kubelite.api.machinery.admission import NAMESPACES, Attributes
from kubelite.api.machinery.registry import Registry

Obj = dict[str, Any]

KIND = "ValidatingAdmissionPolicy"
SCALE = "scale"
VALIDATION_FAILURE = "validation.policy.admission.k8s.io/validation_failure"
MAX_VALIDATION_FAILURES = 50
MAX_AUDIT_ANNOTATION_BYTES = 10 * 1024
_CODES = {"Forbidden": 403, "Unauthorized": 401, "RequestEntityTooLarge": 413, INVALID: 422}


class _Denial:
    def __init__(self, policy: str, binding: str | None, message: str, reason: str) -> None:
        self.policy, self.binding, self.message, self.reason = policy, binding, message, reason


def reason_code(reason: str) -> int:
    """kube's reasonToCode."""
    return _CODES.get(reason, 422)


def denial_error(attrs: Attributes, kind: str, denial: _Denial) -> APIError:
    """The Status of a denial (admission.NewForbidden, then the policy's reason and code)."""
    if denial.binding is not None:
        text = (
            f"{kind} '{denial.policy}' with binding '{denial.binding}' denied request: "
            f"{denial.message}"
        )
    else:
        text = f"{kind} '{denial.policy}' denied request: {denial.message}"
    error = errors.forbidden(attrs.info.plural, attrs.info.group, request_name(attrs), text)
    reason = denial.reason or INVALID
    details = {**(error.details or {}), "causes": [{"message": text}]}
    return APIError(reason_code(reason), reason, error.message, details)


def request_name(attrs: Attributes) -> str:
    """kube's extractResourceName: the request's name, else the object's name or
    generateName, else ``Unknown``."""
    if attrs.name:
        return attrs.name
    meta = (attrs.obj or {}).get("metadata") or {}
    return str(meta.get("name") or meta.get("generateName") or "Unknown")


def versioned(obj: Obj | None, attrs: Attributes, matched: Matched) -> Obj | None:
    """``obj`` at the version the write matched at (kube's VersionedAttributes); a ``scale``
    write's objects are the ``autoscaling/v1`` Scales kube's scale endpoint admits."""
    if obj is not None and attrs.subresource == SCALE:
        return scale.to_scale(obj, attrs.info)
    if obj is None or matched.info is attrs.info or attrs.subresource:
        return obj
    try:
        return conversion.to_version(obj, matched.info.api_version, builtin=matched.info.builtin)
    except conversion.ConversionError as exc:
        raise PolicyConfigError(f"failed to convert object version: {exc}") from None


class PolicyRun:
    """What one write's dispatch shares: its namespaces, its authorizer checks and the
    activations at each matched version."""

    def __init__(self, plugin: PolicyAdmission, attrs: Attributes) -> None:
        self.attrs = attrs
        self.namespaces = Namespaces(plugin.read_namespace)
        self.checks = AuthorizerChecks(attrs.user, plugin.authorizer())
        self._activations: dict[int, Obj] = {}

    async def activation(self, matched: Matched) -> Obj:
        """The variables of an evaluation at ``matched`` (without params)."""
        key = id(matched.info)
        found = self._activations.get(key)
        if found is None:
            attrs = self.attrs
            namespace = None
            is_namespace = attrs.info.plural == NAMESPACES and attrs.info.group == ""
            if attrs.namespace and not is_namespace:
                namespace = act.namespace_object(await self.namespaces.get(attrs.namespace))
            found = {
                OBJECT: versioned(attrs.obj, attrs, matched),
                OLD_OBJECT: versioned(attrs.old, attrs, matched),
                REQUEST: act.admission_request(attrs, matched),
                NAMESPACE_OBJECT: namespace,
                AUTHORIZER: act.authorizer_value(attrs),
            }
            self._activations[key] = found
        return dict(found)


class PolicyAdmission:
    """What the validating and mutating plugins share: the policy set, the matcher, params.
    ``namespaces`` reads a namespace (None: it does not exist)."""

    def __init__(
        self,
        registry: Registry,
        catalogue: Catalogue,
        policies: PolicySet[Any],
        authorizer: AuthorizerSource,
        namespaces: Callable[[str], Awaitable[Obj | None]],
    ) -> None:
        self.registry = registry
        self.catalogue = catalogue
        self.policies = policies
        self.authorizer = authorizer
        self.read_namespace = namespaces
        self.matcher = Matcher(catalogue)

    def param_info(self, policy: Obj) -> ResourceInfo | None:
        kind = param_kind_of(policy.get("spec") or {})
        return None if kind is None else resolve_param_kind(self.catalogue, *kind)

    async def invocations(
        self, hook: Hook[Any], run: PolicyRun, config_error: Any
    ) -> list[tuple[Obj, Matched, Obj | None]]:
        """(binding, matched resource, param) of each evaluation of ``hook``'s policy for the
        write; configuration errors go to ``config_error(policy, binding or None, error)``."""
        attrs = run.attrs
        policy = hook.policy
        spec = policy.get("spec") or {}
        out: list[tuple[Obj, Matched, Obj | None]] = []
        try:
            matched = await self.matcher.matches(
                spec.get("matchConstraints"), attrs, run.namespaces
            )
            if matched is None:
                return out
            info = self.param_info(policy)
        except PolicyConfigError as exc:
            config_error(policy, None, str(exc))
            return out
        for binding in hook.bindings:
            binding_spec = binding.get("spec") or {}
            try:
                resources = binding_spec.get("matchResources")
                if resources is not None and not await self.matcher.matches(
                    resources, attrs, run.namespaces
                ):
                    continue
                versioned(attrs.obj, attrs, matched)
                params = await collect_params(
                    self.registry, info, binding_spec.get("paramRef"), attrs.namespace or ""
                )
            except PolicyConfigError as exc:
                config_error(policy, binding, str(exc))
                continue
            out.extend((binding, matched, param) for param in params)
        return out


class ValidatingPolicyAdmission(PolicyAdmission):
    """The ValidatingAdmissionPolicy plugin (a validating plugin of the admission chain)."""

    async def validate(self, attrs: Attributes) -> None:
        hooks = self.policies.hooks()
        if not hooks or exempt(attrs):
            return
        run = PolicyRun(self, attrs)
        denials: list[_Denial] = []
        failures: list[Obj] = []

        def config_error(policy: Obj, binding: Obj | None, error: str) -> None:
            spec = policy.get("spec") or {}
            if spec.get("failurePolicy") == IGNORE:
                return
            where = "policy" if binding is None else "binding"
            binding_name = None if binding is None else _name(binding)
            denials.append(
                _Denial(_name(policy), binding_name, f"failed to configure {where}: {error}", "")
            )

        for hook in hooks:
            compiled: CompiledPolicy = hook.compiled
            collected: dict[str, list[str]] = {}
            for binding, matched, param in await self.invocations(hook, run, config_error):
                activation = await run.activation(matched)
                activation[PARAMS] = param
                result = validate(Evaluation(compiled, activation, run.checks))
                actions = _actions(binding)
                for index, decision in enumerate(result.decisions):
                    if decision.action == DENY:
                        self._apply(attrs, hook, binding, index, decision, actions, denials,
                                    failures)  # fmt: skip
                for annotation in result.annotations:
                    if annotation.action == PUBLISH:
                        values = collected.setdefault(annotation.key, [])
                        value = annotation.value[:MAX_AUDIT_ANNOTATION_BYTES]
                        if value not in values:
                            values.append(value)
                    elif annotation.action != "exclude":
                        denials.append(_Denial(compiled.name, _name(binding), annotation.error, ""))
            for key, values in collected.items():
                _annotate(attrs, f"{compiled.name}/{key}", ", ".join(values))
        if failures:
            _annotate(attrs, VALIDATION_FAILURE, _json(failures[:MAX_VALIDATION_FAILURES]))
        if denials:
            raise denial_error(attrs, KIND, denials[0])

    @staticmethod
    def _apply(
        attrs: Attributes,
        hook: Hook[Any],
        binding: Obj,
        index: int,
        decision: Decision,
        actions: list[str],
        denials: list[_Denial],
        failures: list[Obj],
    ) -> None:
        policy, binding_name = _name(hook.policy), _name(binding)
        for action in actions:
            if action == "Deny":
                denials.append(_Denial(policy, binding_name, decision.message, decision.reason))
            elif action == "Audit":
                failures.append(
                    {
                        "message": decision.message,
                        "policy": str((binding.get("spec") or {}).get("policyName", "")),
                        "binding": binding_name,
                        "expressionIndex": index,
                        "validationActions": actions,
                    }
                )
            elif action == "Warn" and attrs.warnings is not None:
                text = (
                    f"Validation failed for {KIND} '{policy}' with binding '{binding_name}': "
                    f"{decision.message}"
                )
                if text not in attrs.warnings.texts:
                    attrs.warnings.texts.append(text)


def _name(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("name", ""))


def _actions(binding: Obj) -> list[str]:
    actions = (binding.get("spec") or {}).get("validationActions")
    return [a for a in actions if isinstance(a, str)] if isinstance(actions, list) else []


def _annotate(attrs: Attributes, key: str, value: str) -> None:
    """kube's AddAnnotation: a key once set keeps its value."""
    if attrs.audit_annotations is not None:
        attrs.audit_annotations.setdefault(key, value)


_GO_HTML_ESCAPES: dict[str, str | int | None] = {
    "<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029",
}  # fmt: skip


def _json(value: Any) -> str:
    """Go's json.Marshal: compact, with HTML characters escaped."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return text.translate(str.maketrans(_GO_HTML_ESCAPES))
