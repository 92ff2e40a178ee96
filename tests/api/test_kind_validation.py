# ruff: noqa: E501  (kube's expected texts are kept whole, one per line)
"""Workload, batch, networking and RBAC validation (kube-apiserver 1.37's texts), unit level."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kubelite.api.kinds.apps import validation as workloads
from kubelite.api.kinds.batch import validation as batch
from kubelite.api.kinds.networking import validation as networking
from kubelite.api.kinds.rbac import validation as rbac

Obj = dict[str, Any]


POD = {"containers": [{"name": "c", "image": "nginx"}]}


def deployment(**spec: Any) -> Obj:
    base: Obj = {
        "replicas": 1,
        "selector": {"matchLabels": {"app": "x"}},
        "template": {
            "metadata": {"labels": {"app": "x"}},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]},
        },
    }
    base.update(spec)
    return {"metadata": {"name": "d", "namespace": "default"}, "spec": base}


def texts(causes: list[Any]) -> list[str]:
    return [f"{c.field}: {c.message}" for c in causes]


WORKLOADS = [
    (deployment(), []),
    (
        deployment(template={"metadata": {"labels": {"app": "y"}}, "spec": POD}),
        [
            'spec.template.metadata.labels: Invalid value: {"app":"y"}: '
            "`selector` does not match template `labels`"
        ],
    ),
    (
        deployment(selector=None),
        [
            "spec.selector: Required value",
            'spec.template.metadata.labels: Invalid value: {"app":"x"}: '
            "`selector` does not match template `labels`",
        ],
    ),
    (
        deployment(selector={}),
        ["spec.selector: Invalid value: {}: empty selector is invalid for deployment"],
    ),
    (
        deployment(replicas=-1),
        ["spec.replicas: Invalid value: -1: must be greater than or equal to 0"],
    ),
    (
        deployment(
            strategy={
                "type": "RollingUpdate",
                "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 0},
            }
        ),
        [
            "spec.strategy.rollingUpdate.maxUnavailable: Invalid value: 0: may not be 0 when `maxSurge` is 0"
        ],
    ),
    (
        deployment(strategy={"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "110%"}}),
        [
            'spec.strategy.rollingUpdate.maxUnavailable: Invalid value: "110%": must not be greater than 100%'
        ],
    ),
    (
        deployment(strategy={"type": "Recreate", "rollingUpdate": {}}),
        [
            "spec.strategy.rollingUpdate: Forbidden: may not be specified when strategy `type` is 'Recreate'"
        ],
    ),
    (
        deployment(strategy={"type": "Blue"}),
        [
            'spec.strategy: Unsupported value: {"Type":"Blue","RollingUpdate":null}: '
            'supported values: "Recreate", "RollingUpdate"'
        ],
    ),
    (
        deployment(
            template={
                "metadata": {"labels": {"app": "x"}},
                "spec": {**POD, "restartPolicy": "Never"},
            }
        ),
        [
            'spec.template.spec.restartPolicy: Unsupported value: "Never": supported values: "Always"'
        ],
    ),
    (
        deployment(progressDeadlineSeconds=5, minReadySeconds=10),
        ["spec.progressDeadlineSeconds: Invalid value: 5: must be greater than minReadySeconds"],
    ),
    (
        deployment(selector={"matchExpressions": [{"key": "app", "operator": "Is"}]}),
        [
            'spec.selector.matchExpressions[0].operator: Invalid value: "Is": not a valid selector operator',
            'spec.selector: Invalid value: {"matchExpressions":[{"key":"app","operator":"Is"}]}: '
            "invalid label selector",
        ],
    ),
]


@pytest.mark.parametrize(("obj", "expected"), WORKLOADS)
def test_deployment(obj: Obj, expected: list[str]) -> None:
    assert texts(workloads.validate_deployment(obj, None)) == expected


def test_selector_immutable_on_update() -> None:
    old = deployment()
    new = deployment(
        selector={"matchLabels": {"app": "x", "t": "1"}},
        template={"metadata": {"labels": {"app": "x", "t": "1"}}, "spec": POD},
    )
    assert texts(workloads.validate_deployment(new, old)) == [
        'spec.selector: Invalid value: {"matchLabels":{"app":"x","t":"1"}}: field is immutable'
    ]
    assert texts(workloads.validate_replicaset(new, old))[-1].endswith("field is immutable")
    assert workloads.validate_deployment(copy.deepcopy(old), old) == []


def test_daemonset_and_statefulset() -> None:
    ds = deployment()
    del ds["spec"]["replicas"]
    ds["spec"]["updateStrategy"] = {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 0},
    }
    assert texts(workloads.validate_daemonset(ds, None)) == [
        "spec.updateStrategy.rollingUpdate.maxUnavailable: Required value: cannot be 0 when maxSurge is 0"
    ]
    ds["spec"]["updateStrategy"]["rollingUpdate"] = {"maxUnavailable": 1, "maxSurge": 1}
    assert texts(workloads.validate_daemonset(ds, None)) == [
        "spec.updateStrategy.rollingUpdate.maxSurge: Invalid value: 1: "
        "may not be set when maxUnavailable is non-zero"
    ]
    ss = deployment(serviceName="s", podManagementPolicy="Random")
    assert texts(workloads.validate_statefulset(ss, None)) == [
        "spec.podManagementPolicy: Invalid value: \"Random\": must be 'OrderedReady' or 'Parallel'"
    ]
    ss = deployment(serviceName="s")
    changed = copy.deepcopy(ss)
    changed["spec"]["serviceName"] = "t"
    assert texts(workloads.validate_statefulset(changed, ss)) == [
        "spec: Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', "
        "'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' "
        "are forbidden"
    ]


def job(**spec: Any) -> Obj:
    base: Obj = {
        "manualSelector": True,
        "selector": {"matchLabels": {"app": "j"}},
        "template": {
            "metadata": {"labels": {"app": "j"}},
            "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]},
        },
    }
    base.update(spec)
    return {"metadata": {"name": "j", "namespace": "default", "uid": "u1"}, "spec": base}


def test_job() -> None:
    assert batch.validate_job(job(), None) == []
    bad = job(parallelism=-1, backoffLimit=-2)
    assert texts(batch.validate_job(bad, None)) == [
        "spec.parallelism: Invalid value: -1: must be greater than or equal to 0",
        "spec.backoffLimit: Invalid value: -2: must be greater than or equal to 0",
    ]
    always = job()
    always["spec"]["template"]["spec"]["restartPolicy"] = "Always"
    assert texts(batch.validate_job(always, None)) == [
        'spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never"'
    ]
    other = job()
    other["spec"]["template"]["spec"]["restartPolicy"] = "Sometimes"
    # the pod spec's own rule first (ValidatePodTemplateSpec), then the Job's
    assert texts(batch.validate_job(other, None))[-1] == (
        'spec.template.spec.restartPolicy: Unsupported value: "Sometimes": '
        'supported values: "OnFailure", "Never"'
    )
    updated = job()
    updated["spec"]["template"]["spec"]["containers"][0]["image"] = "busybox:2"
    assert texts(batch.validate_job(updated, job()))[0].startswith("spec.template: Invalid value: ")
    assert texts(batch.validate_job(updated, job()))[0].endswith(": field is immutable")


def test_job_generated_selector() -> None:
    obj = job(
        manualSelector=None, selector={"matchLabels": {"batch.kubernetes.io/controller-uid": "u1"}}
    )
    found = texts(batch.validate_job(obj, None))
    assert found[0] == "spec.template.metadata.labels[controller-uid]: Required value: must be 'u1'"


@pytest.mark.parametrize(
    ("schedule", "message"),
    [
        ("bad", "expected exactly 5 fields, found 1: [bad]"),
        ("* * * *", "expected exactly 5 fields, found 4: [* * * *]"),
        ("61 * * * *", "end of range (61) above maximum (59): 61"),
        ("* * 0 * *", "beginning of range (0) below minimum (1): 0"),
        ("x * * * *", 'failed to parse int from x: strconv.Atoi: parsing "x": invalid syntax'),
        ("5-1 * * * *", "beginning of range (5) beyond end of range (1): 5-1"),
        ("*/0 * * * *", "step of range should be a positive number: */0"),
        ("1-2-3 * * * *", "too many hyphens: 1-2-3"),
        ("@sometimes", "unrecognized descriptor: @sometimes"),
        ("@every x", 'failed to parse duration @every x: time: invalid duration "x"'),
    ],
)
def test_cron_errors(schedule: str, message: str) -> None:
    with pytest.raises(batch.CronError) as err:
        batch.parse_schedule(schedule)
    assert str(err.value) == message


@pytest.mark.parametrize(
    "schedule", ["*/5 * * * *", "0 0 1 jan mon", "@hourly", "@every 1h30m", "0 9-17/2 * * 1-5"]
)
def test_cron_valid(schedule: str) -> None:
    batch.parse_schedule(schedule)


def cronjob(**spec: Any) -> Obj:
    base: Obj = {
        "schedule": "*/1 * * * *",
        "jobTemplate": {
            "spec": {
                "template": {
                    "spec": {
                        "restartPolicy": "OnFailure",
                        "containers": [{"name": "c", "image": "b"}],
                    }
                }
            }
        },
    }
    base.update(spec)
    return {"metadata": {"name": "cj", "namespace": "default"}, "spec": base}


def test_cronjob() -> None:
    assert batch.validate_cronjob(cronjob(), None) == []
    assert texts(batch.validate_cronjob(cronjob(schedule="bad"), None)) == [
        'spec.schedule: Invalid value: "bad": expected exactly 5 fields, found 1: [bad]'
    ]
    assert texts(batch.validate_cronjob(cronjob(concurrencyPolicy="Sometimes"), None)) == [
        'spec.concurrencyPolicy: Unsupported value: "Sometimes": '
        'supported values: "Allow", "Forbid", "Replace"'
    ]
    assert texts(batch.validate_cronjob(cronjob(timeZone="Mars/Base"), None)) == [
        'spec.timeZone: Invalid value: "Mars/Base": unknown time zone Mars/Base'
    ]
    assert batch.validate_cronjob(cronjob(timeZone="Europe/Paris"), None) == []
    assert texts(batch.validate_cronjob(cronjob(schedule="TZ=UTC 0 * * * *"), None)) == [
        'spec.schedule: Invalid value: "TZ=UTC 0 * * * *": '
        "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"
    ]


def ingress(**spec: Any) -> Obj:
    return {"metadata": {"name": "i", "namespace": "default"}, "spec": spec}


def path(p: str = "/", path_type: Any = "Prefix", backend: Any = None) -> Obj:
    out: Obj = {
        "path": p,
        "backend": backend or {"service": {"name": "web", "port": {"number": 80}}},
    }
    if path_type is not None:
        out["pathType"] = path_type
    return out


INGRESSES = [
    (ingress(rules=[{"host": "a.example.com", "http": {"paths": [path()]}}]), []),
    (
        ingress(),
        ["spec: Invalid value: null: either `defaultBackend` or `rules` must be specified"],
    ),
    (
        ingress(rules=[{"http": {"paths": [path(path_type=None)]}}]),
        ["spec.rules[0].http.paths[0].pathType: Required value: pathType must be specified"],
    ),
    (
        ingress(rules=[{"http": {"paths": [path("api")]}}]),
        ['spec.rules[0].http.paths[0].path: Invalid value: "api": must be an absolute path'],
    ),
    (
        ingress(rules=[{"http": {"paths": [path(path_type="Regex")]}}]),
        [
            'spec.rules[0].http.paths[0].pathType: Unsupported value: "Regex": '
            'supported values: "Exact", "ImplementationSpecific", "Prefix"'
        ],
    ),
    (
        ingress(rules=[{"host": "1.2.3.4", "http": {"paths": [path()]}}]),
        ['spec.rules[0].host: Invalid value: "1.2.3.4": must be a DNS name, not an IP address'],
    ),
    (
        ingress(rules=[{"host": "*.example.com", "http": {"paths": [path()]}}]),
        [],
    ),
    (
        ingress(rules=[{"host": "a.*.com", "http": {"paths": [path()]}}]),
        [f'spec.rules[0].host: Invalid value: "a.*.com": {networking.WILDCARD_MESSAGE}'],
    ),
    (
        ingress(
            rules=[{"http": {"paths": [path(backend={"service": {"name": "web", "port": {}}})]}}]
        ),
        ["spec.rules[0].http.paths[0].backend: Required value: port name or number is required"],
    ),
    (
        ingress(defaultBackend={"service": {"name": "web", "port": {"number": 70000}}}),
        [
            "spec.defaultBackend.service.port.number: Invalid value: 70000: "
            "must be between 1 and 65535, inclusive"
        ],
    ),
]


@pytest.mark.parametrize(("obj", "expected"), INGRESSES)
def test_ingress(obj: Obj, expected: list[str]) -> None:
    assert texts(networking.validate_ingress(obj, None)) == expected


def test_network_policy() -> None:
    ok = {
        "spec": {
            "podSelector": {},
            "policyTypes": ["Ingress"],
            "ingress": [{"from": [{"podSelector": {}}]}],
        }
    }
    assert networking.validate_network_policy(ok, None) == []
    bad = {
        "spec": {
            "podSelector": {},
            "policyTypes": ["Sideways"],
            "ingress": [
                {
                    "ports": [{"protocol": "ICMP", "port": 0}],
                    "from": [{}, {"ipBlock": {"cidr": "10.0.0.0/8", "except": ["11.0.0.0/16"]}}],
                }
            ],
        }
    }
    assert texts(networking.validate_network_policy(bad, None)) == [
        'spec.ingress[0].ports[0].protocol: Unsupported value: "ICMP": supported values: "TCP", "UDP", "SCTP"',
        "spec.ingress[0].ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive",
        "spec.ingress[0].from[0]: Required value: must specify a peer",
        'spec.ingress[0].from[1].ipBlock.except[0]: Invalid value: "11.0.0.0/16": must be a strict subset of `cidr`',
        'spec.policyTypes[0]: Unsupported value: "Sideways": supported values: "Ingress", "Egress"',
    ]


def test_rbac() -> None:
    role = {"rules": [{"resources": ["pods"]}, {"verbs": ["get"], "nonResourceURLs": ["/healthz"]}]}
    assert texts(rbac.validate_role(role, None)) == [
        "rules[0].verbs: Required value: verbs must contain at least one value",
        "rules[0].apiGroups: Required value: resource rules must supply at least one api group",
        'rules[1].nonResourceURLs: Invalid value: ["/healthz"]: namespaced rules cannot apply to non-resource URLs',
    ]
    assert rbac.validate_cluster_role({"rules": [role["rules"][1]]}, None) == []
    binding = {
        "roleRef": {"apiGroup": rbac.GROUP, "kind": "Role", "name": "r"},
        "subjects": [{"kind": "ServiceAccount", "name": "default"}, {"kind": "Robot", "name": "x"}],
    }
    assert texts(rbac.validate_role_binding(binding, None)) == [
        'subjects[1].kind: Unsupported value: "Robot": supported values: "ServiceAccount", "User", "Group"'
    ]
    assert texts(rbac.validate_cluster_role_binding(binding, None)) == [
        'roleRef.kind: Unsupported value: "Role": supported values: "ClusterRole"',
        "subjects[0].namespace: Required value",
        'subjects[1].kind: Unsupported value: "Robot": supported values: "ServiceAccount", "User", "Group"',
    ]
    changed = copy.deepcopy(binding)
    changed["roleRef"]["name"] = "other"
    assert texts(rbac.validate_role_binding(changed, binding))[-1] == (
        'roleRef: Invalid value: {"APIGroup":"rbac.authorization.k8s.io","Kind":"Role","Name":"other"}: '
        "cannot change roleRef"
    )
