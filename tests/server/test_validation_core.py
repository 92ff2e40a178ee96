"""Object metadata, Pod, ConfigMap and Secret validation over HTTP: each invalid object gets
kube-apiserver 1.37's 422 with its exact text, and nothing is stored."""

from __future__ import annotations

import re
from typing import Any

import pytest
from harness import ROOT_CA, Server

NS = "/api/v1/namespaces/{ns}"
LABEL_NAME = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
    "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
LABEL_VALUE = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    "'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?"
    "[A-Za-z0-9])?')"
)
CONFIG_KEY = (
    "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. "
    "'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')"
)
DNS_LABEL = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex "
    "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)


def cm(name: str, meta: dict[str, Any] | None = None, **rest: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, **(meta or {})},
        **rest,
    }


def secret(name: str, **rest: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}, **rest}


def pod(name: str, **spec: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"containers": [{"name": "c", "image": "nginx"}]}
    base.update(spec)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": base}


def ctr(**fields: Any) -> dict[str, Any]:
    return {"name": "c", "image": "nginx", **fields}


CASES: list[tuple[str, str, dict[str, Any], str]] = [
    (
        "label key",
        "configmaps",
        cm("bad", {"labels": {"a b": "x"}}),
        f'ConfigMap "bad" is invalid: metadata.labels: Invalid value: "a b": {LABEL_NAME}',
    ),
    (
        "label value",
        "configmaps",
        cm("bad", {"labels": {"a": "-x"}}),
        f'ConfigMap "bad" is invalid: metadata.labels: Invalid value: "-x": {LABEL_VALUE}',
    ),
    (
        "label value too long",
        "configmaps",
        cm("bad", {"labels": {"a": "x" * 64}}),
        f'ConfigMap "bad" is invalid: metadata.labels: Invalid value: "{"x" * 64}": '
        "must be no more than 63 bytes",
    ),
    (
        "annotation key",
        "configmaps",
        cm("bad", {"annotations": {"a/b/c": "x"}}),
        'ConfigMap "bad" is invalid: metadata.annotations: Invalid value: "a/b/c": a valid label '
        "key must consist of alphanumeric characters, '-', '_' or '.', and must start and end with "
        "an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
        "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain "
        "prefix and '/' (e.g. 'example.com/MyName')",
    ),
    (
        "annotations size",
        "configmaps",
        cm("bad", {"annotations": {"a": "x" * (256 * 1024)}}),
        'ConfigMap "bad" is invalid: metadata.annotations: Too long: may not be more than '
        "262144 bytes",
    ),
    (
        "owner reference fields",
        "configmaps",
        cm("bad", {"ownerReferences": [{"apiVersion": "", "kind": "", "name": "", "uid": ""}]}),
        'ConfigMap "bad" is invalid: [metadata.ownerReferences.apiVersion: Invalid value: "": '
        'version must not be empty, metadata.ownerReferences.kind: Invalid value: "": must not be '
        'empty, metadata.ownerReferences.name: Invalid value: "": must not be empty, '
        'metadata.ownerReferences.uid: Invalid value: "": must not be empty]',
    ),
    (
        "two controllers",
        "configmaps",
        cm(
            "bad",
            {
                "ownerReferences": [
                    {"apiVersion": "v1", "kind": "A", "name": "a", "uid": "1", "controller": True},
                    {"apiVersion": "v1", "kind": "B", "name": "b", "uid": "2", "controller": True},
                ]
            },
        ),
        'ConfigMap "bad" is invalid: metadata.ownerReferences: Invalid value: '
        '[{"apiVersion":"v1","kind":"A","name":"a","uid":"1","controller":true},'
        '{"apiVersion":"v1","kind":"B","name":"b","uid":"2","controller":true}]: Only one '
        'reference can have Controller set to true. Found "true" in references for A/a and B/b',
    ),
    (
        "finalizer not qualified",
        "configmaps",
        cm("bad", {"finalizers": ["foo"]}),
        'ConfigMap "bad" is invalid: metadata.finalizers[0]: Invalid value: "foo": name is neither '
        "a standard finalizer name nor is it fully qualified",
    ),
    (
        "configmap key",
        "configmaps",
        cm("bad", data={"a b": "1"}),
        f'ConfigMap "bad" is invalid: data[a b]: Invalid value: "a b": {CONFIG_KEY}',
    ),
    (
        "configmap key in both maps",
        "configmaps",
        cm("bad", data={"k": "1"}, binaryData={"k": "MQ=="}),
        'ConfigMap "bad" is invalid: data[k]: Invalid value: "k": duplicate of key present in '
        "binaryData",
    ),
    (
        "configmap size",
        "configmaps",
        cm("bad", data={"a": "x" * (1024 * 1024), "b": "y"}),
        'ConfigMap "bad" is invalid: []: Too long: may not be more than 1048576 bytes',
    ),
    (
        "secret key",
        "secrets",
        secret("bad", data={"..a": "MQ=="}),
        'Secret "bad" is invalid: data[..a]: Invalid value: "..a": must not start with \'..\'',
    ),
    (
        "tls secret",
        "secrets",
        secret("bad", type="kubernetes.io/tls", data={}),
        'Secret "bad" is invalid: [data[tls.crt]: Required value, data[tls.key]: Required value]',
    ),
    (
        "service account token secret",
        "secrets",
        secret("bad", type="kubernetes.io/service-account-token"),
        'Secret "bad" is invalid: metadata.annotations[kubernetes.io/service-account.name]: '
        "Required value",
    ),
    (
        "pod without containers",
        "pods",
        pod("bad", containers=[]),
        'Pod "bad" is invalid: spec.containers: Required value',
    ),
    (
        "container name",
        "pods",
        pod("bad", containers=[ctr(name="Bad_Name")]),
        f'Pod "bad" is invalid: spec.containers[0].name: Invalid value: "Bad_Name": {DNS_LABEL}',
    ),
    (
        "duplicate container",
        "pods",
        pod("bad", containers=[ctr(), ctr()]),
        'Pod "bad" is invalid: spec.containers[1].name: Duplicate value: "c"',
    ),
    (
        "image required",
        "pods",
        pod("bad", containers=[{"name": "c"}]),
        'Pod "bad" is invalid: spec.containers[0].image: Required value',
    ),
    (
        "container port range",
        "pods",
        pod("bad", containers=[ctr(ports=[{"containerPort": 70000}])]),
        'Pod "bad" is invalid: spec.containers[0].ports[0].containerPort: Invalid value: 70000: '
        "must be between 1 and 65535, inclusive",
    ),
    (
        "port protocol",
        "pods",
        pod("bad", containers=[ctr(ports=[{"containerPort": 80, "protocol": "ICMP"}])]),
        'Pod "bad" is invalid: spec.containers[0].ports[0].protocol: Unsupported value: "ICMP": '
        'supported values: "SCTP", "TCP", "UDP"',
    ),
    (
        "duplicate port name",
        "pods",
        pod(
            "bad",
            containers=[
                ctr(
                    ports=[
                        {"containerPort": 80, "name": "web"},
                        {"containerPort": 81, "name": "web"},
                    ]
                )
            ],
        ),
        'Pod "bad" is invalid: spec.containers[0].ports[1].name: Duplicate value: "web"',
    ),
    (
        "requests above limits",
        "pods",
        pod(
            "bad",
            containers=[ctr(resources={"requests": {"cpu": "2"}, "limits": {"cpu": "1"}})],
        ),
        'Pod "bad" is invalid: spec.containers[0].resources.requests: Invalid value: "2": must be '
        "less than or equal to cpu limit of 1",
    ),
    (
        "negative quantity",
        "pods",
        pod("bad", containers=[ctr(resources={"limits": {"memory": "-1Gi"}})]),
        # defaulting copies the limit into requests, as kube's SetDefaults_Pod does
        'Pod "bad" is invalid: [spec.containers[0].resources.limits[memory]: Invalid value: '
        '"-1Gi": must be greater than or equal to 0, '
        'spec.containers[0].resources.requests[memory]: Invalid value: "-1Gi": must be greater '
        "than or equal to 0]",
    ),
    (
        "mount of a missing volume",
        "pods",
        pod("bad", containers=[ctr(volumeMounts=[{"name": "x", "mountPath": "/x"}])]),
        'Pod "bad" is invalid: spec.containers[0].volumeMounts[0].name: Not found: "x"',
    ),
    (
        "duplicate volume",
        "pods",
        pod("bad", volumes=[{"name": "v", "emptyDir": {}}, {"name": "v", "emptyDir": {}}]),
        'Pod "bad" is invalid: spec.volumes[1].name: Duplicate value: "v"',
    ),
    (
        "probe without handler",
        "pods",
        pod("bad", containers=[ctr(livenessProbe={"periodSeconds": 5})]),
        'Pod "bad" is invalid: spec.containers[0].livenessProbe: Required value: must specify a '
        "handler type",
    ),
    (
        "probe with two handlers",
        "pods",
        pod(
            "bad",
            containers=[
                ctr(readinessProbe={"exec": {"command": ["true"]}, "tcpSocket": {"port": 80}})
            ],
        ),
        'Pod "bad" is invalid: spec.containers[0].readinessProbe.tcpSocket: Forbidden: may not '
        "specify more than 1 handler type",
    ),
    (
        "restartPolicy",
        "pods",
        pod("bad", restartPolicy="Sometimes"),
        'Pod "bad" is invalid: spec.restartPolicy: Unsupported value: "Sometimes": supported '
        'values: "Always", "OnFailure", "Never"',
    ),
    (
        "dnsPolicy",
        "pods",
        pod("bad", dnsPolicy="Google"),
        'Pod "bad" is invalid: spec.dnsPolicy: Unsupported value: "Google": supported values: '
        '"ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"',
    ),
    (
        "pod template",
        "podtemplates",
        {
            "apiVersion": "v1",
            "kind": "PodTemplate",
            "metadata": {"name": "bad"},
            "template": {"spec": {"containers": []}},
        },
        'PodTemplate "bad" is invalid: template.spec.containers: Required value',
    ),
]


