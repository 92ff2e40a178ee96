"""Validation: Pod spec validation (pkg/apis/core/validation: ValidatePodSpec, containers, volumes,
ports, resources, probes), shared by every pod template.

Source: kube-apiserver 1.37 ``pkg/apis/core/validation/validation.go`` (``ValidatePodSpec``,
``ValidateVolumes``, ``validateVolumeSource``, ``validateContainers``, ``validateInitContainers``,
``validateContainerCommon``, ``validateContainerPorts``, ``ValidateEnv``, ``ValidateVolumeMounts``,
``ValidateResourceRequirements``, ``validateProbe``, ``validateHandler``, ``validateRestartPolicy``,
``validateDNSPolicy``, ``validatePullPolicy``) and apimachinery's ``util/validation``.

Fields that kube's defaulting always fills (restartPolicy, dnsPolicy, terminationMessagePolicy,
imagePullPolicy, a port's protocol, a probe's thresholds) are checked only when present: an
absent one is defaulting's to fill, never a 422 here. Nothing here raises on a malformed body.
"""

from __future__ import annotations

import re
from typing import Any

from kubelite.api.encoding.quantity import Quantity, parse_or_none
from kubelite.api.errors import Cause, go_quote
from kubelite.api.kinds.core.validation import poddns, podscheduling, podsecurity
from kubelite.api.kinds.core.validation.podenv import env_causes, env_from_causes
from kubelite.api.kinds.core.validation.podephemeral import (
    containers_causes as ephemeral_containers_causes,
)
from kubelite.api.kinds.core.validation.podephemeral import in_template_causes, on_create_causes
from kubelite.api.kinds.core.validation.podmounts import mount_causes
from kubelite.api.kinds.core.validation.podvolumes import volume_causes
from kubelite.api.kinds.rules import Obj
from kubelite.api.kinds.validation.fields import (
    as_dict,
    as_int,
    as_list,
    as_str,
    duplicate,
    forbidden,
    not_supported,
    required,
)
from kubelite.api.machinery.metavalidation import (
    annotation_causes,
    invalid,
    label_causes,
    qualified_name_errors,
    regex_error,
)

# --- util/validation --------------------------------------------------------------------------

_DNS_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS_LABEL_RE = re.compile(_DNS_LABEL_FMT)
_SUBDOMAIN_RE = re.compile(_DNS_LABEL_FMT + "(\\." + _DNS_LABEL_FMT + ")*")
_DNS_LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character"
)


def dns1123_label_errors(value: str) -> list[str]:
    """util/validation.IsDNS1123Label."""
    errs = ["must be no more than 63 characters"] if len(value) > 63 else []
    if not _DNS_LABEL_RE.fullmatch(value):
        if _SUBDOMAIN_RE.fullmatch(value):
            errs.append("must not contain dots")
        else:
            errs.append(regex_error(_DNS_LABEL_MSG, _DNS_LABEL_FMT, "my-name", "123-abc"))
    return errs


def _label(value: str, path: str) -> list[Cause]:
    return [invalid(path, go_quote(value), m) for m in dns1123_label_errors(value)]


_PORT_RANGE = "must be between 1 and 65535, inclusive"


def port_name_errors(port: str) -> list[str]:
    """util/validation.IsValidPortName."""
    errs = ["must be no more than 15 characters"] if len(port) > 15 else []
    if not re.fullmatch("[-a-z0-9]+", port):
        errs.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not re.search("[a-z]", port):
        errs.append("must contain at least one letter (a-z)")
    if "--" in port:
        errs.append("must not contain consecutive hyphens")
    if port and (port[0] == "-" or port[-1] == "-"):
        errs.append("must not begin or end with a hyphen")
    return errs


def _port_num_or_name(value: Any, path: str) -> list[Cause]:
    """ValidatePortNumOrName (an int-or-string)."""
    number = as_int(value)
    if number is not None:
        return [] if 1 <= number <= 65535 else [invalid(path, str(number), _PORT_RANGE)]
    if isinstance(value, str):
        return [invalid(path, go_quote(value), m) for m in port_name_errors(value)]
    return []


# --- quantities -------------------------------------------------------------------------------

