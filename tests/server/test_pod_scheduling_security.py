# ruff: noqa: E501  (kube's expected texts are kept whole, one per line)
"""Pod spec validation over HTTP (kube-apiserver 1.37 pkg/apis/core/validation): security
contexts, affinity, tolerations, topology spread, DNS, gates, os rules; and what a pod update may
change, with kube's ``cmp.Diff`` of the spec. Each invalid pod gets kube's exact 422 and is not
stored; a pod using each feature is accepted."""

from __future__ import annotations

import copy
import itertools
from typing import Any

import pytest
from harness import Server

#: a scheduler no pod here waits for, so that none writes the pods' status meanwhile
UNSCHEDULED = "kubelite.test/no-scheduler"

PODS = "/api/v1/namespaces/{ns}/pods"
CTR = {"name": "c", "image": "nginx"}
_names = itertools.count()


def pod(name: str, container: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    ctr = {**CTR, **(container or {})}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [ctr], "schedulerName": UNSCHEDULED, **spec},
    }


LABEL_KEY_REGEX = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
SUBDOMAIN = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
RANGE = "must be between 0 and 2147483647, inclusive"
NODE_TERM = (
    "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
)
POD_TERM = "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]"
SEL = {"matchLabels": {"app": "x"}}
SC_NULLS = '"Capabilities":null,"Privileged":true,"SELinuxOptions":null,"WindowsOptions":null,"RunAsUser":null,"RunAsGroup":null,"RunAsNonRoot":null,"ReadOnlyRootFilesystem":null,"AllowPrivilegeEscalation":false,"ProcMount":null,"SeccompProfile":null,"AppArmorProfile":null'


def node_affinity(*expressions: dict[str, Any], fields: Any = None) -> dict[str, Any]:
    term: dict[str, Any] = {"matchExpressions": list(expressions)}
    if fields is not None:
        term = {"matchFields": fields}
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}
        }
    }


