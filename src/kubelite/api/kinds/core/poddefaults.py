"""Defaults: Pods and pod templates (core/v1 SetDefaults_Pod, SetDefaults_PodSpec,
SetDefaults_Container...), and the workloads' templates through them.

Sources (kube 1.37): pkg/apis/core/v1/defaults.go and zz_generated.defaults.go (which function
applies to which nested field, and the ``+default=`` markers: container port protocol ``TCP``,
GRPC probe service ``""``, RBD pool/user/keyring, iSCSI interface); the admission plugins that
fill a new Pod on every cluster: DefaultTolerationSeconds (not-ready and unreachable, 300s),
ServiceAccount (``serviceAccountName: default``) and Priority (``priority: 0``,
``preemptionPolicy: PreemptLowerPriority`` without a class); the v1 conversion that mirrors
``serviceAccountName`` into the deprecated ``serviceAccount``.

Every helper tolerates wrong JSON types (decoding refuses them elsewhere): what is not the shape
kube expects is left as it is.
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

from kubelite.api.encoding.quantity import MILLI, parse_or_none
from kubelite.api.kinds.rules import Obj

DEFAULT_TERMINATION_GRACE_PERIOD = 30
DEFAULT_SCHEDULER = "default-scheduler"
TERMINATION_MESSAGE_PATH = "/dev/termination-log"
DEFAULT_MODE = 0o644  # secret, configMap, downwardAPI, projected volumes: 420
DEFAULT_TOLERATION_SECONDS = 300
NOT_READY, UNREACHABLE = "node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"


# -- shape helpers ---------------------------------------------------------------------------------


def sub(parent: Any, key: str) -> Obj | None:
    """``parent[key]`` when both are objects, else None."""
    if isinstance(parent, dict):
        value = parent.get(key)
        if isinstance(value, dict):
            return value
    return None


def ensure(parent: Any, key: str) -> Obj | None:
    """``parent[key]``, created empty when absent or null; None when it is not an object."""
    if not isinstance(parent, dict):
        return None
    value = parent.get(key)
    if value is None:
        value = parent[key] = {}
    return value if isinstance(value, dict) else None


def items(parent: Any, key: str) -> list[Obj]:
    """The objects of the list ``parent[key]`` (nothing when it is not a list)."""
    if not isinstance(parent, dict):
        return []
    value = parent.get(key)
    if not isinstance(value, list):
        return []
    return [item for item in value if isinstance(item, dict)]


def set_if_empty(obj: Obj, key: str, value: Any) -> None:
    """Go's ``if obj.Field == "" { ... }`` (a string field; absent, null or empty)."""
    if obj.get(key) in (None, ""):
        obj[key] = value


def set_if_nil(obj: Obj, key: str, value: Any) -> None:
    """Go's ``if obj.Field == nil { ... }`` (a pointer field; absent or null)."""
    if obj.get(key) is None:
        obj[key] = value


def set_if_zero(obj: Obj, key: str, value: Any) -> None:
    """Go's ``if obj.Field == 0 { ... }`` (an integer field; absent, null or 0)."""
    if obj.get(key) in (None, 0) and obj.get(key) is not False:
        obj[key] = value


# -- image references ------------------------------------------------------------------------------

_DOMAIN_COMPONENT = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_DOMAIN = rf"(?:{_DOMAIN_COMPONENT}(?:\.{_DOMAIN_COMPONENT})*|\[[a-fA-F0-9:]+\])(?::[0-9]+)?"
_PATH_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*"
_NAME = rf"(?:{_DOMAIN}/)?{_PATH_COMPONENT}(?:/{_PATH_COMPONENT})*"
_TAG = r"[\w][\w.-]{0,127}"
_DIGEST = r"[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}"
_REFERENCE = re.compile(rf"({_NAME})(?::({_TAG}))?(?:@({_DIGEST}))?")
_HEX64 = re.compile(r"[a-f0-9]{64}")


def image_tag(image: Any) -> str:
    """The tag kubelet's parsers.ParseImageName finds: the image's tag, ``latest`` when it has
    neither tag nor digest, "" when it has only a digest or does not parse."""
    if not isinstance(image, str):
        return ""
    found = _REFERENCE.fullmatch(image)
    if found is None or len(found.group(1)) > 255 or _HEX64.fullmatch(found.group(1)):
        return ""
    tag, digest = found.group(2) or "", found.group(3) or ""
    return "latest" if not tag and not digest else tag


