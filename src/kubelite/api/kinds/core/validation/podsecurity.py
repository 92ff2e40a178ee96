"""Validation: a pod's security contexts, pod and container level, and the rules a pod's
``os.name`` adds (pkg/apis/core/validation).

Sources: kube-apiserver 1.37 ``pkg/apis/core/validation/validation.go``
(``validatePodSpecSecurityContext``, ``validateSysctls``, ``ValidateHostSysctl``,
``validateFSGroupChangePolicy``, ``validateSupplementalGroupsPolicy``,
``validateSELinuxChangePolicy``, ``validateSeccompProfileField``,
``ValidateAppArmorProfileField``, ``validateWindowsSecurityContextOptions``,
``ValidateSecurityContext``, ``ValidateProcMountType``, ``validateHostUsers``, ``validateOS``,
``validateLinux``, ``validateWindows``), apimachinery's ``IsValidUserID``/``IsValidGroupID``
and ``pkg/proxy/util/sysctl`` (``GetNamespace``).

The v1 spec's ``hostNetwork``, ``hostPID``, ``hostIPC``, ``shareProcessNamespace`` and
``hostUsers`` live in the internal ``PodSecurityContext``; the paths are kube's, built from
wherever kube's code starts (``spec.securityContext.shareProcessNamespace``, ``spec.HostPID``).
The cluster allows privileged containers (``--allow-privileged``, as kubeadm and kind set it).
"""

from __future__ import annotations

import re
from typing import Any

from kubelite.api.errors import Cause
from kubelite.api.kinds.validation.fields import (
    Struct,
    Typed,
    as_dict,
    as_int,
    as_list,
    as_str,
    duplicate,
    forbidden,
    invalid,
    not_supported,
    required,
)
from kubelite.api.machinery.metavalidation import subdomain_errors

_ID_RANGE = "must be between 0 and 2147483647, inclusive"
_SYSCTL_FMT = "[a-z0-9]([-_a-z0-9]*[a-z0-9])?"
_SYSCTL_RE = re.compile(f"^({_SYSCTL_FMT}[\\./])*{_SYSCTL_FMT}$")
_SYSCTL_MSG = f"must have at most 253 characters and match regex {_SYSCTL_RE.pattern}"
_SECCOMP_TYPES = ["Localhost", "RuntimeDefault", "Unconfined"]
_PROC_MOUNTS = ["Default", "Unmasked"]
_WINDOWS_POD = "cannot be set for a windows pod"


def _id_causes(value: Any, path: str) -> list[Cause]:
    """IsValidUserID / IsValidGroupID: 0 to MaxInt32."""
    number = as_int(value)
    if number is None or 0 <= number <= 2**31 - 1:
        return []
    return [invalid(path, number, _ID_RANGE)]


def _sysctl_namespace(name: str) -> str:
    """utilsysctl.GetNamespace: ``net`` and ``ipc`` namespaced sysctls (a slash separates
    like a dot)."""
    name = name.replace("/", ".")
    if name.startswith("net."):
        return "net"
    if name == "kernel.sem" or name.startswith(("kernel.shm", "kernel.msg", "fs.mqueue.")):
        return "ipc"
    return ""


def _sysctls_causes(spec: dict[str, Any], sysctls: list[Any], path: str) -> list[Cause]:
    """validateSysctls and ValidateHostSysctl."""
    causes: list[Cause] = []
    names: set[str] = set()
    for i, raw in enumerate(sysctls):
        name = as_str(as_dict(raw).get("name"))
        at = f"{path}[{i}].name"
        if not name:
            causes.append(required(at))
        elif len(name) > 253 or not _SYSCTL_RE.match(name):
            causes.append(invalid(at, name, _SYSCTL_MSG))
        elif name in names:
            causes.append(duplicate(at, name))
        namespace = _sysctl_namespace(name)
        if spec.get("hostNetwork") is True and namespace == "net":
            causes.append(invalid(at, name, "may not be specified when 'hostNetwork' is true"))
        elif spec.get("hostIPC") is True and namespace == "ipc":
            causes.append(invalid(at, name, "may not be specified when 'hostIPC' is true"))
        names.add(name)
    return causes


