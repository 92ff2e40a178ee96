"""``pods/<name>/ephemeralcontainers`` as kube serves it: get, update and patch, only the
ephemeral containers taken from the request, kube's validation of them (fields an ephemeral
container may not set, unique names, an existing target) and of their update (none removed or
changed); and ``kubectl debug``, which adds one."""

from __future__ import annotations

from typing import Any

from harness import Server

#: a scheduler no pod here waits for, so that none writes the pods' status meanwhile
UNSCHEDULED = "kubelite.test/no-scheduler"

POD = "/api/v1/namespaces/{ns}/pods/p"
EPHEMERAL = POD + "/ephemeralcontainers"
STRATEGIC = "application/strategic-merge-patch+json"


def make_pod(server: Server) -> dict[str, Any]:
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "labels": {"app": "a"}},
        # no scheduler places it: the scheduler would write its status meanwhile
        "spec": {"containers": [{"name": "c", "image": "nginx"}], "schedulerName": UNSCHEDULED},
    }
    status, made = server.request("POST", "/api/v1/namespaces/{ns}/pods", body)
    assert status == 201, made
    return made


def add(server: Server, *containers: dict[str, Any], labels: Any = None) -> tuple[int, Any]:
    patch: dict[str, Any] = {"spec": {"ephemeralContainers": list(containers)}}
    if labels is not None:
        patch["metadata"] = {"labels": labels}
    return server.request("PATCH", EPHEMERAL, patch, content_type=STRATEGIC)


def test_adding_an_ephemeral_container(server: Server) -> None:
    made = make_pod(server)
    status, pod = add(
        server, {"name": "dbg", "image": "busybox", "targetContainerName": "c"}, labels={"x": "y"}
    )
    assert status == 200, pod
    (added,) = pod["spec"]["ephemeralContainers"]
    assert added["name"] == "dbg"
    assert added["targetContainerName"] == "c"
    assert added["imagePullPolicy"] == "Always"  # defaulted as a container
    assert added["terminationMessagePath"] == "/dev/termination-log"
    assert pod["metadata"]["labels"] == {"app": "a"}  # only ephemeral containers are taken
    assert pod["metadata"]["generation"] == made["metadata"]["generation"] + 1
    entries = [e for e in pod["metadata"]["managedFields"] if e.get("subresource")]
    assert [e["subresource"] for e in entries] == ["ephemeralcontainers"]
    status, read = server.request("GET", EPHEMERAL)
    assert status == 200
    assert read == pod
    status, discovery = server.request("GET", "/api/v1")
    listed = {r["name"]: r for r in discovery["resources"]}
    assert sorted(listed["pods/ephemeralcontainers"]["verbs"]) == ["get", "patch", "update"]


def test_fields_an_ephemeral_container_may_not_set(server: Server) -> None:
    make_pod(server)
    status, refused = add(
        server,
        {
            "name": "dbg",
            "image": "busybox",
            "ports": [{"containerPort": 80}],
            "resources": {"limits": {"cpu": "1"}},
            "readinessProbe": {"exec": {"command": ["true"]}},
            "volumeMounts": [{"name": "v", "mountPath": "/v", "subPath": "x"}],
        },
    )
    assert status == 422, refused
    causes = [(c["field"], c["message"]) for c in refused["details"]["causes"]]
    forbidden = "Forbidden: cannot be set for an Ephemeral Container"
    assert ("spec.ephemeralContainers[0].ports", forbidden) in causes
    assert ("spec.ephemeralContainers[0].resources", forbidden) in causes
    assert ("spec.ephemeralContainers[0].readinessProbe", forbidden) in causes
    assert ("spec.ephemeralContainers[0].volumeMounts[0].subPath", forbidden) in causes
    assert ("spec.ephemeralContainers[0].volumeMounts[0].name", 'Not found: "v"') in causes
    status, refused = add(server, {"name": "c", "image": "busybox", "targetContainerName": "nope"})
    assert status == 422
    assert refused["message"] == (
        'Pod "p" is invalid: [spec.ephemeralContainers[0].name: Duplicate value: "c", '
        'spec.ephemeralContainers[0].targetContainerName: Not found: "nope"]'
    )
    status, pod = server.request("GET", POD)
    assert "ephemeralContainers" not in pod["spec"]


def test_existing_ones_may_not_be_removed_or_changed(server: Server) -> None:
    make_pod(server)
    status, pod = add(server, {"name": "dbg", "image": "busybox"})
    assert status == 200
    removed = dict(pod)
    removed["spec"] = {**pod["spec"], "ephemeralContainers": []}
    status, refused = server.request("PUT", EPHEMERAL, removed)
    assert status == 422
    assert refused["message"] == (
        'Pod "p" is invalid: spec.ephemeralContainers: Forbidden: existing ephemeral '
        'containers "dbg" may not be removed\n'
    )
    changed = dict(pod)
    changed["spec"] = {
        **pod["spec"],
        "ephemeralContainers": [{**pod["spec"]["ephemeralContainers"][0], "image": "alpine"}],
    }
    status, refused = server.request("PUT", EPHEMERAL, changed)
    assert status == 422
    message = refused["message"]
    assert message.startswith(
        'Pod "p" is invalid: spec.ephemeralContainers[dbg]: Forbidden: existing ephemeral '
        'containers "dbg" may not be changed\n  core.EphemeralContainer{\n'
    )
    assert '- \t\tImage:                    "busybox",' in message or "-" in message
    assert '"alpine"' in message
    status, after = server.request("GET", POD)
    assert after["metadata"]["resourceVersion"] == pod["metadata"]["resourceVersion"]


def test_kubectl_debug_adds_one(server: Server) -> None:
    make_pod(server)
    result = server.kubectl(
        "debug", "p", "--image=busybox", "--container=dbg", "--target=c", "--profile=general"
    )
    assert result.stdout.startswith('Targeting container "c".')
    _, pod = server.request("GET", POD)
    (added,) = pod["spec"]["ephemeralContainers"]
    assert (added["name"], added["image"], added["targetContainerName"]) == ("dbg", "busybox", "c")
