"""A v1 pod spec as kube's internal ``core.PodSpec`` Go value (pkg/apis/core/types.go), for
the diffs kube prints of it (:mod:`kubelite.api.kinds.validation.godiff`).

Source: kube-apiserver 1.37 ``pkg/apis/core/types.go`` (field order of ``PodSpec``,
``Container``, ``PodSecurityContext``, ``SecurityContext``, ``Toleration``, ``ContainerPort``,
``EnvVar``, ``ResourceRequirements``, ``VolumeMount``, ``Probe``, ``Volume``) and
``pkg/apis/core/v1/conversion.go`` (``Convert_v1_PodSpec_To_core_PodSpec``: the host namespace
fields move into an always-present ``SecurityContext``, ``serviceAccount`` is dropped; a
volume's source and a probe's handler are embedded structs). Types not listed here are built
from the JSON on both sides (fields in the order first seen, nested objects as pointers).
"""

from __future__ import annotations

import re
from typing import Any

from kubelite.api.kinds.validation.godiff import GoType, Ptr

Obj = dict[str, Any]

S, INT, B = GoType("string", "string"), GoType("int64", "int"), GoType("bool", "bool")
QUANTITY = GoType("resource.Quantity", "leaf")


def ptr(t: GoType) -> GoType:
    return GoType("*" + t.name, "ptr", t)


def slice_of(t: GoType) -> GoType:
    return GoType("[]" + t.name, "slice", t)


def generic(name: str) -> GoType:
    """A struct whose fields are taken from the JSON."""
    return GoType(name, "generic")


STRINGS = slice_of(S)
RESOURCES = GoType("core.ResourceList", "map", QUANTITY)
#: Go field name -> the JSON key it is read from (internal-shaped JSON), per struct type
_KEYS: dict[str, dict[str, str]] = {}


def struct(name: str, *fields: tuple[str, GoType]) -> GoType:
    """A known struct; a field's JSON key is its Go name with a lower-case first letter unless
    listed in ``_JSON_NAMES``."""
    _KEYS[name] = {go: _JSON_NAMES.get(go, go[0].lower() + go[1:]) for go, _ in fields}
    return GoType(name, "struct", None, tuple(fields))


_JSON_NAMES = {
    "HostPID": "hostPID",
    "HostIPC": "hostIPC",
    "SELinuxOptions": "seLinuxOptions",
    "SELinuxChangePolicy": "seLinuxChangePolicy",
    "FSGroup": "fsGroup",
    "FSGroupChangePolicy": "fsGroupChangePolicy",
    "DNSPolicy": "dnsPolicy",
    "DNSConfig": "dnsConfig",
    "OS": "os",
    "TTY": "tty",
    "HostIP": "hostIP",
    "SetHostnameAsFQDN": "setHostnameAsFQDN",
}