def spread(**extra: Any) -> dict[str, Any]:
    return {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule", **extra}


# (id, pod spec extras (container under "container"), the 422's text after `Pod "..." is invalid: `)
INVALID: list[tuple[str, dict[str, Any], str]] = [
    # -- security contexts
    (
        "runAsUser",
        {"securityContext": {"runAsUser": -1}},
        f"spec.securityContext.runAsUser: Invalid value: -1: {RANGE}",
    ),
    (
        "fsGroup",
        {"securityContext": {"fsGroup": 2147483648}},
        f"spec.securityContext.fsGroup: Invalid value: 2147483648: {RANGE}",
    ),
    (
        "supplementalGroups",
        {"securityContext": {"supplementalGroups": [1, -2]}},
        f"spec.securityContext.supplementalGroups[1]: Invalid value: -2: {RANGE}",
    ),
    (
        "fsGroupChangePolicy",
        {"securityContext": {"fsGroupChangePolicy": "Sometimes"}},
        'spec.securityContext.fsGroupChangePolicy: Unsupported value: "Sometimes": supported values: "Always", "OnRootMismatch"',
    ),
    (
        "sysctl-duplicate",
        {"securityContext": {"sysctls": [{"name": "kernel.shm_rmid_forced", "value": "0"}] * 2}},
        'spec.securityContext.sysctls[1].name: Duplicate value: "kernel.shm_rmid_forced"',
    ),
    (
        "sysctl-name",
        {"securityContext": {"sysctls": [{"name": "Kernel.x", "value": "1"}]}},
        'spec.securityContext.sysctls[0].name: Invalid value: "Kernel.x": must have at most 253 characters and match regex ^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$',
    ),
    (
        "sysctl-hostNetwork",
        {
            "hostNetwork": True,
            "securityContext": {"sysctls": [{"name": "net.ipv4.ip_forward", "value": "1"}]},
        },
        "spec.securityContext.sysctls[0].name: Invalid value: \"net.ipv4.ip_forward\": may not be specified when 'hostNetwork' is true",
    ),
    (
        "seccomp-localhost",
        {"securityContext": {"seccompProfile": {"type": "Localhost"}}},
        "spec.securityContext.seccompProfile.localhostProfile: Required value: must be set when seccomp type is Localhost",
    ),
    (
        "seccomp-type",
        {"securityContext": {"seccompProfile": {"type": "Bogus"}}},
        'spec.securityContext.seccompProfile.type: Unsupported value: "Bogus": supported values: "Localhost", "RuntimeDefault", "Unconfined"',
    ),
    (
        "seccomp-profile",
        {
            "securityContext": {
                "seccompProfile": {"type": "RuntimeDefault", "localhostProfile": "p.json"}
            }
        },
        'spec.securityContext.seccompProfile.localhostProfile: Invalid value: {"Type":"RuntimeDefault","LocalhostProfile":"p.json"}: can only be set when seccomp type is Localhost',
    ),
    (
        "seccomp-path",
        {
            "securityContext": {
                "seccompProfile": {"type": "Localhost", "localhostProfile": "../p.json"}
            }
        },
        "spec.securityContext.seccompProfile.localhostProfile: Invalid value: \"../p.json\": must not contain '..'",
    ),
    (
        "apparmor-padded",
        {"securityContext": {"appArmorProfile": {"type": "Localhost", "localhostProfile": " x"}}},
        'spec.securityContext.appArmorProfile.localhostProfile: Invalid value: " x": must not be padded with whitespace',
    ),
    (
        "apparmor-type",
        {"securityContext": {"appArmorProfile": {"type": ""}}},
        "spec.securityContext.appArmorProfile.type: Required value: type is required when appArmorProfile is set",
    ),
    (
        "shareProcessNamespace",
        {"hostPID": True, "shareProcessNamespace": True},
        "spec.securityContext.shareProcessNamespace: Invalid value: true: ShareProcessNamespace and HostPID cannot both be enabled",
    ),
    (
        "hostUsers",
        {"hostUsers": False, "hostIPC": True},
        "spec.HostIPC: Forbidden: when `pod.Spec.HostUsers` is false",
    ),
    (
        "runAsUserName",
        {"securityContext": {"windowsOptions": {"runAsUserName": "a\\b\\c"}}},
        'spec.securityContext.windowsOptions.runAsUserName: Invalid value: "a\\\\b\\\\c": runAsUserName cannot contain more than one backslash',
    ),
    (
        "privileged",
        {"container": {"securityContext": {"privileged": True, "allowPrivilegeEscalation": False}}},
        "spec.containers[0].securityContext: Invalid value: {"
        + SC_NULLS
        + "}: cannot set `allowPrivilegeEscalation` to false and `privileged` to true",
    ),
    (
        "procMount",
        {"container": {"securityContext": {"procMount": "Unmasked"}}},
        'spec.containers[0].securityContext.procMount: Invalid value: "Unmasked": `hostUsers` must be false to use `Unmasked`',
    ),
    (
        "procMount-value",
        {"container": {"securityContext": {"procMount": "Hidden"}}},
        'spec.containers[0].securityContext.procMount: Unsupported value: "Hidden": supported values: "Default", "Unmasked"',
    ),
    (
        "container-runAsGroup",
        {"container": {"securityContext": {"runAsGroup": -3}}},
        f"spec.containers[0].securityContext.runAsGroup: Invalid value: -3: {RANGE}",
    ),
    # -- affinity
    (
        "nodeSelectorTerms",
        {
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}
                }
            }
        },
        f"{NODE_TERM}: Required value: must have at least one node selector term",
    ),
    (
        "node-Gt",
        {"affinity": node_affinity({"key": "cpus", "operator": "Gt", "values": ["1", "2"]})},
        f"{NODE_TERM}[0].matchExpressions[0].values: Required value: must be specified single value when `operator` is 'Lt' or 'Gt'",
    ),
    (
        "node-operator",
        {"affinity": node_affinity({"key": "zone", "operator": "Bigger", "values": ["a"]})},
        f'{NODE_TERM}[0].matchExpressions[0].operator: Invalid value: "Bigger": not a valid selector operator',
    ),
    (
        "node-exists-values",
        {"affinity": node_affinity({"key": "zone", "operator": "Exists", "values": ["a"]})},
        f"{NODE_TERM}[0].matchExpressions[0].values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
    ),
    (
        "matchFields-key",
        {
            "affinity": node_affinity(
                fields=[{"key": "metadata.labels", "operator": "In", "values": ["a"]}]
            )
        },
        f'{NODE_TERM}[0].matchFields[0].key: Invalid value: "metadata.labels": not a valid field selector key',
    ),
    (
        "matchFields-values",
        {
            "affinity": node_affinity(
                fields=[{"key": "metadata.name", "operator": "In", "values": ["a", "b"]}]
            )
        },
        f"{NODE_TERM}[0].matchFields[0].values: Required value: must be only one value when `operator` is 'In' or 'NotIn' for node field selector",
    ),
    (
        "node-weight",
        {
            "affinity": {
                "nodeAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {"weight": 0, "preference": {}}
                    ]
                }
            }
        },
        "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight: Invalid value: 0: must be in the range 1-100",
    ),
    (
        "pod-weight",
        {
            "affinity": {
                "podAntiAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {"weight": 101, "podAffinityTerm": {"topologyKey": "zone"}}
                    ]
                }
            }
        },
        "spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight: Invalid value: 101: must be in the range 1-100",
    ),
    (
        "topologyKey",
        {
            "affinity": {
                "podAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [{"labelSelector": SEL}]
                }
            }
        },
        f'[{POD_TERM}.topologyKey: Required value: can not be empty, {POD_TERM}.topologyKey: Invalid value: "": name part must be non-empty, {POD_TERM}.topologyKey: Invalid value: "": {LABEL_KEY_REGEX}]',
    ),
    (
        "namespaceSelector",
        {
            "affinity": {
                "podAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        {
                            "topologyKey": "zone",
                            "namespaceSelector": {
                                "matchExpressions": [{"key": "team", "operator": "In"}]
                            },
                        }
                    ]
                }
            }
        },
        f"{POD_TERM}.namespaceSelector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'",
    ),
    (
        "matchLabelKeys-both",
        {
            "affinity": {
                "podAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        {
                            "topologyKey": "zone",
                            "labelSelector": SEL,
                            "matchLabelKeys": ["tier"],
                            "mismatchLabelKeys": ["tier"],
                        }
                    ]
                }
            }
        },
        f'{POD_TERM}.matchLabelKeys[0]: Invalid value: "tier": exists in both matchLabelKeys and mismatchLabelKeys',
    ),
    (
        "matchLabelKeys-selector",
        {
            "affinity": {
                "podAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        {"topologyKey": "zone", "mismatchLabelKeys": ["tier"]}
                    ]
                }
            }
        },
        f"{POD_TERM}.mismatchLabelKeys: Forbidden: must not be specified when labelSelector is not set",
    ),
    # -- tolerations
    (
        "toleration-exists-value",
        {"tolerations": [{"operator": "Exists", "value": "x"}]},
        "spec.tolerations[0].operator: Invalid value: \"x\": value must be empty when `operator` is 'Exists'",
    ),
    (
        "toleration-seconds",
        {
            "tolerations": [
                {"key": "k", "value": "v", "effect": "NoSchedule", "tolerationSeconds": 5}
            ]
        },
        "spec.tolerations[0].effect: Invalid value: \"NoSchedule\": effect must be 'NoExecute' when `tolerationSeconds` is set",
    ),
    (
        "toleration-operator",
        {"tolerations": [{"key": "k", "operator": "In"}]},
        'spec.tolerations[0].operator: Unsupported value: "In": supported values: "Equal", "Exists"',
    ),
    (
        "toleration-empty-key",
        {"tolerations": [{"operator": "Equal", "value": "v"}]},
        'spec.tolerations[0].operator: Invalid value: "Equal": operator must be Exists when `key` is empty, which means "match all values and all keys"',
    ),
    (
        "toleration-effect",
        {"tolerations": [{"key": "k", "operator": "Exists", "effect": "Sometimes"}]},
        'spec.tolerations[0].effect: Unsupported value: "Sometimes": supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"',
    ),
    (
        "toleration-key",
        {"tolerations": [{"key": "bad key", "operator": "Exists"}]},
        f'spec.tolerations[0].key: Invalid value: "bad key": {LABEL_KEY_REGEX}',
    ),
    # -- topology spread
    (
        "maxSkew",
        {"topologySpreadConstraints": [spread(maxSkew=0)]},
        "spec.topologySpreadConstraints[0].maxSkew: Invalid value: 0: must be greater than zero",
    ),
    (
        "whenUnsatisfiable",
        {"topologySpreadConstraints": [spread(whenUnsatisfiable="Never")]},
        'spec.topologySpreadConstraints[0].whenUnsatisfiable: Unsupported value: "Never": supported values: "DoNotSchedule", "ScheduleAnyway"',
    ),
    (
        "spread-topologyKey",
        {"topologySpreadConstraints": [spread(topologyKey="")]},
        "spec.topologySpreadConstraints[0].topologyKey: Required value: can not be empty",
    ),
    (
        "spread-duplicate",
        {"topologySpreadConstraints": [spread(), spread(maxSkew=2)]},
        'spec.topologySpreadConstraints[0].{topologyKey, whenUnsatisfiable}: Duplicate value: "{zone, DoNotSchedule}"',
    ),
    (
        "minDomains",
        {"topologySpreadConstraints": [spread(whenUnsatisfiable="ScheduleAnyway", minDomains=2)]},
        "spec.topologySpreadConstraints[0].minDomains: Invalid value: 2: can only use minDomains if whenUnsatisfiable=DoNotSchedule, not ScheduleAnyway",
    ),
    (
        "nodeAffinityPolicy",
        {"topologySpreadConstraints": [spread(nodeAffinityPolicy="Sometimes")]},
        'spec.topologySpreadConstraints[0].nodeAffinityPolicy: Unsupported value: "Sometimes": supported values: "Honor", "Ignore"',
    ),
    (
        "spread-matchLabelKeys",
        {"topologySpreadConstraints": [spread(labelSelector=SEL, matchLabelKeys=["app"])]},
        'spec.topologySpreadConstraints[0].matchLabelKeys[0]: Invalid value: "app": exists in both matchLabelKeys and labelSelector',
    ),
    # -- DNS, host aliases, gates, names, os
    (
        "dnsConfig-required",
        {"dnsPolicy": "None"},
        "spec.dnsConfig: Required value: must provide `dnsConfig` when `dnsPolicy` is None",
    ),
    (
        "dnsConfig-nameserver-required",
        {"dnsPolicy": "None", "dnsConfig": {"searches": ["a.b"]}},
        "spec.dnsConfig.nameservers: Required value: must provide at least one DNS nameserver when `dnsPolicy` is None",
    ),
    (
        "nameservers-count",
        {"dnsConfig": {"nameservers": ["1.1.1.1", "1.1.1.2", "1.1.1.3", "1.1.1.4"]}},
        'spec.dnsConfig.nameservers: Invalid value: ["1.1.1.1","1.1.1.2","1.1.1.3","1.1.1.4"]: must not have more than 3 nameservers',
    ),
    (
        "nameserver-ip",
        {"dnsConfig": {"nameservers": ["dns.local"]}},
        'spec.dnsConfig.nameservers[0]: Invalid value: "dns.local": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)',
    ),
    (
        "dns-option",
        {"dnsConfig": {"options": [{"value": "2"}]}},
        "spec.dnsConfig.options[0]: Required value: must not be empty",
    ),
    (
        "hostAliases-ip",
        {"hostAliases": [{"ip": "nowhere", "hostnames": ["a.local"]}]},
        'spec.hostAliases[0].ip: Invalid value: "nowhere": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)',
    ),
    (
        "hostAliases-hostname",
        {"hostAliases": [{"ip": "10.0.0.1", "hostnames": ["Bad_Host"]}]},
        f'spec.hostAliases[0].hostnames[0]: Invalid value: "Bad_Host": {SUBDOMAIN}',
    ),
    (
        "readinessGates",
        {"readinessGates": [{"conditionType": "bad type"}]},
        f'spec.readinessGates[0].conditionType: Invalid value: "bad type": {LABEL_KEY_REGEX}',
    ),
    (
        "schedulingGates",
        {"schedulingGates": [{"name": "example.com/gate"}] * 2},
        'spec.schedulingGates[1]: Duplicate value: "example.com/gate"',
    ),
    ("nodeName", {"nodeName": "Node_1"}, f'spec.nodeName: Invalid value: "Node_1": {SUBDOMAIN}'),
    (
        "os-name",
        {"os": {"name": "plan9"}},
        'spec.os: Unsupported value: "plan9": supported values: "linux", "windows"',
    ),
    (
        "windows-runAsUser",
        {"os": {"name": "windows"}, "securityContext": {"runAsUser": 1000}},
        "spec.securityContext.runAsUser: Forbidden: cannot be set for a windows pod",
    ),
    (
        "windows-container",
        {"os": {"name": "windows"}, "container": {"securityContext": {"privileged": False}}},
        "spec.containers[0].securityContext.privileged: Forbidden: cannot be set for a windows pod",
    ),
    (
        "linux-windowsOptions",
        {
            "os": {"name": "linux"},
            "container": {"securityContext": {"windowsOptions": {"runAsUserName": "u"}}},
        },
        "spec.containers[0].securityContext.windowsOptions: Forbidden: windows options cannot be set for a linux pod",
    ),
]


