"""The MutatingAdmissionPolicy admission plugin (apiserver
``pkg/admission/plugin/policy/mutating/dispatcher.go`` with ``generic/policy_dispatcher.go``):
creates and updates (any subresource) but those of the admission configuration kinds, against every
mutating policy that has bindings.

For each policy whose ``matchConstraints`` match, each binding whose ``matchResources`` match
and each of its params: the ``matchConditions``, then each mutation in order
(:mod:`.mutations`) on the object as it stands, at the version the policy matched (one that
fails changes nothing and the next is still applied). Errors
(configuration, conditions, evaluation, patches) are collected; under failurePolicy ``Fail``
the first refuses the write: 403 with reason ``Invalid`` and the message ``policy '<p>' with
binding '<b>' denied request: <error>`` (``policy "<p>" denied request: failed to configure
policy: <error>`` without a binding), one cause per error.

Reinvocation (``reinvocationPolicy: IfNeeded``): when a mutation changes the object, the
chain's mutating plugins run again (:class:`kubelite.api.machinery.admission.Reinvocation`); in that
round only the (policy, binding, param) invocations with ``IfNeeded`` that ran before a later
change are invoked again.
"""

from __future__ import annotations

from typing import Any

from kubelite.api import errors
from kubelite.api.admission.policy.expressions import OBJECT, PARAMS, Budget, EvaluationError
from kubelite.api.admission.policy.matching import Matched
from kubelite.api.admission.policy.mutations import (
    APPLY_CONFIGURATION,
    IF_NEEDED,
    CompiledMutatingPolicy,
    Mutation,
    MutationError,
    apply_configuration,
    json_patch,
)
from kubelite.api.admission.policy.validating import (
    SCALE,
    PolicyAdmission,
    PolicyRun,
    request_name,
    versioned,
)
from kubelite.api.admission.policy.validator import (
    IGNORE,
    RUNTIME_BUDGET,
    Evaluation,
    match_conditions,
)
from kubelite.api.admission.rules import exempt
from kubelite.api.encoding import conversion
from kubelite.api.encoding.stored import clone
from kubelite.api.errors import APIError
from kubelite.api.machinery import scale
from kubelite.api.machinery.admission import CREATE, UPDATE, Attributes, Reinvocation

Obj = dict[str, Any]

PLUGIN = "MutatingAdmissionPolicy"
_Key = tuple[str, str, str, str]


class _State:
    """kube's policyReinvokeContext, for one request."""

    def __init__(self) -> None:
        self.last_output: Obj | None = None
        self.invoked: set[_Key] = set()
        self.reinvoke: set[_Key] = set()

    def require_reinvoking(self) -> None:
        self.reinvoke |= self.invoked
        self.invoked = set()


class _Error:
    def __init__(self, policy: str, binding: str | None, message: str) -> None:
        self.policy, self.binding, self.message = policy, binding, message

    def text(self) -> str:
        if self.binding is not None:
            return f"policy '{self.policy}' with binding '{self.binding}' denied request: " + (
                self.message
            )
        return f'policy "{self.policy}" denied request: {self.message}'


