"""``pods/<name>/eviction`` (kube's pkg/registry/core/pod/storage/eviction.go) over HTTP. The
pods are bound to a simulated node, whose kubelet runs them (Running, Ready, or never ready by
annotation) and finishes their graceful deletion; the disruption controller keeps the budgets'
status."""

from __future__ import annotations

import json
import re
import subprocess
import time
from collections.abc import Callable
from typing import Any, TypeVar

import pytest
from harness import Server
from kubernetes import client, config
from kubernetes.client.rest import ApiException

from kubelite.api.simulation.config import Simulation

PODS = "/api/v1/namespaces/{ns}/pods"
PDBS = "/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets"
SUCCESS = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}
T = TypeVar("T")
MERGE = "application/merge-patch+json"
TOO_MANY = "Cannot evict pod as it would violate the pod's disruption budget."


#: the shared server's simulated node (its kubelet runs the pods placed on it)
NODE = "kubelite-worker"


def make_pod(server: Server, name: str, labels: dict[str, str], *, ready: bool = True,
             phase: str = "Running", owner: dict[str, Any] | None = None,
             node: str = NODE, volumes: list[Any] | None = None) -> Any:  # fmt: skip
    """A pod bound to the simulated ``node``, once its kubelet reports it in ``phase`` and
    Ready or not (a pod meant to be unready is annotated never to be ready; one meant to have
    Succeeded has restartPolicy Never, whose containers exit at once with 0)."""
    body: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels},
        "spec": {"nodeName": node, "containers": [{"name": "c", "image": "nginx"}]},
    }
    if not ready:
        body["metadata"]["annotations"] = {"kubelite.dev/simulate-never-ready": "true"}
    if phase == "Succeeded":
        body["spec"]["restartPolicy"] = "Never"
    if owner is not None:
        body["metadata"]["ownerReferences"] = [owner]
    if volumes:
        body["spec"]["volumes"] = volumes
    code, pod = server.request("POST", PODS, body)
    assert code == 201, pod
    wanted = "True" if ready else "False"

    def reported() -> Any:
        _, found = server.request("GET", f"{PODS}/{name}")
        status = found.get("status") or {}
        conditions = {c["type"]: c["status"] for c in status.get("conditions") or []}
        return found if status.get("phase") == phase and conditions.get("Ready") == wanted else None

    return wait_for(reported)


def wait_gone(server: Server, name: str) -> None:
    """Until the pod is gone: an evicted pod is deleted gracefully, then by its kubelet."""
    wait_for(lambda: True if server.request("GET", f"{PODS}/{name}")[0] == 404 else None)


def pdb_body(name: str, spec: dict[str, Any], app: str = "web") -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name},
        "spec": {**spec, "selector": {"matchLabels": {"app": app}}},
    }


def wait_for(probe: Callable[[], T | None], seconds: float = 15.0) -> T:
    """``probe``'s first answer that is not None, polled every 50 ms."""
    deadline = time.monotonic() + seconds
    while True:
        found = probe()
        if found is not None:
            return found
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting")
        time.sleep(0.05)


def eviction(name: str, delete_options: dict[str, Any] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": name},
    }
    if delete_options is not None:
        body["deleteOptions"] = delete_options
    return body


def evict(server: Server, name: str, **kw: Any) -> tuple[int, Any]:
    return server.request("POST", f"{PODS}/{name}/eviction", eviction(name, **kw))


def test_a_pod_no_budget_covers_is_deleted(server: Server) -> None:
    make_pod(server, "p", {"app": "x"})
    assert evict(server, "p") == (201, SUCCESS)
    wait_gone(server, "p")


def test_a_missing_pod_is_404(server: Server) -> None:
    code, body = evict(server, "nope")
    assert code == 404
    assert body["message"] == 'pods "nope" not found'


def test_the_name_must_match_the_path(server: Server) -> None:
    make_pod(server, "p", {"app": "x"})
    code, body = server.request("POST", f"{PODS}/p/eviction", eviction("q"))
    assert (code, body["message"]) == (400, "name in URL does not match name in Eviction object")


