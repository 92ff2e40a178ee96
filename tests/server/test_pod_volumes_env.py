# ruff: noqa: E501  (kube's expected texts are kept whole, one per line)
"""Pod volumes, volume mounts, env and envFrom over HTTP: each invalid pod gets kube-apiserver's
422 text (pkg/apis/core/validation) and is not stored; pods with every volume source are
accepted."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from harness import Server

PODS = "/api/v1/namespaces/{ns}/pods"
SUBDOMAIN = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
CLAIM = {"spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}


def pod(
    name: str = "p",
    volumes: list[Any] | None = None,
    **container: Any,
) -> dict[str, Any]:
    ctr = {"name": "c", "image": "nginx", **container}
    spec: dict[str, Any] = {"containers": [ctr]}
    if volumes is not None:
        spec["volumes"] = volumes
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def vol(**source: Any) -> list[Any]:
    return [{"name": "v", **source}]


def env(**value_from: Any) -> list[Any]:
    return [{"name": "E", "valueFrom": value_from}]


def mount(**fields: Any) -> list[Any]:
    return [{"name": "v", "mountPath": "/data", **fields}]


C0 = "spec.containers[0]"
ENV0 = f"{C0}.env[0].valueFrom"

# (pod, the field error kube reports)
INVALID = [
    # validateVolumeSource
    (
        pod(volumes=vol(emptyDir={}, hostPath={"path": "/x"})),
        "spec.volumes[0].hostPath: Forbidden: may not specify more than 1 volume type",
    ),
    (
        pod(volumes=vol(secret={"secretName": "s"}, downwardAPI={})),
        "spec.volumes[0].downwarAPI: Forbidden: may not specify more than 1 volume type",
    ),
    (
        pod(volumes=vol(emptyDir={"sizeLimit": "-1Gi"})),
        "spec.volumes[0].emptyDir.sizeLimit: Forbidden: SizeLimit field must be a valid resource quantity",
    ),
    (pod(volumes=vol(hostPath={"path": ""})), "spec.volumes[0].hostPath.path: Required value"),
    (
        pod(volumes=vol(hostPath={"path": "/a/../b"})),
        "spec.volumes[0].hostPath.path: Invalid value: \"/a/../b\": must not contain '..'",
    ),
    (
        pod(volumes=vol(hostPath={"path": "/a", "type": "Bogus"})),
        'spec.volumes[0].hostPath.type: Unsupported value: "Bogus": supported values: "", "BlockDevice", "CharDevice", "Directory", "DirectoryOrCreate", "File", "FileOrCreate", "Socket"',
    ),
    (pod(volumes=vol(secret={})), "spec.volumes[0].secret.secretName: Required value"),
    (
        pod(volumes=vol(configMap={"name": "m", "defaultMode": 512})),
        "spec.volumes[0].configMap.defaultMode: Invalid value: 512: must be a number between 0 and 0777 (octal), both inclusive",
    ),
    (
        pod(volumes=vol(configMap={"name": "m", "items": [{"key": "", "path": "k"}]})),
        "spec.volumes[0].configMap.items[0].key: Required value",
    ),
    (
        pod(volumes=vol(secret={"secretName": "s", "items": [{"key": "k", "path": "/abs"}]})),
        'spec.volumes[0].secret.items[0].path: Invalid value: "/abs": must be a relative path',
    ),
    (
        pod(volumes=vol(secret={"secretName": "s", "items": [{"key": "k", "path": "..k"}]})),
        "spec.volumes[0].secret.items[0].path: Invalid value: \"..k\": must not start with '..'",
    ),
    (
        pod(volumes=vol(secret={"secretName": "s", "items": [{"key": "k", "path": "a/../../b"}]})),
        "spec.volumes[0].secret.items[0].path: Invalid value: \"a/../../b\": must not contain '..'",
    ),
    (
        pod(volumes=vol(configMap={"name": "m", "items": [{"key": "k", "path": "k", "mode": -1}]})),
        "spec.volumes[0].configMap.items[0].mode: Invalid value: -1: must be a number between 0 and 0777 (octal), both inclusive",
    ),
    (
        pod(
            volumes=vol(
                downwardAPI={"items": [{"path": "n", "fieldRef": {"fieldPath": "spec.nodeName"}}]}
            )
        ),
        'spec.volumes[0].downwardAPI.fieldRef.fieldPath: Unsupported value: "spec.nodeName": supported values: "metadata.annotations", "metadata.labels", "metadata.name", "metadata.namespace", "metadata.uid"',
    ),
    (
        pod(volumes=vol(downwardAPI={"items": [{"path": "n"}]})),
        "spec.volumes[0].downwardAPI: Required value: one of fieldRef and resourceFieldRef is required",
    ),
    (
        pod(
            volumes=vol(
                downwardAPI={
                    "items": [{"path": "n", "resourceFieldRef": {"resource": "limits.cpu"}}]
                }
            )
        ),
        "spec.volumes[0].downwardAPI.resourceFieldRef.containerName: Required value",
    ),
    (
        pod(
            volumes=vol(
                projected={
                    "sources": [{"serviceAccountToken": {"path": "t", "expirationSeconds": 60}}]
                }
            )
        ),
        "spec.volumes[0].projected.sources[0].serviceAccountToken.expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes",
    ),
    (
        pod(volumes=vol(projected={"sources": [{"serviceAccountToken": {"path": "/t"}}]})),
        'spec.volumes[0].projected.path: Invalid value: "/t": must be a relative path',
    ),
    (
        pod(
            volumes=vol(
                projected={"sources": [{"secret": {"name": "s"}, "configMap": {"name": "m"}}]}
            )
        ),
        "spec.volumes[0].projected.sources[0]: Forbidden: may not specify more than 1 volume type per source",
    ),
    (
        pod(
            volumes=vol(
                projected={
                    "sources": [
                        {"configMap": {"name": "m", "items": [{"key": "a", "path": "x"}]}},
                        {"secret": {"name": "s", "items": [{"key": "b", "path": "x"}]}},
                    ]
                }
            )
        ),
        'spec.volumes[0].projected: Invalid value: "s": conflicting duplicate paths',
    ),
    (
        pod(volumes=vol(projected={"sources": [{"clusterTrustBundle": {"path": "b"}}]})),
        "spec.volumes[0].projected.sources[0].clusterTrustBundle: Required value: either name or signerName must be specified",
    ),
    (
        pod(volumes=vol(persistentVolumeClaim={"claimName": ""})),
        "spec.volumes[0].persistentVolumeClaim.claimName: Required value",
    ),
    (
        pod(volumes=vol(nfs={"server": "nfs", "path": "rel"})),
        'spec.volumes[0].nfs.path: Invalid value: "rel": must be an absolute path',
    ),
    (
        pod(volumes=vol(iscsi={"targetPortal": "1.2.3.4:3260", "iqn": "bad", "lun": 0})),
        'spec.volumes[0].iscsi.iqn: Invalid value: "bad": must be valid format starting with iqn, eui, or naa',
    ),
    (
        pod(
            volumes=vol(
                iscsi={
                    "targetPortal": "1.2.3.4:3260",
                    "iqn": "iqn.2001-04.com.example:s",
                    "lun": 256,
                }
            )
        ),
        "spec.volumes[0].iscsi.lun: Invalid value: 256: must be between 0 and 255, inclusive",
    ),
    (
        pod(volumes=vol(csi={"driver": "Bad_Driver"})),
        f'spec.volumes[0].csi.driver: Invalid value: "Bad_Driver": {SUBDOMAIN}',
    ),
    (
        pod(volumes=vol(gcePersistentDisk={"pdName": "d", "partition": 300})),
        "spec.volumes[0].persistentDisk.partition: Invalid value: 300: must be between 1 and 255, inclusive",
    ),
    (
        pod(volumes=vol(ephemeral={})),
        "spec.volumes[0].ephemeral.volumeClaimTemplate: Required value",
    ),
    (
        pod(
            volumes=vol(
                ephemeral={
                    "volumeClaimTemplate": {"spec": {"resources": {"requests": {"storage": "1Gi"}}}}
                }
            )
        ),
        "spec.volumes[0].ephemeral.volumeClaimTemplate.spec.accessModes: Required value: at least 1 access mode is required",
    ),
    (
        pod(
            volumes=[
                {"name": "e", "ephemeral": {"volumeClaimTemplate": CLAIM}},
                {"name": "x", "persistentVolumeClaim": {"claimName": "p-e"}},
            ]
        ),
        'spec.volumes[1].persistentVolumeClaim.claimName: Invalid value: "p-e": must not reference a PVC that gets created for an ephemeral volume',
    ),
    # ValidateVolumeMounts
    (
        pod(volumes=vol(emptyDir={}), volumeMounts=[{"name": "nope", "mountPath": "/d"}]),
        f'{C0}.volumeMounts[0].name: Not found: "nope"',
    ),
    (
        pod(volumes=vol(emptyDir={}), volumeMounts=[{"name": "v", "mountPath": ""}]),
        f"{C0}.volumeMounts[0].mountPath: Required value",
    ),
    (
        pod(volumes=vol(emptyDir={}), volumeMounts=mount(subPath="../x")),
        f"{C0}.volumeMounts.subPath: Invalid value: \"../x\": must not contain '..'",
    ),
    (
        pod(volumes=vol(emptyDir={}), volumeMounts=mount(subPathExpr="/$(X)")),
        f'{C0}.volumeMounts.subPathExpr: Invalid value: "/$(X)": must be a relative path',
    ),
    (
        pod(volumes=vol(emptyDir={}), volumeMounts=mount(mountPropagation="Sideways")),
        f'{C0}.volumeMounts.mountPropagation: Unsupported value: "Sideways": supported values: "Bidirectional", "HostToContainer", "None"',
    ),
    (
        pod(volumes=vol(emptyDir={}), volumeMounts=mount(mountPropagation="Bidirectional")),
        f"{C0}.volumeMounts.mountPropagation: Forbidden: Bidirectional mount propagation is available only to privileged containers",
    ),
    (
        pod(volumes=vol(emptyDir={}), volumeMounts=mount(recursiveReadOnly="Enabled")),
        f"{C0}.volumeMounts.recursiveReadOnly: Forbidden: may only be specified when readOnly is true",
    ),
    (
        pod(
            volumes=vol(emptyDir={}), volumeMounts=mount(recursiveReadOnly="Always", readOnly=True)
        ),
        f'{C0}.volumeMounts.recursiveReadOnly: Unsupported value: "Always": supported values: "Disabled", "Enabled", "IfPossible"',
    ),
    (
        pod(volumes=vol(image={"reference": "img"}), volumeMounts=mount(subPath="x")),
        f'{C0}.volumeMounts[0].subPath: Invalid value: "x": not allowed in image volume sources',
    ),
    # ValidateEnv / validateEnvVarValueFrom
    (
        {
            **pod(
                env=[
                    {
                        "name": "E",
                        "value": "x",
                        "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}},
                    }
                ]
            )
        },
        f'{ENV0}: Invalid value: "": may not be specified when `value` is not empty',
    ),
    (
        pod(
            env=env(
                secretKeyRef={"name": "s", "key": "k"}, configMapKeyRef={"name": "m", "key": "k"}
            )
        ),
        f'{ENV0}: Invalid value: "": may not have more than one field specified at a time',
    ),
    (
        pod(env=env(fieldRef={"fieldPath": "metadata.labels"})),
        f'{ENV0}.fieldRef.fieldPath: Unsupported value: "metadata.labels": supported values: "metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName", "spec.serviceAccountName", "status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs"',
    ),
    (
        pod(env=env(fieldRef={"fieldPath": "spec.foo"})),
        f'{ENV0}.fieldRef.fieldPath: Invalid value: "spec.foo": error converting fieldPath: field label not supported: spec.foo',
    ),
    (
        pod(env=env(fieldRef={"fieldPath": "spec.nodeName['x']"})),
        f"{ENV0}.fieldRef.fieldPath: Invalid value: \"spec.nodeName['x']\": error converting fieldPath: field label does not support subscript: spec.nodeName['x']",
    ),
    (
        pod(env=env(fieldRef={"fieldPath": "metadata.labels['bad key']"})),
        f"{ENV0}.fieldRef: Invalid value: \"bad key\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
    ),
    (
        pod(env=env(fieldRef={"apiVersion": "v2", "fieldPath": "metadata.name"})),
        f'{ENV0}.fieldRef.fieldPath: Invalid value: "metadata.name": error converting fieldPath: unsupported pod version: v2',
    ),
    (
        pod(env=env(resourceFieldRef={"resource": "limits.gpu"})),
        f'{ENV0}.resourceFieldRef.resource: Unsupported value: "limits.gpu": supported values: "limits.cpu", "limits.ephemeral-storage", "limits.memory", "requests.cpu", "requests.ephemeral-storage", "requests.memory"',
    ),
    (
        pod(env=env(resourceFieldRef={"resource": "limits.cpu", "divisor": "2"})),
        f'{ENV0}.resourceFieldRef.divisor: Invalid value: "limits.cpu": only divisor\'s values 1m and 1 are supported with the cpu resource',
    ),
    (
        pod(env=env(resourceFieldRef={"resource": "requests.memory", "divisor": "3Mi"})),
        f'{ENV0}.resourceFieldRef.divisor: Invalid value: "requests.memory": only divisor\'s values 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei are supported with the memory resource',
    ),
    (
        pod(env=env(configMapKeyRef={"name": "m", "key": "bad key"})),
        f"{ENV0}.configMapKeyRef.key: Invalid value: \"bad key\": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')",
    ),
    (pod(env=env(secretKeyRef={"name": "s"})), f"{ENV0}.secretKeyRef.key: Required value"),
    (
        pod(env=env(secretKeyRef={"name": "Bad", "key": "k"})),
        f'{ENV0}.secretKeyRef.name: Invalid value: "Bad": {SUBDOMAIN}',
    ),
    # ValidateEnvFrom
    (
        pod(envFrom=[{"prefix": "P_"}]),
        f'{C0}.envFrom: Invalid value: "": must specify one of: `configMapRef` or `secretRef`',
    ),
    (
        pod(envFrom=[{"configMapRef": {"name": "m"}, "secretRef": {"name": "s"}}]),
        f'{C0}.envFrom: Invalid value: "": may not have more than one field specified at a time',
    ),
    (
        pod(envFrom=[{"prefix": "A=B", "configMapRef": {"name": "m"}}]),
        f"{C0}.envFrom[0].prefix: Invalid value: \"A=B\": a valid environment variable name must consist only of printable ASCII characters other than '='",
    ),
    (pod(envFrom=[{"secretRef": {"name": ""}}]), f"{C0}.envFrom[0].secretRef.name: Required value"),
]


@pytest.mark.parametrize(
    ("body", "error"), INVALID, ids=[e.split(":")[0] + f"#{i}" for i, (_, e) in enumerate(INVALID)]
)
def test_invalid_pods_are_refused(server: Server, body: Any, error: str) -> None:
    code, status = server.request("POST", PODS, body)
    expected = f'Pod "{body["metadata"]["name"]}" is invalid: {error}'
    assert (code, status.get("reason"), status.get("message")) == (422, "Invalid", expected)
    assert server.request("GET", f"{PODS}/{body['metadata']['name']}")[0] == 404


SOURCES: dict[str, Any] = {
    "empty": {"emptyDir": {"medium": "Memory", "sizeLimit": "1Gi"}},
    "host": {"hostPath": {"path": "/var/log", "type": "Directory"}},
    "cm": {
        "configMap": {
            "name": "m",
            "defaultMode": 0o644,
            "items": [{"key": "a", "path": "dir/a", "mode": 0o400}],
        }
    },
    "sec": {"secret": {"secretName": "s", "optional": True}},
    "down": {
        "downwardAPI": {
            "items": [
                {"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}},
                {"path": "app", "fieldRef": {"fieldPath": "metadata.annotations['App']"}},
                {
                    "path": "mem",
                    "resourceFieldRef": {
                        "containerName": "c",
                        "resource": "limits.memory",
                        "divisor": "1Mi",
                    },
                },
            ]
        }
    },
    "proj": {
        "projected": {
            "sources": [
                {
                    "serviceAccountToken": {
                        "path": "token",
                        "expirationSeconds": 3600,
                        "audience": "api",
                    }
                },
                {"configMap": {"name": "m", "items": [{"key": "a", "path": "a"}]}},
                {
                    "downwardAPI": {
                        "items": [{"path": "name", "fieldRef": {"fieldPath": "metadata.name"}}]
                    }
                },
                {
                    "clusterTrustBundle": {
                        "signerName": "example.com/signer",
                        "labelSelector": {"matchLabels": {"a": "b"}},
                        "path": "ca.pem",
                    }
                },
            ]
        }
    },
    "claim": {"persistentVolumeClaim": {"claimName": "data", "readOnly": True}},
    "nfs": {"nfs": {"server": "nfs.example.com", "path": "/exports"}},
    "iscsi": {
        "iscsi": {
            "targetPortal": "10.0.0.1:3260",
            "iqn": "iqn.2001-04.com.example:storage",
            "lun": 0,
        }
    },
    "csi": {"csi": {"driver": "csi.example.com", "nodePublishSecretRef": {"name": "s"}}},
    "eph": {"ephemeral": {"volumeClaimTemplate": CLAIM}},
    "img": {"image": {"reference": "registry.example.com/data:1", "pullPolicy": "IfNotPresent"}},
    "none": {},
}


def test_pod_with_every_volume_source_is_accepted(server: Server) -> None:
    volumes = [{"name": name, **copy.deepcopy(source)} for name, source in SOURCES.items()]
    mounts = [
        {"name": "empty", "mountPath": "/e", "subPath": "x", "mountPropagation": "HostToContainer"},
        {"name": "cm", "mountPath": "/cm", "readOnly": True, "recursiveReadOnly": "IfPossible"},
        {"name": "img", "mountPath": "/img"},
        {"name": "none", "mountPath": "/none", "subPathExpr": "$(POD)"},
    ]
    env_vars = [
        {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        {"name": "APP", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['app']"}}},
        {"name": "HOST", "valueFrom": {"fieldRef": {"fieldPath": "spec.host"}}},
        {
            "name": "MEM",
            "valueFrom": {"resourceFieldRef": {"resource": "limits.memory", "divisor": "1Mi"}},
        },
        {
            "name": "CPU",
            "valueFrom": {"resourceFieldRef": {"resource": "requests.cpu", "divisor": "1m"}},
        },
        {"name": "HP", "valueFrom": {"resourceFieldRef": {"resource": "limits.hugepages-2Mi"}}},
        {"name": "K", "valueFrom": {"configMapKeyRef": {"name": "m", "key": "a.b_c-d"}}},
        {"name": "S", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k", "optional": True}}},
        {"name": "weird.name-1", "value": "relaxed names are fine"},
    ]
    env_from = [{"prefix": "CM_", "configMapRef": {"name": "m"}}, {"secretRef": {"name": "s"}}]
    body = pod("all", volumes, volumeMounts=mounts, env=env_vars, envFrom=env_from)
    code, created = server.request("POST", PODS, body)
    assert code == 201, created
    stored = {v["name"]: v for v in created["spec"]["volumes"]}
    assert stored["none"]["emptyDir"] == {}  # SetDefaults_Volume: no source is an emptyDir


def test_ephemeral_containers_are_refused_on_create_and_in_templates(server: Server) -> None:
    """ValidatePodCreate and ValidatePodTemplateSpec: ephemeral containers come only through
    the ephemeralcontainers subresource of a running Pod."""
    debug = [{"name": "debug", "image": "busybox"}]
    body = pod("eph")
    body["spec"]["ephemeralContainers"] = debug
    code, status = server.request("POST", PODS, body)
    assert (code, status.get("message")) == (
        422,
        'Pod "eph" is invalid: spec.ephemeralContainers: Forbidden: cannot be set on create',
    )
    template = {
        "apiVersion": "v1",
        "kind": "PodTemplate",
        "metadata": {"name": "t"},
        "template": {"spec": {**pod()["spec"], "ephemeralContainers": debug}},
    }
    code, status = server.request("POST", "/api/v1/namespaces/{ns}/podtemplates", template)
    assert (code, status.get("message")) == (
        422,
        'PodTemplate "t" is invalid: template.spec.ephemeralContainers: Forbidden: '
        "ephemeral containers not allowed in pod template",
    )
