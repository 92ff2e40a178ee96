"""RBAC with real kubectl: ``create role/rolebinding/clusterrolebinding``, ``auth can-i`` (and
``--list``), ``--as``/``--as-group`` impersonation with its checks and texts, and a kubeconfig
from ``kubelite kubeconfig`` (k8s.io/apiserver
``pkg/endpoints/filters/impersonation.go``, kubernetes ``pkg/registry/authorization``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from harness import Server

#: the tests grant and revoke (ClusterRoleBindings among them) what the same users may do
pytestmark = pytest.mark.fresh_server


def user_kubeconfig(server: Server, tmp_path: Path, user: str, *groups: str) -> dict[str, str]:
    """The environment of kubectl acting as ``user`` with a kubeconfig from
    ``kubelite kubeconfig``."""
    path = tmp_path / f"{user}.kubeconfig"
    args = ["kubeconfig", "--user", user, "--data-dir", str(server.data_dir), "-o", str(path)]
    for group in groups:
        args += ["--group", group]
    subprocess.run([sys.executable, "-m", "kubelite", *args], check=True)
    assert path.stat().st_mode & 0o777 == 0o600
    return {"KUBECONFIG": str(path)}


def can_i(server: Server, *args: str, env: dict[str, str] | None = None) -> bool:
    result = server.kubectl("auth", "can-i", *args, check=False, env=env)
    assert result.stdout.strip() in ("yes", "no"), result.stderr
    return result.returncode == 0


def test_kubectl_roles_bindings_and_can_i(server: Server, tmp_path: Path) -> None:
    alice = user_kubeconfig(server, tmp_path, "alice", "devs")
    whoami = json.loads(server.kubectl("auth", "whoami", "-o", "json", env=alice).stdout)
    assert whoami["status"]["userInfo"]["username"] == "alice"
    assert whoami["status"]["userInfo"]["groups"] == ["devs", "system:authenticated"]
    assert not can_i(server, "list", "configmaps", env=alice)
    denied = server.kubectl("get", "configmaps", check=False, env=alice)
    assert denied.returncode == 1
    assert 'User "alice" cannot list resource "configmaps"' in denied.stderr
    server.kubectl("create", "role", "cm-editor", "--verb=get,list,create,delete",
                   "--resource=configmaps")  # fmt: skip
    server.kubectl("create", "rolebinding", "alice-cm", "--role=cm-editor", "--user=alice")
    assert can_i(server, "list", "configmaps", env=alice)
    assert can_i(server, "create", "configmaps", "-n", "default", env=alice)
    assert not can_i(server, "list", "configmaps", "-n", "kube-system", env=alice)
    assert not can_i(server, "list", "secrets", env=alice)
    server.kubectl("create", "configmap", "from-alice", env=alice)
    server.kubectl("create", "clusterrolebinding", "devs-view", "--clusterrole=view",
                   "--group=devs")  # fmt: skip
    assert can_i(server, "list", "pods", "--all-namespaces", env=alice)
    assert can_i(server, "get", "deployments.apps", "-n", "kube-system", env=alice)
    assert not can_i(server, "get", "secrets", "-n", "kube-system", env=alice)
    # asked by the administrator about alice: a SubjectAccessReview through impersonation
    assert can_i(server, "list", "pods", "--as=alice", "--as-group=devs")
    assert not can_i(server, "list", "pods", "--as=alice")
    listed = server.kubectl("auth", "can-i", "--list", env=alice).stdout
    assert "configmaps" in listed
    assert "selfsubjectaccessreviews.authorization.k8s.io" in listed
    assert "[/api/*]" in listed  # system:discovery's non-resource URLs


def test_can_i_for_subresources_names_and_non_resource_urls(server: Server, tmp_path: Path) -> None:
    bob = user_kubeconfig(server, tmp_path, "bob")
    server.kubectl("create", "role", "logs", "--verb=get", "--resource=pods/log")
    server.kubectl("create", "role", "one-cm", "--verb=get", "--resource=configmaps",
                   "--resource-name=only")  # fmt: skip
    server.kubectl("create", "rolebinding", "bob-logs", "--role=logs", "--user=bob")
    server.kubectl("create", "rolebinding", "bob-cm", "--role=one-cm", "--user=bob")
    assert can_i(server, "get", "pods", "--subresource=log", env=bob)
    assert not can_i(server, "get", "pods", env=bob)
    assert can_i(server, "get", "configmaps/only", env=bob)
    assert not can_i(server, "get", "configmaps/other", env=bob)
    assert can_i(server, "get", "/version", env=bob)
    assert not can_i(server, "get", "/metrics", env=bob)


def test_impersonation_needs_the_impersonate_verb(server: Server, tmp_path: Path) -> None:
    as_robot = server.kubectl("--as=system:serviceaccount:default:robot", "auth", "whoami",
                              "-o", "json")  # fmt: skip
    info = json.loads(as_robot.stdout)["status"]["userInfo"]
    assert info["username"] == "system:serviceaccount:default:robot"
    assert info["groups"] == [
        "system:serviceaccounts", "system:serviceaccounts:default", "system:authenticated"
    ]  # fmt: skip
    as_bob = json.loads(
        server.kubectl("--as=bob", "--as-group=qa", "auth", "whoami", "-o", "json").stdout
    )["status"]["userInfo"]
    assert (as_bob["username"], as_bob["groups"]) == ("bob", ["qa", "system:authenticated"])
    alice = user_kubeconfig(server, tmp_path, "alice")
    # (kubectl commands that start with discovery print only "Forbidden: unknown": client-go's
    # discovery client does not decode a Status; commands that write show the text)
    refused = server.kubectl("--as=bob", "create", "configmap", "x", check=False, env=alice)
    assert refused.returncode == 1
    assert (
        'failed to create configmap: users "bob" is forbidden: User "alice" cannot '
        'impersonate resource "users" in API group "" at the cluster scope'
    ) in refused.stderr
    refused = server.kubectl("--as=system:serviceaccount:ci:deployer", "get", "--raw",
                             "/api/v1/namespaces/ci/pods", check=False, env=alice)  # fmt: skip
    assert (
        'serviceaccounts "deployer" is forbidden: User "alice" cannot impersonate resource '
        '"serviceaccounts" in API group "" in the namespace "ci"'
    ) in refused.stderr
    server.kubectl("create", "clusterrole", "impersonate-bob", "--verb=impersonate",
                   "--resource=users", "--resource-name=bob")  # fmt: skip
    server.kubectl("create", "clusterrolebinding", "alice-as-bob",
                   "--clusterrole=impersonate-bob", "--user=alice")  # fmt: skip
    whoami = server.kubectl("--as=bob", "auth", "whoami", "-o", "json", env=alice)
    assert json.loads(whoami.stdout)["status"]["userInfo"]["username"] == "bob"
    # bob may do nothing more than any user: the request is decided as bob
    denied = server.kubectl("--as=bob", "get", "configmaps", check=False, env=alice)
    assert 'User "bob" cannot list resource "configmaps"' in denied.stderr
    refused = server.kubectl("--as=carol", "create", "configmap", "c", check=False, env=alice)
    assert 'users "carol" is forbidden' in refused.stderr
    group = server.kubectl("--as=bob", "--as-group=admins", "create", "configmap", "c",
                           check=False, env=alice)  # fmt: skip
    assert (
        'groups "admins" is forbidden: User "alice" cannot impersonate resource "groups" in API '
        'group "" at the cluster scope'
    ) in group.stderr


def test_impersonating_groups_without_a_user_is_a_bad_request(server: Server) -> None:
    import ssl
    import urllib.error
    import urllib.request

    req = urllib.request.Request(server.url + "/api/v1/namespaces/default/configmaps")
    req.add_header("Authorization", f"Bearer {server.token}")
    req.add_header("Impersonate-Group", "devs")
    context = ssl.create_default_context(cafile=str(server.data_dir / "ca.crt"))
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(req, context=context, timeout=10)
    body = json.loads(caught.value.read())
    assert caught.value.code == 400
    assert body["message"] == "requested [{Group  devs    }] without impersonating a user"


def test_escalation_is_refused_unless_held_or_allowed_bind_and_escalate(
    server: Server, tmp_path: Path
) -> None:
    alice = user_kubeconfig(server, tmp_path, "alice")
    server.kubectl("create", "role", "role-admin", "--verb=create,update,get",
                   "--resource=roles,rolebindings")  # fmt: skip
    server.kubectl("create", "role", "cm-reader", "--verb=get,list", "--resource=configmaps")
    server.kubectl("create", "rolebinding", "alice-roles", "--role=role-admin", "--user=alice")
    server.kubectl("create", "rolebinding", "alice-cm", "--role=cm-reader", "--user=alice")
    server.kubectl("create", "role", "mine", "--verb=get", "--resource=configmaps", env=alice)
    refused = server.kubectl("create", "role", "sneaky", "--verb=list,get",
                             "--resource=secrets", check=False, env=alice)  # fmt: skip
    assert refused.returncode == 1
    assert (
        'roles.rbac.authorization.k8s.io "sneaky" is forbidden: user "alice" '
        '(groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently '
        'held:\n{APIGroups:[""], Resources:["secrets"], Verbs:["list" "get"]}'
    ) in refused.stderr
    refused = server.kubectl("create", "rolebinding", "alice-admin", "--clusterrole=admin",
                             "--user=alice", check=False, env=alice)  # fmt: skip
    assert 'rolebindings.rbac.authorization.k8s.io "alice-admin" is forbidden: user "alice"' in (
        refused.stderr
    )
    # alice holds cm-reader's rules, so she may bind it to anyone
    server.kubectl("create", "rolebinding", "bob-cm", "--role=cm-reader", "--user=bob", env=alice)
    server.kubectl("create", "role", "binder", "--verb=bind",
                   "--resource=clusterroles.rbac.authorization.k8s.io",
                   "--resource-name=admin")  # fmt: skip
    server.kubectl("create", "rolebinding", "alice-binder", "--role=binder", "--user=alice")
    server.kubectl("create", "rolebinding", "bob-admin", "--clusterrole=admin", "--user=bob",
                   env=alice)  # fmt: skip
    server.kubectl("create", "role", "escalator", "--verb=escalate",
                   "--resource=roles.rbac.authorization.k8s.io")  # fmt: skip
    server.kubectl("create", "rolebinding", "alice-escalator", "--role=escalator", "--user=alice")
    server.kubectl("create", "role", "sneaky", "--verb=list", "--resource=secrets", env=alice)


def test_aggregated_roles_follow_labelled_cluster_roles(server: Server, tmp_path: Path) -> None:
    import time

    # kubectl resolves widgets.example.com through discovery: the CRD must be served
    server.kubectl("apply", "-f", str(Path(__file__).parent / "data" / "widgets-crd.yaml"))
    server.kubectl("wait", "--for=condition=Established", "crd/widgets.example.com")
    server.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "widget-viewer",
                     "labels": {"rbac.authorization.k8s.io/aggregate-to-view": "true"}},
        "rules": [{"apiGroups": ["example.com"], "resources": ["widgets"],
                   "verbs": ["get", "list", "watch"]}],
    }))  # fmt: skip
    wanted = {"apiGroups": ["example.com"], "resources": ["widgets"],
              "verbs": ["get", "list", "watch"]}  # fmt: skip
    deadline = time.monotonic() + 30
    for role in ("view", "edit", "admin"):  # edit aggregates view, admin edit
        while True:
            rules = json.loads(server.kubectl("get", "clusterrole", role, "-o", "json").stdout)
            if wanted in rules["rules"]:
                break
            assert time.monotonic() < deadline, f"{role} never got the widget rule"
            time.sleep(0.05)
    carol = user_kubeconfig(server, tmp_path, "carol")
    server.kubectl("create", "rolebinding", "carol-view", "--clusterrole=view", "--user=carol")
    assert can_i(server, "list", "widgets.example.com", env=carol)
    server.kubectl("delete", "clusterrole", "widget-viewer")
    while True:
        rules = json.loads(server.kubectl("get", "clusterrole", "view", "-o", "json").stdout)
        if wanted not in rules["rules"]:
            break
        assert time.monotonic() < deadline, "view kept the deleted role's rule"
        time.sleep(0.05)
    assert not can_i(server, "list", "widgets.example.com", env=carol)


def test_subject_access_reviews_answer_for_another_user(server: Server) -> None:
    server.kubectl("create", "role", "cm-reader", "--verb=get", "--resource=configmaps")
    server.kubectl("create", "rolebinding", "dora-cm", "--role=cm-reader", "--user=dora")
    review = {
        "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
        "spec": {"user": "dora", "resourceAttributes": {
            "namespace": "default", "verb": "get", "resource": "configmaps", "name": "x"}},
    }  # fmt: skip
    code, out = server.request("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", review)
    assert code == 201
    assert out["status"]["allowed"] is True
    assert out["status"]["reason"] == (
        'RBAC: allowed by RoleBinding "dora-cm/default" of Role "cm-reader" to User "dora"'
    )
    review["spec"]["resourceAttributes"]["verb"] = "delete"  # type: ignore[index]
    code, out = server.request("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", review)
    assert out["status"] == {"allowed": False}
    local = {**review, "kind": "LocalSubjectAccessReview"}
    local["spec"]["resourceAttributes"]["verb"] = "get"  # type: ignore[index]
    code, out = server.request(
        "POST",
        "/apis/authorization.k8s.io/v1/namespaces/default/localsubjectaccessreviews",
        {**local, "metadata": {"namespace": "default"}},
    )
    assert code == 201, out
    assert out["status"]["allowed"] is True
