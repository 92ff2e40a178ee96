"""The simulated kubelet over HTTP: pods bound to a simulated Node (made here through the API, as
the node agent would) start, run, restart, stop and are deleted as on a kind cluster."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from harness import Server, start_in_process, stop_server

from kubelite.api.simulation.config import Simulation

Obj = dict[str, Any]
FAST = pytest.mark.fresh_server(simulation=Simulation(nodes=0, backoff_scale=0.01))
NODE = "sim-node"
HOST_IP = "172.18.0.2"
PODS = "/api/v1/namespaces/{ns}/pods"
A = "kubelite.dev/simulate-"


def make_node(server: Server, name: str = NODE, cidr: str = "10.244.7.0/24") -> None:
    """A simulated Node with its own podCIDR, once the node agent reported its status (the
    first simulated node of a server without registered nodes gets InternalIP HOST_IP)."""
    node = {
        "metadata": {"name": name, "annotations": {"kubelite.dev/simulated": "true"}},
        "spec": {"podCIDR": cidr, "podCIDRs": [cidr]},
    }
    code, created = server.request("POST", "/api/v1/nodes", node)
    assert code == 201, created
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        code, found = server.request("GET", f"/api/v1/nodes/{name}")
        addresses = (found.get("status") or {}).get("addresses") or []
        if any(a["type"] == "InternalIP" for a in addresses):
            return
        time.sleep(0.05)
    raise AssertionError(f"node {name} never reported its addresses")


def pod(
    name: str,
    *containers: str,
    annotations: dict[str, str] | None = None,
    node: str = NODE,
    **spec: Any,
) -> Obj:
    names = containers or ("app",)
    body: Obj = {
        "metadata": {"name": name, "annotations": annotations or {}},
        "spec": {
            "nodeName": node,
            "containers": [{"name": c, "image": "nginx:1.27"} for c in names],
            **spec,
        },
    }
    return body


def create(server: Server, body: Obj) -> Obj:
    code, created = server.request("POST", PODS, body)
    assert code == 201, created
    return created


def get(server: Server, name: str) -> Obj:
    code, found = server.request("GET", f"{PODS}/{name}")
    assert code == 200, found
    return found


def wait(server: Server, name: str, test: Callable[[Obj], bool], seconds: float = 20) -> Obj:
    deadline = time.monotonic() + seconds
    found: Obj = {}
    while time.monotonic() < deadline:
        code, found = server.request("GET", f"{PODS}/{name}")
        if code == 200 and test(found):
            return found
        time.sleep(0.05)
    raise AssertionError(f"pod {name} never got there: {json.dumps(found.get('status'))}")


def phase(wanted: str) -> Callable[[Obj], bool]:
    return lambda p: (p.get("status") or {}).get("phase") == wanted


def ready(p: Obj) -> bool:
    conditions = (p.get("status") or {}).get("conditions") or []
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)


def events(server: Server, name: str) -> list[Obj]:
    code, listing = server.request(
        "GET", f"/api/v1/namespaces/{{ns}}/events?fieldSelector=involvedObject.name%3D{name}"
    )
    assert code == 200
    return sorted(listing["items"], key=lambda e: e["metadata"]["name"])


def reasons(server: Server, name: str) -> list[str]:
    return [e["reason"] for e in events(server, name)]


def wait_events(server: Server, name: str, test: Callable[[list[str]], bool]) -> list[Obj]:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        found = events(server, name)
        if test([e["reason"] for e in found]):
            return found
        time.sleep(0.05)
    raise AssertionError(f"events of {name}: {reasons(server, name)}")


def listed(server: Server) -> str:
    """The resourceVersion of a list of the pods: a watch from it misses nothing after."""
    code, listing = server.request("GET", PODS)
    assert code == 200
    return str(listing["metadata"]["resourceVersion"])


def state(p: Obj, index: int = 0) -> Obj:
    return dict(p["status"]["containerStatuses"][index]["state"])


@FAST
def test_a_bare_pod_runs_and_is_ready(server: Server) -> None:
    make_node(server)
    reader, seen = server.watch_lines(PODS + f"?watch=true&resourceVersion={listed(server)}", 5)
    create(server, pod("web"))
    running = wait(server, "web", ready)
    status = running["status"]
    assert status["phase"] == "Running"
    assert status["hostIP"] == HOST_IP
    assert status["hostIPs"] == [{"ip": HOST_IP}]
    assert status["podIP"] == "10.244.7.2"
    assert status["podIPs"] == [{"ip": "10.244.7.2"}]
    assert status["qosClass"] == "BestEffort"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", status["startTime"])
    types = [(c["type"], c["status"]) for c in status["conditions"]]
    assert types == [
        ("PodReadyToStartContainers", "True"),
        ("Initialized", "True"),
        ("Ready", "True"),
        ("ContainersReady", "True"),
        ("PodScheduled", "True"),
    ]
    for condition in status["conditions"]:
        assert condition["lastProbeTime"] is None
        assert condition["lastTransitionTime"]
        assert "reason" not in condition
    [container] = status["containerStatuses"]
    assert container["name"] == "app"
    assert container["ready"] is True
    assert container["started"] is True
    assert container["restartCount"] == 0
    assert container["image"] == "docker.io/library/nginx:1.27"
    assert re.fullmatch(r"docker\.io/library/nginx@sha256:[0-9a-f]{64}", container["imageID"])
    assert re.fullmatch(r"containerd://[0-9a-f]{64}", container["containerID"])
    assert list(container["state"]) == ["running"]
    assert container["state"]["running"]["startedAt"]
    assert container["lastState"] == {}
    time.sleep(0.3)  # nothing more to write once it runs
    assert (
        get(server, "web")["metadata"]["resourceVersion"] == running["metadata"]["resourceVersion"]
    )
    # a second pod gets the next address
    create(server, pod("second"))
    assert wait(server, "second", ready)["status"]["podIP"] == "10.244.7.3"
    reader.join(timeout=10)
    writes = [e["object"]["status"] for e in seen if e["object"]["metadata"]["name"] == "web"]
    creating = [
        s for s in writes
        if (s.get("containerStatuses") or [{}])[0].get("state", {}).get("waiting", {}).get("reason")
        == "ContainerCreating"
    ]  # fmt: skip
    assert creating, writes
    first = creating[0]
    assert first["phase"] == "Pending"
    assert "podIP" not in first
    assert first["hostIP"] == HOST_IP
    assert [(c["type"], c["status"], c.get("reason")) for c in first["conditions"]] == [
        ("PodReadyToStartContainers", "False", None),
        ("Initialized", "True", None),
        ("Ready", "False", "ContainersNotReady"),
        ("ContainersReady", "False", "ContainersNotReady"),
        ("PodScheduled", "True", None),
    ]
    assert first["conditions"][2]["message"] == "containers with unready status: [app]"
    assert first["containerStatuses"][0] == {
        "name": "app",
        "state": {"waiting": {"reason": "ContainerCreating"}},
        "lastState": {},
        "ready": False,
        "restartCount": 0,
        "image": "nginx:1.27",
        "imageID": "",
        "started": False,
    }
    assert writes.index(first) < len(writes) - 1
    found = events(server, "web")
    assert [(e["reason"], e["message"]) for e in found] == [
        (
            "Pulled",
            'Container image "nginx:1.27" already present on machine and can be accessed by the '
            "pod",
        ),
        ("Created", "Container created"),
        ("Started", "Container started"),
    ]
    for event in found:
        assert event["source"] == {"component": "kubelet", "host": NODE}
        assert event["involvedObject"]["fieldPath"] == "spec.containers{app}"
        assert event["type"] == "Normal"


@FAST
def test_a_pod_on_a_node_that_is_not_simulated_is_left_alone(server: Server) -> None:
    make_node(server)
    code, _ = server.request("POST", "/api/v1/nodes", {"metadata": {"name": "real"}})
    assert code == 201
    create(server, pod("elsewhere", node="real"))
    create(server, pod("here"))
    create(server, pod("host", hostNetwork=True))
    wait(server, "here", ready)
    host = wait(server, "host", ready)
    assert host["status"]["podIP"] == HOST_IP
    assert host["status"]["podIPs"] == [{"ip": HOST_IP}]
    assert get(server, "elsewhere")["status"] == {"phase": "Pending", "qosClass": "BestEffort"}


@FAST
def test_restart_policies_exit_codes_and_crash_loop(server: Server) -> None:
    make_node(server)
    create(server, pod("done", restartPolicy="Never"))
    create(server, pod("fails", restartPolicy="Never", annotations={A + "exit-code": "3"}))
    create(server, pod("retries", restartPolicy="OnFailure", annotations={A + "fail-times": "2"}))
    create(server, pod("crashes", annotations={A + "exit-code": "1"}))
    done = wait(server, "done", phase("Succeeded"))
    terminated = state(done)["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (0, "Completed")
    assert terminated["containerID"] == done["status"]["containerStatuses"][0]["containerID"]
    assert terminated["startedAt"]
    assert terminated["finishedAt"]
    conditions = {c["type"]: c for c in done["status"]["conditions"]}
    assert (conditions["Ready"]["status"], conditions["Ready"]["reason"]) == (
        "False",
        "PodCompleted",
    )
    assert conditions["ContainersReady"]["reason"] == "PodCompleted"
    assert (conditions["Initialized"]["status"], conditions["Initialized"]["reason"]) == (
        "True",
        "PodCompleted",
    )
    assert conditions["PodReadyToStartContainers"]["status"] == "False"
    assert done["status"]["containerStatuses"][0]["ready"] is False
    failed = wait(server, "fails", phase("Failed"))
    assert (state(failed)["terminated"]["exitCode"], state(failed)["terminated"]["reason"]) == (
        3,
        "Error",
    )
    assert {c["type"]: c.get("reason") for c in failed["status"]["conditions"]}["Ready"] == (
        "PodFailed"
    )
    retried = wait(server, "retries", phase("Succeeded"))
    [status] = retried["status"]["containerStatuses"]
    assert status["restartCount"] == 2
    assert status["lastState"]["terminated"]["exitCode"] == 1
    assert state(retried)["terminated"]["exitCode"] == 0
    uid = get(server, "crashes")["metadata"]["uid"]
    looping = wait(
        server,
        "crashes",
        lambda p: (
            bool(p["status"].get("containerStatuses"))
            and p["status"]["containerStatuses"][0]["restartCount"] >= 3
            and "waiting" in state(p)
        ),
    )
    assert looping["status"]["phase"] == "Running"
    waiting = state(looping)["waiting"]
    assert waiting["reason"] == "CrashLoopBackOff"
    assert re.fullmatch(
        rf"back-off (10|20|40|1m20|2m40|5m0)s restarting failed container=app "
        rf"pod=crashes_{server.namespace}\({uid}\)",
        waiting["message"],
    ), waiting
    last = looping["status"]["containerStatuses"][0]["lastState"]["terminated"]
    assert (last["exitCode"], last["reason"]) == (1, "Error")
    found = wait_events(server, "crashes", lambda r: "BackOff" in r)
    backoff = next(e for e in found if e["reason"] == "BackOff")
    assert backoff["type"] == "Warning"
    assert backoff["message"] == (
        f"Back-off restarting failed container app in pod crashes_{server.namespace}({uid})"
    )


@FAST
def test_init_containers_run_one_at_a_time(server: Server) -> None:
    make_node(server)
    body = pod(
        "init",
        annotations={A + "run-seconds.first": "0.5"},
        initContainers=[
            {"name": "first", "image": "busybox"},
            {"name": "second", "image": "busybox"},
        ],
    )
    reader, seen = server.watch_lines(PODS + f"?watch=true&resourceVersion={listed(server)}", 6)
    create(server, body)
    running = wait(server, "init", ready)
    statuses = running["status"]["initContainerStatuses"]
    assert [s["name"] for s in statuses] == ["first", "second"]
    assert all(s["state"]["terminated"]["reason"] == "Completed" for s in statuses)
    assert statuses[0]["image"] == "docker.io/library/busybox:latest"
    reader.join(timeout=10)
    writes = [e["object"]["status"] for e in seen]
    initializing = [
        s for s in writes
        if "running" in (s.get("initContainerStatuses") or [{}])[0].get("state", {})
    ]  # fmt: skip
    assert initializing
    during = initializing[0]
    assert during["phase"] == "Pending"
    assert during["containerStatuses"][0]["state"] == {"waiting": {"reason": "PodInitializing"}}
    assert during["initContainerStatuses"][1]["state"] == {"waiting": {"reason": "PodInitializing"}}
    initialized = {c["type"]: c for c in during["conditions"]}["Initialized"]
    assert (initialized["status"], initialized["reason"], initialized["message"]) == (
        "False",
        "ContainersNotInitialized",
        "containers with incomplete status: [first second]",
    )
    fields = [e["involvedObject"].get("fieldPath") for e in events(server, "init")]
    assert fields[:3] == ["spec.initContainers{first}"] * 3


@FAST
def test_ready_seconds_never_ready_and_a_failing_pull(server: Server) -> None:
    make_node(server)
    create(server, pod("slow", annotations={A + "ready-seconds": "1"}))
    create(
        server,
        pod("never", annotations={A + "simulate-never-ready": "x", A + "never-ready": "true"}),
    )
    create(server, pod("pull", annotations={A + "image-pull": "fail"}))
    running = wait(server, "slow", phase("Running"))
    assert not ready(running) or running["status"]["containerStatuses"][0]["ready"]
    wait(server, "slow", ready)
    never = wait(server, "never", phase("Running"))
    time.sleep(0.3)
    never = get(server, "never")
    assert not ready(never)
    assert never["status"]["containerStatuses"][0]["started"] is True
    backoff = wait(server, "pull", lambda p: "ImagePullBackOff" in json.dumps(p["status"]))
    waiting = state(backoff)["waiting"]
    ref = "docker.io/library/nginx:1.27"
    error = (
        f'rpc error: code = NotFound desc = failed to pull and unpack image "{ref}": failed to '
        f'resolve reference "{ref}": {ref}: not found'
    )
    assert waiting == {
        "reason": "ImagePullBackOff",
        "message": f'Back-off pulling image "nginx:1.27": ErrImagePull: {error}',
    }
    found = [(e["type"], e["reason"], e["message"]) for e in events(server, "pull")]
    assert found[:5] == [
        ("Normal", "Pulling", 'Pulling image "nginx:1.27"'),
        ("Warning", "Failed", f'Failed to pull image "nginx:1.27": {error}'),
        ("Warning", "Failed", "Error: ErrImagePull"),
        ("Normal", "BackOff", 'Back-off pulling image "nginx:1.27"'),
        ("Warning", "Failed", "Error: ImagePullBackOff"),
    ]


@FAST
def test_graceful_deletion_waits_for_the_kubelet(server: Server) -> None:
    make_node(server)
    create(server, pod("quick"))
    create(server, pod("lingers", annotations={A + "stop-seconds": "1.5"}))
    create(server, pod("killed", annotations={A + "stop-seconds": "60"},
                       terminationGracePeriodSeconds=1))  # fmt: skip
    for name in ("quick", "lingers", "killed"):
        wait(server, name, ready)
    code, answer = server.request("DELETE", f"{PODS}/lingers")
    assert code == 200
    assert answer["metadata"]["deletionTimestamp"]
    assert answer["metadata"]["deletionGracePeriodSeconds"] == 30
    started = time.monotonic()
    time.sleep(0.5)
    assert get(server, "lingers")["metadata"]["deletionTimestamp"]
    wait_gone(server, "lingers")
    assert time.monotonic() - started >= 1.0
    killing = [e for e in events(server, "lingers") if e["reason"] == "Killing"]
    assert [(e["type"], e["message"]) for e in killing] == [("Normal", "Stopping container app")]
    version = get(server, "killed")["metadata"]["resourceVersion"]
    reader, seen = server.watch_lines(
        PODS + f"?watch=true&resourceVersion={version}&fieldSelector=metadata.name%3Dkilled", 6
    )
    server.request("DELETE", f"{PODS}/killed")
    wait_gone(server, "killed")
    reader.join(timeout=10)
    last = [e["object"] for e in seen if e["type"] == "MODIFIED"][-1]
    terminated = last["status"]["containerStatuses"][0]["state"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (137, "Error")
    assert last["status"]["phase"] == "Failed"
    server.request("DELETE", f"{PODS}/quick")
    wait_gone(server, "quick")
    # an unbound pod goes at once
    unbound = pod("unbound", schedulerName="kubelite.test/no-scheduler")  # no scheduler binds it
    del unbound["spec"]["nodeName"]
    create(server, unbound)
    code, answer = server.request("DELETE", f"{PODS}/unbound")
    assert code == 200
    assert answer["metadata"]["deletionGracePeriodSeconds"] == 0
    assert server.request("GET", f"{PODS}/unbound")[0] == 404


def wait_gone(server: Server, name: str) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if server.request("GET", f"{PODS}/{name}")[0] == 404:
            return
        time.sleep(0.05)
    raise AssertionError(f"{name} is still there: {get(server, name)}")


@FAST
def test_kubectl_sees_the_pods(server: Server) -> None:
    make_node(server)
    create(server, pod("web", annotations={A + "stop-seconds": "10"}))
    create(server, pod("job", restartPolicy="Never"))
    out = server.kubectl("wait", "--for=condition=Ready", "pod/web", "--timeout=20s")
    assert out.stdout.strip() == "pod/web condition met"
    create(server, pod("bad", restartPolicy="Never", annotations={A + "exit-code": "2"}))
    create(server, pod("loop", annotations={A + "exit-code": "1"}))
    create(server, pod("later", annotations={A + "start-seconds": "60"}))
    create(server, pod("inits", annotations={A + "start-seconds": "60"},
                       initContainers=[{"name": "i", "image": "busybox"}]))  # fmt: skip
    wait(server, "job", phase("Succeeded"))
    wait(server, "bad", phase("Failed"))
    wait(server, "loop", lambda p: "CrashLoopBackOff" in json.dumps(p["status"]))
    table = server.kubectl("get", "pods", "-o", "wide").stdout
    rows = {line.split()[0]: line.split() for line in table.splitlines()[1:]}
    assert rows["web"][1:3] == ["1/1", "Running"]
    assert rows["web"][5].startswith("10.244.7.")
    assert rows["web"][6] == NODE
    assert rows["job"][1:3] == ["0/1", "Completed"]
    assert rows["bad"][1:3] == ["0/1", "Error"]
    assert rows["later"][1:3] == ["0/1", "ContainerCreating"]
    assert rows["inits"][1:3] == ["0/1", "Init:0/1"]
    deadline = time.monotonic() + 20
    while rows["loop"][2] != "CrashLoopBackOff" and time.monotonic() < deadline:
        table = server.kubectl("get", "pods").stdout
        rows = {line.split()[0]: line.split() for line in table.splitlines()[1:]}
    assert rows["loop"][2] == "CrashLoopBackOff"
    assert re.fullmatch(r"\d+ \(\d+s ago\)", " ".join(rows["loop"][3:6])), rows["loop"]
    described = server.kubectl("describe", "pod", "web").stdout
    assert re.search(r"Normal\s+Started\s+\S+\s+kubelet\s+.*Container started", described)
    assert "IP:               10.244.7." in described
    executed = server.kubectl("exec", "web", "--", "ls", check=False)
    assert executed.returncode != 0
    assert "kubelite simulates containers: pods/exec is not supported" in executed.stderr
    server.request("DELETE", f"{PODS}/web")  # web stops in 10 s: kubectl shows Terminating
    table = server.kubectl("get", "pods", "web").stdout
    assert table.splitlines()[1].split()[2] == "Terminating"


def raw(server: Server, path: str) -> tuple[int, str, str]:
    """GET ``path``: (code, content type, body text)."""
    import ssl
    import urllib.error
    import urllib.request

    request = urllib.request.Request(server.url + server.path(path))
    request.add_header("Authorization", f"Bearer {server.token}")
    context = ssl.create_default_context(cafile=str(server.data_dir / "ca.crt"))
    try:
        with urllib.request.urlopen(request, context=context) as response:
            return response.status, response.headers["content-type"], response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers["content-type"], exc.read().decode()


@FAST
def test_pod_logs_come_from_the_annotation(server: Server) -> None:
    make_node(server)
    logs = {A + "log": "hello\nworld\n", A + "log.side": "from the side\n"}
    create(server, pod("one", annotations=logs))
    create(server, pod("two", "app", "side", annotations={**logs, A + "start-seconds": "30"}))
    create(server, pod("quiet"))
    wait(server, "one", ready)
    assert raw(server, f"{PODS}/one/log") == (200, "text/plain", "hello\nworld\n")
    out = server.kubectl("logs", "one").stdout
    assert out == "hello\nworld\n"
    assert server.kubectl("logs", "one", "--tail=1").stdout == "world\n"
    wait(server, "quiet", ready)
    assert server.kubectl("logs", "quiet").stdout == ""
    code, status = server.request("GET", f"{PODS}/two/log")
    assert (code, status["reason"], status["message"]) == (
        400,
        "BadRequest",
        "a container name must be specified for pod two, choose one of: [app side]",
    )
    failed = server.kubectl("logs", "two", check=False)
    assert failed.returncode != 0
    assert failed.stderr == (
        'Defaulted container "app" out of: app, side\nError from server (BadRequest): container '
        '"app" in pod "two" is waiting to start: ContainerCreating\n'
    )
    waiting = server.kubectl("logs", "two", "-c", "side", check=False)
    assert waiting.stderr.strip() == (
        'Error from server (BadRequest): container "side" in pod "two" is waiting to start: '
        "ContainerCreating"
    )
    code, status = server.request("GET", f"{PODS}/two/log?container=nope")
    assert (code, status["reason"], status["message"]) == (
        400,
        "BadRequest",
        "container nope is not valid for pod two",
    )
    code, status = server.request("GET", f"{PODS}/one/log?previous=true")
    assert (code, status["message"]) == (
        400,
        'previous terminated container "app" in pod "one" not found',
    )
    code, status = server.request("POST", f"{PODS}/one/exec?command=ls&container=app")
    assert (code, status["message"]) == (
        400,
        "kubelite simulates containers: pods/exec is not supported (no container runs)",
    )
    code, discovery = server.request("GET", "/api/v1")
    entries = {r["name"]: r for r in discovery["resources"]}
    assert entries["pods/log"]["verbs"] == ["get"]
    assert entries["pods/log"]["kind"] == "Pod"
    assert entries["pods/exec"]["kind"] == "PodExecOptions"
    assert entries["pods/exec"]["verbs"] == ["create", "get"]


@FAST
def test_a_followed_log_stays_open_until_the_container_stops(server: Server) -> None:
    """``kubectl logs -f`` of a running container prints its log, then waits (a change to the
    pod that leaves the container running does not end it) until the container stops."""
    make_node(server)
    create(server, pod("follow", annotations={A + "log": "hello\nworld\n"}))
    wait(server, "follow", ready)
    follower = server.kubectl_background("logs", "-f", "follow")
    try:
        assert follower.stdout is not None
        assert [follower.stdout.readline(), follower.stdout.readline()] == ["hello\n", "world\n"]
        patch = {"metadata": {"labels": {"seen": "yes"}}}
        code, _ = server.request(
            "PATCH", f"{PODS}/follow", patch, content_type="application/merge-patch+json"
        )
        assert code == 200
        time.sleep(0.5)  # the label's event reached the follower, which goes on
        assert follower.poll() is None, follower.communicate()
        server.request("DELETE", f"{PODS}/follow")  # the kubelet stops the container
        out, err = follower.communicate(timeout=30)
    finally:
        if follower.poll() is None:
            follower.kill()
            follower.communicate()
    assert (follower.returncode, out, err) == (0, "", "")


def test_a_restarted_kubelet_carries_on(tmp_path: Path, storage_url: str | None) -> None:
    simulation = Simulation(nodes=0, backoff_scale=0.01)
    first = start_in_process(tmp_path / "data", storage_url, simulation=simulation)
    try:
        make_node(first)
        create(first, pod("web"))
        before = wait(first, "web", ready)
    finally:
        stop_server(first)
    second = start_in_process(tmp_path / "data", storage_url, simulation=simulation)
    try:
        create(second, pod("next"))
        assert wait(second, "next", ready)["status"]["podIP"] == "10.244.7.3"  # .2 is taken
        after = get(second, "web")
        assert after["status"]["containerStatuses"] == before["status"]["containerStatuses"]
        assert after["status"]["startTime"] == before["status"]["startTime"]
        assert reasons(second, "web").count("Started") == 1
    finally:
        stop_server(second)


@FAST
def test_sidecars_and_a_pod_deleted_before_it_started(server: Server) -> None:
    make_node(server)
    body = pod("side", initContainers=[
        {"name": "proxy", "image": "envoy", "restartPolicy": "Always"},
        {"name": "setup", "image": "busybox"},
    ])  # fmt: skip
    create(server, body)
    running = wait(server, "side", ready)
    proxy, setup = running["status"]["initContainerStatuses"]
    assert list(proxy["state"]) == ["running"]
    assert proxy["ready"] is True
    assert proxy["started"] is True
    assert setup["state"]["terminated"]["reason"] == "Completed"
    assert running["status"]["phase"] == "Running"
    create(server, pod("pending", annotations={A + "start-seconds": "60"}))
    version = wait(server, "pending", lambda p: bool(p["status"].get("hostIP")))["metadata"][
        "resourceVersion"
    ]
    reader, seen = server.watch_lines(
        PODS + f"?watch=true&resourceVersion={version}&fieldSelector=metadata.name%3Dpending", 4
    )
    server.request("DELETE", f"{PODS}/pending")
    wait_gone(server, "pending")
    reader.join(timeout=10)
    last = [e["object"] for e in seen if e["type"] == "MODIFIED"][-1]
    assert last["status"]["phase"] == "Failed"
    assert last["status"]["containerStatuses"][0]["state"] == {
        "terminated": {
            "exitCode": 137,
            "reason": "ContainerStatusUnknown",
            "message": "The container could not be located when the pod was terminated",
            "startedAt": None,
            "finishedAt": None,
        }
    }


@FAST
def test_a_pod_with_a_finalizer_is_stopped_then_waits_for_it(server: Server) -> None:
    make_node(server)
    body = pod("held")
    body["metadata"]["finalizers"] = ["example.com/keep"]
    create(server, body)
    wait(server, "held", ready)
    server.request("DELETE", f"{PODS}/held")
    stopped = wait(server, "held", lambda p: p["metadata"].get("deletionGracePeriodSeconds") == 0)
    assert stopped["status"]["phase"] == "Succeeded"
    assert state(stopped)["terminated"]["reason"] == "Completed"
    time.sleep(0.3)
    assert (
        get(server, "held")["metadata"]["resourceVersion"] == stopped["metadata"]["resourceVersion"]
    )  # the kubelet is done with it
    code, _ = server.request(
        "PATCH", f"{PODS}/held", {"metadata": {"finalizers": None}},
        content_type="application/merge-patch+json",
    )  # fmt: skip
    assert code == 200
    wait_gone(server, "held")


@FAST
def test_an_image_pulled_always_and_a_slow_pull(server: Server) -> None:
    make_node(server)
    latest = pod("latest")
    latest["spec"]["containers"][0]["image"] = "nginx"  # :latest: imagePullPolicy Always
    create(server, latest)
    create(server, pod("slow", annotations={A + "image-pull": "slow:1"}))
    running = wait(server, "latest", ready)
    assert running["status"]["containerStatuses"][0]["image"] == "docker.io/library/nginx:latest"
    found = [(e["reason"], e["message"]) for e in events(server, "latest")]
    assert found[0] == ("Pulling", 'Pulling image "nginx"')
    assert re.fullmatch(
        r'Successfully pulled image "nginx" in \S+ \(\S+ including waiting\)\. Image size: '
        r"\d+ bytes\.",
        found[1][1],
    )
    assert [r for r, _ in found[1:]] == ["Pulled", "Created", "Started"]
    pending = get(server, "slow")
    if not ready(pending):
        assert state(pending)["waiting"]["reason"] in ("ContainerCreating",)
    slow = wait(server, "slow", ready)
    pulled = next(e for e in events(server, "slow") if e["reason"] == "Pulled")
    assert pulled["message"].startswith('Successfully pulled image "nginx:1.27" in 1s (1s ')
    started = slow["status"]["containerStatuses"][0]["state"]["running"]["startedAt"]
    assert started >= slow["status"]["startTime"]