def observed(server: Server, name: str, check: Callable[[Any], bool]) -> Any:
    """The PDB once the disruption controller wrote a status ``check`` accepts."""

    def probe() -> Any:
        code, pdb = server.request("GET", f"{PDBS}/{name}")
        assert code == 200, pdb
        return pdb if check(pdb["status"]) else None

    return wait_for(probe)


def budget(server: Server, name: str, spec: dict[str, Any], healthy: int) -> Any:
    code, pdb = server.request("POST", PDBS, pdb_body(name, spec))
    assert code == 201, pdb
    return observed(
        server,
        name,
        lambda s: s.get("observedGeneration") == 1 and s["currentHealthy"] == healthy,
    )


def test_the_budget_spends_then_refuses_with_kube_429(server: Server) -> None:
    make_pod(server, "a", {"app": "web"})
    make_pod(server, "b", {"app": "web"})
    budget(server, "pdb", {"minAvailable": 1}, healthy=2)
    reader, events = server.watch_lines(f"{PODS}?watch=1&fieldSelector=metadata.name=a", 2)
    time.sleep(0.3)
    assert evict(server, "a") == (201, SUCCESS)
    wait_gone(server, "a")
    reader.join()
    kinds = [e["type"] for e in events]
    # the condition, then the graceful delete, the kubelet's stop and its final delete
    assert (kinds[0], kinds[-1]) == ("ADDED", "DELETED"), kinds
    assert set(kinds[1:-1]) == {"MODIFIED"}, kinds
    (target,) = [
        c for c in events[1]["object"]["status"]["conditions"] if c["type"] == "DisruptionTarget"
    ]
    assert target == {
        "type": "DisruptionTarget",
        "observedGeneration": 1,
        "status": "True",
        "lastProbeTime": None,
        "lastTransitionTime": target["lastTransitionTime"],
        "reason": "EvictionByEvictionAPI",
        "message": "Eviction API: evicting",
    }
    # a's disruptedPods entry goes with it
    pdb = observed(server, "pdb", lambda s: s["currentHealthy"] == 1 and "disruptedPods" not in s)
    assert pdb["status"]["disruptionsAllowed"] == 0
    code, body = evict(server, "b")
    assert (code, body) == (
        429,
        {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": TOO_MANY,
            "reason": "TooManyRequests",
            "details": {
                "causes": [
                    {
                        "reason": "DisruptionBudget",
                        "message": "The disruption budget pdb needs 1 healthy pods and has 1 "
                        "currently",
                    }
                ]
            },
            "code": 429,
        },
    )
    assert server.request("GET", f"{PODS}/b")[0] == 200


def test_an_evicted_pod_held_by_a_finalizer_counts_no_more(server: Server) -> None:
    """A pod still there after its eviction (a finalizer holds it) is terminating: out of
    currentHealthy, and out of disruptedPods (kube's buildDisruptedPodMap skips it)."""
    make_pod(server, "a", {"app": "web"})
    make_pod(server, "b", {"app": "web"})
    make_pod(server, "c", {"app": "web"})
    budget(server, "pdb", {"minAvailable": 1}, healthy=3)
    # merge patches: no resourceVersion to conflict with the kubelet's status writes
    hold = {"metadata": {"finalizers": ["example.com/hold"]}}
    assert server.request("PATCH", f"{PODS}/a", hold, content_type=MERGE)[0] == 200
    assert evict(server, "a") == (201, SUCCESS)
    code, pod = server.request("GET", f"{PODS}/a")
    assert code == 200
    assert pod["metadata"]["deletionTimestamp"]
    assert "DisruptionTarget" in [c["type"] for c in pod["status"]["conditions"]]
    # written by the registry, as kube's eviction writes it: in nobody's managedFields (the
    # kubelet's own status writes, which follow the graceful delete, own other fields)
    owned = json.dumps(pod["metadata"]["managedFields"])
    assert 'k:{\\"type\\":\\"DisruptionTarget\\"}' not in owned, owned
    pdb = observed(server, "pdb", lambda s: s["currentHealthy"] == 2 and "disruptedPods" not in s)
    assert pdb["status"]["disruptionsAllowed"] == 1
    release = {"metadata": {"finalizers": None}}
    assert server.request("PATCH", f"{PODS}/a", release, content_type=MERGE)[0] == 200
    wait_gone(server, "a")


