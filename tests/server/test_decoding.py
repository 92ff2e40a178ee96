"""Built-in kinds decoded as kube-apiserver decodes them (issue 12, section 1), over HTTP: wrong
JSON types, unknown fields, null, and client input that must never be a 500. Each refusal is
checked for kube's code and text, and for leaving nothing stored."""

from __future__ import annotations

import json
from typing import Any

from harness import Server

CM = "/api/v1/namespaces/{ns}/configmaps"
PODS = "/api/v1/namespaces/{ns}/pods"
DEPLOY = "/apis/apps/v1/namespaces/{ns}/deployments"
QUANTITY_RE = "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"


def deployment(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]},
            },
            **spec,
        },
    }


def assert_absent(server: Server, path: str) -> None:
    code, _ = server.request("GET", path)
    assert code == 404


def test_wrong_types_are_400_and_nothing_is_stored(server: Server) -> None:
    cases: list[tuple[str, str, dict[str, Any], str]] = [
        (
            DEPLOY,
            "d1",
            deployment("d1", replicas="three"),
            'Deployment in version "v1" cannot be handled as a Deployment: json: cannot '
            "unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32",
        ),
        (
            DEPLOY,
            "d2",
            deployment("d2", replicas=2**31),
            'Deployment in version "v1" cannot be handled as a Deployment: json: cannot '
            "unmarshal number 2147483648 into Go struct field DeploymentSpec.spec.replicas of "
            "type int32",
        ),
        (
            DEPLOY,
            "d3",
            deployment("d3", paused="yes"),
            'Deployment in version "v1" cannot be handled as a Deployment: json: cannot '
            "unmarshal string into Go struct field DeploymentSpec.spec.paused of type bool",
        ),
        (
            CM,
            "c1",
            {"metadata": {"name": "c1", "labels": ["a", "b"]}},
            'ConfigMap in version "v1" cannot be handled as a ConfigMap: json: cannot unmarshal '
            "array into Go struct field ObjectMeta.metadata.labels of type map[string]string",
        ),
        (
            CM,
            "c2",
            {"metadata": {"name": "c2"}, "data": {"a": 1}},
            'ConfigMap in version "v1" cannot be handled as a ConfigMap: json: cannot unmarshal '
            "number into Go struct field ConfigMap.data of type string",
        ),
        (
            DEPLOY,
            "d4",
            deployment("d4", strategy={"rollingUpdate": {"maxSurge": True}}),
            'Deployment in version "v1" cannot be handled as a Deployment: json: cannot '
            "unmarshal bool into Go struct field RollingUpdateDeployment.spec.strategy."
            "rollingUpdate.maxSurge of type int32",
        ),
        (
            PODS,
            "p1",
            {
                "metadata": {"name": "p1"},
                "spec": {
                    "containers": [
                        {"name": "c", "image": "i", "resources": {"limits": {"cpu": "lots"}}}
                    ]
                },
            },
            'Pod in version "v1" cannot be handled as a Pod: quantities must match the regular '
            f"expression {QUANTITY_RE}",
        ),
        (
            PODS,
            "p2",
            {
                "metadata": {"name": "p2"},
                "spec": {
                    "containers": [{"name": "c", "image": "i", "ports": [{"containerPort": "80"}]}]
                },
            },
            'Pod in version "v1" cannot be handled as a Pod: json: cannot unmarshal string into '
            "Go struct field ContainerPort.spec.containers.ports.containerPort of type int32",
        ),
        (
            "/api/v1/namespaces/{ns}/secrets",
            "s1",
            {"metadata": {"name": "s1"}, "data": {"k": "not base64!"}},
            'Secret in version "v1" cannot be handled as a Secret: illegal base64 data at input '
            "byte 3",
        ),
    ]
    for path, name, body, message in cases:
        code, status = server.request("POST", path, body)
        assert (code, status["reason"], status["message"]) == (400, "BadRequest", message), name
        assert_absent(server, f"{path}/{name}")
    # an update is refused the same way, and leaves the object as it was
    code, made = server.request("POST", DEPLOY, deployment("ok", replicas=2))
    assert code == 201
    made["spec"]["replicas"] = "three"
    code, status = server.request("PUT", f"{DEPLOY}/ok", made)
    assert code == 400
    assert status["message"].endswith("DeploymentSpec.spec.replicas of type int32")
    code, current = server.request("GET", f"{DEPLOY}/ok")
    assert current["spec"]["replicas"] == 2
    # a merge patch whose result has a wrong type: 422 with the patched object (patch.go)
    code, status = server.request(
        "PATCH",
        f"{DEPLOY}/ok",
        {"spec": {"replicas": "three"}},
        content_type="application/merge-patch+json",
    )
    assert (code, status["reason"]) == (422, "Invalid")
    assert status["message"].startswith(' "" is invalid: patch: Invalid value: "{')
    assert status["message"].endswith(
        ": json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of "
        "type int32"
    )
    code, current = server.request("GET", f"{DEPLOY}/ok")
    assert current["spec"]["replicas"] == 2


