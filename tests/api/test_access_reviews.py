"""Access reviews answered by the authorizer (kubernetes ``pkg/registry/authorization``): the
attributes and user a review asks about, its status keys, the rules review's conversion of the rules
found, and the answers without an authorizer. The reviews' storage is called as the handler calls
it, with a small authorizer over fixed rule lists."""

from __future__ import annotations

from typing import Any

import pytest
from rbac_helpers import RulesAuthorizer

from kubelite.api.auth.authorizer import Authorizer, Decision
from kubelite.api.catalogue import Catalogue, load_builtin_catalogue
from kubelite.api.errors import APIError
from kubelite.api.kinds.authorization.reviews import ReviewREST
from kubelite.api.machinery.request import RequestInfo
from kubelite.api.machinery.rest import Context, WriteOptions
from kubelite.api.machinery.user import User

Obj = dict[str, Any]
AUTHZ = "authorization.k8s.io"
BOB = User("bob", ("devs", "system:authenticated"), "uid-bob")
PODS = {"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"]}
HEALTH = {"verbs": ["get"], "nonResourceURLs": ["/healthz", "/healthz/*"]}


@pytest.fixture(scope="module")
def catalogue(tmp_path_factory: pytest.TempPathFactory) -> Catalogue:
    return load_builtin_catalogue(tmp_path_factory.mktemp("cache"))


@pytest.fixture
def authorizer() -> RulesAuthorizer:
    return RulesAuthorizer({"bob": {"ns1": [PODS], "": [HEALTH]}})


async def post(
    catalogue: Catalogue,
    plural: str,
    body: Obj,
    authorizer: Authorizer | None,
    namespace: str | None = None,
    user: User = BOB,
) -> Obj:
    info = catalogue.require(AUTHZ, "v1", plural)
    rest = ReviewREST(info, _no_tokens, lambda: authorizer)
    return await rest.create(Context(namespace, user), body, WriteOptions())


async def _no_tokens(token: str) -> User | None:
    return None


def resource(**attrs: str) -> Obj:
    return {"spec": {"resourceAttributes": attrs}}


async def test_a_self_review_asks_about_the_caller(
    catalogue: Catalogue, authorizer: RulesAuthorizer
) -> None:
    body = resource(namespace="ns1", verb="get", resource="pods", name="p")
    answer = await post(catalogue, "selfsubjectaccessreviews", body, authorizer)
    assert answer["status"] == {"allowed": True}
    assert answer["spec"] == body["spec"]
    user, attrs = authorizer.asked[0]
    assert user == BOB
    assert attrs == RequestInfo(
        "", "get", True, api_group="", api_version="*", namespace="ns1", resource="pods", name="p"
    )
    answer = await post(
        catalogue, "selfsubjectaccessreviews", resource(verb="get", resource="pods"), authorizer
    )
    assert answer["status"] == {"allowed": False}


async def test_all_resource_attributes_reach_the_authorizer(
    catalogue: Catalogue, authorizer: RulesAuthorizer
) -> None:
    body = resource(namespace="n", verb="create", group="apps", version="v1",
                    resource="deployments", subresource="scale", name="d")  # fmt: skip
    await post(catalogue, "selfsubjectaccessreviews", body, authorizer)
    _, attrs = authorizer.asked[0]
    assert (attrs.verb, attrs.api_group, attrs.api_version, attrs.namespace) == (
        "create", "apps", "v1", "n",
    )  # fmt: skip
    assert (attrs.resource, attrs.subresource, attrs.name) == ("deployments", "scale", "d")
    assert attrs.is_resource_request


async def test_a_non_resource_review(catalogue: Catalogue, authorizer: RulesAuthorizer) -> None:
    body = {"spec": {"nonResourceAttributes": {"path": "/healthz/etcd", "verb": "get"}}}
    answer = await post(catalogue, "selfsubjectaccessreviews", body, authorizer)
    assert answer["status"] == {"allowed": True}
    assert authorizer.asked[0][1] == RequestInfo("/healthz/etcd", "get")
    body = {"spec": {"nonResourceAttributes": {"path": "/metrics", "verb": "get"}}}
    answer = await post(catalogue, "selfsubjectaccessreviews", body, authorizer)
    assert answer["status"] == {"allowed": False}


async def test_status_keys_are_left_out_when_empty(
    catalogue: Catalogue, authorizer: RulesAuthorizer
) -> None:
    authorizer.decision = Decision(False, "no way", denied=True, error="webhook down")
    answer = await post(catalogue, "selfsubjectaccessreviews", resource(verb="get"), authorizer)
    assert answer["status"] == {
        "allowed": False,
        "denied": True,
        "reason": "no way",
        "evaluationError": "webhook down",
    }
    authorizer.decision = Decision(True, 'RBAC: allowed by ClusterRoleBinding "b"')
    answer = await post(catalogue, "selfsubjectaccessreviews", resource(verb="get"), authorizer)
    assert answer["status"] == {
        "allowed": True,
        "reason": 'RBAC: allowed by ClusterRoleBinding "b"',
    }


async def test_a_subject_review_asks_about_the_user_it_names(
    catalogue: Catalogue, authorizer: RulesAuthorizer
) -> None:
    body = {
        "spec": {
            "user": "bob",
            "groups": ["devs"],
            "uid": "u1",
            "resourceAttributes": {"namespace": "ns1", "verb": "list", "resource": "pods"},
        }
    }
    caller = User("carol", ("system:masters",))
    answer = await post(catalogue, "subjectaccessreviews", body, authorizer, user=caller)
    assert answer["status"] == {"allowed": True}
    assert authorizer.asked[0][0] == User("bob", ("devs",), "u1")
    body["spec"]["user"] = "dave"
    answer = await post(catalogue, "subjectaccessreviews", body, authorizer, user=caller)
    assert answer["status"] == {"allowed": False}