@pytest.mark.parametrize(
    ("extras", "message"), [c[1:] for c in INVALID], ids=[c[0] for c in INVALID]
)
def test_invalid_pod_is_refused(server: Server, extras: dict[str, Any], message: str) -> None:
    name = f"bad-{next(_names)}"
    extras = copy.deepcopy(extras)
    code, status = server.request("POST", PODS, pod(name, extras.pop("container", None), **extras))
    assert (code, status.get("reason"), status.get("message")) == (
        422,
        "Invalid",
        f'Pod "{name}" is invalid: {message}',
    )
    assert server.request("GET", f"{PODS}/{name}")[0] == 404


def test_template_priority_class_and_overhead(server: Server) -> None:
    """A pod template's priorityClassName and overhead (a Pod's would meet the Priority and
    RuntimeClass admission plugins first)."""
    template = {
        "metadata": {"labels": {"app": "x"}},
        "spec": {"containers": [CTR], "priorityClassName": "Top", "overhead": {"cpu": "-1"}},
    }
    body = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d"},
        "spec": {"selector": {"matchLabels": {"app": "x"}}, "template": template},
    }
    code, status = server.request("POST", "/apis/apps/v1/namespaces/{ns}/deployments", body)
    assert (code, status.get("message")) == (
        422,
        'Deployment.apps "d" is invalid: ['
        f'spec.template.spec.priorityClassName: Invalid value: "Top": {SUBDOMAIN}, '
        'spec.template.spec.overhead.limits[cpu]: Invalid value: "-1": must be greater than or equal to 0]',
    )


