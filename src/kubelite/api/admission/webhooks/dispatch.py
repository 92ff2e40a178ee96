"""The two admission plugins that call webhooks (kube's ``MutatingAdmissionWebhook`` and
``ValidatingAdmissionWebhook``, ``webhook/{mutating,validating}/dispatcher.go``).

:class:`MutatingWebhooks` calls the matching mutating webhooks one after another, in the
source's order, applying each JSON patch to the object in the webhook's version; the result is
put back into the write's object (and defaulted again, as kube defaults what a patch leaves).
With ``reinvocationPolicy: IfNeeded`` a webhook is called once more when a later plugin changed
the object (:class:`kubelite.api.machinery.admission.Reinvocation`); one never called in the first
round is not called in the second.

:class:`ValidatingWebhooks` calls the matching validating webhooks concurrently and waits for
all of them; the first refusal in the source's order is the answer. A webhook's slowness holds
only the write that waits for it: every call is awaited on the event loop, which goes on
serving other requests.

Neither plugin looks at the admission configuration kinds themselves (:func:`exempt`).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import jsonpatch
import orjson
from jsonpointer import JsonPointerException

from kubelite.api.admission.policy.activation import AuthorizerChecks, AuthorizerSource
from kubelite.api.admission.rules import NamespaceLookup, exempt
from kubelite.api.admission.webhooks import calling
from kubelite.api.admission.webhooks.calling import CallError, annotate, denial
from kubelite.api.admission.webhooks.matching import Invocation, Matcher, Views, internal_error
from kubelite.api.admission.webhooks.source import Hook, WebhookSource
from kubelite.api.catalogue import Catalogue, ResourceInfo
from kubelite.api.machinery.admission import Attributes, Reinvocation
from kubelite.api.machinery.generic import GenericStore
from kubelite.api.machinery.registry import Registry
from kubelite.api.machinery.webhookclient import WebhookClient
from kubelite.api.patch import json_patch

Obj = dict[str, Any]
#: (info, obj): the kind's defaults applied to an object a webhook patched
Defaulter = Callable[[ResourceInfo, Obj], None]

MUTATING_PLUGIN = "MutatingAdmissionWebhook"
VALIDATING_FAILED_OPEN = "failed-open.validating.webhook.admission.k8s.io/round_0_index_{index}"
MUTATION = "mutation.webhook.admission.k8s.io/round_{round}_index_{index}"
MUTATING_FAILED_OPEN = "failed-open." + MUTATION


class _Plugin:
    def __init__(
        self,
        source: WebhookSource,
        client: WebhookClient,
        registry: Registry,
        catalogue: Catalogue,
        namespaces: NamespaceLookup,
        authorizer: AuthorizerSource | None = None,
    ) -> None:
        self.source = source
        self.client = client
        self.registry = registry
        self.catalogue = catalogue
        self.namespaces = namespaces
        #: the server's authorizer, for the match conditions' ``authorizer`` (None: allow all)
        self.authorizer = authorizer

    def matcher(self, attrs: Attributes) -> Matcher:
        checks = None
        if self.authorizer is not None:
            checks = AuthorizerChecks(attrs.user, self.authorizer())
        return Matcher(attrs, self.catalogue, self.namespaces, checks)


class ValidatingWebhooks(_Plugin):
    """The validating webhooks, as a validating admission plugin."""

    async def validate(self, attrs: Attributes) -> None:
        hooks = self.source.validating
        if not hooks or exempt(attrs):
            return
        matcher, views = self.matcher(attrs), Views(attrs)
        invocations: list[Invocation] = []
        for hook in hooks:
            invocation = await matcher.invocation(hook, views)
            if invocation is not None:
                invocations.append(invocation)
        if not invocations:
            return
        if len(invocations) == 1:
            await self._call(attrs, invocations[0], views, 0)
            return
        for invocation in invocations:  # converted before the calls, as kube does
            views.get(invocation)
        outcomes = await asyncio.gather(
            *(self._call(attrs, inv, views, i) for i, inv in enumerate(invocations)),
            return_exceptions=True,
        )
        for outcome in outcomes:
            if isinstance(outcome, BaseException):
                raise outcome

    async def _call(
        self, attrs: Attributes, invocation: Invocation, views: Views, index: int
    ) -> None:
        hook = invocation.hook
        obj, old = views.get(invocation)
        try:
            answer = await calling.call(self.client, attrs, invocation, obj, old)
        except CallError as exc:
            if not hook.ignores_failures:
                raise exc.as_status() from None
            annotate(attrs, VALIDATING_FAILED_OPEN.format(index=index), hook.name)
            return
        if not answer.allowed:
            raise denial(hook, answer.status)


@dataclass
class _Rounds:
    """What the mutating plugin keeps between the rounds of one write (kube's
    webhookReinvokeContext)."""

    last_output: Obj | None = None
    previously_invoked: set[str] = field(default_factory=set)
    reinvoke: set[str] = field(default_factory=set)

    def require_reinvoking(self) -> None:
        self.reinvoke |= self.previously_invoked
        self.previously_invoked = set()


class MutatingWebhooks(_Plugin):
    """The mutating webhooks, as a mutating admission plugin."""

    def __init__(
        self,
        source: WebhookSource,
        client: WebhookClient,
        registry: Registry,
        catalogue: Catalogue,
        namespaces: NamespaceLookup,
        authorizer: AuthorizerSource | None = None,
        default: Defaulter | None = None,
    ) -> None:
        super().__init__(source, client, registry, catalogue, namespaces, authorizer)
        self.default = default or self._kind_defaults

    def _kind_defaults(self, info: ResourceInfo, obj: Obj) -> None:
        """The defaults of the kind's strategy (what kube's defaulter does after a patch)."""
        storage = self.registry.storage(info)
        if isinstance(storage, GenericStore):
            storage.strategy.default(info, obj)

    async def admit(self, attrs: Attributes) -> None:
        hooks = self.source.mutating
        if not hooks or exempt(attrs):
            return
        state = attrs.reinvocation or Reinvocation()
        rounds = state.values.get(MUTATING_PLUGIN)
        if not isinstance(rounds, _Rounds):
            rounds = state.values[MUTATING_PLUGIN] = _Rounds()
        if state.is_reinvoke:
            if not rounds.reinvoke and not rounds.previously_invoked:
                return
            if rounds.last_output != attrs.obj:  # an in-tree plugin changed it since
                rounds.require_reinvoking()
        try:
            await self._round(attrs, hooks, state, rounds)
        finally:
            if rounds.previously_invoked or rounds.reinvoke:
                rounds.last_output = json.loads(json.dumps(attrs.obj))

    async def _round(
        self, attrs: Attributes, hooks: tuple[Hook, ...], state: Reinvocation, rounds: _Rounds
    ) -> None:
        matcher, views = self.matcher(attrs), Views(attrs)
        round_ = 1 if state.is_reinvoke else 0
        for index, hook in enumerate(hooks):
            invocation = await matcher.invocation(hook, views)
            if invocation is None:
                continue
            if state.is_reinvoke and hook.uid not in rounds.reinvoke:
                continue
            changed, failure = False, None
            try:
                changed = await self._call(attrs, invocation, views, round_, index)
            except CallError as exc:
                failure = exc
            if changed:
                rounds.require_reinvoking()
                state.should_reinvoke = True
            if hook.reinvoked_if_needed:
                rounds.previously_invoked.add(hook.uid)
            if failure is not None:
                if not hook.ignores_failures:
                    raise failure.as_status()
                key = MUTATING_FAILED_OPEN.format(round=round_, index=index)
                annotate(attrs, key, hook.name)
        if views.write_back() and attrs.obj is not None:
            self.default(attrs.info, attrs.obj)

    async def _call(
        self, attrs: Attributes, invocation: Invocation, views: Views, round_: int, index: int
    ) -> bool:
        """Call one webhook and apply its patch; whether the object changed."""
        hook = invocation.hook
        changed = False
        try:
            obj, old = views.get(invocation)
            answer = await calling.call(self.client, attrs, invocation, obj, old)
            if not answer.allowed:
                raise denial(hook, answer.status)
            if not answer.patch:
                return False
            patched = self._patched(hook, answer.patch, answer.patch_type, obj)
            if patched is None:
                return False
            if patched.get("kind") == invocation.info.kind:  # not a subresource's (a Scale)
                # the next webhook sees the patch defaulted, as kube's callAttrMutatingHook
                self.default(invocation.info, patched)
            changed = patched != obj
            views.replace(invocation, patched)
            return changed
        finally:
            value = {"configuration": hook.configuration, "webhook": hook.name, "mutated": changed}
            annotate(
                attrs, MUTATION.format(round=round_, index=index), orjson.dumps(value).decode()
            )

    @staticmethod
    def _patched(hook: Hook, patch: bytes, patch_type: str, obj: Obj | None) -> Obj | None:
        """``obj`` with the webhook's patch applied (None: an empty patch)."""
        try:
            operations = json.loads(patch)
        except ValueError as exc:
            raise CallError(
                hook, f"received undecodable patch in webhook response: {exc}"
            ) from None
        if not isinstance(operations, list) or not all(isinstance(o, dict) for o in operations):
            raise CallError(
                hook,
                "received undecodable patch in webhook response: json: cannot unmarshal "
                "into Go value of type jsonpatch.Patch",
            )
        if not operations:
            return None
        if obj is None:
            raise internal_error(
                f'admission webhook "{hook.name}" attempted to modify the object, which is not '
                "supported for this operation"
            )
        if patch_type != "JSONPatch":
            raise CallError(hook, f'unsupported patch type "{patch_type}"')
        try:
            patched = json_patch.apply(obj, operations)
        except (jsonpatch.JsonPatchException, JsonPointerException) as exc:
            raise internal_error(str(exc)) from None
        except (TypeError, KeyError, IndexError, ValueError) as exc:
            raise internal_error(f"invalid JSON patch: {exc}") from None
        if not isinstance(patched, dict):
            raise internal_error("Object 'Kind' is missing in the patched object")
        for key in ("apiVersion", "kind"):
            if patched.get(key) != obj.get(key):
                raise internal_error(
                    f'admission webhook "{hook.name}" changed the object\'s {key}, which is not '
                    "supported"
                )
        return patched