_STANDARD_CONTAINER_RESOURCES = frozenset({"cpu", "memory", "ephemeral-storage"})


def _overcommit_allowed(name: str) -> bool:
    """helper.IsOvercommitAllowed: native resources other than hugepages."""
    native = "/" not in name or name.split("/", 1)[0].endswith("kubernetes.io")
    return native and not name.startswith("hugepages-")


def _resource_name_causes(name: str, path: str) -> list[Cause]:
    """validateContainerResourceName."""
    causes = [invalid(path, go_quote(name), m) for m in qualified_name_errors(name)]
    standard = name in _STANDARD_CONTAINER_RESOURCES or name.startswith("hugepages-")
    if "/" not in name and not standard:
        causes.append(invalid(path, go_quote(name), "must be a standard resource for containers"))
    return causes


def resources_causes(resources: Any, path: str) -> list[Cause]:
    """ValidateResourceRequirements: names, non-negative quantities, integer extended
    resources, requests <= limits (equal for resources that cannot be overcommitted)."""
    res = as_dict(resources)
    limits, requests = as_dict(res.get("limits")), as_dict(res.get("requests"))
    lim_path, req_path = f"{path}.limits", f"{path}.requests"
    causes: list[Cause] = []
    parsed_limits: dict[str, Quantity] = {}
    for name, raw in limits.items():
        where = f"{lim_path}[{name}]"
        causes += _resource_name_causes(name, where)
        quantity = parse_or_none(raw)
        if quantity is None:
            continue
        causes += _quantity_value_causes(name, quantity, where)
        parsed_limits[name] = quantity
    for name, raw in requests.items():
        where = f"{req_path}[{name}]"
        causes += _resource_name_causes(name, where)
        quantity = parse_or_none(raw)
        if quantity is None:
            continue
        causes += _quantity_value_causes(name, quantity, where)
        limit = parsed_limits.get(name)
        if limit is not None:
            if quantity.value != limit.value and not _overcommit_allowed(name):
                causes.append(
                    invalid(
                        req_path,
                        go_quote(str(quantity)),
                        f"must be equal to {name} limit of {limit}",
                    )
                )
            elif quantity.value > limit.value:
                causes.append(
                    invalid(
                        req_path,
                        go_quote(str(quantity)),
                        f"must be less than or equal to {name} limit of {limit}",
                    )
                )
        elif not _overcommit_allowed(name) and name not in limits:
            causes.append(required(lim_path, "Limit must be set for non overcommitable resources"))
    return causes


def _quantity_value_causes(name: str, quantity: Quantity, path: str) -> list[Cause]:
    """ValidateResourceQuantityValue: not negative; extended resources whole numbers."""
    if quantity.value < 0:
        return [invalid(path, go_quote(str(quantity)), "must be greater than or equal to 0")]
    integer_only = "/" in name and not name.split("/", 1)[0].endswith("kubernetes.io")
    if integer_only and quantity.value != quantity.value.to_integral_value():
        return [invalid(path, go_quote(str(quantity)), "must be an integer")]
    return []


# --- containers -------------------------------------------------------------------------------

_PROTOCOLS = ("SCTP", "TCP", "UDP")
_PULL_POLICIES = ("Always", "IfNotPresent", "Never")
_TERMINATION_MESSAGE_POLICIES = ("File", "FallbackToLogsOnError")
_RESTART_POLICIES = ("Always", "OnFailure", "Never")
_DNS_POLICIES = ("ClusterFirstWithHostNet", "ClusterFirst", "Default", "None")


def _ports_causes(ports: list[Any], path: str) -> list[Cause]:
    """validateContainerPorts."""
    causes: list[Cause] = []
    names: set[str] = set()
    for index, raw in enumerate(ports):
        port = as_dict(raw)
        where = f"{path}[{index}]"
        name = as_str(port.get("name"))
        if name:
            problems = port_name_errors(name)
            if problems:
                causes += [invalid(f"{where}.name", go_quote(name), m) for m in problems]
            elif name in names:
                causes.append(duplicate(f"{where}.name", name))
            else:
                names.add(name)
        number = as_int(port.get("containerPort"))
        if not number:
            causes.append(required(f"{where}.containerPort"))
        elif not 1 <= number <= 65535:
            causes.append(invalid(f"{where}.containerPort", str(number), _PORT_RANGE))
        host = as_int(port.get("hostPort"))
        if host and not 1 <= host <= 65535:
            causes.append(invalid(f"{where}.hostPort", str(host), _PORT_RANGE))
        protocol = port.get("protocol")
        if isinstance(protocol, str):
            if not protocol:
                causes.append(required(f"{where}.protocol"))
            elif protocol not in _PROTOCOLS:
                causes.append(not_supported(f"{where}.protocol", protocol, _PROTOCOLS))
    return causes