def pull_policy(image: Any) -> str:
    return "Always" if image_tag(image) == "latest" else "IfNotPresent"


# -- containers ------------------------------------------------------------------------------------


def default_http_get(action: Obj | None) -> None:
    """SetDefaults_HTTPGetAction."""
    if action is not None:
        set_if_empty(action, "path", "/")
        set_if_empty(action, "scheme", "HTTP")


def default_probe(probe: Obj | None) -> None:
    """SetDefaults_Probe, its HTTPGet action, and the GRPC action's ``service`` (+default="")."""
    if probe is None:
        return
    set_if_zero(probe, "timeoutSeconds", 1)
    set_if_zero(probe, "periodSeconds", 10)
    set_if_zero(probe, "successThreshold", 1)
    set_if_zero(probe, "failureThreshold", 3)
    default_http_get(sub(probe, "httpGet"))
    grpc = sub(probe, "grpc")
    if grpc is not None:
        set_if_nil(grpc, "service", "")


def default_field_ref(ref: Obj | None) -> None:
    """SetDefaults_ObjectFieldSelector."""
    if ref is not None:
        set_if_empty(ref, "apiVersion", "v1")


def default_container(container: Obj) -> None:
    """SetDefaults_Container (ephemeral containers too) and what the generated defaulter applies
    to its ports, env, probes and lifecycle handlers."""
    if container.get("imagePullPolicy") in (None, ""):
        container["imagePullPolicy"] = pull_policy(container.get("image"))
    set_if_empty(container, "terminationMessagePath", TERMINATION_MESSAGE_PATH)
    set_if_empty(container, "terminationMessagePolicy", "File")
    for port in items(container, "ports"):
        set_if_empty(port, "protocol", "TCP")
    for env in items(container, "env"):
        default_field_ref(sub(sub(env, "valueFrom"), "fieldRef"))
    default_requirements(sub(container, "resources"))
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        default_probe(sub(container, probe))
    lifecycle = sub(container, "lifecycle")
    for hook in ("postStart", "preStop"):
        default_http_get(sub(sub(lifecycle, hook), "httpGet"))


def default_resource_list(resources: Obj | None) -> None:
    """SetDefaults_ResourceList: every quantity rounded up to milli scale (``0.1m`` -> ``1m``,
    ``1.0001`` -> ``1001m``); kube rounds "to maintain API compatibility" (#18538)."""
    if resources is None:
        return
    for name, raw in resources.items():
        found = parse_or_none(raw)
        if found is not None:
            rounded, _ = found.round_up(MILLI)
            if rounded is not found:
                resources[name] = str(rounded)


def default_requirements(requirements: Obj | None) -> None:
    """A ResourceRequirements' ``limits`` and ``requests`` (SetDefaults_ResourceList each)."""
    default_resource_list(sub(requirements, "limits"))
    default_resource_list(sub(requirements, "requests"))


# -- volumes ---------------------------------------------------------------------------------------


def default_claim_spec(spec: Obj | None) -> None:
    """SetDefaults_PersistentVolumeClaimSpec, and the generated SetDefaults_ResourceList of
    its ``resources``."""
    if spec is not None:
        set_if_nil(spec, "volumeMode", "Filesystem")
        default_requirements(sub(spec, "resources"))


def default_rbd(rbd: Obj | None) -> None:
    if rbd is not None:
        set_if_empty(rbd, "pool", "rbd")
        set_if_empty(rbd, "user", "admin")
        set_if_empty(rbd, "keyring", "/etc/ceph/keyring")


def default_iscsi(iscsi: Obj | None) -> None:
    if iscsi is not None:
        set_if_empty(iscsi, "iscsiInterface", "default")


def default_azure_disk(disk: Obj | None) -> None:
    if disk is not None:
        set_if_nil(disk, "cachingMode", "ReadWrite")
        set_if_nil(disk, "kind", "Shared")
        set_if_nil(disk, "fsType", "ext4")
        set_if_nil(disk, "readOnly", False)