def test_a_terminating_or_terminal_pod_skips_the_budget(server: Server) -> None:
    make_pod(server, "done", {"app": "web"}, ready=False, phase="Succeeded")
    make_pod(server, "b", {"app": "web"})
    budget(server, "pdb", {"minAvailable": 5}, healthy=1)
    assert evict(server, "done") == (201, SUCCESS)
    assert server.request("GET", f"{PODS}/done")[0] == 404


def test_two_budgets_are_a_500(server: Server) -> None:
    make_pod(server, "a", {"app": "web"})
    budget(server, "one", {"minAvailable": 0}, healthy=1)
    budget(server, "two", {"maxUnavailable": 1}, healthy=1)
    assert evict(server, "a") == (
        500,
        {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": "This pod has more than one PodDisruptionBudget, which the eviction "
            "subresource does not support.",
            "code": 500,
        },
    )
    assert server.request("GET", f"{PODS}/a")[0] == 200
    # the disruption controller, seeing the pod change, names the budget it chose
    change = {"metadata": {"labels": {"app": "web", "seen": "yes"}}}
    code, _ = server.request("PATCH", f"{PODS}/a", change, content_type=MERGE)
    assert code == 200

    def event() -> Any:
        _, listed = server.request("GET", "/api/v1/namespaces/{ns}/events")
        hits = [e for e in listed["items"] if e["reason"] == "MultiplePodDisruptionBudgets"]
        return hits[0] if hits else None

    found = wait_for(event)
    assert (found["type"], found["involvedObject"]["name"]) == ("Warning", "a")
    assert found["message"] == (
        f'Pod "{server.namespace}"/"a" matches multiple PodDisruptionBudgets.  Chose "one" '
        "arbitrarily."
    )


@pytest.mark.parametrize(
    ("spec", "healthy", "code"),
    [
        ({"minAvailable": 1}, 2, 201),  # IfHealthyBudget, healthy budget: evicted, not spent
        ({"minAvailable": 3}, 2, 429),  # IfHealthyBudget, budget short: refused
        ({"minAvailable": 3, "unhealthyPodEvictionPolicy": "AlwaysAllow"}, 2, 201),
    ],
)
def test_unhealthy_pods_and_the_policy(
    server: Server, spec: dict[str, Any], healthy: int, code: int
) -> None:
    make_pod(server, "a", {"app": "web"})
    make_pod(server, "b", {"app": "web"})
    make_pod(server, "sick", {"app": "web"}, ready=False)
    before = budget(server, "pdb", spec, healthy=healthy)["status"]
    got, body = evict(server, "sick")
    assert got == code, body
    if code == 201:
        wait_gone(server, "sick")
        _, pdb = server.request("GET", f"{PDBS}/pdb")
        assert "disruptedPods" not in pdb["status"]  # the budget was not spent
        assert pdb["status"]["disruptionsAllowed"] == before["disruptionsAllowed"]
    else:
        assert body["details"]["causes"][0]["message"] == (
            "The disruption budget pdb needs 3 healthy pods and has 2 currently"
        )


def test_dry_run_changes_nothing(server: Server) -> None:
    make_pod(server, "a", {"app": "web"})
    make_pod(server, "b", {"app": "web"})
    make_pod(server, "free", {"app": "other"})
    before = budget(server, "pdb", {"minAvailable": 1}, healthy=2)
    path = f"{PODS}/a/eviction?dryRun=All"
    assert server.request("POST", path, eviction("a")) == (201, SUCCESS)
    in_body = eviction("free", {"dryRun": ["All"]})
    assert server.request("POST", f"{PODS}/free/eviction", in_body) == (201, SUCCESS)
    for name in ("a", "free"):
        code, pod = server.request("GET", f"{PODS}/{name}")
        assert code == 200
        assert "deletionTimestamp" not in pod["metadata"]
        assert "DisruptionTarget" not in [c["type"] for c in pod["status"]["conditions"]]
    _, pdb = server.request("GET", f"{PDBS}/pdb")
    assert pdb["status"] == before["status"]


