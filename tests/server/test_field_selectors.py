"""Field selectors per kind over HTTP, as kube-apiserver registers them: each kind's field labels
(its fieldLabelConversionFunc) read where its GetAttrs reads them, the kind's 400 for a label it
lacks on list and watch alike, a CRD's selectableFields; and what they are for: ``kubectl
describe pod`` showing the pod's events and ``kubectl events --for``."""

from __future__ import annotations

import copy
import time
import urllib.parse
from collections.abc import Callable
from typing import Any

import pytest
from harness import Server

from kubelite.api.simulation.config import Simulation

#: the tests work in a namespace "fs" of their own and select Nodes by their fields
pytestmark = pytest.mark.fresh_server
Obj = dict[str, Any]
NS = "/api/v1/namespaces"
PODS = f"{NS}/fs/pods"
EVENTS = f"{NS}/fs/events"
NOT_KNOWN = '"{}" is not a known field selector: only "metadata.name", "metadata.namespace"'


def ok(server: Server, method: str, path: str, body: Any = None) -> Obj:
    code, got = server.request(method, path, body)
    assert code in (200, 201), (code, got)
    return got


def names(server: Server, path: str, selector: str) -> list[str]:
    query = urllib.parse.urlencode({"fieldSelector": selector})
    got = ok(server, "GET", f"{path}?{query}")
    return sorted(item["metadata"]["name"] for item in got["items"])


def rc_status(server: Server, check: Callable[[Obj], bool]) -> None:
    """Until the status of ``fs/rc`` passes ``check``."""
    deadline = time.monotonic() + 30
    while not check(ok(server, "GET", f"{NS}/fs/replicationcontrollers/rc").get("status") or {}):
        assert time.monotonic() < deadline, "the RC's status never came"
        time.sleep(0.05)


def refused(server: Server, path: str, selector: str, *, watch: bool = False) -> str:
    query = {"fieldSelector": selector} | ({"watch": "true"} if watch else {})
    code, got = server.request("GET", f"{path}?{urllib.parse.urlencode(query)}")
    assert code == 400, got
    assert got["reason"] == "BadRequest"
    assert got["kind"] == "Status"
    return str(got["message"])


def pod(name: str, **spec: Any) -> Obj:
    return {
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}], **spec},
    }


@pytest.fixture
def fs(server: Server) -> Server:
    ok(server, "POST", NS, {"metadata": {"name": "fs"}})
    return server


def test_pod_field_labels(fs: Server) -> None:
    ok(fs, "POST", PODS, pod("a", nodeName="n1", hostNetwork=True, restartPolicy="Never"))
    # b is left unscheduled: no scheduler is named by its schedulerName
    none = {"schedulerName": "kubelite.test/no-scheduler"}
    ok(fs, "POST", PODS, pod("b", restartPolicy="Always", serviceAccountName="robot", **none))
    assert names(fs, PODS, "spec.nodeName=n1") == ["a"]
    assert names(fs, PODS, "spec.nodeName=") == ["b"]
    assert names(fs, PODS, "spec.host=n1") == ["a"]  # old clients' name for spec.nodeName
    assert names(fs, PODS, "spec.hostNetwork=true") == ["a"]
    assert names(fs, PODS, "spec.hostNetwork=false") == ["b"]  # absent reads as Go's false
    assert names(fs, PODS, "spec.restartPolicy!=Always") == ["a"]
    assert names(fs, PODS, "spec.serviceAccountName=robot") == ["b"]
    assert names(fs, PODS, "metadata.name=a,spec.nodeName=n1") == ["a"]
    assert names(fs, PODS, "status.podIPs=") == ["a", "b"]  # accepted, never set
    status = ok(fs, "GET", f"{PODS}/a")
    status["status"] = {"phase": "Running", "podIPs": [{"ip": "10.1.0.7"}], "podIP": "10.1.0.7"}
    status["status"]["nominatedNodeName"] = "n2"
    ok(fs, "PUT", f"{PODS}/a/status", status)
    assert names(fs, PODS, "status.phase=Running") == ["a"]
    assert names(fs, PODS, "status.podIP=10.1.0.7") == ["a"]
    assert names(fs, PODS, "status.nominatedNodeName=n2") == ["a"]
    assert names(fs, "/api/v1/pods", "metadata.namespace=fs,spec.nodeName!=n1") == ["b"]