@pytest.mark.parametrize(
    ("resource", "body", "message"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_invalid_objects_refused(
    server: Server, resource: str, body: dict[str, Any], message: str
) -> None:
    before = server.request("GET", f"{NS}/{resource}")[1]
    code, status = server.request("POST", f"{NS}/{resource}", body)
    assert (code, status.get("reason")) == (422, "Invalid"), status
    assert status["message"] == message
    after = server.request("GET", f"{NS}/{resource}")[1]
    assert len(after["items"]) == len(before["items"])  # type: ignore[arg-type]


def test_valid_objects_accepted(server: Server) -> None:
    good_pod = pod(
        "good",
        volumes=[{"name": "v", "emptyDir": {}}],
        containers=[
            ctr(
                ports=[{"containerPort": 80, "name": "web"}],
                volumeMounts=[{"name": "v", "mountPath": "/v"}],
                resources={"requests": {"cpu": "500m"}, "limits": {"cpu": "1"}},
                livenessProbe={"httpGet": {"port": "web"}},
            )
        ],
    )
    assert server.request("POST", f"{NS}/pods", good_pod)[0] == 201
    labelled = cm("good", {"labels": {"example.com/a": "b"}, "finalizers": ["example.com/f"]})
    assert server.request("POST", f"{NS}/configmaps", labelled)[0] == 201
    tls = secret("tls", type="kubernetes.io/tls", data={"tls.crt": "", "tls.key": ""})
    assert server.request("POST", f"{NS}/secrets", tls)[0] == 201


def test_wrong_label_type_never_a_500(server: Server) -> None:
    code, _ = server.request("POST", f"{NS}/configmaps", cm("odd", {"labels": ["a", "b"]}))
    assert code in (201, 400, 422)


def test_update_checks_labels_and_keeps_stored(server: Server) -> None:
    code, made = server.request("POST", f"{NS}/configmaps", cm("up", data={"a": "1"}))
    assert code == 201
    made["metadata"]["labels"] = {"a b": "c"}  # type: ignore[index]
    code, status = server.request("PUT", f"{NS}/configmaps/up", made)
    assert code == 422
    assert status["message"] == (
        f'ConfigMap "up" is invalid: metadata.labels: Invalid value: "a b": {LABEL_NAME}'
    )
    stored = server.request("GET", f"{NS}/configmaps/up")[1]
    assert "labels" not in stored["metadata"]  # type: ignore[operator]


def test_immutable_configmap_and_secret(server: Server) -> None:
    code, made = server.request(
        "POST", f"{NS}/configmaps", cm("frozen", data={"a": "1"}, immutable=True)
    )
    assert code == 201
    made["data"] = {"a": "2"}
    code, status = server.request("PUT", f"{NS}/configmaps/frozen", made)
    assert code == 422
    assert status["message"] == (
        'ConfigMap "frozen" is invalid: data: Forbidden: field is immutable when `immutable` is set'
    )
    code, made = server.request("POST", f"{NS}/secrets", secret("s", data={"a": "MQ=="}))
    assert code == 201
    made["type"] = "kubernetes.io/tls"
    made["data"] = {"tls.crt": "", "tls.key": ""}
    code, status = server.request("PUT", f"{NS}/secrets/s", made)
    assert code == 422
    assert status["message"] == (
        'Secret "s" is invalid: type: Invalid value: "kubernetes.io/tls": field is immutable'
    )


def test_a_bad_generate_name_is_reported_with_the_generated_name(server: Server) -> None:
    """kube generates the name before validating (BeforeCreate): the 422 names the object by
    it, and reports both the prefix and the name."""
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "Bad-"}}
    code, status = server.request("POST", f"{NS}/configmaps", body)
    assert code == 422, status
    subdomain = (
        "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "
        "or '.', and must start and end with an alphanumeric character (e.g. 'example.com', "
        "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*"
        "[a-z0-9])?)*')"
    )
    name = status["details"]["name"]
    assert re.fullmatch("Bad-[a-z0-9]{5}", name)
    assert status["message"] == (
        f'ConfigMap "{name}" is invalid: [metadata.generateName: Invalid value: "Bad-": '
        f'{subdomain}, metadata.name: Invalid value: "{name}": {subdomain}]'
    )
    listed = server.request("GET", f"{NS}/configmaps")[1]["items"]
    assert [i["metadata"]["name"] for i in listed] == [ROOT_CA]  # nothing stored