def test_the_name_in_the_body_and_its_kind(server: Server) -> None:
    make_pod(server, "p", {"app": "x"})
    wrong = {**eviction("p"), "apiVersion": "v1"}
    code, body = server.request("POST", f"{PODS}/p/eviction", wrong)
    assert (code, body["message"]) == (
        400,
        'no kind "Eviction" is registered for version "v1" in scheme '
        '"pkg/api/legacyscheme/scheme.go:30"',
    )
    beta = {**eviction("p"), "apiVersion": "policy/v1beta1"}
    assert server.request("POST", f"{PODS}/p/eviction", beta) == (201, SUCCESS)


@pytest.mark.fresh_server  # a ValidatingAdmissionPolicy (cluster-wide) keeps the budget unobserved
def test_a_budget_not_yet_observed_and_admission_of_evictions(server: Server) -> None:
    admission = "/apis/admissionregistration.k8s.io/v1"
    policy = {
        "metadata": {"name": "freeze"},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {
                "resourceRules": [
                    {
                        "apiGroups": ["policy"],
                        "apiVersions": ["v1"],
                        "operations": ["UPDATE"],
                        "resources": ["poddisruptionbudgets/status"],
                    }
                ]
            },
            "validations": [{"expression": "object.metadata.name != 'frozen'"}],
        },
    }
    code, got = server.request("POST", f"{admission}/validatingadmissionpolicies", policy)
    assert code == 201, got
    bound = {"metadata": {"name": "freeze"},
             "spec": {"policyName": "freeze", "validationActions": ["Deny"]}}  # fmt: skip
    code, got = server.request("POST", f"{admission}/validatingadmissionpolicybindings", bound)
    assert code == 201, got
    make_pod(server, "a", {"app": "web"})
    code, got = server.request("POST", PDBS, pdb_body("frozen", {"minAvailable": 0}))
    assert code == 201, got
    code, body = evict(server, "a")
    assert (code, body) == (
        429,
        {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": TOO_MANY,
            "reason": "TooManyRequests",
            "details": {
                "causes": [
                    {
                        "reason": "DisruptionBudget",
                        "message": "The disruption budget frozen is still being processed by "
                        "the server.",
                    }
                ],
                "retryAfterSeconds": 10,
            },
            "code": 429,
        },
    )
    # admission sees a create of pods/eviction, the Eviction as its object
    guard = {
        "metadata": {"name": "no-evict"},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {
                "resourceRules": [
                    {
                        "apiGroups": [""],
                        "apiVersions": ["v1"],
                        "operations": ["CREATE"],
                        "resources": ["pods/eviction"],
                    }
                ]
            },
            "validations": [
                {"expression": "object.kind == 'Eviction' && object.metadata.name != 'guarded'"}
            ],
        },
    }
    code, got = server.request("POST", f"{admission}/validatingadmissionpolicies", guard)
    assert code == 201, got
    bound = {"metadata": {"name": "no-evict"},
             "spec": {"policyName": "no-evict", "validationActions": ["Deny"]}}  # fmt: skip
    code, got = server.request("POST", f"{admission}/validatingadmissionpolicybindings", bound)
    assert code == 201, got
    make_pod(server, "guarded", {"app": "other"})
    code, body = evict(server, "guarded")
    assert (code, body["message"]) == (
        422,  # a failed expression without a reason is Invalid, as kube answers it
        "pods \"guarded\" is forbidden: ValidatingAdmissionPolicy 'no-evict' with binding "
        "'no-evict' denied request: failed expression: object.kind == 'Eviction' && "
        "object.metadata.name != 'guarded'",
    )
    assert server.request("GET", f"{PODS}/guarded")[0] == 200
    make_pod(server, "free", {"app": "other"})
    assert evict(server, "free") == (201, SUCCESS)