VALID_SPEC: dict[str, Any] = {
    "securityContext": {
        "runAsUser": 1000,
        "runAsGroup": 3000,
        "fsGroup": 2000,
        "supplementalGroups": [4000],
        "fsGroupChangePolicy": "OnRootMismatch",
        "sysctls": [
            {"name": "kernel.shm_rmid_forced", "value": "0"},
            {"name": "net/ipv4/ip_local_port_range", "value": "1024 65535"},
        ],
        "seccompProfile": {"type": "Localhost", "localhostProfile": "profiles/audit.json"},
        "appArmorProfile": {"type": "RuntimeDefault"},
        "seLinuxOptions": {"level": "s0:c123,c456"},
    },
    "affinity": {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "cpus", "operator": "Gt", "values": ["2"]}]},
                    {
                        "matchFields": [
                            {"key": "metadata.name", "operator": "In", "values": ["node-1"]}
                        ]
                    },
                ]
            },
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 100,
                    "preference": {"matchExpressions": [{"key": "zone", "operator": "Exists"}]},
                }
            ],
        },
        "podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "topologyKey": "zone",
                    "labelSelector": SEL,
                    "namespaces": ["default"],
                    "matchLabelKeys": ["tier"],
                }
            ]
        },
        "podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 1,
                    "podAffinityTerm": {
                        "topologyKey": "kubernetes.io/hostname",
                        "labelSelector": SEL,
                        "namespaceSelector": {},
                    },
                }
            ]
        },
    },
    "tolerations": [
        {"key": "gpu", "operator": "Equal", "value": "a100", "effect": "NoSchedule"},
        {"operator": "Exists"},
        {
            "key": "node.kubernetes.io/unreachable",
            "operator": "Exists",
            "effect": "NoExecute",
            "tolerationSeconds": 60,
        },
    ],
    "topologySpreadConstraints": [
        spread(
            minDomains=2,
            labelSelector=SEL,
            matchLabelKeys=["pod-template-hash"],
            nodeAffinityPolicy="Honor",
            nodeTaintsPolicy="Ignore",
        ),
        spread(topologyKey="kubernetes.io/hostname", whenUnsatisfiable="ScheduleAnyway"),
    ],
    "dnsPolicy": "None",
    "dnsConfig": {
        "nameservers": ["10.0.0.10", "2001:db8::1"],
        "searches": ["svc.cluster.local.", "_tcp.example.com"],
        "options": [{"name": "ndots", "value": "2"}],
    },
    "hostAliases": [{"ip": "10.0.0.1", "hostnames": ["db.local", "cache"]}],
    "readinessGates": [{"conditionType": "example.com/ready"}],
    "schedulingGates": [{"name": "example.com/quota"}],
    "os": {"name": "linux"},
    "hostname": "web-0",
    "subdomain": "web",
}


