"""How many pods a PodDisruptionBudget expects (kube's getExpectedPodCount and
getExpectedScale, pkg/controller/disruption/disruption.go): with an integer ``minAvailable``, the
pods it matches; otherwise the sum of the scale of the pods' controllers, found by kube's finders
in kube's order: a ReplicationController, the Deployment of a ReplicaSet, a ReplicaSet that no
Deployment controls, a StatefulSet (their ``spec.replicas``, from the informer), then any kind's
``/scale`` read through the registry. Percentages round up (intstr's
GetScaledValueFromIntOrPercent)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from kubelite.api.catalogue import Catalogue
from kubelite.api.errors import APIError
from kubelite.api.machinery.registry import Registry
from kubelite.api.machinery.rest import Context, GetOptions, Getter

Obj = dict[str, Any]
RCS, RSS, DEPLOYMENTS, STATEFULSETS = (
    "replicationcontrollers", "replicasets", "deployments", "statefulsets",
)  # fmt: skip
#: (plural, namespace, name): the object as the informer holds it
Held = Callable[[str, str, str], Obj | None]


class SyncError(Exception):
    """A sync that failed with kube's error text (the fail-safe's condition message)."""


def _controller_of(obj: Obj) -> Obj | None:
    for ref in obj["metadata"].get("ownerReferences") or []:
        if ref.get("controller"):
            return dict(ref)
    return None


def _group_of(api_version: str) -> str:
    return api_version.rpartition("/")[0] if "/" in api_version else ""


def _verify(ref: Obj, kind: str, groups: tuple[str, ...]) -> bool:
    return ref.get("kind") == kind and _group_of(str(ref.get("apiVersion") or "")) in groups


def scaled_value(value: Any, total: int) -> int:
    """intstr.GetScaledValueFromIntOrPercent, rounding up."""
    if isinstance(value, int):
        return value
    text = str(value)
    if not text.endswith("%"):
        raise SyncError("invalid value for IntOrString: invalid type: string is not a percentage")
    try:
        percent = int(text[:-1])
    except ValueError:
        raise SyncError(
            f'invalid value "{text}": strconv.Atoi: parsing "{text[:-1]}": invalid syntax'
        )
    return math.ceil(percent * total / 100)


def go_selector(selector: Any) -> str:
    """A *metav1.LabelSelector as Go's %v prints it (the generated String())."""
    if not isinstance(selector, dict):
        return "nil"
    labels = selector.get("matchLabels") or {}
    pairs = "".join(f"{k}: {labels[k]}," for k in sorted(labels))
    exprs = "".join(
        f"LabelSelectorRequirement{{Key:{e.get('key', '')},Operator:{e.get('operator', '')},"
        f"Values:[{' '.join(e.get('values') or [])}],}},"
        for e in selector.get("matchExpressions") or []
    )
    return (
        f"&LabelSelector{{MatchLabels:map[string]string{{{pairs}}},"
        f"MatchExpressions:[]LabelSelectorRequirement{{{exprs}}},}}"
    )


class ExpectedPods:
    """The expected and desired counts of a PDB over the pods it matches."""

    def __init__(self, registry: Registry, catalogue: Catalogue, held: Held) -> None:
        self.registry = registry
        self.catalogue = catalogue
        self.held = held

    async def count(self, pdb: Obj, pods: list[Obj]) -> tuple[int, int, list[str]]:
        """kube's getExpectedPodCount: (expected, desired healthy, unmanaged pod names)."""
        spec = pdb.get("spec") or {}
        unmanaged: list[str] = []
        expected = desired = 0
        if spec.get("maxUnavailable") is not None:
            expected, unmanaged = await self.expected_scale(pods)
            desired = max(expected - scaled_value(spec["maxUnavailable"], expected), 0)
        elif spec.get("minAvailable") is not None:
            if isinstance(spec["minAvailable"], int):
                desired, expected = spec["minAvailable"], len(pods)
            else:
                expected, unmanaged = await self.expected_scale(pods)
                desired = scaled_value(spec["minAvailable"], expected)
        return expected, desired, unmanaged

    async def expected_scale(self, pods: list[Obj]) -> tuple[int, list[str]]:
        """kube's getExpectedScale: the sum of the scale of the pods' controllers."""
        scales: dict[str, int] = {}
        unmanaged: list[str] = []
        for pod in pods:
            ref = _controller_of(pod)
            if ref is None:
                unmanaged.append(pod["metadata"]["name"])
                continue
            if ref.get("uid") in scales:
                continue
            namespace = str(pod["metadata"].get("namespace") or "")
            found = await self.controller_scale(ref, namespace)
            if found is None:
                raise SyncError(f'found no controllers for pod "{pod["metadata"]["name"]}"')
            scales[found[0]] = found[1]
        return sum(scales.values()), unmanaged

    async def controller_scale(self, ref: Obj, namespace: str) -> tuple[str, int] | None:
        """The finders in kube's order: ReplicationController, Deployment (of a ReplicaSet),
        ReplicaSet (not a Deployment's), StatefulSet, then any kind's scale subresource."""
        name, uid = str(ref.get("name") or ""), ref.get("uid")
        apps = ("apps", "extensions")
        if _verify(ref, "ReplicationController", ("",)):
            return self._replicas(self.held(RCS, namespace, name), uid)
        if _verify(ref, "ReplicaSet", apps):
            rs = self.held(RSS, namespace, name)
            if rs is not None and rs["metadata"].get("uid") == uid:
                owner = _controller_of(rs)
                if owner is not None and _verify(owner, "Deployment", apps):
                    deployment = self.held(DEPLOYMENTS, namespace, str(owner.get("name")))
                    found = self._replicas(deployment, owner.get("uid"))
                    if found is not None:
                        return found
                if owner is None or owner.get("kind") != "Deployment":
                    return self._replicas(rs, uid)
        if _verify(ref, "StatefulSet", ("apps",)):
            found = self._replicas(self.held(STATEFULSETS, namespace, name), uid)
            if found is not None:
                return found
        return await self._scale(ref, namespace)

    @staticmethod
    def _replicas(obj: Obj | None, uid: Any) -> tuple[str, int] | None:
        if obj is None or obj["metadata"].get("uid") != uid:
            return None
        replicas = (obj.get("spec") or {}).get("replicas")
        return str(uid), int(1 if replicas is None else replicas)

    async def _scale(self, ref: Obj, namespace: str) -> tuple[str, int] | None:
        """kube's getScaleController, through the kind's ``/scale``."""
        api_version, kind = str(ref.get("apiVersion") or ""), str(ref.get("kind") or "")
        info = self.catalogue.lookup_api_version(api_version, kind)
        if info is None:
            raise SyncError(f'no matches for kind "{kind}" in version "{api_version}"')
        resource = f"{info.plural}.{info.group}" if info.group else info.plural
        storage = self.registry.storage(info, "scale") if "scale" in info.subresources else None
        if not isinstance(storage, Getter):
            raise SyncError(f"{resource} does not implement the scale subresource")
        try:
            scale = await storage.get(Context(namespace), str(ref.get("name")), GetOptions())
        except APIError as exc:
            if exc.code == 404:
                return None
            raise
        if scale["metadata"].get("uid") != ref.get("uid"):
            return None
        return str(ref.get("uid")), int((scale.get("spec") or {}).get("replicas") or 0)
