"""The built-in kinds' defaulters, called directly, against the expectations of kube's own
defaults tests (pkg/apis/{core,apps,batch,networking,autoscaling,rbac}/v1*/defaults_test.go)
and what kube-apiserver 1.37 returns for a minimal object."""

from __future__ import annotations

import base64
import copy
from typing import Any

import pytest

from kubelite.api.catalogue import load_builtin_catalogue
from kubelite.api.kinds import RESOURCES, BuiltinKinds
from kubelite.api.kinds.core.poddefaults import image_tag, pod_qos

Obj = dict[str, Any]


CATALOGUE = load_builtin_catalogue()
KINDS = BuiltinKinds(CATALOGUE)
#: (group, Kind) -> plural, for the kinds the table lists
PLURALS = {(info.group, info.kind): info.plural for info in CATALOGUE if info.builtin}


def defaulters(group: str, kind: str) -> tuple[object, ...]:
    return tuple(getattr(KINDS.strategy(group, PLURALS[group, kind]), "defaulters", ()))


def defaulted(group: str, kind: str, obj: Obj) -> Obj:
    out = copy.deepcopy(obj)
    for defaulter in defaulters(group, kind):
        defaulter(out)  # type: ignore[operator]
    return out


DEFAULTED_KINDS = sorted(
    (group, kind)
    for (group, kind), plural in PLURALS.items()
    if any(r.key == (group, plural) and getattr(r.strategy, "defaulters", ()) for r in RESOURCES)
)


CONTAINER = {"name": "c", "image": "nginx:1.27"}
DEFAULTED_CONTAINER = {
    "name": "c",
    "image": "nginx:1.27",
    "imagePullPolicy": "IfNotPresent",
    "terminationMessagePath": "/dev/termination-log",
    "terminationMessagePolicy": "File",
    "resources": {},
}
TEMPLATE_SPEC = {
    "containers": [{**DEFAULTED_CONTAINER}],
    "dnsPolicy": "ClusterFirst",
    "restartPolicy": "Always",
    "schedulerName": "default-scheduler",
    "securityContext": {},
    "terminationGracePeriodSeconds": 30,
}


def template_spec() -> Obj:
    spec = copy.deepcopy(TEMPLATE_SPEC)
    del spec["containers"][0]["resources"]
    return spec


@pytest.mark.parametrize(
    ("image", "policy"),
    [
        ("nginx", "Always"),
        ("nginx:latest", "Always"),
        ("docker.io/library/nginx:latest", "Always"),
        ("registry:5000/team/app", "Always"),
        ("nginx:1.27", "IfNotPresent"),
        ("registry:5000/team/app:v1", "IfNotPresent"),
        ("nginx@sha256:" + "a" * 64, "IfNotPresent"),
        ("nginx:latest@sha256:" + "a" * 64, "Always"),
        ("Nginx", "IfNotPresent"),  # does not parse
        ("", "IfNotPresent"),
    ],
)
def test_image_pull_policy_by_tag(image: str, policy: str) -> None:
    pod = defaulted("", "Pod", {"spec": {"containers": [{"name": "c", "image": image}]}})
    assert pod["spec"]["containers"][0]["imagePullPolicy"] == policy
    assert image_tag(image) in ("latest", "") or policy == "IfNotPresent"


def test_minimal_pod() -> None:
    pod = defaulted("", "Pod", {"metadata": {"name": "p"}, "spec": {"containers": [CONTAINER]}})
    spec = template_spec()
    spec.update(
        enableServiceLinks=True,
        serviceAccount="default",
        serviceAccountName="default",
        # priority and preemptionPolicy are the Priority admission plugin's (test_priority.py)
        tolerations=[
            {
                "key": "node.kubernetes.io/not-ready",
                "operator": "Exists",
                "effect": "NoExecute",
                "tolerationSeconds": 300,
            },
            {
                "key": "node.kubernetes.io/unreachable",
                "operator": "Exists",
                "effect": "NoExecute",
                "tolerationSeconds": 300,
            },
        ],
    )
    assert pod["spec"] == spec


