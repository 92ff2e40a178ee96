"""Review of RBAC over HTTP against kube-apiserver: which name a list or watch is authorized
for, what a GET of one object with ``?watch`` is, impersonation headers kube reads byte for
byte, the Authorization header as kube's bearer-token authenticator reads it."""

from __future__ import annotations

import http.client
import json
import ssl
from typing import Any

import pytest
from harness import Server
from test_rbac_http import Cert, binding, create, role, user, user_cert

#: the tests grant and revoke (ClusterRoleBindings among them) what the same users may do
pytestmark = pytest.mark.fresh_server

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
    eve = user_cert(server, "eve")
    one = "&fieldSelector=metadata.name%3Da"
    assert server.request("GET", f"{CMS}?watch=1&timeoutSeconds=1{one}", cert=eve)[0] == 200
    assert server.request("GET", f"{CMS}?limit=1{one}", cert=eve)[0] == 200
    refused = [
        f"/api/v1/watch/namespaces/default/configmaps?timeoutSeconds=1{one}",
        f"/api/v1/watch/namespaces/default/configmaps/b?timeoutSeconds=1{one}",
        f"{CMS}/b?watch=1&timeoutSeconds=1{one}",
        f"{CMS}?fieldSelector=metadata.name%3Da%2Fb",
    ]
    for path in refused:
        code, status = server.request("GET", path, cert=eve)
        assert code == 403, (path, status)
    code, status = server.request("GET", f"{CMS}/b?watch=1{one}", cert=eve)
    assert status["message"] == (
        'configmaps "b" is forbidden: User "eve" cannot get resource "configmaps" in API group '
        '"" in the namespace "default"'
    )
    code, status = server.request("GET", f"/api/v1/watch/namespaces/default/configmaps?{one}",
                                  cert=eve)  # fmt: skip
    assert status["message"] == (
        'configmaps is forbidden: User "eve" cannot watch resource "configmaps" in API group '
        '"" in the namespace "default"'
    )
    # a GET of one object with ?watch answers the object, as kube's GET handler does
    code, got = server.request("GET", f"{CMS}/b?watch=1")
    assert (code, got["kind"], got["data"]) == (200, "ConfigMap", {"secret": "s3cr3t"})


def call(
    server: Server,
    path: str,
    headers: list[tuple[str, str]],
    token: str | None = "default",
    body: object = None,
    cert: Cert | None = None,
) -> tuple[int, Any]:
    """A GET (a POST of ``body``) with ``headers`` sent as they are (repeated, any case; a
    str's code points up to U+00FF each one byte, as http.client writes them); with a client
    certificate ``cert`` (and no token), to the server's client-certificate listener."""
    url = server.url if cert is None else server.cert_url
    host, port = url.removeprefix("https://").rsplit(":", 1)
    context = ssl.create_default_context(cafile=str(server.data_dir / "ca.crt"))
    if cert is not None:
        context.load_cert_chain(*cert)
        token = None
    conn = http.client.HTTPSConnection(host, int(port), context=context, timeout=30)
    data = None if body is None else json.dumps(body).encode()
    try:
        conn.putrequest("GET" if data is None else "POST", path)
        if token is not None:
            conn.putheader(
                "Authorization", f"Bearer {server.token if token == 'default' else token}"
            )
        if data is not None:
            conn.putheader("Content-Type", "application/json")
            conn.putheader("Content-Length", str(len(data)))
        for name, value in headers:
            conn.putheader(name, value)
        conn.endheaders(data)
        resp = conn.getresponse()
        raw = resp.read()
        try:
            return resp.status, json.loads(raw)
        except ValueError:
            return resp.status, raw
    finally:
        conn.close()