async def test_a_group_alone_is_a_subject(catalogue: Catalogue) -> None:
    authorizer = RulesAuthorizer({"": {"": [{"verbs": ["*"], "nonResourceURLs": ["*"]}]}})
    body = {"spec": {"groups": ["g"], "nonResourceAttributes": {"path": "/x", "verb": "get"}}}
    answer = await post(catalogue, "subjectaccessreviews", body, authorizer)
    assert answer["status"] == {"allowed": True}
    assert authorizer.asked[0][0] == User("", ("g",))


async def test_a_local_review_is_in_the_urls_namespace(
    catalogue: Catalogue, authorizer: RulesAuthorizer
) -> None:
    body = {"spec": {"user": "bob", "resourceAttributes": {"namespace": "ns1", "verb": "get",
                                                            "resource": "pods"}}}  # fmt: skip
    answer = await post(catalogue, "localsubjectaccessreviews", body, authorizer, "ns1")
    assert answer["metadata"] == {"namespace": "ns1", "creationTimestamp": None}
    assert answer["status"] == {"allowed": True}
    with pytest.raises(APIError) as caught:
        await post(catalogue, "localsubjectaccessreviews", body, authorizer, "ns2")
    assert caught.value.code == 422
    assert caught.value.message == (
        'LocalSubjectAccessReview.authorization.k8s.io "" is invalid: '
        'spec.resourceAttributes.namespace: Invalid value: "ns1": must match metadata.namespace'
    )
    # an object in another namespace than the URL's: the handler's 400
    moved = {**body, "metadata": {"namespace": "ns1"}}
    with pytest.raises(APIError) as caught:
        await post(catalogue, "localsubjectaccessreviews", moved, authorizer, "ns2")
    assert caught.value.code == 400
    assert caught.value.message == (
        "the namespace of the provided object does not match the namespace sent on the request"
    )


async def test_a_local_review_must_name_its_namespace(
    catalogue: Catalogue, authorizer: RulesAuthorizer
) -> None:
    body = {"spec": {"user": "bob", "resourceAttributes": {"verb": "get", "resource": "pods"}}}
    with pytest.raises(APIError) as caught:
        await post(catalogue, "localsubjectaccessreviews", body, authorizer, "ns1")
    assert caught.value.code == 422
    assert caught.value.message.endswith(
        'spec.resourceAttributes.namespace: Invalid value: "": must match metadata.namespace'
    )
    assert authorizer.asked == []


async def test_the_rules_review_lists_the_rules_found(
    catalogue: Catalogue, authorizer: RulesAuthorizer
) -> None:
    named = {"verbs": ["get"], "apiGroups": ["apps"], "resources": ["deployments"],
             "resourceNames": ["d"]}  # fmt: skip
    authorizer.rules["bob"]["ns1"].append(named)
    answer = await post(
        catalogue, "selfsubjectrulesreviews", {"spec": {"namespace": "ns1"}}, authorizer
    )
    assert answer["kind"] == "SelfSubjectRulesReview"
    assert answer["spec"] == {}
    assert answer["status"] == {
        "resourceRules": [PODS, named],
        "nonResourceRules": [HEALTH],
        "incomplete": False,
    }
    answer = await post(
        catalogue, "selfsubjectrulesreviews", {"spec": {"namespace": "other"}}, authorizer
    )
    assert answer["status"]["resourceRules"] == []


async def test_the_rules_review_reports_resolution_errors(
    catalogue: Catalogue, authorizer: RulesAuthorizer
) -> None:
    authorizer.errors = ['clusterrole.rbac.authorization.k8s.io "a" not found',
                         'role.rbac.authorization.k8s.io "b" not found']  # fmt: skip
    answer = await post(
        catalogue, "selfsubjectrulesreviews", {"spec": {"namespace": "ns1"}}, authorizer
    )
    assert answer["status"]["evaluationError"] == (
        '[clusterrole.rbac.authorization.k8s.io "a" not found, '
        'role.rbac.authorization.k8s.io "b" not found]'
    )
    assert answer["status"]["incomplete"] is False


async def test_the_rules_review_needs_a_namespace(
    catalogue: Catalogue, authorizer: RulesAuthorizer
) -> None:
    for body in ({"spec": {}}, {"spec": {"namespace": ""}}, {}):
        with pytest.raises(APIError) as caught:
            await post(catalogue, "selfsubjectrulesreviews", body, authorizer)
        assert (caught.value.code, caught.value.reason) == (400, "BadRequest")
        assert caught.value.message == "no namespace on request"


async def test_without_an_authorizer_everything_is_allowed(catalogue: Catalogue) -> None:
    answer = await post(catalogue, "selfsubjectaccessreviews", resource(verb="delete"), None)
    assert answer["status"] == {"allowed": True}
    body = {"spec": {"user": "x", "nonResourceAttributes": {"path": "/x", "verb": "get"}}}
    answer = await post(catalogue, "subjectaccessreviews", body, None)
    assert answer["status"] == {"allowed": True}
    answer = await post(catalogue, "selfsubjectrulesreviews", {"spec": {"namespace": "n"}}, None)
    assert answer["status"] == {
        "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
        "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
        "incomplete": False,
    }