def test_pod_keeps_what_is_given() -> None:
    given = {
        "containers": [
            {
                "name": "c",
                "image": "nginx",
                "imagePullPolicy": "Never",
                "terminationMessagePath": "/x",
                "terminationMessagePolicy": "FallbackToLogsOnError",
            }
        ],
        "dnsPolicy": "Default",
        "restartPolicy": "Never",
        "schedulerName": "mine",
        "securityContext": {"runAsUser": 1},
        "terminationGracePeriodSeconds": 0,
        "enableServiceLinks": False,
        "serviceAccountName": "robot",
        "tolerations": [{"operator": "Exists"}],  # tolerates everything: nothing added
    }
    spec = defaulted("", "Pod", {"spec": given})["spec"]
    for key, value in given.items():
        assert spec[key] == value
    assert spec["serviceAccount"] == "robot"


def test_default_tolerations_only_the_missing_one() -> None:
    mine = {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"}
    spec = defaulted("", "Pod", {"spec": {"containers": [CONTAINER], "tolerations": [mine]}})
    assert [t["key"] for t in spec["spec"]["tolerations"]] == [
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unreachable",
    ]
    assert "tolerationSeconds" not in spec["spec"]["tolerations"][0]


def test_pod_requests_default_to_limits_and_host_network_ports() -> None:
    # TestSetDefaultRequestsPod, TestSetDefaultPodSpecHostNetwork
    container = {
        "name": "c",
        "image": "i",
        "resources": {"limits": {"cpu": "100m"}, "requests": {"memory": "1Gi"}},
        "ports": [{"containerPort": 8080}, {"containerPort": 53, "protocol": "UDP"}],
    }
    spec = {"hostNetwork": True, "containers": [container]}
    pod = defaulted("", "Pod", {"spec": spec})
    out = pod["spec"]["containers"][0]
    assert out["resources"]["requests"] == {"memory": "1Gi", "cpu": "100m"}
    assert out["ports"] == [
        {"containerPort": 8080, "hostPort": 8080, "protocol": "TCP"},
        {"containerPort": 53, "hostPort": 53, "protocol": "UDP"},
    ]
    # a template gets neither (SetDefaults_Pod is the Pod's alone)
    deployment = defaulted(
        "apps", "Deployment", {"spec": {"template": {"spec": copy.deepcopy(spec)}}}
    )
    out = deployment["spec"]["template"]["spec"]["containers"][0]
    assert out["resources"]["requests"] == {"memory": "1Gi"}
    assert "hostPort" not in out["ports"][0]
    assert "enableServiceLinks" not in deployment["spec"]["template"]["spec"]


def test_probes_env_and_lifecycle() -> None:
    container = {
        "name": "c",
        "image": "i",
        "livenessProbe": {"httpGet": {"port": 80}},
        "readinessProbe": {"grpc": {"port": 9000}, "periodSeconds": 5},
        "startupProbe": {"exec": {"command": ["true"]}},
        "env": [{"name": "N", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
        "lifecycle": {"preStop": {"httpGet": {"port": 80, "path": "/stop"}}},
    }
    out = defaulted("", "Pod", {"spec": {"containers": [container]}})["spec"]["containers"][0]
    common = {"timeoutSeconds": 1, "successThreshold": 1, "failureThreshold": 3}
    assert out["livenessProbe"] == {
        "httpGet": {"port": 80, "path": "/", "scheme": "HTTP"},
        "periodSeconds": 10,
        **common,
    }
    assert out["readinessProbe"] == {
        "grpc": {"port": 9000, "service": ""},
        "periodSeconds": 5,
        **common,
    }
    assert out["startupProbe"]["periodSeconds"] == 10
    assert out["env"][0]["valueFrom"]["fieldRef"] == {
        "fieldPath": "metadata.name",
        "apiVersion": "v1",
    }
    assert out["lifecycle"]["preStop"]["httpGet"] == {"port": 80, "path": "/stop", "scheme": "HTTP"}


def test_volumes() -> None:
    # TestSetDefaultVolume, TestSetDefaultSecretVolumeSource, TestSetDefaultRBD...
    volumes = [
        {"name": "empty"},
        {"name": "s", "secret": {"secretName": "x"}},
        {"name": "cm", "configMap": {"name": "x"}},
        {"name": "d", "downwardAPI": {"items": [{"path": "p", "fieldRef": {"fieldPath": "f"}}]}},
        {"name": "p", "projected": {"sources": [{"serviceAccountToken": {"path": "t"}}]}},
        {"name": "h", "hostPath": {"path": "/tmp"}},
        {"name": "r", "rbd": {"monitors": ["m"], "image": "i"}},
        {"name": "i", "iscsi": {"targetPortal": "t", "iqn": "q", "lun": 0}},
        {"name": "a", "azureDisk": {"diskName": "d", "diskURI": "u"}},
        {"name": "e", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}},
    ]
    spec = defaulted("", "Pod", {"spec": {"containers": [CONTAINER], "volumes": volumes}})
    out = {v["name"]: v for v in spec["spec"]["volumes"]}
    assert out["empty"] == {"name": "empty", "emptyDir": {}}
    assert out["s"]["secret"]["defaultMode"] == 420
    assert out["cm"]["configMap"]["defaultMode"] == 420
    assert out["d"]["downwardAPI"]["defaultMode"] == 420
    assert out["d"]["downwardAPI"]["items"][0]["fieldRef"]["apiVersion"] == "v1"
    assert out["p"]["projected"] == {
        "defaultMode": 420,
        "sources": [{"serviceAccountToken": {"path": "t", "expirationSeconds": 3600}}],
    }
    assert out["h"]["hostPath"] == {"path": "/tmp", "type": ""}
    assert out["r"]["rbd"] | {} == {
        "monitors": ["m"],
        "image": "i",
        "pool": "rbd",
        "user": "admin",
        "keyring": "/etc/ceph/keyring",
    }
    assert out["i"]["iscsi"]["iscsiInterface"] == "default"
    assert out["a"]["azureDisk"] == {
        "diskName": "d",
        "diskURI": "u",
        "cachingMode": "ReadWrite",
        "kind": "Shared",
        "fsType": "ext4",
        "readOnly": False,
    }
    assert out["e"]["ephemeral"]["volumeClaimTemplate"]["spec"] == {"volumeMode": "Filesystem"}


@pytest.mark.parametrize(
    ("resources", "qos"),
    [
        ([{}], "BestEffort"),
        ([{"requests": {"cpu": "100m"}}], "Burstable"),
        ([{"limits": {"cpu": "1", "memory": "1Gi"}}], "Guaranteed"),  # requests from limits
        (
            [{"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "1000m"}}],
            "Guaranteed",
        ),
        ([{"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "500m"}}], "Burstable"),
        ([{"limits": {"cpu": "1", "memory": "1Gi"}}, {}], "Burstable"),
        ([{"limits": {"cpu": "1"}}], "Burstable"),
        ([{"requests": {"nvidia.com/gpu": "1"}}], "BestEffort"),  # not a QoS resource
    ],
)
def test_qos_class(resources: list[Obj], qos: str) -> None:
    containers = [{"name": f"c{i}", "image": "i", "resources": r} for i, r in enumerate(resources)]
    pod = defaulted("", "Pod", {"spec": {"containers": containers}})
    assert pod_qos(pod) == qos


def test_deployment() -> None:
    # TestSetDefaultDeployment
    template = {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [CONTAINER]}}
    out = defaulted("apps", "Deployment", {"spec": {"template": template}})
    assert out["spec"] == {
        "replicas": 1,
        "strategy": {
            "type": "RollingUpdate",
            "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"},
        },
        "revisionHistoryLimit": 10,
        "progressDeadlineSeconds": 600,
        "template": {"metadata": {"labels": {"a": "b"}}, "spec": template_spec()},
    }
    recreate = defaulted("apps", "Deployment", {"spec": {"strategy": {"type": "Recreate"}}})
    assert recreate["spec"]["strategy"] == {"type": "Recreate"}
    kept = defaulted("apps", "Deployment", {"spec": {"replicas": 0}})
    assert kept["spec"]["replicas"] == 0


def test_replica_set_daemon_set_stateful_set() -> None:
    assert defaulted("apps", "ReplicaSet", {"spec": {}})["spec"] == {"replicas": 1}
    ds = defaulted("apps", "DaemonSet", {"spec": {}})["spec"]
    assert ds == {
        "updateStrategy": {
            "type": "RollingUpdate",
            "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0},
        },
        "revisionHistoryLimit": 10,
    }
    ondelete = defaulted("apps", "DaemonSet", {"spec": {"updateStrategy": {"type": "OnDelete"}}})
    assert ondelete["spec"]["updateStrategy"] == {"type": "OnDelete"}
    claim = {"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"]}}
    sts = defaulted("apps", "StatefulSet", {"spec": {"volumeClaimTemplates": [claim]}})["spec"]
    assert sts == {
        "podManagementPolicy": "OrderedReady",
        "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}},
        "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Retain", "whenScaled": "Retain"},
        "replicas": 1,
        "revisionHistoryLimit": 10,
        "volumeClaimTemplates": [
            {
                "metadata": {"name": "data"},
                "spec": {"accessModes": ["ReadWriteOnce"], "volumeMode": "Filesystem"},
                "status": {"phase": "Pending"},
            }
        ],
    }
    # a RollingUpdate type without rollingUpdate gets no partition (TestSetDefaultStatefulSet)
    given = {"spec": {"updateStrategy": {"type": "RollingUpdate"}}}
    assert defaulted("apps", "StatefulSet", given)["spec"]["updateStrategy"] == {
        "type": "RollingUpdate"
    }


def test_replication_controller() -> None:
    # TestSetDefaultReplicationControllerSelector / Labels / Replicas
    rc = {"spec": {"template": {"metadata": {"labels": {"a": "b"}}, "spec": {}}}}
    out = defaulted("", "ReplicationController", {"metadata": {}, **rc})
    assert out["spec"]["selector"] == {"a": "b"}
    assert out["metadata"]["labels"] == {"a": "b"}
    assert out["spec"]["replicas"] == 1


def test_job() -> None:
    # TestSetDefaultJob: both unset -> 1 and 1; parallelism alone -> completions unset
    job = {
        "metadata": {"name": "pi", "uid": "u-1"},
        "spec": {"template": {"spec": {"containers": [CONTAINER], "restartPolicy": "Never"}}},
    }
    out = defaulted("batch", "Job", job)
    labels = {
        "batch.kubernetes.io/controller-uid": "u-1",
        "batch.kubernetes.io/job-name": "pi",
        "controller-uid": "u-1",
        "job-name": "pi",
    }
    spec = template_spec()
    spec["restartPolicy"] = "Never"
    assert out["spec"] == {
        "completions": 1,
        "parallelism": 1,
        "backoffLimit": 6,
        "completionMode": "NonIndexed",
        "suspend": False,
        "podReplacementPolicy": "TerminatingOrFailed",
        "manualSelector": False,
        "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": "u-1"}},
        "template": {"metadata": {"labels": labels}, "spec": spec},
    }
    assert out["metadata"]["labels"] == labels
    only_parallelism = defaulted("batch", "Job", {"spec": {"parallelism": 3}})["spec"]
    assert "completions" not in only_parallelism
    per_index = defaulted(
        "batch", "Job", {"spec": {"backoffLimitPerIndex": 1, "podFailurePolicy": {"rules": []}}}
    )["spec"]
    assert per_index["backoffLimit"] == 2147483647
    assert per_index["podReplacementPolicy"] == "Failed"
    manual = defaulted(
        "batch",
        "Job",
        {"metadata": {"name": "m", "uid": "u"}, "spec": {"manualSelector": True}},
    )
    assert "selector" not in manual["spec"]