def test_header_bytes_that_are_not_utf8_are_no_internal_error(server: Server) -> None:
    """kube reads header values as bytes: an impersonated name with a byte that is not UTF-8 is
    a name like any other (its JSON shows U+FFFD), and any other header is just carried."""
    assert call(server, CMS, [("X-Note", "caf\xe9")])[0] == 200
    create(server, f"{RBAC}/clusterroles", {
        "metadata": {"name": "imp-alice"},
        "rules": [{"verbs": ["impersonate"], "apiGroups": [""], "resources": ["users"],
                   "resourceNames": ["alice"]}],
    })  # fmt: skip
    create(server, f"{RBAC}/clusterrolebindings",
           binding("bob-imp", "ClusterRole", "imp-alice", [user("bob")]))  # fmt: skip
    bob = user_cert(server, "bob")
    code, status = call(server, CMS, [("Impersonate-User", "al\xffce")], cert=bob)
    assert (code, status["details"]) == (403, {"name": "al\ufffdce", "kind": "users"})
    code, status = call(server, CMS, [("Impersonate-User", "alice"),
                                      ("Impersonate-Group", "d\xe9v")], cert=bob)  # fmt: skip
    assert (code, status["details"]) == (403, {"name": "d\ufffdv", "kind": "groups"})


def test_an_extra_key_with_a_malformed_escape_is_kept_as_sent(server: Server) -> None:
    """``unescapeExtraKey``: url.PathUnescape of the lower-cased key, the key as sent when an
    escape is malformed."""
    create(server, f"{RBAC}/clusterroles", {
        "metadata": {"name": "imp-alice"},
        "rules": [{"verbs": ["impersonate"], "apiGroups": [""], "resources": ["users"],
                   "resourceNames": ["alice"]}],
    })  # fmt: skip
    create(server, f"{RBAC}/clusterrolebindings",
           binding("bob-imp", "ClusterRole", "imp-alice", [user("bob")]))  # fmt: skip
    bob = user_cert(server, "bob")
    for sent, key in (("Scopes%2FA%41", "scopes/aA"), ("A%zz%41", "a%zz%41")):
        headers = [("Impersonate-User", "alice"), (f"Impersonate-Extra-{sent}", "v")]
        code, status = call(server, CMS, headers, cert=bob)
        assert code == 403
        assert status["message"] == (
            f'userextras.authentication.k8s.io "v" is forbidden: User "bob" cannot impersonate '
            f'resource "userextras/{key}" in API group "authentication.k8s.io" at the cluster '
            "scope"
        )


def test_the_authorization_header_is_read_as_kubes_bearer_token_authenticator(
    server: Server,
) -> None:
    """The scheme in any case, the token up to the next space; a header of another scheme, or
    with no token, makes the request anonymous (not a 401), as kube's authenticator chain
    falls through to the anonymous one."""
    for header in (
        f"bearer {server.token}",
        f"BEARER {server.token} x",
        f" Bearer {server.token} ",
    ):
        assert call(server, CMS, [("Authorization", header)], None)[0] == 200, header
    for header in ("Basic Zm9vOmJhcg==", "Bearer", f"Bearer  {server.token}", "Negotiate x"):
        code, status = call(server, CMS, [("Authorization", header)], None)
        assert (code, status["message"]) == (
            403,
            'configmaps is forbidden: User "system:anonymous" cannot list resource "configmaps" '
            'in API group "" in the namespace "default"',
        ), header
        assert call(server, "/version", [("Authorization", header)], None)[0] == 200
    assert call(server, CMS, [("Authorization", "Bearer nope")], None)[0] == 401


def test_a_review_is_decoded_as_its_go_struct_before_it_is_answered(server: Server) -> None:
    """kube decodes a SubjectAccessReview (any review) into its type first: a value of the
    wrong type is a 400, not an answer about attributes read from nothing."""
    sar = "/apis/authorization.k8s.io/v1/subjectaccessreviews"
    body = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
            "spec": {"user": "bob", "resourceAttributes": "x"}}  # fmt: skip
    code, status = server.request("POST", sar, body)
    assert (code, status["message"]) == (
        400,
        'SubjectAccessReview in version "v1" cannot be handled as a SubjectAccessReview: json: '
        "cannot unmarshal string into Go struct field SubjectAccessReviewSpec.spec."
        "resourceAttributes of type v1.ResourceAttributes",
    )
    body["spec"] = {"user": "bob", "groups": "devs", "nonResourceAttributes": {"path": "/x"}}
    assert server.request("POST", sar, body)[0] == 400
    # what decodes is answered, unknown fields dropped as kube drops them
    body["spec"] = {"user": "bob", "nonResourceAttributes": {"path": "/x", "verb": "get"},
                    "bogus": 1}  # fmt: skip
    code, answer = server.request("POST", sar, body)
    assert (code, answer["spec"], answer["status"]) == (
        201,
        {"user": "bob", "nonResourceAttributes": {"path": "/x", "verb": "get"}},
        {"allowed": False},
    )