_HANDLERS = ("exec", "httpGet", "tcpSocket", "grpc", "sleep")
_NONNEGATIVE_PROBE_FIELDS = (
    "initialDelaySeconds",
    "timeoutSeconds",
    "periodSeconds",
    "successThreshold",
    "failureThreshold",
)


def _handler_causes(handler: Obj, path: str, kinds: tuple[str, ...]) -> list[Cause]:
    """validateHandler: exactly one handler type, each checked."""
    causes: list[Cause] = []
    count = 0
    for kind in _HANDLERS:
        if kind not in kinds or handler.get(kind) is None:
            continue
        if count:
            causes.append(forbidden(f"{path}.{kind}", "may not specify more than 1 handler type"))
            continue
        count += 1
        action = as_dict(handler.get(kind))
        if kind == "exec" and not as_list(action.get("command")):
            causes.append(required(f"{path}.exec.command"))
        elif kind in ("httpGet", "tcpSocket"):
            causes += _port_num_or_name(action.get("port"), f"{path}.{kind}.port")
            if kind == "httpGet":
                scheme = action.get("scheme")
                if isinstance(scheme, str) and scheme not in ("HTTP", "HTTPS"):
                    causes.append(
                        not_supported(f"{path}.httpGet.scheme", scheme, ("HTTP", "HTTPS"))
                    )
        elif kind == "grpc":
            port = as_int(action.get("port"))
            if port is not None and not 1 <= port <= 65535:
                causes.append(invalid(f"{path}.grpc.port", str(port), _PORT_RANGE))
    if not count:
        causes.append(required(path, "must specify a handler type"))
    return causes


def _probe_causes(probe: Any, path: str, which: str) -> list[Cause]:
    """validateLivenessProbe / validateReadinessProbe / validateStartupProbe."""
    if not isinstance(probe, dict):
        return []
    causes = _handler_causes(probe, path, ("exec", "httpGet", "tcpSocket", "grpc"))
    for key in _NONNEGATIVE_PROBE_FIELDS:
        value = as_int(probe.get(key))
        if value is not None and value < 0:
            causes.append(
                invalid(f"{path}.{key}", str(value), "must be greater than or equal to 0")
            )
    grace = as_int(probe.get("terminationGracePeriodSeconds"))
    if grace is not None and grace <= 0:
        causes.append(
            invalid(f"{path}.terminationGracePeriodSeconds", str(grace), "must be greater than 0")
        )
    success = as_int(probe.get("successThreshold"))
    if which in ("liveness", "startup") and success is not None and success != 1:
        causes.append(invalid(f"{path}.successThreshold", str(success), "must be 1"))
    if which == "readiness" and probe.get("terminationGracePeriodSeconds") is not None:
        causes.append(
            invalid(
                f"{path}.terminationGracePeriodSeconds",
                str(probe.get("terminationGracePeriodSeconds")),
                "must not be set for readinessProbes",
            )
        )
    return causes


