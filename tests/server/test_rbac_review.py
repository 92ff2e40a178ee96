"""Review of RBAC over HTTP against kube-apiserver: which name a list or watch is authorized
for, what a GET of one object with ``?watch`` is, impersonation headers kube reads byte for
byte, the Authorization header as kube's bearer-token authenticator reads it."""

from __future__ import annotations

from harness import Server
from test_rbac_http import binding, create, role, user, user_token

CMS = "/api/v1/namespaces/default/configmaps"
RBAC = "/apis/rbac.authorization.k8s.io/v1"


def test_only_a_collection_list_or_watch_is_named_by_its_field_selector(server: Server) -> None:
    """kube names a list or watch by ``fieldSelector=metadata.name=<n>`` only for a GET of a
    collection it made a list or watch (not a ``/watch/`` path, not a named GET) and only when
    ``<n>`` is a valid path segment; a GET of one object is a ``get``, ``?watch`` or not."""
    for name, data in (("a", {}), ("b", {"secret": "s3cr3t"})):
        create(server, CMS, {"metadata": {"name": name}, "data": data})
    rules = [{"verbs": ["list", "watch"], "apiGroups": [""], "resources": ["configmaps"],
              "resourceNames": ["a", "a/b"]}]  # fmt: skip
    create(server, f"{RBAC}/namespaces/default/roles", role("watch-a", rules))
    create(server, f"{RBAC}/namespaces/default/rolebindings",
           binding("eve-a", "Role", "watch-a", [user("eve")], "default"))  # fmt: skip
    eve = user_token(server, "eve")
    one = "&fieldSelector=metadata.name%3Da"
    assert server.request("GET", f"{CMS}?watch=1&timeoutSeconds=1{one}", token=eve)[0] == 200
    assert server.request("GET", f"{CMS}?limit=1{one}", token=eve)[0] == 200
    refused = [
        f"/api/v1/watch/namespaces/default/configmaps?timeoutSeconds=1{one}",
        f"/api/v1/watch/namespaces/default/configmaps/b?timeoutSeconds=1{one}",
        f"{CMS}/b?watch=1&timeoutSeconds=1{one}",
        f"{CMS}?fieldSelector=metadata.name%3Da%2Fb",
    ]
    for path in refused:
        code, status = server.request("GET", path, token=eve)
        assert code == 403, (path, status)
    code, status = server.request("GET", f"{CMS}/b?watch=1{one}", token=eve)
    assert status["message"] == (
        'configmaps "b" is forbidden: User "eve" cannot get resource "configmaps" in API group '
        '"" in the namespace "default"'
    )
    code, status = server.request("GET", f"/api/v1/watch/namespaces/default/configmaps?{one}",
                                  token=eve)  # fmt: skip
    assert status["message"] == (
        'configmaps is forbidden: User "eve" cannot watch resource "configmaps" in API group '
        '"" in the namespace "default"'
    )
    # a GET of one object with ?watch answers the object, as kube's GET handler does
    code, got = server.request("GET", f"{CMS}/b?watch=1")
    assert (code, got["kind"], got["data"]) == (200, "ConfigMap", {"secret": "s3cr3t"})