TOLERATION = struct(
    "core.Toleration",
    ("Key", S),
    ("Operator", S),
    ("Value", S),
    ("Effect", S),
    ("TolerationSeconds", ptr(INT)),
)
_REQUIREMENTS = struct(
    "core.ResourceRequirements",
    ("Limits", RESOURCES),
    ("Requests", RESOURCES),
    ("Claims", slice_of(generic("core.ResourceClaim"))),
)
_PORT = struct(
    "core.ContainerPort",
    ("Name", S),
    ("HostPort", INT),
    ("ContainerPort", INT),
    ("Protocol", S),
    ("HostIP", S),
)
_ENV = struct(
    "core.EnvVar", ("Name", S), ("Value", S), ("ValueFrom", ptr(generic("core.EnvVarSource")))
)
_MOUNT = struct(
    "core.VolumeMount",
    ("Name", S),
    ("ReadOnly", B),
    ("RecursiveReadOnly", ptr(S)),
    ("MountPath", S),
    ("SubPath", S),
    ("MountPropagation", ptr(S)),
    ("SubPathExpr", S),
)
_PROBE = ptr(
    struct(
        "core.Probe",
        ("ProbeHandler", generic("core.ProbeHandler")),
        ("InitialDelaySeconds", INT),
        ("TimeoutSeconds", INT),
        ("PeriodSeconds", INT),
        ("SuccessThreshold", INT),
        ("FailureThreshold", INT),
        ("TerminationGracePeriodSeconds", ptr(INT)),
    )
)
_CAPABILITIES = struct("core.Capabilities", ("Add", STRINGS), ("Drop", STRINGS))
_SECURITY = struct(
    "core.SecurityContext",
    ("Capabilities", ptr(_CAPABILITIES)),
    ("Privileged", ptr(B)),
    ("SELinuxOptions", ptr(generic("core.SELinuxOptions"))),
    ("WindowsOptions", ptr(generic("core.WindowsSecurityContextOptions"))),
    ("RunAsUser", ptr(INT)),
    ("RunAsGroup", ptr(INT)),
    ("RunAsNonRoot", ptr(B)),
    ("ReadOnlyRootFilesystem", ptr(B)),
    ("AllowPrivilegeEscalation", ptr(B)),
    ("ProcMount", ptr(S)),
    ("SeccompProfile", ptr(generic("core.SeccompProfile"))),
    ("AppArmorProfile", ptr(generic("core.AppArmorProfile"))),
)
CONTAINER = struct(
    "core.Container",
    ("Name", S),
    ("Image", S),
    ("Command", STRINGS),
    ("Args", STRINGS),
    ("WorkingDir", S),
    ("Ports", slice_of(_PORT)),
    ("EnvFrom", slice_of(generic("core.EnvFromSource"))),
    ("Env", slice_of(_ENV)),
    ("Resources", _REQUIREMENTS),
    ("ResizePolicy", slice_of(generic("core.ContainerResizePolicy"))),
    ("RestartPolicy", ptr(S)),
    ("RestartPolicyRules", slice_of(generic("core.ContainerRestartRule"))),
    ("VolumeMounts", slice_of(_MOUNT)),
    ("VolumeDevices", slice_of(generic("core.VolumeDevice"))),
    ("LivenessProbe", _PROBE),
    ("ReadinessProbe", _PROBE),
    ("StartupProbe", _PROBE),
    ("Lifecycle", ptr(generic("core.Lifecycle"))),
    ("TerminationMessagePath", S),
    ("TerminationMessagePolicy", S),
    ("ImagePullPolicy", S),
    ("SecurityContext", ptr(_SECURITY)),
    ("Stdin", B),
    ("StdinOnce", B),
    ("TTY", B),
)
#: EphemeralContainerCommon has Container's fields; the container embeds it
EPHEMERAL_CONTAINER = struct(
    "core.EphemeralContainer",
    ("EphemeralContainerCommon", struct("core.EphemeralContainerCommon", *CONTAINER.fields)),
    ("TargetContainerName", S),
)
_POD_SECURITY = struct(
    "core.PodSecurityContext",
    ("HostNetwork", B),
    ("HostPID", B),
    ("HostIPC", B),
    ("ShareProcessNamespace", ptr(B)),
    ("HostUsers", ptr(B)),
    ("SELinuxOptions", ptr(generic("core.SELinuxOptions"))),
    ("WindowsOptions", ptr(generic("core.WindowsSecurityContextOptions"))),
    ("RunAsUser", ptr(INT)),
    ("RunAsGroup", ptr(INT)),
    ("RunAsNonRoot", ptr(B)),
    ("SupplementalGroups", slice_of(INT)),
    ("SupplementalGroupsPolicy", ptr(S)),
    ("FSGroup", ptr(INT)),
    ("FSGroupChangePolicy", ptr(S)),
    ("Sysctls", slice_of(generic("core.Sysctl"))),
    ("SeccompProfile", ptr(generic("core.SeccompProfile"))),
    ("AppArmorProfile", ptr(generic("core.AppArmorProfile"))),
    ("SELinuxChangePolicy", ptr(S)),
)
_VOLUME = struct("core.Volume", ("Name", S), ("VolumeSource", generic("core.VolumeSource")))
POD_SPEC = struct(
    "core.PodSpec",
    ("Volumes", slice_of(_VOLUME)),
    ("InitContainers", slice_of(CONTAINER)),
    ("Containers", slice_of(CONTAINER)),
    ("EphemeralContainers", slice_of(EPHEMERAL_CONTAINER)),
    ("RestartPolicy", S),
    ("TerminationGracePeriodSeconds", ptr(INT)),
    ("ActiveDeadlineSeconds", ptr(INT)),
    ("DNSPolicy", S),
    ("NodeSelector", GoType("map[string]string", "map", S)),
    ("ServiceAccountName", S),
    ("AutomountServiceAccountToken", ptr(B)),
    ("NodeName", S),
    ("SecurityContext", ptr(_POD_SECURITY)),
    ("ImagePullSecrets", slice_of(generic("core.LocalObjectReference"))),
    ("Hostname", S),
    ("Subdomain", S),
    ("SetHostnameAsFQDN", ptr(B)),
    ("Affinity", ptr(generic("core.Affinity"))),
    ("SchedulerName", S),
    ("Tolerations", slice_of(TOLERATION)),
    ("HostAliases", slice_of(generic("core.HostAlias"))),
    ("PriorityClassName", S),
    ("Priority", ptr(INT)),
    ("PreemptionPolicy", ptr(S)),
    ("DNSConfig", ptr(generic("core.PodDNSConfig"))),
    ("ReadinessGates", slice_of(generic("core.PodReadinessGate"))),
    ("RuntimeClassName", ptr(S)),
    ("Overhead", RESOURCES),
    ("EnableServiceLinks", ptr(B)),
    ("TopologySpreadConstraints", slice_of(generic("core.TopologySpreadConstraint"))),
    ("OS", ptr(generic("core.PodOS"))),
    ("SchedulingGates", slice_of(generic("core.PodSchedulingGate"))),
    ("ResourceClaims", slice_of(generic("core.PodResourceClaim"))),
    ("Resources", ptr(_REQUIREMENTS)),
    ("HostnameOverride", ptr(S)),
    ("WorkloadRef", ptr(generic("core.WorkloadReference"))),
)

