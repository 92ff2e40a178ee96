"""What a simulated kubelet writes for its Node: the Node it registers (pkg/kubelet/
kubelet_node_status.go ``initialNode``), and the status its setters compute
(pkg/kubelet/nodestatus/setters.go: ``MachineInfo``, ``NodeAddress``, ``DaemonEndpoints``,
``VersionInfo``, ``MemoryPressureCondition``, ``DiskPressureCondition``, ``PIDPressureCondition``,
``ReadyCondition``), with kube's reasons, messages and events.

Knobs, as annotations on the Node: ``kubelite.dev/simulate-condition.<Type>: "True"|"False"``
forces MemoryPressure, DiskPressure, PIDPressure or Ready (Ready False: ``KubeletNotReady`` with
the message of a node whose CNI is not up).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kubelite.api.catalogue import KUBERNETES_VERSION
from kubelite.api.encoding import quantity
from kubelite.api.simulation.config import SIMULATED_ANNOTATION

Obj = dict[str, Any]
CONDITION_ANNOTATION = "kubelite.dev/simulate-condition."
HEARTBEAT_ANNOTATION = "kubelite.dev/simulate-heartbeat"
KUBELET_PORT = 10250
KUBELET_VERSION = f"v{KUBERNETES_VERSION}.0"
CONTAINER_RUNTIME = "containerd://2.1.0"
OS_IMAGE = "Debian GNU/Linux 12 (bookworm)"
KERNEL_VERSION = "6.8.0-1021-azure"
#: the simulated nodes' InternalIPs are 172.18.0.<n> (kind's docker network), from .2
ADDRESS_PREFIX = "172.18.0."
FIRST_ADDRESS = 2
NOT_READY_MESSAGE = (
    "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady "
    "message:Network plugin returns error: cni plugin not initialized"
)


@dataclass(frozen=True, slots=True)
class _Kind:
    """One kubelet condition: its healthy status, and reason/message/event each way."""

    type: str
    healthy: str
    healthy_reason: str
    healthy_message: str
    healthy_event: str
    unhealthy_reason: str
    unhealthy_message: str
    unhealthy_event: str


#: the kubelet's conditions, in the order its setters append them
CONDITIONS = (
    _Kind("MemoryPressure", "False",
          "KubeletHasSufficientMemory", "kubelet has sufficient memory available",
          "NodeHasSufficientMemory",
          "KubeletHasInsufficientMemory", "kubelet has insufficient memory available",
          "NodeHasInsufficientMemory"),
    _Kind("DiskPressure", "False",
          "KubeletHasNoDiskPressure", "kubelet has no disk pressure", "NodeHasNoDiskPressure",
          "KubeletHasDiskPressure", "kubelet has disk pressure", "NodeHasDiskPressure"),
    _Kind("PIDPressure", "False",
          "KubeletHasSufficientPID", "kubelet has sufficient PID available",
          "NodeHasSufficientPID",
          "KubeletHasInsufficientPID", "kubelet has insufficient PID available",
          "NodeHasInsufficientPID"),
    _Kind("Ready", "True",
          "KubeletReady", "kubelet is posting ready status", "NodeReady",
          "KubeletNotReady", NOT_READY_MESSAGE, "NodeNotReady"),
)  # fmt: skip
CONDITION_TYPES = tuple(kind.type for kind in CONDITIONS)


def node_name(index: int) -> str:
    """The ``index``-th registered node's name (0: ``kubelite-worker``, 1: ``kubelite-worker2``)."""
    return "kubelite-worker" if index == 0 else f"kubelite-worker{index + 1}"


def node_labels(name: str) -> dict[str, str]:
    """The kubelet's default labels (sorted, as Go prints a map)."""
    return {
        "beta.kubernetes.io/arch": "amd64",
        "beta.kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
    }


def registered_node(name: str) -> Obj:
    """The Node a simulated kubelet POSTs (no status: its first report follows)."""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": node_labels(name),
            "annotations": {
                SIMULATED_ANNOTATION: "true",
                "node.alpha.kubernetes.io/ttl": "0",
                "volumes.kubernetes.io/controller-managed-attach-detach": "true",
            },
        },
        "spec": {"providerID": f"kubelite://{name}"},
    }


def reconcile_registered(node: Obj) -> bool:
    """What the kubelet fixes on a Node it finds registered already (``updateDefaultLabels``,
    the attach-detach annotation) and the simulation's mark; whether it changed."""
    meta = node["metadata"]
    wanted = registered_node(meta["name"])["metadata"]
    labels = meta.setdefault("labels", {})
    annotations = meta.setdefault("annotations", {})
    before = (dict(labels), dict(annotations))
    labels.update(wanted["labels"])
    for key in (SIMULATED_ANNOTATION, "volumes.kubernetes.io/controller-managed-attach-detach"):
        annotations[key] = wanted["annotations"][key]
    return before != (labels, annotations)


def _stable_id(name: str, uid: str, what: str) -> uuid.UUID:
    return uuid.uuid5(uuid.NAMESPACE_URL, f"kubelite://{name}/{uid}/{what}")