def test_job_pod_failure_policy_pattern_status() -> None:
    policy = {"rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]}
    out = defaulted("batch", "Job", {"spec": {"podFailurePolicy": policy}})
    assert out["spec"]["podFailurePolicy"]["rules"][0]["onPodConditions"] == [
        {"type": "DisruptionTarget", "status": "True"}
    ]


def test_cron_job() -> None:
    # TestSetDefaultCronJob; the job template's spec gets no Job defaults
    given = {
        "spec": {
            "schedule": "* * * * *",
            "jobTemplate": {"spec": {"template": {"spec": {"containers": [CONTAINER]}}}},
        }
    }
    out = defaulted("batch", "CronJob", given)["spec"]
    assert out["concurrencyPolicy"] == "Allow"
    assert out["suspend"] is False
    assert out["successfulJobsHistoryLimit"] == 3
    assert out["failedJobsHistoryLimit"] == 1
    assert out["jobTemplate"]["spec"] == {"template": {"spec": template_spec()}}


def test_secret_string_data() -> None:
    given = {"data": {"a": "eA==", "b": "eQ=="}, "stringData": {"b": "bee", "c": "ü"}}
    out = defaulted("", "Secret", given)
    assert "stringData" not in out
    assert out["data"] == {
        "a": "eA==",
        "b": base64.b64encode(b"bee").decode(),
        "c": base64.b64encode("ü".encode()).decode(),
    }


def test_core_kinds() -> None:
    assert defaulted("", "PersistentVolumeClaim", {"spec": {}}) == {
        "spec": {"volumeMode": "Filesystem"},
        "status": {"phase": "Pending"},
    }
    pv = defaulted("", "PersistentVolume", {"spec": {"hostPath": {"path": "/d"}}})
    assert pv == {
        "spec": {
            "hostPath": {"path": "/d", "type": ""},
            "persistentVolumeReclaimPolicy": "Retain",
            "volumeMode": "Filesystem",
        },
        "status": {"phase": "Pending"},
    }
    ns = defaulted("", "Namespace", {"metadata": {"name": "team"}})
    assert ns["metadata"]["labels"] == {"kubernetes.io/metadata.name": "team"}
    ns = defaulted(
        "", "Namespace", {"metadata": {"name": "t", "labels": {"kubernetes.io/metadata.name": "x"}}}
    )
    assert ns["metadata"]["labels"] == {"kubernetes.io/metadata.name": "t"}
    ep = defaulted("", "Endpoints", {"subsets": [{"ports": [{"port": 80}]}]})
    assert ep["subsets"][0]["ports"] == [{"port": 80, "protocol": "TCP"}]
    node = defaulted("", "Node", {"status": {"capacity": {"cpu": "4"}}})
    assert node["status"]["allocatable"] == {"cpu": "4"}
    # TestSetDefaultLimitRangeItem
    item = {"type": "Container", "max": {"cpu": "100m"}, "min": {"memory": "100Mi"}}
    lr = defaulted("", "LimitRange", {"spec": {"limits": [item]}})["spec"]["limits"][0]
    assert lr["default"] == {"cpu": "100m"}
    assert lr["defaultRequest"] == {"cpu": "100m", "memory": "100Mi"}


def test_network_policy() -> None:
    # TestSetDefaultNetworkPolicy
    assert defaulted("networking.k8s.io", "NetworkPolicy", {"spec": {}})["spec"] == {
        "policyTypes": ["Ingress"]
    }
    given = {"spec": {"ingress": [{"ports": [{"port": 80}]}], "egress": [{}]}}
    out = defaulted("networking.k8s.io", "NetworkPolicy", given)["spec"]
    assert out["policyTypes"] == ["Ingress", "Egress"]
    assert out["ingress"][0]["ports"] == [{"port": 80, "protocol": "TCP"}]
    explicit = defaulted(
        "networking.k8s.io", "NetworkPolicy", {"spec": {"policyTypes": ["Egress"]}}
    )
    assert explicit["spec"]["policyTypes"] == ["Egress"]
    ic = defaulted("networking.k8s.io", "IngressClass", {"spec": {"parameters": {"kind": "K"}}})
    assert ic["spec"]["parameters"]["scope"] == "Cluster"
    assert defaulters("networking.k8s.io", "Ingress") == ()  # nothing at v1


def test_hpa() -> None:
    # TestSetDefaultHPA (v2), TestHorizontalPodAutoscalerAnnotations (behavior)
    out = defaulted("autoscaling", "HorizontalPodAutoscaler", {"apiVersion": "autoscaling/v2"})
    assert out["spec"] == {
        "minReplicas": 1,
        "metrics": [
            {
                "type": "Resource",
                "resource": {
                    "name": "cpu",
                    "target": {"type": "Utilization", "averageUtilization": 80},
                },
            }
        ],
    }
    behavior = {"scaleDown": {"stabilizationWindowSeconds": 60}}
    given = {"apiVersion": "autoscaling/v2", "spec": {"behavior": behavior}}
    out = defaulted("autoscaling", "HorizontalPodAutoscaler", given)
    assert out["spec"]["behavior"] == {
        "scaleUp": {
            "stabilizationWindowSeconds": 0,
            "selectPolicy": "Max",
            "policies": [
                {"type": "Pods", "value": 4, "periodSeconds": 15},
                {"type": "Percent", "value": 100, "periodSeconds": 15},
            ],
        },
        "scaleDown": {
            "stabilizationWindowSeconds": 60,
            "selectPolicy": "Max",
            "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}],
        },
    }
    v1 = defaulted("autoscaling", "HorizontalPodAutoscaler", {"apiVersion": "autoscaling/v1"})
    assert v1["spec"] == {"minReplicas": 1}


def test_rbac_subjects() -> None:
    # TestSetDefaultRoleBinding / Subject
    given = {
        "roleRef": {"kind": "Role", "name": "r"},
        "subjects": [
            {"kind": "User", "name": "u"},
            {"kind": "Group", "name": "g"},
            {"kind": "ServiceAccount", "name": "s", "namespace": "n"},
        ],
    }
    for kind in ("RoleBinding", "ClusterRoleBinding"):
        out = defaulted("rbac.authorization.k8s.io", kind, given)
        assert out["roleRef"]["apiGroup"] == "rbac.authorization.k8s.io"
        # a ServiceAccount's is core's, "", which Go's JSON leaves out
        assert [s.get("apiGroup") for s in out["subjects"]] == [
            "rbac.authorization.k8s.io",
            "rbac.authorization.k8s.io",
            None,
        ]


def test_other_groups() -> None:
    assert defaulted("storage.k8s.io", "StorageClass", {"provisioner": "p"}) == {
        "provisioner": "p",
        "reclaimPolicy": "Delete",
        "volumeBindingMode": "Immediate",
    }
    assert defaulted("scheduling.k8s.io", "PriorityClass", {"value": 1}) == {
        "value": 1,
        "preemptionPolicy": "PreemptLowerPriority",
    }
    webhook = {"name": "w", "clientConfig": {"service": {"name": "s", "namespace": "n"}}}
    webhook["rules"] = [{"operations": ["*"], "apiGroups": ["*"]}]
    out = defaulted(
        "admissionregistration.k8s.io", "MutatingWebhookConfiguration", {"webhooks": [webhook]}
    )["webhooks"][0]
    assert out["failurePolicy"] == "Fail"
    assert out["matchPolicy"] == "Equivalent"
    assert out["namespaceSelector"] == out["objectSelector"] == {}
    assert out["timeoutSeconds"] == 10
    assert out["reinvocationPolicy"] == "Never"
    assert out["rules"][0]["scope"] == "*"
    assert out["clientConfig"]["service"]["port"] == 443
    slice_ = defaulted("discovery.k8s.io", "EndpointSlice", {"ports": [{"port": 80}]})
    assert slice_["ports"] == [{"port": 80, "name": "", "protocol": "TCP"}]


@pytest.mark.parametrize(
    ("group", "kind"), [key for key in DEFAULTED_KINDS if key[1] != "HorizontalPodAutoscaler"]
)
@pytest.mark.parametrize(
    "body",
    [
        {},
        {"spec": None, "metadata": None},
        {"spec": "x", "status": 3},
        {"spec": {"template": [], "containers": "c", "volumes": [1, None]}},
        {"spec": {"template": {"spec": {"containers": [None, "x", {"ports": "p"}]}}}},
        {"stringData": [], "data": 1, "subsets": {}, "webhooks": "w"},
    ],
)
def test_wrong_shapes_never_raise(group: str, kind: str, body: Obj) -> None:
    """Decoding refuses wrong types elsewhere; a defaulter must not fail on them."""
    defaulted(group, kind, body)