# -- v1 JSON to the internal shape ---------------------------------------------------------------

_HOST_FIELDS = ("hostNetwork", "hostPID", "hostIPC", "shareProcessNamespace", "hostUsers")
_HANDLERS = ("exec", "httpGet", "tcpSocket", "grpc")


def internal_container(ctr: Any) -> Any:
    """A container (or an ephemeral container's common part) in the internal shape: a probe's
    handler is an embedded struct."""
    if not isinstance(ctr, dict):
        return ctr
    out = dict(ctr)
    for key in ("livenessProbe", "readinessProbe", "startupProbe"):
        probe = out.get(key)
        if isinstance(probe, dict):
            handler = {k: probe[k] for k in _HANDLERS if k in probe}
            rest = {k: v for k, v in probe.items() if k not in _HANDLERS}
            out[key] = {"probeHandler": handler, **rest}
    return out


def internal_ephemeral(ctr: Any) -> Any:
    """An ephemeral container in the internal shape: its common fields embedded."""
    if not isinstance(ctr, dict):
        return ctr
    common = {k: v for k, v in ctr.items() if k != "targetContainerName"}
    return {
        "ephemeralContainerCommon": internal_container(common),
        "targetContainerName": ctr.get("targetContainerName", ""),
    }


def internal_spec(spec: Obj) -> Obj:
    """Convert_v1_PodSpec_To_core_PodSpec, as JSON in the internal shape."""
    out = {k: v for k, v in spec.items() if k not in _HOST_FIELDS and k != "serviceAccount"}
    security = (
        dict(spec["securityContext"]) if isinstance(spec.get("securityContext"), dict) else {}
    )
    security.update({k: spec[k] for k in _HOST_FIELDS if k in spec})
    out["securityContext"] = security
    for key in ("containers", "initContainers"):
        if isinstance(out.get(key), list):
            out[key] = [internal_container(c) for c in out[key]]
    if isinstance(out.get("ephemeralContainers"), list):
        out["ephemeralContainers"] = [internal_ephemeral(c) for c in out["ephemeralContainers"]]
    if isinstance(out.get("volumes"), list):
        out["volumes"] = [
            {"name": v.get("name"), "volumeSource": {k: x for k, x in v.items() if k != "name"}}
            if isinstance(v, dict)
            else v
            for v in out["volumes"]
        ]
    return out