def _container_common(ctr: Obj, volumes: dict[str, Obj], path: str) -> list[Cause]:
    """validateContainerCommon."""
    causes: list[Cause] = []
    name = as_str(ctr.get("name"))
    if not name:
        causes.append(required(f"{path}.name"))
    else:
        causes += _label(name, f"{path}.name")
    if not as_str(ctr.get("image")):
        causes.append(required(f"{path}.image"))
    policy = ctr.get("terminationMessagePolicy")
    if isinstance(policy, str) and policy not in _TERMINATION_MESSAGE_POLICIES:
        causes.append(
            required(f"{path}.terminationMessagePolicy")
            if not policy
            else not_supported(
                f"{path}.terminationMessagePolicy", policy, _TERMINATION_MESSAGE_POLICIES
            )
        )
    causes += _ports_causes(as_list(ctr.get("ports")), f"{path}.ports")
    causes += env_causes(ctr.get("env"), f"{path}.env")
    causes += env_from_causes(ctr.get("envFrom"), f"{path}.envFrom")
    causes += mount_causes(ctr.get("volumeMounts"), volumes, ctr, f"{path}.volumeMounts")
    pull = ctr.get("imagePullPolicy")
    if isinstance(pull, str) and pull not in _PULL_POLICIES:
        causes.append(
            required(f"{path}.imagePullPolicy")
            if not pull
            else not_supported(f"{path}.imagePullPolicy", pull, _PULL_POLICIES)
        )
    causes += resources_causes(ctr.get("resources"), f"{path}.resources")
    return causes


def _probes(ctr: Obj, path: str) -> list[Cause]:
    causes: list[Cause] = []
    lifecycle = ctr.get("lifecycle")
    if isinstance(lifecycle, dict):
        for hook in ("postStart", "preStop"):
            if isinstance(lifecycle.get(hook), dict):
                causes += _handler_causes(
                    lifecycle[hook],
                    f"{path}.lifecycle.{hook}",
                    ("exec", "httpGet", "tcpSocket", "sleep"),
                )
    causes += _probe_causes(ctr.get("livenessProbe"), f"{path}.livenessProbe", "liveness")
    causes += _probe_causes(ctr.get("readinessProbe"), f"{path}.readinessProbe", "readiness")
    causes += _probe_causes(ctr.get("startupProbe"), f"{path}.startupProbe", "startup")
    return causes


def _host_port_causes(containers: list[Obj], path: str) -> list[Cause]:
    """checkHostPortConflicts: ``<protocol>/<hostIP>/<hostPort>`` once across containers."""
    causes: list[Cause] = []
    seen: set[str] = set()
    for ci, ctr in enumerate(containers):
        for pi, raw in enumerate(as_list(ctr.get("ports"))):
            port = as_dict(raw)
            host = as_int(port.get("hostPort"))
            if not host:
                continue
            key = f"{as_str(port.get('protocol'))}/{as_str(port.get('hostIP'))}/{host}"
            if key in seen:
                causes.append(duplicate(f"{path}[{ci}].ports[{pi}].hostPort", key))
            seen.add(key)
    return causes


def _containers_causes(containers: list[Any], volumes: dict[str, Obj], path: str) -> list[Cause]:
    """validateContainers."""
    if not containers:
        return [required(path)]
    causes: list[Cause] = []
    names: set[str] = set()
    ctrs = [as_dict(c) for c in containers]
    for index, ctr in enumerate(ctrs):
        where = f"{path}[{index}]"
        causes += _container_common(ctr, volumes, where)
        name = as_str(ctr.get("name"))
        if name in names:
            causes.append(duplicate(f"{where}.name", name))
        else:
            names.add(name)
        causes += _probes(ctr, where)
        if ctr.get("restartPolicy") is not None:
            causes.append(
                forbidden(f"{where}.restartPolicy", "may not be set for non-init containers")
            )
    return causes + _host_port_causes(ctrs, path)


_INIT_FORBIDDEN = "may not be set for init containers without restartPolicy=Always"


def _init_containers_causes(
    init: list[Any], regular: list[Any], volumes: dict[str, Obj], path: str
) -> list[Cause]:
    """validateInitContainers."""
    causes: list[Cause] = []
    names = {as_str(as_dict(c).get("name")) for c in regular}
    for index, raw in enumerate(init):
        ctr = as_dict(raw)
        where = f"{path}[{index}]"
        causes += _container_common(ctr, volumes, where)
        policy = ctr.get("restartPolicy")
        if isinstance(policy, str) and policy != "Always":
            causes.append(not_supported(f"{where}.restartPolicy", policy, ("Always",)))
        name = as_str(ctr.get("name"))
        if name in names:
            causes.append(duplicate(f"{where}.name", name))
        elif name:
            names.add(name)
        causes += _host_port_causes([ctr], path)
        if policy == "Always":
            causes += _probes(ctr, where)
        else:
            for key in ("lifecycle", "livenessProbe", "readinessProbe", "startupProbe"):
                if ctr.get(key) is not None:
                    causes.append(forbidden(f"{where}.{key}", _INIT_FORBIDDEN))
    return causes