def _enum(value: Any, path: str, supported: list[str]) -> list[Cause]:
    """A pointer to an enumerated string: NotSupported when not one of ``supported``."""
    if isinstance(value, str) and value not in supported:
        return [not_supported(path, Typed(value), supported)]
    return []


def _profile_struct(profile: dict[str, Any]) -> Struct:
    """A SeccompProfile/AppArmorProfile as json.Marshal writes the internal type."""
    local = profile.get("localhostProfile")
    return Struct(Type=as_str(profile.get("type")), LocalhostProfile=local)


def seccomp_causes(profile: Any, path: str) -> list[Cause]:
    """validateSeccompProfileField."""
    if not isinstance(profile, dict):
        return []
    causes: list[Cause] = []
    kind = as_str(profile.get("type"))
    if not kind:
        causes.append(required(f"{path}.type", "type is required when seccompProfile is set"))
    elif kind not in _SECCOMP_TYPES:
        causes.append(not_supported(f"{path}.type", Typed(kind), _SECCOMP_TYPES))
    local = profile.get("localhostProfile")
    at = f"{path}.localhostProfile"
    if kind == "Localhost":
        if not isinstance(local, str):
            causes.append(required(at, "must be set when seccomp type is Localhost"))
        else:
            causes += _descending_path_causes(local, at)
    elif local is not None:
        causes.append(
            invalid(at, _profile_struct(profile), "can only be set when seccomp type is Localhost")
        )
    return causes


def _descending_path_causes(target: str, path: str) -> list[Cause]:
    """validateLocalDescendingPath: relative, without ``..`` elements."""
    causes = [invalid(path, target, "must be a relative path")] if target.startswith("/") else []
    if ".." in target.split("/"):
        causes.append(invalid(path, target, "must not contain '..'"))
    return causes


def apparmor_causes(profile: Any, path: str) -> list[Cause]:
    """ValidateAppArmorProfileField."""
    if not isinstance(profile, dict):
        return []
    kind = as_str(profile.get("type"))
    local = profile.get("localhostProfile")
    at = f"{path}.localhostProfile"
    if kind == "Localhost":
        if not isinstance(local, str):
            return [required(at, "must be set when AppArmor type is Localhost")]
        causes: list[Cause] = []
        if local.strip() != local:
            causes.append(invalid(at, local, "must not be padded with whitespace"))
        elif not local:
            causes.append(required(at, "must be set when AppArmor type is Localhost"))
        if len(local.encode()) > 4095:
            causes.append(
                Cause("FieldValueTooLong", "Too long: may not be more than 4095 bytes", at)
            )
        return causes
    if kind in ("RuntimeDefault", "Unconfined"):
        if local is not None:
            return [
                invalid(at, Typed(as_str(local)), "can only be set when AppArmor type is Localhost")
            ]
        return []
    if not kind:
        return [required(f"{path}.type", "type is required when appArmorProfile is set")]
    return [not_supported(f"{path}.type", Typed(kind), _SECCOMP_TYPES)]


_NETBIOS_RE = re.compile(r'^[^\\/:\*\?"<>|\.][^\\/:\*\?"<>|]{0,14}$')
_DNS_PART = "[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?"
_WINDOWS_DOMAIN_RE = re.compile(f"^{_DNS_PART}(?:\\.{_DNS_PART})*$")
_BAD_USER_CHARS = re.compile(r'["/\\:;|=,\+\*\?<>@\[\]]')


def _run_as_user_name_errors(name: str) -> list[str]:
    """validateWindowsSecurityContextOptions' runAsUserName rules."""
    if not name:
        return ["runAsUserName cannot be an empty string"]
    if re.search(r"[\x00-\x1f\x7f]", name):
        return ["runAsUserName cannot contain control characters"]
    parts = name.split("\\")
    if len(parts) > 2:
        return ["runAsUserName cannot contain more than one backslash"]
    domain, user = (parts[0], parts[1]) if len(parts) == 2 else ("", parts[0])
    errs: list[str] = []
    if len(domain) >= 256:
        errs.append("runAsUserName's Domain length must be under 256 characters")
    if len(parts) == 2 and not (_NETBIOS_RE.match(domain) or _WINDOWS_DOMAIN_RE.match(domain)):
        errs.append("runAsUserName's Domain doesn't match the NetBios nor the DNS format")
    if not user:
        errs.append("runAsUserName's User cannot be empty")
    elif len(user) > 104:
        errs.append("runAsUserName's User length must not be longer than 104 characters")
    if re.fullmatch(r"[\. ]+", user):
        errs.append("runAsUserName's User cannot contain only periods or spaces")
    if _BAD_USER_CHARS.search(user):
        errs.append(
            "runAsUserName's User cannot contain the following characters: \"/\\:;|=,+*?<>@[]"
        )
    return errs