def test_valid_pod_with_each_feature_is_accepted(server: Server) -> None:
    container = {
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "capabilities": {"add": ["NET_BIND_SERVICE"], "drop": ["ALL"]},
            "runAsNonRoot": True,
            "procMount": "Default",
            "seccompProfile": {"type": "RuntimeDefault"},
        }
    }
    code, created = server.request("POST", PODS, pod("full", container, **VALID_SPEC))
    assert code == 201, created
    windows = pod(
        "win",
        {
            "securityContext": {
                "windowsOptions": {"runAsUserName": "DOMAIN\\user", "hostProcess": False}
            }
        },
        os={"name": "windows"},
    )
    code, created = server.request("POST", PODS, windows)
    assert code == 201, created


# -- updates ---------------------------------------------------------------------------------

UPDATABLE = "pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)"


def _created(server: Server, body: dict[str, Any]) -> dict[str, Any]:
    code, created = server.request("POST", PODS, body)
    assert code == 201, created
    return created


def _put(server: Server, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    return server.request("PUT", f"{PODS}/{body['metadata']['name']}", body)


def _refused(server: Server, body: dict[str, Any], message: str) -> None:
    name = body["metadata"]["name"]
    before = server.request("GET", f"{PODS}/{name}")[1]
    code, status = _put(server, body)
    assert (code, status.get("reason"), status.get("message")) == (
        422,
        "Invalid",
        f'Pod "{name}" is invalid: {message}',
    )
    after = server.request("GET", f"{PODS}/{name}")[1]
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]  # type: ignore[index]