def node_info(name: str, uid: str) -> Obj:
    """``status.nodeInfo`` (in NodeSystemInfo's field order); the ids are stable per node."""
    return {
        "machineID": _stable_id(name, uid, "machine").hex,
        "systemUUID": str(_stable_id(name, uid, "system")),
        "bootID": str(_stable_id(name, uid, "boot")),
        "kernelVersion": KERNEL_VERSION,
        "osImage": OS_IMAGE,
        "containerRuntimeVersion": CONTAINER_RUNTIME,
        "kubeletVersion": KUBELET_VERSION,
        "kubeProxyVersion": "",
        "operatingSystem": "linux",
        "architecture": "amd64",
    }


def internal_ip(node: Obj) -> str | None:
    for address in (node.get("status") or {}).get("addresses") or []:
        if address.get("type") == "InternalIP":
            return str(address.get("address"))
    return None


def forced(node: Obj) -> dict[str, str]:
    """The conditions the node's annotations force, by type."""
    annotations = node["metadata"].get("annotations") or {}
    found = {}
    for kind in CONDITIONS:
        value = annotations.get(CONDITION_ANNOTATION + kind.type)
        if value in ("True", "False"):
            found[kind.type] = value
    return found


def heartbeat_stopped(node: Obj) -> bool:
    annotations = node["metadata"].get("annotations") or {}
    return annotations.get(HEARTBEAT_ANNOTATION) == "stopped"


def _resources(capacity: Mapping[str, str]) -> dict[str, str]:
    return {k: quantity.canonical(v) or v for k, v in capacity.items()}


def _extended(name: str) -> bool:
    """v1helper.IsExtendedResourceName: a domain-qualified name outside kubernetes.io."""
    return "/" in name and not name.split("/", 1)[0].endswith("kubernetes.io")


def set_status(node: Obj, capacity: Mapping[str, str], address: str, stamp: str) -> list[str]:
    """Run the kubelet's setters on ``node`` (in place) at time ``stamp``; the events they
    record (reasons), in order. Conditions other than the kubelet's keep their place."""
    meta = node["metadata"]
    status = node.setdefault("status", {})
    current_capacity = dict(status.get("capacity") or {})
    machine = _resources({**capacity, "hugepages-1Gi": "0", "hugepages-2Mi": "0"})
    new_capacity = {**current_capacity, **machine}
    allocatable = {
        k: v
        for k, v in (status.get("allocatable") or {}).items()
        if k in new_capacity or not _extended(k)
    }
    allocatable.update(new_capacity)
    status["capacity"] = dict(sorted(new_capacity.items()))
    status["allocatable"] = dict(sorted(allocatable.items()))
    events: list[str] = []
    conditions: list[Obj] = list(status.get("conditions") or [])
    wanted = forced(node)
    for kind in CONDITIONS:
        healthy = wanted.get(kind.type, kind.healthy) == kind.healthy
        target = kind.healthy if healthy else ("False" if kind.type == "Ready" else "True")
        reason = kind.healthy_reason if healthy else kind.unhealthy_reason
        message = kind.healthy_message if healthy else kind.unhealthy_message
        condition = next((c for c in conditions if c.get("type") == kind.type), None)
        if condition is None:
            condition = {"type": kind.type}
            conditions.append(condition)
        if condition.get("status") != target or condition.get("reason") != reason:
            if condition.get("status") != target:
                condition["lastTransitionTime"] = stamp
                events.append(kind.healthy_event if healthy else kind.unhealthy_event)
            condition["status"] = target
            condition["reason"] = reason
            condition["message"] = message
        condition["lastHeartbeatTime"] = stamp
        condition.setdefault("lastTransitionTime", stamp)
        ordered = {
            "type": kind.type,
            "status": condition["status"],
            "lastHeartbeatTime": condition["lastHeartbeatTime"],
            "lastTransitionTime": condition["lastTransitionTime"],
            "reason": condition["reason"],
            "message": condition["message"],
        }
        condition.clear()
        condition.update(ordered)
    status["conditions"] = conditions
    status["addresses"] = [
        {"type": "InternalIP", "address": address},
        {"type": "Hostname", "address": meta["name"]},
    ]
    status["daemonEndpoints"] = {"kubeletEndpoint": {"Port": KUBELET_PORT}}
    status["nodeInfo"] = node_info(meta["name"], str(meta.get("uid") or ""))
    return events


def changed(before: Obj, after: Obj) -> bool:
    """nodeStatusHasChanged: the status differs other than in the heartbeat times."""

    def stripped(status: Obj) -> Obj:
        status = dict(status)
        status["conditions"] = [
            {k: v for k, v in c.items() if k != "lastHeartbeatTime"}
            for c in status.get("conditions") or []
        ]
        for key in ("capacity", "allocatable"):
            status[key] = _resources(status.get(key) or {})
        return status

    return stripped(before.get("status") or {}) != stripped(after.get("status") or {})
