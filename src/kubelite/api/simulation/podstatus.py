"""A pod's status as the kubelet writes it, computed from its simulated runtime
(:mod:`kubelite.api.simulation.runtime`) and the status stored before (kube's
``generateAPIPodStatus``, ``getPhase`` and ``convertToAPIContainerStatuses`` in
pkg/kubelet/kubelet_pods.go; the conditions of pkg/kubelet/status/generate.go; the status
manager's lastTransitionTime rule in pkg/kubelet/status/status_manager.go).

- fields in Go's order (PodStatus, ContainerStatus, PodCondition); ``lastProbeTime: null``;
- conditions: those the kubelet does not own first (readiness gates', DisruptionTarget), then
  PodReadyToStartContainers, Initialized, Ready, ContainersReady, PodScheduled, each with the
  pod's generation as ``observedGeneration`` and a ``lastTransitionTime`` that moves only when
  the condition's status does;
- container statuses sorted by name, init container statuses in spec order;
- the phase: Pending while an init container or a container has not started, Running once all
  started and one runs (or restarts), Succeeded/Failed once all ended for good (or the pod was
  stopped for its deletion); a terminal phase is never left.
"""

from __future__ import annotations

from typing import Any

from kubelite.api.simulation.runtime import Container, PodRuntime, stamp

Obj = dict[str, Any]

#: the conditions the kubelet owns (kubetypes.PodConditionByKubelet)
KUBELET_CONDITIONS = frozenset(
    {"PodScheduled", "Ready", "Initialized", "ContainersReady", "PodReadyToStartContainers"}
)
TERMINAL = ("Succeeded", "Failed")


def _names(names: list[str]) -> str:
    return f"[{' '.join(names)}]"  # Go's %s of a []string


def container_status(rt: PodRuntime, c: Container, now: float) -> Obj:
    """One ContainerStatus in Go's field order."""
    if c.state == "running":
        state: Obj = {"running": {"startedAt": stamp(c.started_at)}}
    elif c.state == "terminated":
        state = {"terminated": c.terminated()}
    elif rt.stopped:  # never started, and the pod is done: the status manager's TerminatePod
        state = {
            "terminated": {
                "exitCode": 137,
                "reason": "ContainerStatusUnknown",
                "message": "The container could not be located when the pod was terminated",
                "startedAt": None,
                "finishedAt": None,
            }
        }
    else:
        waiting: Obj = {"reason": c.reason}
        if c.message:
            waiting["message"] = c.message
        state = {"waiting": waiting}
    status: Obj = {
        "name": c.name,
        "state": state,
        "lastState": {"terminated": c.last} if c.last else {},
        "ready": c.ready(now) and not rt.terminal,
        "restartCount": c.restart_count,
        "image": rt.image(c),
        "imageID": rt.image_id(c),
    }
    if c.container_id and c.state != "waiting":
        status["containerID"] = c.container_id
    elif c.last:
        status["containerID"] = c.last.get("containerID", "")
    status["started"] = c.state == "running"
    return status


def phase(rt: PodRuntime, pod_is_terminal: bool) -> str:
    """kube's getPhase (without the ContainerRestartRules gate)."""
    pending_init = failed_init = 0
    for c in rt.init:
        if c.kind == "sidecar":
            continue
        if c.state == "terminated":
            if c.exit_code != 0:
                failed_init += 1
        elif c.state == "waiting" and c.last and c.last.get("exitCode", 0) != 0:
            failed_init += 1
        else:
            pending_init += 1
    running = waiting = stopped = succeeded = pending_sidecars = 0
    for c in rt.init:
        if c.kind != "sidecar":
            continue
        if c.state == "running":
            running += 1
        elif c.state == "waiting" and not c.last:
            pending_sidecars += 1
            waiting += 1
    for c in rt.regular:
        if c.state == "running":
            running += 1
        elif c.state == "terminated":
            stopped += 1
            succeeded += c.exit_code == 0
        elif c.last:
            stopped += 1
        else:
            waiting += 1
    started = any(c.runs for c in rt.regular)
    if failed_init and rt.policy == "Never":
        return "Failed"
    if pending_init or (pending_sidecars and not started) or waiting:
        # a pod stopped before its containers all ran: TerminatePod marks it Failed
        return "Failed" if pod_is_terminal and not running else "Pending"
    if running:
        return "Running"
    if stopped:
        if pod_is_terminal:
            return "Succeeded" if stopped == succeeded else "Failed"
        if rt.policy == "Always":
            return "Running"
        if stopped == succeeded:
            return "Succeeded"
        return "Failed" if rt.policy == "Never" else "Running"
    return "Pending"


def _condition(
    kind: str, status: bool, generation: int, reason: str = "", message: str = ""
) -> Obj:
    found: Obj = {"type": kind}
    if generation:
        found["observedGeneration"] = generation
    found["status"] = "True" if status else "False"
    found["lastProbeTime"] = None
    found["lastTransitionTime"] = None
    if reason:
        found["reason"] = reason
    if message:
        found["message"] = message
    return found