# -- Go values ---------------------------------------------------------------------------------

_ACRONYMS = {"http", "tcp", "grpc", "fs", "uid", "url", "dns", "ip", "id", "iscsi", "nfs", "rbd"}


def _go_name(key: str) -> str:
    word = re.match("[a-z]*", key)
    head = word.group(0) if word else ""
    if head in _ACRONYMS:
        return head.upper() + key[len(head) :]
    return key[:1].upper() + key[1:]


def _infer(name: str, samples: list[Any]) -> GoType:
    """A type for JSON values of an unlisted Go type (objects in lists are values, nested
    objects pointers)."""
    objects = [s for s in samples if isinstance(s, dict)]
    if objects:
        keys = list(dict.fromkeys(k for o in objects for k in o))
        fields = tuple((_go_name(k), _infer_field(k, [o.get(k) for o in objects])) for k in keys)
        _KEYS.setdefault(name, {}).update({_go_name(k): k for k in keys})
        return GoType(name, "struct", None, fields)
    return GoType(name, "struct")


def _infer_field(key: str, samples: list[Any]) -> GoType:
    present = [s for s in samples if s is not None]
    if any(isinstance(s, dict) for s in present):
        return ptr(_infer("core." + _go_name(key), present))
    if any(isinstance(s, list) for s in present):
        items = [e for s in present if isinstance(s, list) for e in s]
        if any(isinstance(e, dict) for e in items):
            return slice_of(_infer("core." + _go_name(key), items))
        return slice_of(_scalar(items))
    return _scalar(present)


def _scalar(samples: list[Any]) -> GoType:
    if any(isinstance(s, bool) for s in samples):
        return B
    if any(isinstance(s, int) for s in samples):
        return INT
    if any(isinstance(s, float) for s in samples):
        return QUANTITY
    return S


def resolve(t: GoType, samples: list[Any]) -> GoType:
    """``t`` with its generic parts typed from the JSON ``samples`` of both sides."""
    if t.kind == "generic":
        return _infer(t.name, samples)
    if t.kind == "struct":
        keys = _KEYS.get(t.name, {})
        objects = [s for s in samples if isinstance(s, dict)]
        fields = tuple(
            (go, resolve(ft, [o.get(keys.get(go, go)) for o in objects])) for go, ft in t.fields
        )
        return GoType(t.name, "struct", None, fields)
    if t.elem is None:
        return t
    if t.kind == "slice":
        items = [e for s in samples if isinstance(s, list) for e in s]
        return GoType(t.name, t.kind, resolve(t.elem, items))
    if t.kind == "map":
        values = [v for s in samples if isinstance(s, dict) for v in s.values()]
        return GoType(t.name, t.kind, resolve(t.elem, values))
    return GoType(t.name, t.kind, resolve(t.elem, samples))


def value(t: GoType, v: Any) -> Any:
    """The Go value of JSON ``v`` as type ``t`` (absent is Go's zero value)."""
    if t.kind == "struct":
        obj = v if isinstance(v, dict) else {}
        keys = _KEYS.get(t.name, {})
        return {go: value(ft, obj.get(keys.get(go, go))) for go, ft in t.fields}
    if t.kind == "ptr":
        assert t.elem is not None
        return None if v is None else Ptr(value(t.elem, v))
    if t.kind == "slice":
        assert t.elem is not None
        return [value(t.elem, e) for e in v] if isinstance(v, list) else None
    if t.kind == "map":
        assert t.elem is not None
        return {str(k): value(t.elem, x) for k, x in v.items()} if isinstance(v, dict) else None
    if t.kind == "bool":
        return v is True
    if t.kind == "int":
        return v if isinstance(v, int) and not isinstance(v, bool) else 0
    return v if isinstance(v, str) else ("" if v is None else str(v))


__all__ = ["POD_SPEC", "TOLERATION", "internal_spec", "resolve", "value"]