def test_update_of_a_container_command_shows_kubes_diff(server: Server) -> None:
    changed = _created(server, pod("cmd"))
    changed["spec"]["containers"][0]["command"] = ["sleep", "3600"]
    _refused(
        server,
        changed,
        f"spec: Forbidden: {UPDATABLE}\n"
        "  core.PodSpec{\n"
        "  \tVolumes:        nil,\n"
        "  \tInitContainers: nil,\n"
        "  \tContainers: []core.Container{\n"
        "  \t\t{\n"
        '  \t\t\tName:       "c",\n'
        '  \t\t\tImage:      "nginx",\n'
        "- \t\t\tCommand:    nil,\n"
        '+ \t\t\tCommand:    []string{"sleep", "3600"},\n'
        "  \t\t\tArgs:       nil,\n"
        '  \t\t\tWorkingDir: "",\n'
        "  \t\t\t... // 20 identical fields\n"
        "  \t\t},\n"
        "  \t},\n"
        "  \tEphemeralContainers: nil,\n"
        '  \tRestartPolicy:       "Always",\n'
        "  \t... // 31 identical fields\n"
        "  }\n",
    )


def test_update_of_the_restart_policy_shows_kubes_diff(server: Server) -> None:
    changed = _created(server, pod("restart"))
    changed["spec"]["restartPolicy"] = "Never"
    _refused(
        server,
        changed,
        f"spec: Forbidden: {UPDATABLE}\n"
        "  core.PodSpec{\n"
        "  \t... // 2 identical fields\n"
        '  \tContainers:                    {{Name: "c", Image: "nginx", TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: "File", ...}},\n'
        "  \tEphemeralContainers:           nil,\n"
        '- \tRestartPolicy:                 "Always",\n'
        '+ \tRestartPolicy:                 "Never",\n'
        "  \tTerminationGracePeriodSeconds: &30,\n"
        "  \tActiveDeadlineSeconds:         nil,\n"
        "  \t... // 29 identical fields\n"
        "  }\n",
    )


def test_update_of_a_container_list_is_refused(server: Server) -> None:
    changed = _created(server, pod("two"))
    changed["spec"]["containers"].append({"name": "d", "image": "busybox"})
    _refused(
        server, changed, "spec.containers: Forbidden: pod updates may not add or remove containers"
    )