# --- the pod spec -----------------------------------------------------------------------------


def pod_spec_causes(spec: Any, path: str, pod_name: str = "") -> list[Cause]:
    """The causes of a 422 for a pod spec at ``path`` (``spec`` for a Pod,
    ``spec.template.spec`` for a workload's template; ``pod_name`` a Pod's name)."""
    if not isinstance(spec, dict):
        return [required(f"{path}.containers")]
    volumes, causes = volume_causes(spec.get("volumes"), f"{path}.volumes", pod_name)
    containers = as_list(spec.get("containers"))
    causes += _containers_causes(containers, volumes, f"{path}.containers")
    causes += _init_containers_causes(
        as_list(spec.get("initContainers")), containers, volumes, f"{path}.initContainers"
    )
    causes += ephemeral_containers_causes(
        spec, f"{path}.ephemeralContainers", lambda c, at: _container_common(c, volumes, at)
    )
    causes += podsecurity.containers_security_causes(spec, path)
    restart = spec.get("restartPolicy")
    if isinstance(restart, str) and restart not in _RESTART_POLICIES:
        causes.append(
            required(f"{path}.restartPolicy")
            if not restart
            else not_supported(f"{path}.restartPolicy", restart, _RESTART_POLICIES)
        )
    dns = spec.get("dnsPolicy")
    if isinstance(dns, str) and dns not in _DNS_POLICIES:
        causes.append(
            required(f"{path}.dnsPolicy")
            if not dns
            else not_supported(f"{path}.dnsPolicy", dns, _DNS_POLICIES)
        )
    causes += label_causes(spec.get("nodeSelector"), f"{path}.nodeSelector")
    causes += podsecurity.pod_security_causes(spec, path)
    causes += podscheduling.placement_causes(spec, path)
    causes += podsecurity.host_users_causes(spec, path) + poddns.names_causes(spec, path)
    deadline = as_int(spec.get("activeDeadlineSeconds"))
    if deadline is not None and not 1 <= deadline <= 2**31 - 1:
        causes.append(
            invalid(
                f"{path}.activeDeadlineSeconds",
                str(deadline),
                f"must be between 1 and {2**31 - 1}, inclusive",
            )
        )
    for key in ("hostname", "subdomain"):
        value = as_str(spec.get(key))
        if value:
            causes += _label(value, f"{path}.{key}")
    causes += podscheduling.tail_causes(spec, path)
    if isinstance(spec.get("overhead"), dict):
        causes += resources_causes({"limits": spec["overhead"]}, f"{path}.overhead")
    return causes + podsecurity.os_causes(spec, path)


def _template_causes(template: Any, path: str) -> list[Cause]:
    """ValidatePodTemplateSpec: the template's labels and annotations, and its pod spec."""
    tmpl = as_dict(template)
    meta = as_dict(tmpl.get("metadata"))
    return (
        label_causes(meta.get("labels"), f"{path}.labels")
        + annotation_causes(meta.get("annotations"), f"{path}.annotations")
        + pod_spec_causes(tmpl.get("spec"), f"{path}.spec")
        + in_template_causes(tmpl.get("spec"), f"{path}.spec")
    )


def validate_pod(obj: Obj, old: Obj | None) -> list[Cause]:
    name = as_str(as_dict(obj.get("metadata")).get("name"))
    causes = pod_spec_causes(obj.get("spec"), "spec", name)
    return causes + (on_create_causes(obj.get("spec"), "spec") if old is None else [])


def validate_pod_template(obj: Obj, old: Obj | None) -> list[Cause]:
    return _template_causes(obj.get("template"), "template")


def validate_replication_controller(obj: Obj, old: Obj | None) -> list[Cause]:
    """ValidateReplicationControllerSpec's template part (the selector rules are the workload
    validators'): a template is required to create pods from."""
    spec = as_dict(obj.get("spec"))
    template = spec.get("template")
    if template is None:
        return [required("spec.template")]
    return _template_causes(template, "spec.template")


__all__ = ["pod_spec_causes", "resources_causes"]