def windows_options_causes(options: Any, path: str) -> list[Cause]:
    """validateWindowsSecurityContextOptions (values are pointers: printed as JSON)."""
    if not isinstance(options, dict):
        return []
    causes: list[Cause] = []
    name = options.get("gmsaCredentialSpecName")
    if isinstance(name, str):
        at = f"{path}.gmsaCredentialSpecName"
        causes += [invalid(at, Typed(name), m) for m in subdomain_errors(name)]
    spec = options.get("gmsaCredentialSpec")
    if isinstance(spec, str):
        at = f"{path}.gmsaCredentialSpec"
        if not spec:
            causes.append(invalid(at, Typed(spec), "gmsaCredentialSpec cannot be an empty string"))
        elif len(spec.encode()) > 64 * 1024:
            causes.append(invalid(at, Typed(spec), "gmsaCredentialSpec size must be under 64 KiB"))
    user = options.get("runAsUserName")
    if isinstance(user, str):
        at = f"{path}.runAsUserName"
        causes += [invalid(at, Typed(user), m) for m in _run_as_user_name_errors(user)]
    return causes


def pod_security_causes(spec: dict[str, Any], path: str) -> list[Cause]:
    """validatePodSpecSecurityContext for the pod spec at ``path``."""
    sc = spec.get("securityContext")
    if not isinstance(sc, dict):
        sc = {}
    at = f"{path}.securityContext"
    causes = _id_causes(sc.get("fsGroup"), f"{at}.fsGroup")
    causes += _id_causes(sc.get("runAsUser"), f"{at}.runAsUser")
    causes += _id_causes(sc.get("runAsGroup"), f"{at}.runAsGroup")
    for i, gid in enumerate(as_list(sc.get("supplementalGroups"))):
        causes += _id_causes(gid, f"{at}.supplementalGroups[{i}]")
    if spec.get("shareProcessNamespace") is True and spec.get("hostPID") is True:
        causes.append(
            invalid(
                f"{at}.shareProcessNamespace",
                True,
                "ShareProcessNamespace and HostPID cannot both be enabled",
            )
        )
    causes += _sysctls_causes(spec, as_list(sc.get("sysctls")), f"{at}.sysctls")
    causes += _enum(
        sc.get("fsGroupChangePolicy"), f"{at}.fsGroupChangePolicy", ["Always", "OnRootMismatch"]
    )
    causes += seccomp_causes(sc.get("seccompProfile"), f"{at}.seccompProfile")
    causes += windows_options_causes(sc.get("windowsOptions"), f"{at}.windowsOptions")
    causes += apparmor_causes(sc.get("appArmorProfile"), f"{at}.appArmorProfile")
    causes += _enum(
        sc.get("supplementalGroupsPolicy"), f"{at}.supplementalGroupsPolicy", ["Merge", "Strict"]
    )
    causes += _enum(
        sc.get("seLinuxChangePolicy"), f"{at}.seLinuxChangePolicy", ["MountOption", "Recursive"]
    )
    return causes


