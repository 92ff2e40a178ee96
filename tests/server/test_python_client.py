"""The official ``kubernetes`` Python client against a real kubelite serve, including the seed
scenario: two writers holding the same resourceVersion, one wins, the other gets 409, re-reads
and re-applies, and both changes survive."""

from __future__ import annotations

import pytest
from harness import Server
from kubernetes import client, config
from kubernetes.client.rest import ApiException


@pytest.fixture
def api(server: Server) -> client.ApiClient:
    return config.new_client_from_config(config_file=str(server.kubeconfig))


DEPLOYMENT = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "web-server"},
    "spec": {
        "replicas": 1,
        "selector": {"matchLabels": {"app": "web"}},
        "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "web", "image": "nginx:1.25"}]},
        },
    },
}


def test_conflicting_writers_lose_no_update(server: Server, api: client.ApiClient) -> None:
    ns = server.namespace
    apps = client.AppsV1Api(api)
    created = apps.create_namespaced_deployment(ns, DEPLOYMENT)
    assert created.metadata.generation == 1

    a = apps.read_namespaced_deployment("web-server", ns)
    b = apps.read_namespaced_deployment("web-server", ns)
    assert a.metadata.resource_version == b.metadata.resource_version

    a.spec.template.spec.containers[0].image = "nginx:1.26"
    apps.replace_namespaced_deployment("web-server", ns, a)

    b.spec.replicas = 3
    with pytest.raises(ApiException) as info:
        apps.replace_namespaced_deployment("web-server", ns, b)
    assert info.value.status == 409
    assert "the object has been modified" in info.value.body

    b = apps.read_namespaced_deployment("web-server", ns)
    b.spec.replicas = 3
    apps.replace_namespaced_deployment("web-server", ns, b)

    final = apps.read_namespaced_deployment("web-server", ns)
    assert final.spec.template.spec.containers[0].image == "nginx:1.26"
    assert final.spec.replicas == 3
    assert final.metadata.generation == 3


def test_configmap_crud_and_not_found(server: Server, api: client.ApiClient) -> None:
    ns = server.namespace
    core = client.CoreV1Api(api)
    body = client.V1ConfigMap(metadata=client.V1ObjectMeta(name="c"), data={"k": "v"})
    core.create_namespaced_config_map(ns, body)
    assert core.read_namespaced_config_map("c", ns).data == {"k": "v"}
    core.patch_namespaced_config_map("c", ns, {"data": {"k": "w"}})
    assert core.read_namespaced_config_map("c", ns).data == {"k": "w"}
    core.delete_namespaced_config_map("c", ns)
    with pytest.raises(ApiException) as info:
        core.read_namespaced_config_map("c", ns)
    assert info.value.status == 404