def test_wrong_types_name_the_fields_named_go_type(server: Server) -> None:
    """Go named string types (``type PullPolicy string``) are in encoding/json's texts, not in
    OpenAPI: ``of type v1.PullPolicy``, ``[]v1.Capability``, ``v1.ResourceList``."""

    def container(**fields: Any) -> dict[str, Any]:
        return {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", **fields}]}}

    capabilities = {"capabilities": {"add": ["NET_ADMIN", 5]}}
    cases: list[tuple[str, dict[str, Any], str]] = [
        (
            PODS,
            container(image="i", imagePullPolicy=5),
            "number into Go struct field "
            "Container.spec.containers.imagePullPolicy of type v1.PullPolicy",
        ),
        (
            PODS,
            container(image="i", securityContext=capabilities),
            "number into Go struct field "
            "Capabilities.spec.containers.securityContext.capabilities.add of type v1.Capability",
        ),
        (
            PODS,
            container(image="i", resources={"limits": "1Gi"}),
            "string into Go struct field "
            "ResourceRequirements.spec.containers.resources.limits of type v1.ResourceList",
        ),
        (
            PODS,
            {"metadata": {"name": "p", "uid": 7}, "spec": {"containers": []}},
            "number into Go struct field ObjectMeta.metadata.uid of type types.UID",
        ),
        (
            DEPLOY,
            deployment("p", strategy={"type": 1}),
            "number into Go struct field "
            "DeploymentStrategy.spec.strategy.type of type v1.DeploymentStrategyType",
        ),
        (
            "/api/v1/namespaces/{ns}/services",
            {"metadata": {"name": "p"}, "spec": {"type": True, "ports": [{"port": 80}]}},
            "bool into Go struct field ServiceSpec.spec.type of type v1.ServiceType",
        ),
        (
            "/api/v1/namespaces/{ns}/persistentvolumeclaims",
            {"metadata": {"name": "p"}, "spec": {"accessModes": "ReadWriteOnce"}},
            "string into Go struct field "
            "PersistentVolumeClaimSpec.spec.accessModes of type []v1.PersistentVolumeAccessMode",
        ),
    ]
    for path, body, where in cases:
        code, status = server.request("POST", path, body)
        assert (code, status["reason"]) == (400, "BadRequest"), where
        assert status["message"].endswith(f"json: cannot unmarshal {where}"), status["message"]
        assert_absent(server, f"{path}/p")


def test_unknown_fields_dropped_under_warn_and_ignore(server: Server) -> None:
    body = {"metadata": {"name": "w", "bogus": 1}, "data": {"a": "b"}, "extra": {"x": 1}}
    code, made = server.request("POST", CM, body)
    assert code == 201
    assert "extra" not in made
    assert "bogus" not in made["metadata"]
    code, made = server.request(
        "POST", CM + "?fieldValidation=Ignore", {**body, "metadata": {"name": "i"}}
    )
    assert code == 201
    assert "extra" not in made
    code, stored = server.request("GET", f"{CM}/i")
    assert "extra" not in stored
    code, status = server.request(
        "POST", CM + "?fieldValidation=Strict", {**body, "metadata": {"name": "s"}}
    )
    assert code == 400
    assert status["message"] == (
        'ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: '
        'unknown field "extra"'
    )
    assert_absent(server, f"{CM}/s")
    # a patch that adds an unknown field: dropped too
    code, patched = server.request(
        "PATCH", f"{CM}/w", {"extra": 1}, content_type="application/merge-patch+json"
    )
    assert code == 200
    assert "extra" not in patched


def test_null_means_absent(server: Server) -> None:
    body = {"metadata": {"name": "n", "labels": None, "annotations": {"a": None}}, "data": None}
    code, made = server.request("POST", CM, body)
    assert code == 201
    assert "data" not in made
    assert "labels" not in made["metadata"]
    assert made["metadata"]["annotations"] == {"a": ""}  # a map's null is its zero value
    code, made = server.request("POST", DEPLOY, deployment("dn", replicas=None))
    assert code == 201
    assert made["spec"].get("replicas", 1) == 1  # absent, or defaulted


def test_client_input_is_never_a_500(server: Server) -> None:
    code, status = server.request("POST", CM, {"metadata": {"name": 5}})
    assert (code, status["message"]) == (
        400,
        'ConfigMap in version "v1" cannot be handled as a ConfigMap: json: cannot unmarshal '
        "number into Go struct field ObjectMeta.metadata.name of type string",
    )
    code, status = server.request("POST", CM, {"metadata": {"name": "bad\n"}})
    assert code == 422
    assert "a lowercase RFC 1123 subdomain" in status["message"]
    assert_absent(server, f"{CM}/bad%0A")
    # JSON nested deeper than Go's scanner allows (10000): 400; shallower is read
    deep = b'{"metadata":{"name":"deep"},"x":' + b"[" * 10000 + b"]" * 10000 + b"}"
    code, status = server.request("POST", CM, raw=deep)
    assert code == 400
    assert status["message"] == (
        "the object provided is unrecognized (must be of type ConfigMap): couldn't get "
        "version/kind; json parse error: invalid character '[' exceeded max depth "
        '({"metadata":{"name":"deep"},"x ...)'
    )
    assert_absent(server, f"{CM}/deep")
    shallow = b'{"metadata":{"name":"shallow"},"x":' + b"[" * 5000 + b"]" * 5000 + b"}"
    code, made = server.request("POST", CM, raw=shallow)
    assert code == 201
    assert "x" not in made
    # Content-Type: JSON, YAML and protobuf only
    code, status = server.request(
        "POST", CM, raw=b'{"metadata":{"name":"t"}}', content_type="text/plain"
    )
    assert (code, status["reason"], status["message"]) == (
        415,
        "UnsupportedMediaType",
        "the body of the request was in an unknown format - accepted media types include: "
        "application/json, application/yaml, application/vnd.kubernetes.protobuf",
    )
    assert_absent(server, f"{CM}/t")
    yaml_body = b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: y\ndata:\n  a: '1'\n"
    code, made = server.request("POST", CM, raw=yaml_body, content_type="application/yaml")
    assert code == 201
    assert made["data"] == {"a": "1"}
    code, made = server.request(
        "PUT", f"{CM}/y", raw=yaml_body.replace(b"'1'", b"'2'"), content_type="application/yaml"
    )
    assert code == 200
    assert made["data"] == {"a": "2"}
    code, status = server.request("GET", CM + "?watch=1&timeoutSeconds=1.5")
    assert (code, status["message"]) == (
        400,
        'strconv.ParseInt: parsing "1.5": invalid syntax',
    )
    code, status = server.request(
        "POST", CM, raw=json.dumps({"kind": 5, "metadata": {"name": "k"}}).encode()
    )
    assert code == 400
    assert status["message"].startswith(
        "the object provided is unrecognized (must be of type ConfigMap): couldn't get "
        "version/kind; json parse error: json: cannot unmarshal number into Go struct field "
        ".kind of type string ("
    )