def default_scale_io(scale_io: Obj | None) -> None:
    if scale_io is not None:
        set_if_empty(scale_io, "storageMode", "ThinProvisioned")
        set_if_empty(scale_io, "fsType", "xfs")


def default_host_path(host_path: Obj | None) -> None:
    if host_path is not None:
        set_if_nil(host_path, "type", "")


def default_volume(volume: Obj) -> None:
    """SetDefaults_Volume (no source: an emptyDir; an image volume's pull policy by tag) and the
    defaults of each source."""
    if all(value is None for key, value in volume.items() if key != "name"):
        volume["emptyDir"] = {}
    image = sub(volume, "image")
    if image is not None and image.get("pullPolicy") in (None, ""):
        image["pullPolicy"] = pull_policy(image.get("reference"))
    default_host_path(sub(volume, "hostPath"))
    for key in ("secret", "configMap"):
        found = sub(volume, key)
        if found is not None:
            set_if_nil(found, "defaultMode", DEFAULT_MODE)
    default_iscsi(sub(volume, "iscsi"))
    default_rbd(sub(volume, "rbd"))
    downward = sub(volume, "downwardAPI")
    if downward is not None:
        set_if_nil(downward, "defaultMode", DEFAULT_MODE)
        for item in items(downward, "items"):
            default_field_ref(sub(item, "fieldRef"))
    default_azure_disk(sub(volume, "azureDisk"))
    projected = sub(volume, "projected")
    if projected is not None:
        set_if_nil(projected, "defaultMode", DEFAULT_MODE)
        for source in items(projected, "sources"):
            for item in items(sub(source, "downwardAPI"), "items"):
                default_field_ref(sub(item, "fieldRef"))
            token = sub(source, "serviceAccountToken")
            if token is not None:
                set_if_nil(token, "expirationSeconds", 3600)
    default_scale_io(sub(volume, "scaleIO"))
    claim = sub(sub(volume, "ephemeral"), "volumeClaimTemplate")
    default_claim_spec(sub(claim, "spec"))


# -- pod specs -------------------------------------------------------------------------------------


def default_pod_spec(spec: Obj | None) -> None:
    """What every PodSpec gets, in a Pod or in a template: SetDefaults_PodSpec, its volumes and
    containers, and the v1 conversion of the service account's two names."""
    if spec is None:
        return
    set_if_empty(spec, "dnsPolicy", "ClusterFirst")
    set_if_empty(spec, "restartPolicy", "Always")
    set_if_nil(spec, "securityContext", {})
    set_if_nil(spec, "terminationGracePeriodSeconds", DEFAULT_TERMINATION_GRACE_PERIOD)
    set_if_empty(spec, "schedulerName", DEFAULT_SCHEDULER)
    for volume in items(spec, "volumes"):
        default_volume(volume)
    for key in ("initContainers", "containers", "ephemeralContainers"):
        for container in items(spec, key):
            default_container(container)
    default_resource_list(sub(spec, "overhead"))
    default_requirements(sub(spec, "resources"))  # pod-level resources
    # Convert_v1_PodSpec_To_core_PodSpec / Convert_core_PodSpec_To_v1_PodSpec
    account = spec.get("serviceAccountName")
    if account in (None, "") and isinstance(spec.get("serviceAccount"), str):
        spec["serviceAccountName"] = account = spec["serviceAccount"]
    if isinstance(account, str) and account:
        spec["serviceAccount"] = account


def default_template(template: Obj | None) -> None:
    """A PodTemplateSpec (a workload's ``spec.template``)."""
    default_pod_spec(sub(template, "spec"))


def _requests_from_limits(container: Obj) -> None:
    resources = sub(container, "resources")
    limits = sub(resources, "limits")
    if resources is None or limits is None:
        return
    requests = ensure(resources, "requests")
    if requests is None:
        return
    for name, value in limits.items():
        requests.setdefault(name, value)