def test_an_access_review_is_refused_with_every_validation_error(server: Server) -> None:
    """ValidateSubjectAccessReview and friends collect their errors (one 422 lists them all)
    and refuse a review whose metadata is set (a LocalSubjectAccessReview's namespace aside)."""
    sar = "/apis/authorization.k8s.io/v1/subjectaccessreviews"
    lsar = "/apis/authorization.k8s.io/v1/namespaces/default/localsubjectaccessreviews"
    code, status = server.request("POST", sar, {"kind": "SubjectAccessReview", "spec": {}})
    assert (code, status["message"]) == (
        422,
        'SubjectAccessReview.authorization.k8s.io "" is invalid: [spec.resourceAttributes: '
        'Invalid value: "null": exactly one of nonResourceAttributes or resourceAttributes must '
        'be specified, spec.user: Invalid value: "": at least one of user or group must be '
        "specified]",
    )
    spec = {"user": "bob", "resourceAttributes": {"namespace": "default", "verb": "get"}}
    for path, meta, why in (
        (sar, {"name": "x"}, "must be empty"),
        (sar, {"labels": {"a": "b"}}, "must be empty"),
        (lsar, {"namespace": "default", "name": "x"}, "must be empty except for namespace"),
    ):
        code, status = server.request("POST", path, {"metadata": meta, "spec": spec})
        assert code == 422, (path, meta)
        assert status["details"]["causes"] == [  # type: ignore[index]
            {"reason": "FieldValueInvalid", "message": f"Invalid value: {{...}}: {why}",
             "field": "metadata"},
        ]  # fmt: skip
    empty = {"creationTimestamp": None, "labels": {}, "name": ""}
    assert server.request("POST", sar, {"metadata": empty, "spec": spec})[0] == 201
    assert (
        server.request("POST", lsar, {"metadata": {"namespace": "default"}, "spec": spec})[0] == 201
    )


def test_of_a_repeated_user_or_uid_header_the_first_counts_even_when_empty(
    server: Server,
) -> None:
    """kube reads ``Impersonate-User`` and ``Impersonate-Uid`` with Go's ``Header.Get``: the
    first value, so an empty first one is no user (or UID), whatever follows."""
    create(server, f"{RBAC}/clusterroles", {
        "metadata": {"name": "imp-all"},
        "rules": [{"verbs": ["impersonate"], "apiGroups": [""],
                   "resources": ["users", "groups"]}],
    })  # fmt: skip
    create(server, f"{RBAC}/clusterrolebindings",
           binding("bob-imp", "ClusterRole", "imp-all", [user("bob")]))  # fmt: skip
    bob = user_cert(server, "bob")
    whoami = "/apis/authentication.k8s.io/v1/selfsubjectreviews"
    body = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}

    def who(*headers: tuple[str, str]) -> tuple[int, Any]:
        return call(server, whoami, list(headers), body=body, cert=bob)

    code, answer = who(("Impersonate-User", ""), ("Impersonate-User", "alice"))
    assert (code, answer["status"]["userInfo"]["username"]) == (201, "bob")
    code, status = who(("Impersonate-User", ""), ("Impersonate-User", "alice"),
                       ("Impersonate-Group", "g"))  # fmt: skip
    assert (code, status["message"]) == (
        400,
        "requested [{Group  g    }] without impersonating a user",
    )
    code, answer = who(("Impersonate-User", "alice"), ("Impersonate-Uid", ""),
                       ("Impersonate-Uid", "u"))  # fmt: skip
    assert (code, answer["status"]["userInfo"]) == (
        201,
        {"username": "alice", "groups": ["system:authenticated"]},
    )