def conditions(pod: Obj, rt: PodRuntime, now: float, current_phase: str) -> list[Obj]:
    """The kubelet's conditions (lastTransitionTime still unset), after the ones it keeps."""
    generation = int((pod.get("metadata") or {}).get("generation") or 0)
    old = (pod.get("status") or {}).get("conditions") or []
    kept = [c for c in old if c.get("type") not in KUBELET_CONDITIONS]
    terminal = current_phase in TERMINAL
    found = [_condition("PodReadyToStartContainers", rt.sandbox_ready and not terminal, generation)]
    # Initialized
    regular_started = any(c.runs for c in rt.regular)
    incomplete = [
        c.name
        for c in rt.init
        if not (
            c.state == "running"
            if c.kind == "sidecar"
            else c.state == "terminated" and c.exit_code == 0
        )
    ]
    if current_phase == "Succeeded":
        found.append(_condition("Initialized", True, generation, "PodCompleted"))
    elif regular_started or not incomplete:
        found.append(_condition("Initialized", True, generation))
    else:
        found.append(
            _condition(
                "Initialized",
                False,
                generation,
                "ContainersNotInitialized",
                f"containers with incomplete status: {_names(incomplete)}",
            )
        )
    # ContainersReady, and Ready from it
    unready = [c.name for c in rt.init if c.kind == "sidecar" and not c.ready(now)]
    unready += [c.name for c in rt.regular if not c.ready(now)]
    reason, message, ready = "", "", True
    if terminal:
        reason = "PodCompleted" if current_phase == "Succeeded" else "PodFailed"
        ready = False
    elif unready:
        reason, ready = "ContainersNotReady", False
        message = f"containers with unready status: {_names(unready)}"
    pod_ready = _condition("Ready", ready, generation, reason, message)
    if ready:
        gates = [
            g.get("conditionType") for g in (pod.get("spec") or {}).get("readinessGates") or []
        ]
        messages = []
        for gate in gates:
            match = next((c for c in kept if c.get("type") == gate), None)
            if match is None:
                messages.append(
                    f'corresponding condition of pod readiness gate "{gate}" does not exist.'
                )
            elif match.get("status") != "True":
                messages.append(f'the status of pod readiness gate "{gate}" is not "True", but '
                                f'{match.get("status")}')  # fmt: skip
        if messages:
            pod_ready = _condition("Ready", False, generation, "ReadinessGatesNotReady",
                                   ", ".join(messages))  # fmt: skip
    found.append(pod_ready)
    found.append(_condition("ContainersReady", ready, generation, reason, message))
    found.append(_condition("PodScheduled", True, generation))
    return kept + found


def with_transition_times(new: list[Obj], old: list[Obj], now: float) -> list[Obj]:
    """Each condition's lastTransitionTime: the stored one while its status is unchanged."""
    before = {c.get("type"): c for c in old}
    for condition in new:
        if condition.get("lastTransitionTime", "") is not None:
            continue  # a kept condition: as its writer set it
        prior = before.get(condition["type"])
        if (
            prior is not None
            and prior.get("status") == condition["status"]
            and prior.get("lastTransitionTime")
        ):
            condition["lastTransitionTime"] = prior["lastTransitionTime"]
        else:
            condition["lastTransitionTime"] = stamp(now)
    return new


def pod_status(pod: Obj, rt: PodRuntime, host_ip: str, now: float) -> Obj:
    """The whole status the kubelet writes for ``pod`` at ``now``."""
    old: Obj = pod.get("status") or {}
    current = phase(rt, rt.stopped)
    if old.get("phase") in TERMINAL:
        current = old["phase"]  # pods do not leave a terminal phase
    status: Obj = {}
    generation = int((pod.get("metadata") or {}).get("generation") or 0)
    if generation:
        status["observedGeneration"] = generation
    status["phase"] = current
    status["conditions"] = with_transition_times(
        conditions(pod, rt, now, current), old.get("conditions") or [], now
    )
    for key in ("message", "reason", "nominatedNodeName"):
        if old.get(key):
            status[key] = old[key]
    status["hostIP"] = host_ip
    status["hostIPs"] = [{"ip": host_ip}]
    ip = host_ip if rt.host_network else rt.ip
    if rt.sandbox_ready and ip:
        status["podIP"] = ip
        status["podIPs"] = [{"ip": ip}]
    status["startTime"] = old.get("startTime") or stamp(rt.seen_at)
    if rt.init:
        status["initContainerStatuses"] = [container_status(rt, c, now) for c in rt.init]
    statuses = [container_status(rt, c, now) for c in rt.regular]
    status["containerStatuses"] = sorted(statuses, key=lambda s: str(s["name"]))
    if old.get("qosClass"):
        status["qosClass"] = old["qosClass"]
    for key in ("ephemeralContainerStatuses", "resize", "resourceClaimStatuses"):
        if key in old:
            status[key] = old[key]
    return status