class MutatingPolicyAdmission(PolicyAdmission):
    """The MutatingAdmissionPolicy plugin (a mutating plugin of the admission chain)."""

    async def admit(self, attrs: Attributes) -> None:
        if attrs.operation not in (CREATE, UPDATE) or attrs.obj is None:
            return
        hooks = self.policies.hooks()
        if not hooks or exempt(attrs):
            return
        run = PolicyRun(self, attrs)
        failures: list[_Error] = []

        def config_error(policy: Obj, binding: Obj | None, error: str) -> None:
            where = "policy" if binding is None else "binding"
            if (policy.get("spec") or {}).get("failurePolicy") != IGNORE:
                failures.append(
                    _Error(_name(policy), None if binding is None else _name(binding),
                           f"failed to configure {where}: {error}")
                )  # fmt: skip

        invocations: list[tuple[CompiledMutatingPolicy, Obj, Matched, Obj | None]] = []
        for hook in hooks:
            for binding, matched, param in await self.invocations(hook, run, config_error):
                invocations.append((hook.compiled, binding, matched, param))
        if not invocations:
            if failures:
                raise _refusal(attrs, failures)
            return
        context = attrs.reinvocation or Reinvocation()
        state = context.values.setdefault(PLUGIN, _State())
        assert isinstance(state, _State)
        if context.is_reinvoke and state.last_output != attrs.obj:
            state.require_reinvoking()
        try:
            for compiled, binding, matched, param in invocations:
                found = await self._invoke(run, context, state, compiled, binding, matched, param)
                if compiled.failure_policy != IGNORE:
                    failures.extend(_Error(compiled.name, _name(binding), e) for e in found)
        finally:
            state.last_output = clone(attrs.obj)
        if failures:
            raise _refusal(attrs, failures)

    async def _invoke(
        self,
        run: PolicyRun,
        context: Reinvocation,
        state: _State,
        compiled: CompiledMutatingPolicy,
        binding: Obj,
        matched: Matched,
        param: Obj | None,
    ) -> list[str]:
        """One (policy, binding, param): its conditions and mutations; their errors. A mutation
        that fails leaves the object as it was and the next one is still applied, as kube's
        dispatcher goes on to the next mutation after recording the error."""
        attrs = run.attrs
        before = versioned(attrs.obj, attrs, matched)
        assert before is not None
        activation = {**await run.activation(matched), OBJECT: before, PARAMS: param}
        failed = match_conditions(Evaluation(compiled, activation, run.checks))
        if failed == "":
            return []
        if failed is not None:
            return [failed]
        key = (compiled.name, _name(binding), *_param_key(param))
        if context.is_reinvoke and key not in state.reinvoke:
            return []
        current = before
        found: list[str] = []
        for mutation in compiled.mutations:
            activation = {**activation, OBJECT: current}
            try:
                current = self._mutate(compiled, mutation, activation, run, matched, current)
            except (MutationError, EvaluationError) as exc:
                found.append(str(exc))
        if current != before:
            self._store(attrs, matched, current)
            state.require_reinvoking()
            context.should_reinvoke = True
        if compiled.reinvocation == IF_NEEDED:
            state.invoked.add(key)
        return found

    def _mutate(
        self,
        compiled: CompiledMutatingPolicy,
        mutation: Mutation,
        activation: Obj,
        run: PolicyRun,
        matched: Matched,
        current: Obj,
    ) -> Obj:
        if mutation.expression.compiled is None:
            raise MutationError(mutation.expression.error)
        evaluation = Evaluation(compiled, activation, run.checks)
        result = evaluation.run(mutation.expression, Budget(RUNTIME_BUDGET))
        on_scale = run.attrs.subresource == SCALE
        if mutation.patch_type == APPLY_CONFIGURATION:
            shape = scale.SCALE_INFO if on_scale else matched.info
            patched = apply_configuration(current, result, shape)
        else:
            patched = json_patch(current, result)
        if not on_scale:  # a Scale has no defaults
            self._default(matched, patched)
        return patched

    def _default(self, matched: Matched, obj: Obj) -> None:
        """The kind's defaults on the mutated object (kube defaults after each mutation)."""
        storage = self.registry.storage(matched.info)
        strategy = getattr(storage, "strategy", None)
        if strategy is not None and obj is not None:
            strategy.default(matched.info, obj)

    @staticmethod
    def _store(attrs: Attributes, matched: Matched, new: Obj) -> None:
        """The mutated object back into the write, at the request's version, in place."""
        assert attrs.obj is not None
        if attrs.subresource == SCALE:  # the Scale's replicas onto the parent (kube's scale)
            replicas = (new.get("spec") or {}).get("replicas")
            scale.set_path(attrs.obj, scale.scale_paths(attrs.info)[0], replicas)
            return
        if matched.info is not attrs.info and not attrs.subresource:
            new = conversion.to_version(new, attrs.info.api_version, builtin=attrs.info.builtin)
        attrs.obj.clear()
        attrs.obj.update(new)


def _param_key(param: Obj | None) -> tuple[str, str]:
    meta = (param or {}).get("metadata") or {}
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


def _name(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("name", ""))


def _refusal(attrs: Attributes, failures: list[_Error]) -> APIError:
    """kube's policy dispatcher: admission.NewForbidden, its message the first error's, the
    reason Invalid, a cause per error."""
    forbidden = errors.forbidden(attrs.info.plural, attrs.info.group, request_name(attrs), "")
    texts = [failure.text() for failure in failures]
    details = {**(forbidden.details or {}), "causes": [{"message": t} for t in texts]}
    return APIError(403, "Invalid", texts[0], details)