@pytest.mark.parametrize("watch", [False, True])
def test_a_label_the_kind_lacks_is_400_on_list_and_watch(fs: Server, watch: bool) -> None:
    assert refused(fs, PODS, "spec.nodeName=n,spec.bogus=x", watch=watch) == (
        "field label not supported: spec.bogus"
    )
    cms = f"{NS}/fs/configmaps"
    assert refused(fs, cms, "data.a=1", watch=watch) == NOT_KNOWN.format("data.a")
    jobs = "/apis/batch/v1/namespaces/fs/jobs"
    assert refused(fs, jobs, "status.succeeded=1", watch=watch) == (
        'field label "status.succeeded" not supported for batchv1.Job'
    )
    # Nodes and Namespaces are not namespaced: their conversion refuses metadata.namespace
    assert refused(fs, "/api/v1/nodes", "metadata.namespace=", watch=watch) == (
        "field label not supported: metadata.namespace"
    )
    # apps/v1 registers no conversion: ReplicaSet's status.replicas is refused (kube #135136)
    rs = "/apis/apps/v1/namespaces/fs/replicasets"
    assert refused(fs, rs, "status.replicas=0", watch=watch) == NOT_KNOWN.format("status.replicas")
    # the grammar is checked first, then the labels in sorted order
    assert refused(fs, PODS, "zzz=1,aaa=2", watch=watch) == "field label not supported: aaa"
    assert refused(fs, PODS, "spec.bogus", watch=watch) == (
        "invalid selector: 'spec.bogus'; can't understand 'spec.bogus'"
    )


def test_a_watch_sees_only_what_its_field_selector_selects(fs: Server) -> None:
    reader, events = fs.watch_lines(f"{PODS}?watch=true&fieldSelector=spec.nodeName%3Dn1", 3)
    ok(fs, "POST", PODS, pod("off"))
    ok(fs, "POST", PODS, pod("on", nodeName="n1"))
    reader.join()
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [("ADDED", "on")]


@pytest.mark.fresh_server(simulation=Simulation(nodes=0))  # the only Nodes are the test's
def test_counts_and_flags_compare_as_their_text(fs: Server) -> None:
    ok(fs, "POST", "/api/v1/nodes", {"metadata": {"name": "n1"}})
    ok(fs, "POST", "/api/v1/nodes", {"metadata": {"name": "n2"}, "spec": {"unschedulable": True}})
    assert names(fs, "/api/v1/nodes", "spec.unschedulable=false") == ["n1"]
    assert names(fs, "/api/v1/nodes", "spec.unschedulable=true") == ["n2"]
    rcs = f"{NS}/fs/replicationcontrollers"
    template = {"metadata": {"labels": {"app": "x"}}, "spec": pod("t")["spec"]}
    # its controller writes the status: replicas 0 once it observed the RC, then 2 (pods made,
    # pending: no Node fits them)
    rc = {"metadata": {"name": "rc"}, "spec": {"replicas": 0, "template": template}}
    ok(fs, "POST", rcs, rc)
    rc_status(fs, lambda s: s.get("observedGeneration") == 1)
    assert names(fs, rcs, "status.replicas=0") == ["rc"]
    code, scaled = fs.request(
        "PATCH", f"{rcs}/rc", {"spec": {"replicas": 2}}, "application/merge-patch+json"
    )
    assert code == 200, scaled
    rc_status(fs, lambda s: s.get("replicas") == 2)
    assert names(fs, rcs, "status.replicas=2") == ["rc"]
    assert names(fs, rcs, "status.replicas=0") == []
    ok(fs, "POST", f"{NS}/fs/secrets", {"metadata": {"name": "s"}, "type": "example.com/x"})
    ok(fs, "POST", f"{NS}/fs/secrets", {"metadata": {"name": "o"}})
    assert names(fs, f"{NS}/fs/secrets", "type=example.com/x") == ["s"]
    assert names(fs, NS, "status.phase=Active,metadata.name=fs") == ["fs"]


def event(name: str, **fields: Any) -> Obj:
    involved = {"kind": "Pod", "namespace": "fs", "name": "web", "apiVersion": "v1"}
    return {
        "metadata": {"name": name},
        "involvedObject": involved,
        "reason": "Scheduled",
        "message": "placed",
        "type": "Normal",
        **fields,
    }


