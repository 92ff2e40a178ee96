"""Pod priority, as kube-apiserver's Priority admission plugin and scheduling storage have it
(plugin/pkg/admission/priority/admission.go, pkg/registry/scheduling/rest).

- A new Pod's ``spec.priority`` comes from its PriorityClass (``no PriorityClass with name X was
  found`` is 403), or, without a class name, from the global default class (whose name it then
  takes), or is 0 with ``PreemptLowerPriority``. A priority or preemption policy the pod sets
  that differs from the computed one is 403. An update keeps the stored priority and policy
  when the new pod leaves them out (validation refuses changing them).
- Only one PriorityClass may be the global default: a second is 403.
- The system classes every cluster has (``system-node-critical``, ``system-cluster-critical``)
  are created at start-up.
"""

from __future__ import annotations

from typing import Any

from kubelite.api import errors
from kubelite.api.catalogue import Catalogue, ResourceInfo
from kubelite.api.errors import APIError
from kubelite.api.kinds.core.poddefaults import set_if_nil
from kubelite.api.kinds.resource import Resource
from kubelite.api.kinds.rules import BuiltinStrategy
from kubelite.api.machinery.admission import CREATE, UPDATE, Attributes
from kubelite.api.machinery.registry import Registry

Obj = dict[str, Any]

GROUP, PLURAL = "scheduling.k8s.io", "priorityclasses"
PREEMPT_LOWER = "PreemptLowerPriority"
#: scheduling.SystemPriorityClasses(): name, value, description
SYSTEM_CLASSES = (
    (
        "system-node-critical",
        2000001000,
        "Used for system critical pods that must not be moved from their current node.",
    ),
    (
        "system-cluster-critical",
        2000000000,
        "Used for system critical pods that must run in the cluster, but can be moved to "
        "another node if necessary.",
    ),
)


class PriorityAdmission:
    """The Priority plugin: resolves a pod's priority on create (``admit``) and allows one
    global default PriorityClass (``validate``)."""

    def __init__(self, registry: Registry, classes: ResourceInfo) -> None:
        self.registry = registry
        self.classes = classes

    async def admit(self, attrs: Attributes) -> None:
        target = attrs.info
        if attrs.subresource or (target.group, target.plural) != ("", "pods"):
            return
        spec = (attrs.obj or {}).get("spec")
        if not isinstance(spec, dict):
            return
        if attrs.operation == UPDATE:
            old_spec = (attrs.old or {}).get("spec") or {}
            for key in ("priority", "preemptionPolicy"):
                if spec.get(key) is None and old_spec.get(key) is not None:
                    spec[key] = old_spec[key]
            return
        if attrs.operation != CREATE:
            return
        name = spec.get("priorityClassName")
        policy: str | None
        if not name:
            default = await self._default_class()
            if default is None:
                priority, policy = 0, PREEMPT_LOWER
            else:
                spec["priorityClassName"] = default["metadata"]["name"]
                priority, policy = default.get("value", 0), default.get("preemptionPolicy")
        else:
            found = await self._class(str(name))
            if found is None:
                raise _forbidden(attrs, f"no PriorityClass with name {name} was found")
            priority, policy = found.get("value", 0), found.get("preemptionPolicy")
        given = spec.get("priority")
        if given is not None and given != priority:
            raise _forbidden(
                attrs,
                f"the integer value of priority ({given}) must not be provided in pod spec; "
                f"priority admission controller computed {priority} from the given "
                "PriorityClass name",
            )
        spec["priority"] = priority
        if policy is not None:
            given_policy = spec.get("preemptionPolicy")
            if given_policy is not None and given_policy != policy:
                raise _forbidden(
                    attrs,
                    f"the string value of PreemptionPolicy ({given_policy}) must not be provided "
                    f"in pod spec; priority admission controller computed {policy} from the "
                    "given PriorityClass name",
                )
            spec["preemptionPolicy"] = policy

    async def validate(self, attrs: Attributes) -> None:
        target = attrs.info
        if attrs.subresource or (target.group, target.plural) != (GROUP, PLURAL):
            return
        if attrs.operation not in (CREATE, UPDATE) or not (attrs.obj or {}).get("globalDefault"):
            return
        default = await self._default_class()
        if default is None:
            return
        default_name = default["metadata"]["name"]
        if attrs.operation == CREATE or default_name != attrs.name:
            raise _forbidden(
                attrs,
                f"PriorityClass {default_name} is already marked as default. Only one default "
                "can exist",
            )

    async def _class(self, name: str) -> Obj | None:
        try:
            return await self.registry.get(self.classes, None, name)
        except APIError as exc:
            if exc.reason == "NotFound":
                return None
            raise

    async def _default_class(self) -> Obj | None:
        """The global default class; of several (a race), the one of lowest value, as kube."""
        listed = await self.registry.list(self.classes, None)
        defaults = [pc for pc in listed.get("items") or [] if pc.get("globalDefault")]
        return min(defaults, key=lambda pc: pc.get("value", 0), default=None)


def _forbidden(attrs: Attributes, why: str) -> APIError:
    return errors.forbidden(attrs.info.plural, attrs.info.group, attrs.name, why)


def priority_class_info(catalogue: Catalogue) -> ResourceInfo:
    return catalogue.require(GROUP, "v1", PLURAL)


async def ensure_system_priority_classes(registry: Registry, catalogue: Catalogue) -> None:
    """Create the system PriorityClasses when they are missing (kube's post-start hook
    ``scheduling/bootstrap-system-priority-classes``)."""
    info = priority_class_info(catalogue)
    for name, value, description in SYSTEM_CLASSES:
        body = {
            "apiVersion": f"{GROUP}/v1",
            "kind": "PriorityClass",
            "metadata": {"name": name},
            "value": value,
            "description": description,
        }
        try:
            await registry.create(info, None, body)
        except APIError as exc:
            if exc.reason != "AlreadyExists":
                raise


def default_priority_class(obj: Obj) -> None:
    """SetDefaults_PriorityClass."""
    set_if_nil(obj, "preemptionPolicy", "PreemptLowerPriority")


class FirstGenerationOnly(BuiltinStrategy):
    """PriorityClasses: generation 1 on create, never moved afterwards."""

    defaulters = (default_priority_class,)

    def __init__(self) -> None:
        super().__init__(tracks_generation=True)

    def generation_changed(self, old: Obj, new: Obj) -> bool:
        return False


RESOURCE = Resource(GROUP, PLURAL, FirstGenerationOnly())