def _internal_security_context(sc: dict[str, Any]) -> Struct:
    """A container's SecurityContext as json.Marshal writes the internal core type (Go field
    names, every field, nil pointers ``null``)."""

    def sub(key: str, fields: tuple[tuple[str, str], ...]) -> Struct | None:
        value = sc.get(key)
        if not isinstance(value, dict):
            return None
        return Struct((go, value.get(json_name)) for go, json_name in fields)

    caps = sc.get("capabilities")
    return Struct(
        Capabilities=Struct(
            Add=as_dict(caps).get("add") or None, Drop=as_dict(caps).get("drop") or None
        )
        if isinstance(caps, dict)
        else None,
        Privileged=sc.get("privileged"),
        SELinuxOptions=sub(
            "seLinuxOptions",
            (("User", "user"), ("Role", "role"), ("Type", "type"), ("Level", "level")),
        ),
        WindowsOptions=sub(
            "windowsOptions",
            (
                ("GMSACredentialSpecName", "gmsaCredentialSpecName"),
                ("GMSACredentialSpec", "gmsaCredentialSpec"),
                ("RunAsUserName", "runAsUserName"),
                ("HostProcess", "hostProcess"),
            ),
        ),
        RunAsUser=sc.get("runAsUser"),
        RunAsGroup=sc.get("runAsGroup"),
        RunAsNonRoot=sc.get("runAsNonRoot"),
        ReadOnlyRootFilesystem=sc.get("readOnlyRootFilesystem"),
        AllowPrivilegeEscalation=sc.get("allowPrivilegeEscalation"),
        ProcMount=sc.get("procMount"),
        SeccompProfile=sub(
            "seccompProfile", (("Type", "type"), ("LocalhostProfile", "localhostProfile"))
        ),
        AppArmorProfile=sub(
            "appArmorProfile", (("Type", "type"), ("LocalhostProfile", "localhostProfile"))
        ),
    )


def container_security_causes(ctr: dict[str, Any], host_users: bool, path: str) -> list[Cause]:
    """ValidateSecurityContext of the container at ``path``."""
    sc = ctr.get("securityContext")
    if not isinstance(sc, dict):
        return []
    at = f"{path}.securityContext"
    causes = _id_causes(sc.get("runAsUser"), f"{at}.runAsUser")
    causes += _id_causes(sc.get("runAsGroup"), f"{at}.runAsGroup")
    proc = sc.get("procMount")
    if isinstance(proc, str):
        causes += _enum(proc, f"{at}.procMount", _PROC_MOUNTS)
        if host_users and proc == "Unmasked":
            causes.append(
                invalid(
                    f"{at}.procMount", Typed(proc), "`hostUsers` must be false to use `Unmasked`"
                )
            )
    causes += seccomp_causes(sc.get("seccompProfile"), f"{at}.seccompProfile")
    if sc.get("allowPrivilegeEscalation") is False:
        if sc.get("privileged") is True:
            causes.append(
                invalid(
                    at,
                    _internal_security_context(sc),
                    "cannot set `allowPrivilegeEscalation` to false and `privileged` to true",
                )
            )
        for cap in as_list(as_dict(sc.get("capabilities")).get("add")):
            if cap == "CAP_SYS_ADMIN":
                causes.append(
                    invalid(
                        at,
                        _internal_security_context(sc),
                        "cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` "
                        "CAP_SYS_ADMIN",
                    )
                )
    causes += windows_options_causes(sc.get("windowsOptions"), f"{at}.windowsOptions")
    causes += apparmor_causes(sc.get("appArmorProfile"), f"{at}.appArmorProfile")
    return causes


def containers_security_causes(spec: dict[str, Any], path: str) -> list[Cause]:
    """ValidateSecurityContext of every container and init container (kube checks it last in
    each container's validateContainerCommon; here after all of the containers' other rules)."""
    causes: list[Cause] = []
    users = host_users(spec)
    for key in ("containers", "initContainers"):
        for index, ctr in enumerate(as_list(spec.get(key))):
            at = f"{path}.{key}[{index}]"
            causes += container_security_causes(as_dict(ctr), users, at)
    return causes


def host_users(spec: dict[str, Any]) -> bool:
    """The pod shares the host's user namespace unless ``hostUsers`` is false."""
    return spec.get("hostUsers") is not False


def host_users_causes(spec: dict[str, Any], path: str) -> list[Cause]:
    """validateHostUsers: no host namespaces in a user namespace (kube's ``HostPID`` and
    ``HostIPC`` path spellings)."""
    if host_users(spec):
        return []
    detail = "when `pod.Spec.HostUsers` is false"
    return [
        forbidden(f"{path}.{name}", detail)
        for key, name in (
            ("hostNetwork", "hostNetwork"),
            ("hostPID", "HostPID"),
            ("hostIPC", "HostIPC"),
        )
        if spec.get(key) is True
    ]