def test_event_field_labels_in_both_versions(fs: Server) -> None:
    ok(fs, "POST", EVENTS, event("e1", source={"component": "scheduler"}))
    ok(fs, "POST", EVENTS, event("e2", reportingComponent="kubelet", reason="Pulled"))
    other = event("e3")
    other["involvedObject"] = {"kind": "Node", "name": "n1"}
    ok(fs, "POST", EVENTS, other)
    assert names(fs, EVENTS, "involvedObject.kind=Pod,involvedObject.name=web") == ["e1", "e2"]
    assert names(fs, EVENTS, "involvedObject.namespace=fs") == ["e1", "e2"]
    assert names(fs, EVENTS, "reason=Pulled") == ["e2"]
    assert names(fs, EVENTS, "source=scheduler") == ["e1"]
    assert names(fs, EVENTS, "source=kubelet") == ["e2"]  # no source: reportingComponent
    assert names(fs, EVENTS, "reportingComponent=kubelet") == ["e2"]
    assert names(fs, EVENTS, "type=Normal,involvedObject.kind=Node") == ["e3"]
    # events.k8s.io/v1 names the same fields its own way, over the same objects
    v1 = "/apis/events.k8s.io/v1/namespaces/fs/events"
    assert names(fs, v1, "regarding.kind=Pod,regarding.name=web") == ["e1", "e2"]
    assert names(fs, v1, "reportingController=kubelet") == ["e2"]
    assert names(fs, v1, "source=scheduler") == ["e1"]
    assert refused(fs, v1, "involvedObject.name=web") == (
        "field label not supported: involvedObject.name"
    )
    assert refused(fs, EVENTS, "regarding.name=web") == (
        "field label not supported: regarding.name"
    )


def test_kubectl_describe_and_events_for_a_pod(fs: Server) -> None:
    created = ok(fs, "POST", PODS, pod("web"))
    uid = created["metadata"]["uid"]
    scheduled = event("web.1", firstTimestamp="2025-01-01T00:00:00Z")
    scheduled["involvedObject"] |= {"uid": uid}
    scheduled["lastTimestamp"] = "2025-01-01T00:00:00Z"
    scheduled["source"] = {"component": "default-scheduler"}
    scheduled["message"] = "Successfully assigned fs/web to n1"
    ok(fs, "POST", EVENTS, scheduled)
    unrelated = event("other.1", message="not this pod")
    unrelated["involvedObject"] = {"kind": "Pod", "namespace": "fs", "name": "other"}
    ok(fs, "POST", EVENTS, unrelated)

    described = fs.kubectl("describe", "pod", "web", "-n", "fs").stdout
    events_part = described.split("Events:", 1)[1]
    assert "Scheduled" in events_part
    assert "Successfully assigned fs/web to n1" in events_part
    assert "not this pod" not in events_part

    listed = fs.kubectl("events", "-n", "fs", "--for", "pod/web").stdout
    assert "Successfully assigned fs/web to n1" in listed
    assert "not this pod" not in listed


CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
SCHEMA: Obj = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "properties": {
                "color": {"type": "string"},
                "size": {"type": "integer"},
                "on": {"type": "boolean"},
            },
        }
    },
}


def crd(scope: str) -> Obj:
    fields = [{"jsonPath": ".spec.color"}, {"jsonPath": ".spec.size"}, {"jsonPath": ".spec.on"}]
    return {
        "metadata": {"name": "paints.example.org"},
        "spec": {
            "group": "example.org",
            "scope": scope,
            "names": {"plural": "paints", "kind": "Paint"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": copy.deepcopy(SCHEMA)},
                    "selectableFields": fields,
                }
            ],
        },
    }


def test_custom_resources_select_on_their_selectable_fields(fs: Server) -> None:
    ok(fs, "POST", CRDS, crd("Namespaced"))
    paints = "/apis/example.org/v1/namespaces/fs/paints"
    for name, spec in (("red", {"color": "red", "size": 3, "on": True}), ("blue", {})):
        ok(fs, "POST", paints, {"apiVersion": "example.org/v1", "kind": "Paint",
                                "metadata": {"name": name}, "spec": spec})  # fmt: skip
    assert names(fs, paints, "spec.color=red") == ["red"]
    assert names(fs, paints, "spec.size=3,spec.on=true") == ["red"]
    assert names(fs, paints, "spec.color=") == ["blue"]  # absent: ""
    assert names(fs, paints, "metadata.namespace=fs,spec.color!=red") == ["blue"]
    assert refused(fs, paints, "spec.shade=x") == "field label not supported: spec.shade"
    assert refused(fs, paints, "spec.shade=x", watch=True) == (
        "field label not supported: spec.shade"
    )


def test_a_cluster_scoped_custom_resource_has_no_namespace_label(fs: Server) -> None:
    ok(fs, "POST", CRDS, crd("Cluster"))
    paints = "/apis/example.org/v1/paints"
    body = {"apiVersion": "example.org/v1", "kind": "Paint", "metadata": {"name": "p"},
            "spec": {"color": "red"}}  # fmt: skip
    ok(fs, "POST", paints, body)
    assert names(fs, paints, "spec.color=red,metadata.name=p") == ["p"]
    assert refused(fs, paints, "metadata.namespace=") == (
        "field label not supported: metadata.namespace"
    )