def default_pod(pod: Obj) -> None:
    """SetObjectDefaults_Pod, then what the admission plugins every cluster runs add."""
    spec = ensure(pod, "spec")
    if spec is None:
        return
    # SetDefaults_Pod
    for key in ("containers", "initContainers"):
        for container in items(spec, key):
            _requests_from_limits(container)
    set_if_nil(spec, "enableServiceLinks", True)
    if spec.get("hostNetwork") is True:
        for key in ("containers", "initContainers"):
            for container in items(spec, key):
                for port in items(container, "ports"):
                    if port.get("hostPort") in (None, 0):
                        port["hostPort"] = port.get("containerPort")
    default_pod_spec(spec)
    status = sub(pod, "status")
    for key in ("initContainerStatuses", "containerStatuses", "ephemeralContainerStatuses"):
        for container_status in items(status, key):
            default_resource_list(sub(container_status, "allocatedResources"))
            default_requirements(sub(container_status, "resources"))
    # ServiceAccount admission: the namespace's default account
    if spec.get("serviceAccountName") in (None, ""):
        spec["serviceAccountName"] = spec["serviceAccount"] = "default"
    _default_tolerations(spec)


def _default_tolerations(spec: Obj) -> None:
    """The DefaultTolerationSeconds admission plugin."""
    tolerations = spec.get("tolerations")
    if tolerations is None:
        tolerations = []
    if not isinstance(tolerations, list):
        return
    not_ready = unreachable = False
    for toleration in tolerations:
        if not isinstance(toleration, dict):
            continue
        key, effect = toleration.get("key") or "", toleration.get("effect") or ""
        if effect in ("", "NoExecute"):
            not_ready = not_ready or key in ("", NOT_READY)
            unreachable = unreachable or key in ("", UNREACHABLE)
    added = [
        {
            "key": key,
            "operator": "Exists",
            "effect": "NoExecute",
            "tolerationSeconds": DEFAULT_TOLERATION_SECONDS,
        }
        for key, tolerated in ((NOT_READY, not_ready), (UNREACHABLE, unreachable))
        if not tolerated
    ]
    if added:
        spec["tolerations"] = [*tolerations, *added]


def default_pod_template(obj: Obj) -> None:
    """SetObjectDefaults_PodTemplate (the PodTemplate kind)."""
    default_template(sub(obj, "template"))


# -- QoS class -------------------------------------------------------------------------------------


def quantity(value: Any) -> Decimal | None:
    """A resource quantity's value (None when it is not one)."""
    found = parse_or_none(value)
    return None if found is None else found.value


_QOS_RESOURCES = ("cpu", "memory")


def pod_qos(pod: Obj) -> str:
    """kube's qos.GetPodQOS (ComputePodQOS): BestEffort, Burstable or Guaranteed, from the
    pod-level resources when set (PodLevelResources), else from the (init) containers'."""
    spec = sub(pod, "spec") or {}
    requests: dict[str, Decimal] = {}
    limits: dict[str, Decimal] = {}
    guaranteed = True
    pod_resources = sub(spec, "resources")
    if pod_resources is not None and (
        sub(pod_resources, "requests") or sub(pod_resources, "limits")
    ):
        for source, into in (("requests", requests), ("limits", limits)):
            for name, raw in (sub(pod_resources, source) or {}).items():
                value = quantity(raw)
                if name in _QOS_RESOURCES and value is not None and value > 0:
                    into[name] = value
        if len(limits) != len(_QOS_RESOURCES):
            guaranteed = False
    else:
        for container in [*items(spec, "initContainers"), *items(spec, "containers")]:
            resources = sub(container, "resources") or {}
            for name, raw in (sub(resources, "requests") or {}).items():
                value = quantity(raw)
                if name in _QOS_RESOURCES and value is not None and value > 0:
                    requests[name] = requests.get(name, Decimal(0)) + value
            found = set()
            for name, raw in (sub(resources, "limits") or {}).items():
                value = quantity(raw)
                if name in _QOS_RESOURCES and value is not None and value > 0:
                    found.add(name)
                    limits[name] = limits.get(name, Decimal(0)) + value
            if not found.issuperset(_QOS_RESOURCES):
                guaranteed = False
    if not requests and not limits:
        return "BestEffort"
    if guaranteed:
        for name, request in requests.items():
            if limits.get(name) != request:
                guaranteed = False
                break
    if guaranteed and len(requests) == len(limits):
        return "Guaranteed"
    return "Burstable"
