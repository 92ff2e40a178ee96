"""Quantities over HTTP (issue 12): a resource.Quantity decodes through ParseQuantity and
encodes through String(), so kube stores and returns its canonical text (``1024Mi`` is ``1Gi``,
the number ``1`` is ``"1"``); a re-sent value in another spelling changes nothing; container
resources are rounded up to milli (SetDefaults_ResourceList: ``0.1m`` is ``1m``)."""

from __future__ import annotations

from typing import Any

import pytest
from harness import Server

#: a scheduler no pod here waits for, so that none writes the pods' status meanwhile
UNSCHEDULED = "kubelite.test/no-scheduler"

NS = "/api/v1/namespaces/{ns}"


def create(
    server: Server, path: str, body: dict[str, Any], *, reread: bool = True
) -> dict[str, Any]:
    """POST ``body``; unless ``reread`` is False (an object a controller writes to at once, as
    node IPAM writes a new Node's podCIDR), the stored object is read back and must be the
    create's answer."""
    code, made = server.request("POST", path, body)
    assert code == 201, made
    if not reread:
        return dict(made)
    code, stored = server.request("GET", f"{path}/{made['metadata']['name']}")
    assert code == 200
    assert stored == made
    return stored


def pod(name: str, resources: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "containers": [{"name": "c", "image": "nginx", "resources": resources}],
            "schedulerName": UNSCHEDULED,
            **spec,
        },
    }


def test_pod_quantities_are_stored_canonical(server: Server) -> None:
    made = create(
        server,
        f"{NS}/pods",
        pod(
            "p",
            {
                "limits": {"memory": "1024Mi", "cpu": 1, "ephemeral-storage": "1000M"},
                "requests": {"cpu": "0.5", "memory": "0.5Gi"},
            },
        ),
    )
    resources = made["spec"]["containers"][0]["resources"]
    assert resources == {
        "limits": {"memory": "1Gi", "cpu": "1", "ephemeral-storage": "1G"},
        "requests": {"cpu": "500m", "memory": "512Mi", "ephemeral-storage": "1G"},
    }


def test_limitrange_resourcequota_and_claim_quantities_are_stored_canonical(
    server: Server,
) -> None:
    limits = create(
        server,
        f"{NS}/limitranges",
        {
            "apiVersion": "v1",
            "kind": "LimitRange",
            "metadata": {"name": "lr"},
            "spec": {
                "limits": [
                    {
                        "type": "Container",
                        "max": {"memory": "2048Mi", "cpu": "2000m"},
                        "min": {"cpu": "0.1"},
                    }
                ]
            },
        },
    )
    item = limits["spec"]["limits"][0]
    assert (item["max"], item["min"]) == ({"memory": "2Gi", "cpu": "2"}, {"cpu": "100m"})
    quota = create(
        server,
        f"{NS}/resourcequotas",
        {
            "apiVersion": "v1",
            "kind": "ResourceQuota",
            "metadata": {"name": "q"},
            "spec": {"hard": {"pods": 10, "requests.memory": "1.5Gi", "requests.cpu": "1e3"}},
        },
    )
    assert quota["spec"]["hard"] == {
        "pods": "10",
        "requests.memory": "1536Mi",
        "requests.cpu": "1e3",
    }
    claim = create(
        server,
        f"{NS}/persistentvolumeclaims",
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": "c"},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "1048576Ki"}},
            },
        },
    )
    assert claim["spec"]["resources"]["requests"] == {"storage": "1Gi"}