def test_rbac_needs_create_on_pods_eviction(server: Server) -> None:
    make_pod(server, "p", {"app": "x"})
    who = server.user_certificate("evictor")
    rbac = f"/apis/rbac.authorization.k8s.io/v1/namespaces/{server.namespace}"
    role = {"metadata": {"name": "r"},
            "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]}  # fmt: skip
    assert server.request("POST", f"{rbac}/roles", role)[0] == 201
    bind = {
        "metadata": {"name": "r"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"},
        "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "evictor"}],
    }
    assert server.request("POST", f"{rbac}/rolebindings", bind)[0] == 201
    path = f"{PODS}/p/eviction"
    code, body = server.request("POST", path, eviction("p"), token=None, cert=who)
    assert (code, body["message"]) == (
        403,
        f'pods "p" is forbidden: User "evictor" cannot create resource "pods/eviction" in API '
        f'group "" in the namespace "{server.namespace}"',
    )
    role["rules"].append({"apiGroups": [""], "resources": ["pods/eviction"], "verbs": ["create"]})
    role["metadata"]["resourceVersion"] = server.request("GET", f"{rbac}/roles/r")[1]["metadata"][
        "resourceVersion"
    ]
    assert server.request("PUT", f"{rbac}/roles/r", role)[0] == 200
    assert server.request("POST", path, eviction("p"), token=None, cert=who) == (201, SUCCESS)


def controlled(server: Server, name: str, owner: Any) -> bool:
    _, pod = server.request("GET", f"{PODS}/{name}")
    refs = pod["metadata"].get("ownerReferences") or []
    return any(r.get("uid") == owner["metadata"]["uid"] and r.get("controller") for r in refs)


@pytest.mark.fresh_server(simulation=Simulation(nodes=2))  # its nodes: one drained, one not
def test_kubectl_drain_evicts_the_nodes_pods(server: Server) -> None:
    apps = "/apis/apps/v1/namespaces/{ns}"
    template = {
        "metadata": {"labels": {"app": "d"}},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]},
    }
    selector = {"matchLabels": {"app": "d"}}
    code, ds = server.request(
        "POST", f"{apps}/daemonsets",
        {"metadata": {"name": "ds"}, "spec": {"selector": selector, "template": template}},
    )  # fmt: skip
    assert code == 201, ds

    def ref(owner: Any, kind: str) -> dict[str, Any]:
        return {"apiVersion": "apps/v1", "kind": kind, "name": owner["metadata"]["name"],
                "uid": owner["metadata"]["uid"], "controller": True}  # fmt: skip

    # web-1 and web-2 run on the node to drain, and the ReplicaSet adopts them; its controller
    # replaces each evicted one (the scheduler puts the replacement on the other node)
    scratch = [{"name": "scratch", "emptyDir": {}}]
    make_pod(server, "web-1", {"app": "web"}, volumes=scratch)
    make_pod(server, "web-2", {"app": "web"})
    code, rs = server.request(
        "POST", f"{apps}/replicasets",
        {"metadata": {"name": "rs"},
         "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                  "template": {**template, "metadata": {"labels": {"app": "web"}}}}},
    )  # fmt: skip
    assert code == 201, rs
    wait_for(lambda: all(controlled(server, p, rs) for p in ("web-1", "web-2")) or None)
    make_pod(server, "ds-1", {"app": "d"}, owner=ref(ds, "DaemonSet"))
    make_pod(server, "bare", {"app": "bare"})
    budget(server, "pdb", {"maxUnavailable": 1}, healthy=2)
    refused = server.kubectl("drain", "kubelite-worker", check=False)
    assert refused.returncode == 1
    assert refused.stdout == "node/kubelite-worker cordoned\n"  # kubectl cordons before it filters
    assert 'error: unable to drain node "kubelite-worker" due to error: [' in refused.stderr
    assert (
        "cannot delete Pods that declare no controller (use --force to override): default/bare"
        in refused.stderr
    )
    assert (
        "cannot delete DaemonSet-managed Pods (use --ignore-daemonsets to ignore): default/ds-1"
        in refused.stderr
    )
    assert (
        "cannot delete Pods with local storage (use --delete-emptydir-data to override): "
        "default/web-1" in refused.stderr
    )
    drain = server.kubectl_background(
        "drain", "kubelite-worker", "--ignore-daemonsets", "--delete-emptydir-data", "--force",
        "--timeout", "40s",
    )  # fmt: skip
    # the budget allows one pod down: once one of web-1/web-2 is evicted the other is refused
    # until its replacement runs
    out, err = drain.communicate(timeout=45)
    assert drain.returncode == 0, err
    drained = subprocess.CompletedProcess(drain.args, 0, out, err)
    out = drained.stdout
    assert out.startswith("node/kubelite-worker already cordoned\n")
    for pod in ("bare", "web-1", "web-2"):
        assert f"evicting pod default/{pod}" in out
        assert f"pod/{pod} evicted" in out
    assert out.rstrip().endswith("node/kubelite-worker drained")
    # one line, its parts in no fixed order (PodDeleteList.Warnings ranges over a Go map:
    # staging/src/k8s.io/kubectl/pkg/drain/filters.go)
    (warning,) = [line for line in drained.stderr.splitlines() if "DaemonSet-managed" in line]
    assert sorted(warning.removeprefix("Warning: ").split("; ")) == [
        "deleting Pods that declare no controller: default/bare",
        "ignoring DaemonSet-managed Pods: default/ds-1",
    ]
    # kubectl retried the refused eviction every 5 s
    assert (
        "(will retry after 5s): Cannot evict pod as it would violate the pod's disruption "
        "budget." in drained.stderr
    )

    def replaced() -> Any:
        """The pods once the replacements are bound (web-1 and web-2 are gone)."""
        _, listed = server.request("GET", PODS)
        found = {p["metadata"]["name"]: p for p in listed["items"]}
        bound = all(p["spec"].get("nodeName") for p in found.values())
        return found if len(found) == 3 and bound else None

    remaining = wait_for(replaced)
    assert "ds-1" in remaining
    replacements = sorted(set(remaining) - {"ds-1"})
    for name in replacements:
        assert re.fullmatch("rs-[bcdfghjklmnpqrstvwxz2456789]{5}", name)
        assert remaining[name]["spec"]["nodeName"] == "kubelite-worker2"
    _, node = server.request("GET", "/api/v1/nodes/kubelite-worker")
    assert node["spec"]["unschedulable"] is True


def test_discovery_lists_pods_eviction(server: Server) -> None:
    _, listed = server.request("GET", "/api/v1")
    (found,) = [r for r in listed["resources"] if r["name"] == "pods/eviction"]
    assert found == {
        "name": "pods/eviction",
        "singularName": "",
        "namespaced": True,
        "group": "policy",
        "version": "v1",
        "kind": "Eviction",
        "verbs": ["create"],
    }


def test_the_python_client_evicts_and_reads_the_429(server: Server) -> None:
    """The kubernetes client's ``create_namespaced_pod_eviction``, as operators call it."""
    make_pod(server, "a", {"app": "web"})
    budget(server, "pdb", {"minAvailable": 1}, healthy=1)
    core = client.CoreV1Api(config.new_client_from_config(config_file=str(server.kubeconfig)))
    body = client.V1Eviction(metadata=client.V1ObjectMeta(name="a", namespace=server.namespace))
    with pytest.raises(ApiException) as refused:
        core.create_namespaced_pod_eviction("a", server.namespace, body)
    assert refused.value.status == 429
    assert json.loads(refused.value.body)["details"]["causes"] == [
        {
            "reason": "DisruptionBudget",
            "message": "The disruption budget pdb needs 1 healthy pods and has 1 currently",
        }
    ]
    make_pod(server, "b", {"app": "web"})
    observed(server, "pdb", lambda s: s["disruptionsAllowed"] == 1)
    core.create_namespaced_pod_eviction("a", server.namespace, body)
    wait_gone(server, "a")