def _containers(spec: dict[str, Any], path: str) -> list[tuple[dict[str, Any], str]]:
    """podshelper.VisitContainersWithPath: init, regular, then ephemeral containers."""
    out: list[tuple[dict[str, Any], str]] = []
    for key in ("initContainers", "containers", "ephemeralContainers"):
        for i, ctr in enumerate(as_list(spec.get(key))):
            out.append((as_dict(ctr), f"{path}.{key}[{i}]"))
    return out


_WINDOWS_CTR_FIELDS = (
    "appArmorProfile",
    "seLinuxOptions",
    "seccompProfile",
    "capabilities",
    "readOnlyRootFilesystem",
    "privileged",
    "allowPrivilegeEscalation",
    "procMount",
    "runAsUser",
    "runAsGroup",
)


def os_causes(spec: dict[str, Any], path: str) -> list[Cause]:
    """validateOS, then validateLinux or validateWindows for a valid ``os.name``."""
    os_spec = spec.get("os")
    if not isinstance(os_spec, dict):
        return []
    name = as_str(os_spec.get("name"))
    if not name:
        return [required(f"{path}.os.name", "cannot be empty")]
    if name not in ("linux", "windows"):
        return [not_supported(f"{path}.os", Typed(name), ["linux", "windows"])]
    sc = as_dict(spec.get("securityContext"))
    sc_path = f"{path}.securityContext"
    causes: list[Cause] = []
    if name == "linux":
        linux = "windows options cannot be set for a linux pod"
        if sc.get("windowsOptions") is not None:
            causes.append(forbidden(f"{sc_path}.windowsOptions", linux))
        for ctr, at in _containers(spec, path):
            if as_dict(ctr.get("securityContext")).get("windowsOptions") is not None:
                causes.append(forbidden(f"{at}.securityContext.windowsOptions", linux))
        return causes
    pod_checks: list[tuple[bool, str]] = [
        (sc.get("appArmorProfile") is not None, f"{sc_path}.appArmorProfile"),
        (sc.get("seLinuxOptions") is not None, f"{sc_path}.seLinuxOptions"),
        (spec.get("hostUsers") is not None, f"{path}.hostUsers"),
        (spec.get("hostPID") is True, f"{path}.hostPID"),
        (spec.get("hostIPC") is True, f"{path}.hostIPC"),
        (sc.get("seccompProfile") is not None, f"{sc_path}.seccompProfile"),
        (sc.get("fsGroup") is not None, f"{sc_path}.fsGroup"),
        (sc.get("fsGroupChangePolicy") is not None, f"{sc_path}.fsGroupChangePolicy"),
        (bool(sc.get("sysctls")), f"{sc_path}.sysctls"),
        (spec.get("shareProcessNamespace") is not None, f"{path}.shareProcessNamespace"),
        (sc.get("runAsUser") is not None, f"{sc_path}.runAsUser"),
        (sc.get("runAsGroup") is not None, f"{sc_path}.runAsGroup"),
        (sc.get("supplementalGroups") is not None, f"{sc_path}.supplementalGroups"),
        (sc.get("supplementalGroupsPolicy") is not None, f"{sc_path}.supplementalGroupsPolicy"),
        (sc.get("seLinuxChangePolicy") is not None, f"{sc_path}.seLinuxChangePolicy"),
    ]
    causes += [forbidden(at, _WINDOWS_POD) for bad, at in pod_checks if bad]
    for ctr, at in _containers(spec, path):
        csc = ctr.get("securityContext")
        if not isinstance(csc, dict):
            continue
        causes += [
            forbidden(f"{at}.securityContext.{key}", _WINDOWS_POD)
            for key in _WINDOWS_CTR_FIELDS
            if csc.get(key) is not None
        ]
    return causes


__all__ = [
    "apparmor_causes",
    "container_security_causes",
    "containers_security_causes",
    "host_users",
    "host_users_causes",
    "os_causes",
    "pod_security_causes",
    "seccomp_causes",
]