def test_a_put_in_another_spelling_is_a_no_op(server: Server) -> None:
    quota = create(
        server,
        f"{NS}/resourcequotas",
        {
            "apiVersion": "v1",
            "kind": "ResourceQuota",
            "metadata": {"name": "q"},
            "spec": {"hard": {"requests.memory": "1536Mi", "pods": "10"}},
        },
    )
    quota["spec"]["hard"] = {"requests.memory": "1.5Gi", "pods": 10}
    code, updated = server.request("PUT", f"{NS}/resourcequotas/q", quota)
    assert code == 200, updated
    assert updated["metadata"]["resourceVersion"] == quota["metadata"]["resourceVersion"]
    assert updated["spec"]["hard"] == {"requests.memory": "1536Mi", "pods": "10"}

    made = create(server, f"{NS}/pods", pod("p", {"limits": {"memory": "1Gi", "cpu": "500m"}}))
    made["spec"]["containers"][0]["resources"] = {
        "limits": {"memory": "1048576Ki", "cpu": "0.5"},
        "requests": {"memory": "1024Mi", "cpu": 0.5},
    }
    code, updated = server.request("PUT", f"{NS}/pods/p", made)
    assert code == 200, updated
    assert updated["metadata"]["resourceVersion"] == made["metadata"]["resourceVersion"]
    assert updated["spec"]["containers"][0]["resources"]["limits"] == {
        "memory": "1Gi",
        "cpu": "500m",
    }


def test_container_resources_are_rounded_up_to_milli(server: Server) -> None:
    body = pod("p", {"limits": {"cpu": "0.1m", "memory": "1.0001"}, "requests": {"cpu": "1u"}})
    body["spec"]["initContainers"] = [
        {"name": "i", "image": "busybox", "resources": {"requests": {"cpu": "100.5m"}}}
    ]
    made = create(server, f"{NS}/pods", body)
    assert made["spec"]["containers"][0]["resources"] == {
        "limits": {"cpu": "1m", "memory": "1001m"},
        "requests": {"cpu": "1m", "memory": "1001m"},
    }
    assert made["spec"]["initContainers"][0]["resources"] == {"requests": {"cpu": "101m"}}
    deployment = create(
        server,
        "/apis/apps/v1/namespaces/{ns}/deployments",
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "d"},
            "spec": {
                "selector": {"matchLabels": {"app": "d"}},
                "template": {
                    "metadata": {"labels": {"app": "d"}},
                    "spec": {
                        "containers": [
                            {"name": "c", "image": "i", "resources": {"limits": {"cpu": "5n"}}}
                        ]
                    },
                },
            },
        },
    )
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert container["resources"] == {"limits": {"cpu": "1m"}}


@pytest.mark.fresh_server  # it makes a PersistentVolume and a Node
def test_every_resource_list_of_core_kinds_is_rounded_up_to_milli(server: Server) -> None:
    """The generated SetDefaults_ResourceList calls beyond pods: LimitRange items (after
    their own defaults), ResourceQuota hard, PV capacity, Node capacity and allocatable."""
    limits = create(
        server,
        f"{NS}/limitranges",
        {
            "apiVersion": "v1",
            "kind": "LimitRange",
            "metadata": {"name": "lr"},
            "spec": {
                "limits": [
                    {"type": "Container", "max": {"cpu": "0.5m"}, "min": {"cpu": "0.1m"}},
                    {"type": "Pod", "maxLimitRequestRatio": {"cpu": "1.0001"}},
                ]
            },
        },
    )
    container, pod_item = limits["spec"]["limits"]
    assert container["max"] == {"cpu": "1m"}
    assert container["min"] == {"cpu": "1m"}
    assert container["default"] == {"cpu": "1m"}  # from max, then rounded
    assert container["defaultRequest"] == {"cpu": "1m"}
    assert pod_item["maxLimitRequestRatio"] == {"cpu": "1001m"}
    quota = create(
        server,
        f"{NS}/resourcequotas",
        {
            "apiVersion": "v1",
            "kind": "ResourceQuota",
            "metadata": {"name": "q"},
            "spec": {"hard": {"requests.cpu": "0.0001"}},
        },
    )
    assert quota["spec"]["hard"] == {"requests.cpu": "1m"}
    volume = create(
        server,
        "/api/v1/persistentvolumes",
        {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": "pv"},
            "spec": {
                "capacity": {"storage": "1.5m"},
                "accessModes": ["ReadWriteOnce"],
                "hostPath": {"path": "/tmp/pv"},
            },
        },
    )
    assert volume["spec"]["capacity"] == {"storage": "2m"}
    node = create(
        server,
        "/api/v1/nodes",
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "n1"},
            "status": {"capacity": {"cpu": "0.0005"}},
        },
        reread=False,
    )
    assert node["status"]["capacity"] == {"cpu": "1m"}
    assert node["status"]["allocatable"] == {"cpu": "1m"}
