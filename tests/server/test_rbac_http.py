"""RBAC over HTTP on a real ``kubelite serve``: the 403 texts for every shape of request,
Roles and bindings taking effect (and ceasing to), resourceNames, subresources, non-resource
URLs, anonymous requests, user kubeconfigs from ``kubelite kubeconfig``, and a watch that
outlives the binding that allowed it (kubernetes
``plugin/pkg/auth/authorizer/rbac``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from harness import Server, start_in_process, stop_server

#: the tests grant and revoke (ClusterRoleBindings among them) what the same users may do
pytestmark = pytest.mark.fresh_server
CMS = "/api/v1/namespaces/default/configmaps"
RBAC = "/apis/rbac.authorization.k8s.io/v1"


Cert = tuple[Path, Path]


def user_cert(server: Server, user: str, *groups: str) -> Cert:
    """The client certificate of a kubeconfig ``kubelite kubeconfig`` writes for ``user`` in
    ``groups``."""
    return server.user_certificate(user, *groups)


def role(name: str, rules: list[dict[str, Any]], namespace: str = "default") -> dict[str, Any]:
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": name, "namespace": namespace}, "rules": rules}  # fmt: skip


def binding(
    name: str, role_kind: str, role_name: str, subjects: list[dict[str, Any]], namespace: str = ""
) -> dict[str, Any]:
    kind = "RoleBinding" if namespace else "ClusterRoleBinding"
    meta: dict[str, Any] = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": kind,
        "metadata": meta,
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role_name},
        "subjects": subjects,
    }


def user(name: str) -> dict[str, str]:
    return {"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": name}


def create(server: Server, path: str, body: dict[str, Any]) -> dict[str, Any]:
    code, out = server.request("POST", path, body)
    assert code == 201, out
    return out


def plain_status(server: Server, path: str, who: Cert | None = None) -> int:
    """The status of a GET whose answer is not JSON (``/readyz``), anonymous by default."""
    import ssl
    import urllib.error
    import urllib.request

    context = ssl.create_default_context(cafile=str(server.data_dir / "ca.crt"))
    req = urllib.request.Request((server.url if who is None else server.cert_url) + path)
    if who is not None:
        context.load_cert_chain(*who)
    try:
        with urllib.request.urlopen(req, context=context, timeout=10) as resp:
            return int(resp.status)
    except urllib.error.HTTPError as err:
        return err.code


def forbidden_message(server: Server, method: str, path: str, who: Cert | None) -> str:
    """The 403 message of a request with the client certificate ``who`` (None: anonymous)."""
    code, body = server.request(method, path, {} if method in ("POST", "PUT") else None,
                                token=None, cert=who)  # fmt: skip
    assert code == 403, body
    assert body["reason"] == "Forbidden"
    return str(body["message"])


def test_every_request_shape_gets_kube_forbidden_text(server: Server) -> None:
    alice = user_cert(server, "alice")
    server.request("POST", CMS, {"metadata": {"name": "cm"}})
    cases = [
        ("GET", f"{CMS}/cm",
         'configmaps "cm" is forbidden: User "alice" cannot get resource "configmaps" in API '
         'group "" in the namespace "default"'),
        ("GET", "/apis/apps/v1/namespaces/default/deployments",
         'deployments.apps is forbidden: User "alice" cannot list resource "deployments" in API '
         'group "apps" in the namespace "default"'),
        ("GET", "/api/v1/nodes",
         'nodes is forbidden: User "alice" cannot list resource "nodes" in API group "" at the '
         "cluster scope"),
        ("GET", "/api/v1/configmaps",
         'configmaps is forbidden: User "alice" cannot list resource "configmaps" in API group '
         '"" at the cluster scope'),
        ("GET", "/api/v1/namespaces/kube-system",
         'namespaces "kube-system" is forbidden: User "alice" cannot get resource "namespaces" '
         'in API group "" in the namespace "kube-system"'),
        ("PUT", "/api/v1/namespaces/default/pods/p/status",
         'pods "p" is forbidden: User "alice" cannot update resource "pods/status" in API group '
         '"" in the namespace "default"'),
        ("DELETE", CMS,
         'configmaps is forbidden: User "alice" cannot deletecollection resource "configmaps" '
         'in API group "" in the namespace "default"'),
        ("GET", "/metrics", 'forbidden: User "alice" cannot get path "/metrics"'),
        ("GET", "/api/v1/watch/namespaces/default/configmaps",
         'configmaps is forbidden: User "alice" cannot watch resource "configmaps" in API group '
         '"" in the namespace "default"'),
    ]  # fmt: skip
    for method, path, message in cases:
        assert forbidden_message(server, method, path, alice) == message, path
    _, body = server.request("GET", f"{CMS}/cm", cert=alice)
    assert body["details"] == {"name": "cm", "kind": "configmaps"}
    _, body = server.request("GET", "/metrics", cert=alice)
    assert body["details"] == {}
    # what every authenticated user may do: discovery, whoami, can-i
    assert server.request("GET", "/api", cert=alice)[0] == 200
    assert server.request("GET", "/version", cert=alice)[0] == 200
    kubeconfig = str(server.data_dir.parent / "alice.kubeconfig")
    kubectl = server.kubectl("get", "configmaps", check=False, env={"KUBECONFIG": kubeconfig})
    assert kubectl.returncode == 1
    assert (
        'Error from server (Forbidden): configmaps is forbidden: User "alice" cannot list '
        'resource "configmaps" in API group "" in the namespace "default"'
    ) in kubectl.stderr


def test_anonymous_requests_are_system_anonymous(server: Server) -> None:
    assert server.request("GET", "/version", token=None)[0] == 200
    assert server.request("GET", "/version?probe=1", token=None)[0] == 200
    assert plain_status(server, "/readyz") == 200
    assert plain_status(server, "/livez") == 200
    assert forbidden_message(server, "GET", "/api/v1/pods", None) == (
        'pods is forbidden: User "system:anonymous" cannot list resource "pods" in API group "" '
        "at the cluster scope"
    )
    assert forbidden_message(server, "GET", "/readyz/etcd", None) == (
        'forbidden: User "system:anonymous" cannot get path "/readyz/etcd"'
    )
    assert server.request("GET", CMS, token="not-a-token")[0] == 401


def test_kubelite_endpoints_need_cluster_admin(server: Server) -> None:
    alice = user_cert(server, "alice", "devs")
    devs = [{"kind": "Group", "name": "devs"}]
    create(server, f"{RBAC}/clusterrolebindings", binding("devs-edit", "ClusterRole", "edit", devs))
    code, body = server.request("POST", "/kubelite/v1/compact", {"revision": 1}, cert=alice)
    assert code == 403, body
    assert body["message"].startswith('forbidden: User "alice" cannot post path "/kubelite/')


def test_a_role_binding_grants_in_its_namespace_only_and_stops_when_deleted(
    server: Server,
) -> None:
    alice = user_cert(server, "alice")
    server.request("POST", "/api/v1/namespaces", {"metadata": {"name": "other"}})
    create(server, f"{RBAC}/namespaces/default/roles",
           role("cm-reader", [{"apiGroups": [""], "resources": ["configmaps"],
                               "verbs": ["get", "list", "watch"]}]))  # fmt: skip
    assert server.request("GET", CMS, cert=alice)[0] == 403
    create(server, f"{RBAC}/namespaces/default/rolebindings",
           binding("alice-reads", "Role", "cm-reader", [user("alice")], "default"))  # fmt: skip
    # the binding's write answers after the authorizer has seen it: no waiting
    assert server.request("GET", CMS, cert=alice)[0] == 200
    assert server.request("GET", "/api/v1/namespaces/other/configmaps", cert=alice)[0] == 403
    assert server.request("GET", "/api/v1/configmaps", cert=alice)[0] == 403
    assert server.request("POST", CMS, {"metadata": {"name": "x"}}, cert=alice)[0] == 403
    assert server.request("DELETE", f"{RBAC}/namespaces/default/rolebindings/alice-reads")[0] == 200
    assert server.request("GET", CMS, cert=alice)[0] == 403


def test_cluster_roles_bound_to_groups_and_in_a_namespace(server: Server) -> None:
    alice, bob = user_cert(server, "alice", "devs"), user_cert(server, "bob")
    server.request("POST", "/api/v1/namespaces", {"metadata": {"name": "team"}})
    devs = [{"kind": "Group", "name": "devs"}]
    create(server, f"{RBAC}/clusterrolebindings", binding("devs-view", "ClusterRole", "view", devs))
    assert server.request("GET", "/api/v1/pods", cert=alice)[0] == 200
    assert server.request("GET", "/apis/apps/v1/deployments", cert=alice)[0] == 200
    assert server.request("GET", "/api/v1/secrets", cert=alice)[0] == 403  # view has no secrets
    assert server.request("GET", "/api/v1/pods", cert=bob)[0] == 403
    create(server, f"{RBAC}/namespaces/team/rolebindings",
           binding("bob-edit", "ClusterRole", "edit", [user("bob")], "team"))  # fmt: skip
    team_cms = "/api/v1/namespaces/team/configmaps"
    assert server.request("POST", team_cms, {"metadata": {"name": "b"}}, cert=bob)[0] == 201
    assert server.request("GET", "/api/v1/namespaces/team/secrets", cert=bob)[0] == 200
    assert server.request("POST", CMS, {"metadata": {"name": "b"}}, cert=bob)[0] == 403


def test_resource_names_subresources_and_field_selected_watches(server: Server) -> None:
    alice = user_cert(server, "alice")
    for name in ("one", "two"):
        server.request("POST", CMS, {"metadata": {"name": name}})
    server.request("POST", "/apis/apps/v1/namespaces/default/deployments", DEPLOYMENT)
    create(server, f"{RBAC}/namespaces/default/roles", role("narrow", [
        {"apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["one"],
         "verbs": ["get", "list", "watch"]},
        {"apiGroups": ["apps"], "resources": ["deployments/scale"], "verbs": ["get"]},
    ]))  # fmt: skip
    create(server, f"{RBAC}/namespaces/default/rolebindings",
           binding("alice-narrow", "Role", "narrow", [user("alice")], "default"))  # fmt: skip
    assert server.request("GET", f"{CMS}/one", cert=alice)[0] == 200
    assert server.request("GET", f"{CMS}/two", cert=alice)[0] == 403
    assert server.request("GET", CMS, cert=alice)[0] == 403  # a list has no name
    selected = f"{CMS}?fieldSelector=metadata.name%3Done"
    assert server.request("GET", selected, cert=alice)[0] == 200
    code, _ = server.request("GET", f"{selected}&watch=1&timeoutSeconds=1", cert=alice)
    assert code == 200
    deployments = "/apis/apps/v1/namespaces/default/deployments/web"
    assert server.request("GET", f"{deployments}/scale", cert=alice)[0] == 200
    assert server.request("GET", deployments, cert=alice)[0] == 403


def test_non_resource_urls_with_prefix_wildcards(server: Server) -> None:
    alice = user_cert(server, "alice")
    create(server, f"{RBAC}/clusterroles", {
        "metadata": {"name": "probe"},
        "rules": [{"nonResourceURLs": ["/metrics", "/readyz/*"], "verbs": ["get"]}],
    })  # fmt: skip
    create(server, f"{RBAC}/clusterrolebindings",
           binding("alice-probe", "ClusterRole", "probe", [user("alice")]))  # fmt: skip
    assert plain_status(server, "/readyz/etcd", alice) == 200
    assert plain_status(server, "/metrics", alice) == 200
    assert plain_status(server, "/livez/etcd", alice) == 403


def test_a_running_watch_outlives_its_binding_and_a_new_one_is_refused(server: Server) -> None:
    """kube authorizes a watch when it starts; removing the binding refuses the next one."""
    alice = user_cert(server, "alice")
    create(server, f"{RBAC}/namespaces/default/roles", role("cm-watch", [
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list", "watch"]}]))  # fmt: skip
    create(server, f"{RBAC}/namespaces/default/rolebindings",
           binding("alice-watch", "Role", "cm-watch", [user("alice")], "default"))  # fmt: skip
    watcher = WatchAs(server, f"{CMS}?watch=1&timeoutSeconds=2", alice)
    server.request("DELETE", f"{RBAC}/namespaces/default/rolebindings/alice-watch")
    server.request("POST", CMS, {"metadata": {"name": "after"}})
    names = [e["object"]["metadata"]["name"] for e in watcher.events() if e["type"] == "ADDED"]
    assert "after" in names
    assert server.request("GET", f"{CMS}?watch=1&timeoutSeconds=1", cert=alice)[0] == 403


class WatchAs:
    """A watch as another user, read in the background until the server ends it."""

    def __init__(self, server: Server, path: str, who: Cert) -> None:
        import ssl
        import threading
        import urllib.request

        self.lines: list[Any] = []
        context = ssl.create_default_context(cafile=str(server.data_dir / "ca.crt"))
        context.load_cert_chain(*who)
        req = urllib.request.Request(server.cert_url + path)
        self.response = urllib.request.urlopen(req, context=context, timeout=30)

        def read() -> None:
            for line in self.response:
                self.lines.append(json.loads(line))

        self.thread = threading.Thread(target=read)
        self.thread.start()

    def events(self) -> list[Any]:
        self.thread.join(30)
        return self.lines


DEPLOYMENT = {
    "metadata": {"name": "web"},
    "spec": {
        "selector": {"matchLabels": {"app": "web"}},
        "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]},
        },
    },
}


@pytest.fixture
def always_allow(tmp_path: Path) -> Any:
    srv = start_in_process(tmp_path / "data", authorization_mode="AlwaysAllow")
    try:
        yield srv
    finally:
        stop_server(srv)


def test_always_allow_mode_allows_every_authenticated_request(always_allow: Server) -> None:
    alice = user_cert(always_allow, "alice")
    assert always_allow.request("GET", "/api/v1/secrets", cert=alice)[0] == 200
    assert always_allow.request("POST", CMS, {"metadata": {"name": "a"}}, cert=alice)[0] == 201
    # as before RBAC: anonymous requests only reach the public paths
    assert always_allow.request("GET", "/version", token=None)[0] == 200
    assert always_allow.request("GET", "/api/v1/pods", token=None)[0] == 401


VERBS = ("get", "list", "watch", "create", "update", "patch", "delete", "deletecollection")
PC = "/apis/scheduling.k8s.io/v1/priorityclasses"
WEB = "/apis/apps/v1/namespaces/default/deployments/web"
MERGE = "application/merge-patch+json"


def test_every_verb_on_namespaced_and_cluster_scoped_kinds_and_subresources(
    server: Server,
) -> None:
    """Each request is refused while its user holds every verb but the request's, and served
    once the user holds that verb too: the verb, the resource and the subresource must match."""
    server.request("POST", "/apis/apps/v1/namespaces/default/deployments", DEPLOYMENT)
    server.request("POST", PC, {"metadata": {"name": "pc"}, "value": 10})
    cases = [  # (group, resource, namespaced, verb, method, path, body)
        ("", "configmaps", True, "get", "GET", f"{CMS}/cm", None),
        ("", "configmaps", True, "list", "GET", CMS, None),
        ("", "configmaps", True, "watch", "GET", f"{CMS}?watch=1&timeoutSeconds=1", None),
        ("", "configmaps", True, "create", "POST", CMS, {"metadata": {"name": "new"}}),
        ("", "configmaps", True, "update", "PUT", f"{CMS}/cm",
         {"metadata": {"name": "cm"}, "data": {"a": "1"}}),
        ("", "configmaps", True, "patch", "PATCH", f"{CMS}/cm", {"data": {"b": "2"}}),
        ("", "configmaps", True, "delete", "DELETE", f"{CMS}/cm", None),
        ("", "configmaps", True, "deletecollection", "DELETE", CMS, None),
        ("scheduling.k8s.io", "priorityclasses", False, "get", "GET", f"{PC}/pc", None),
        ("scheduling.k8s.io", "priorityclasses", False, "list", "GET", PC, None),
        ("scheduling.k8s.io", "priorityclasses", False, "watch", "GET",
         f"{PC}?watch=1&timeoutSeconds=1", None),
        ("scheduling.k8s.io", "priorityclasses", False, "create", "POST", PC,
         {"metadata": {"name": "pc2"}, "value": 20}),
        ("scheduling.k8s.io", "priorityclasses", False, "patch", "PATCH", f"{PC}/pc",
         {"description": "d"}),
        ("scheduling.k8s.io", "priorityclasses", False, "delete", "DELETE", f"{PC}/pc2", None),
        ("apps", "deployments/scale", True, "get", "GET", f"{WEB}/scale", None),
        ("apps", "deployments/scale", True, "patch", "PATCH", f"{WEB}/scale",
         {"spec": {"replicas": 2}}),
        ("apps", "deployments/status", True, "get", "GET", f"{WEB}/status", None),
        ("apps", "deployments/status", True, "patch", "PATCH", f"{WEB}/status",
         {"status": {"observedGeneration": 1}}),
    ]  # fmt: skip
    server.request("POST", CMS, {"metadata": {"name": "cm"}})
    for i, (group, resource, namespaced, verb, method, path, body) in enumerate(cases):
        who = f"user-{i}"
        cert = server.user_certificate(who)
        others = [v for v in VERBS if v != verb]
        grant(server, f"all-but-{i}", group, resource, others, who, namespaced)
        code, refused = send(server, method, path, body, cert)
        assert code == 403, (verb, path, refused)
        scope = 'in the namespace "default"' if namespaced else "at the cluster scope"
        assert (
            f'User "{who}" cannot {verb} resource "{resource}" in API group "{group}" {scope}'
            in (refused["message"])
        ), refused
        grant(server, f"only-{i}", group, resource, [verb], who, namespaced)
        code, served = send(server, method, path, body, cert)
        assert code in (200, 201), (verb, path, served)
        if method == "DELETE" and path == f"{CMS}/cm":
            server.request("POST", CMS, {"metadata": {"name": "cm"}})


def grant(
    server: Server, name: str, group: str, resource: str, verbs: list[str], who: str,
    namespaced: bool,
) -> None:  # fmt: skip
    """A Role (ClusterRole when not ``namespaced``) of ``verbs`` on ``resource``, bound to
    ``who``."""
    rule = {"apiGroups": [group], "resources": [resource], "verbs": verbs}
    if namespaced:
        create(server, f"{RBAC}/namespaces/default/roles", role(name, [rule]))
        create(server, f"{RBAC}/namespaces/default/rolebindings",
               binding(name, "Role", name, [user(who)], "default"))  # fmt: skip
    else:
        create(server, f"{RBAC}/clusterroles", {"metadata": {"name": name}, "rules": [rule]})
        create(server, f"{RBAC}/clusterrolebindings",
               binding(name, "ClusterRole", name, [user(who)]))  # fmt: skip


def send(
    server: Server, method: str, path: str, body: Any, cert: tuple[Path, Path]
) -> tuple[int, dict[str, Any]]:
    """One request with the client certificate ``cert``; of a watch only whether its stream
    begins."""
    if "watch=1" in path:
        import ssl
        import urllib.error
        import urllib.request

        req = urllib.request.Request(server.cert_url + path)
        context = ssl.create_default_context(cafile=str(server.data_dir / "ca.crt"))
        context.load_cert_chain(*cert)
        try:
            with urllib.request.urlopen(req, context=context, timeout=10) as resp:
                return int(resp.status), {}  # the stream began: served
        except urllib.error.HTTPError as err:
            return err.code, json.loads(err.read())
    content_type = MERGE if method == "PATCH" else "application/json"
    return server.request(method, path, body, content_type=content_type, token=None, cert=cert)