def test_mutable_fields_and_their_rules(server: Server) -> None:
    current = _created(server, pod("mut", tolerations=[{"key": "a", "operator": "Exists"}]))
    # images, a new deadline, an added toleration, labels: accepted
    current["spec"]["containers"][0]["image"] = "nginx:1.27"
    current["spec"]["activeDeadlineSeconds"] = 60
    current["spec"]["tolerations"].append({"key": "b", "operator": "Exists"})
    current["metadata"]["labels"] = {"app": "x"}
    code, current = _put(server, current)
    assert code == 200, current
    assert current["spec"]["containers"][0]["image"] == "nginx:1.27"
    raised = copy.deepcopy(current)
    raised["spec"]["activeDeadlineSeconds"] = 100
    _refused(
        server,
        raised,
        "spec.activeDeadlineSeconds: Invalid value: 100: must be less than or equal to previous value",
    )
    unset = copy.deepcopy(current)
    del unset["spec"]["activeDeadlineSeconds"]
    _refused(
        server,
        unset,
        "spec.activeDeadlineSeconds: Invalid value: null: must not update from a positive integer to nil value",
    )
    modified = copy.deepcopy(current)
    modified["spec"]["tolerations"][0]["effect"] = "NoSchedule"
    _refused(
        server,
        modified,
        "spec.tolerations: Forbidden: existing toleration can not be modified except its tolerationSeconds",
    )
    blank = copy.deepcopy(current)
    blank["spec"]["containers"][0]["image"] = " nginx"
    _refused(
        server,
        blank,
        'spec.containers[0].image: Invalid value: " nginx": must not have leading or trailing whitespace',
    )
    lowered = copy.deepcopy(current)
    lowered["spec"]["activeDeadlineSeconds"] = 30
    code, body = _put(server, lowered)
    assert code == 200, body


def test_scheduling_gates_may_only_be_removed(server: Server) -> None:
    gated = _created(
        server,
        pod("gated", schedulingGates=[{"name": "example.com/a"}], nodeSelector={"zone": "a"}),
    )
    added = copy.deepcopy(gated)
    added["spec"]["schedulingGates"].append({"name": "example.com/b"})
    _refused(
        server,
        added,
        "spec.schedulingGates[1].name: Forbidden: only deletion is allowed, but found new scheduling gate 'example.com/b'",
    )
    mutated = copy.deepcopy(gated)
    mutated["spec"]["nodeSelector"] = {"zone": "b"}
    _refused(
        server,
        mutated,
        'spec.nodeSelector: Invalid value: {"zone":"b"}: only additions to spec.nodeSelector are allowed (no mutations or deletions)',
    )
    gated["spec"]["nodeSelector"]["disk"] = "ssd"
    gated["spec"]["schedulingGates"] = []
    code, body = _put(server, gated)
    assert code == 200, body
    assert body["spec"]["nodeSelector"] == {"zone": "a", "disk": "ssd"}


def test_match_label_keys_join_the_selector_of_a_new_pod(server: Server) -> None:
    """kube's pod strategy adds ``key In (the pod's value)`` for each matchLabelKeys key the pod
    has a label for (NotIn for mismatchLabelKeys), before validation."""
    term = {
        "topologyKey": "zone",
        "labelSelector": {"matchLabels": {"app": "x"}},
        "matchLabelKeys": ["tier"],
        "mismatchLabelKeys": ["team"],
    }
    body = pod(
        "joined",
        affinity={"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}},
    )
    body["metadata"]["labels"] = {"app": "x", "tier": "web", "team": "a"}
    created = _created(server, body)
    selector = created["spec"]["affinity"]["podAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ][0]["labelSelector"]
    assert selector == {
        "matchLabels": {"app": "x"},
        "matchExpressions": [
            {"key": "tier", "operator": "In", "values": ["web"]},
            {"key": "team", "operator": "NotIn", "values": ["a"]},
        ],
    }
    term = {
        "topologyKey": "zone",
        "labelSelector": {"matchLabels": {"tier": "web"}},
        "matchLabelKeys": ["tier"],
    }
    body = pod(
        "twice",
        affinity={"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}},
    )
    body["metadata"]["labels"] = {"tier": "web"}
    code, status = server.request("POST", PODS, body)
    assert (code, status.get("message")) == (
        422,
        f'Pod "twice" is invalid: {POD_TERM}[0]: Invalid value: "tier": exists in both matchLabelKeys and labelSelector',
    )
