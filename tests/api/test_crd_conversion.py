"""A CRD's conversion settings and its webhook converter, without a server: the 422 causes of
``spec.conversion``, and the ConversionReview answers the converter accepts or refuses (a fake
client stands for the HTTPS call; tests/server/test_conversion_webhooks.py makes real ones)."""

from __future__ import annotations

import base64
import copy
from pathlib import Path
from typing import Any

import orjson
import pytest

from kubelite.api.catalogue import ResourceInfo
from kubelite.api.errors import APIError
from kubelite.api.kinds.apiextensions import crdconversion as crd_conversion
from kubelite.api.kinds.apiextensions import crdvalidation as crds
from kubelite.api.kinds.apiextensions.webhookconversion import WebhookConverter
from kubelite.api.machinery.webhookclient import CallFailed
from kubelite.server.tls import ensure_serving_files

URL = "https://hook.example/convert"


def spec(conversion: dict[str, Any] | None = None) -> dict[str, Any]:
    webhook = {"clientConfig": {"url": URL}, "conversionReviewVersions": ["v1"]}
    return {"conversion": conversion or {"strategy": "Webhook", "webhook": webhook}}


def texts(found: list[Any]) -> list[str]:
    return [f"{c.field}: {c.message}" for c in found]


# --- validation -----------------------------------------------------------------------------------


def test_a_valid_webhook_conversion_has_no_causes() -> None:
    assert crd_conversion.causes(spec()) == []
    assert crd_conversion.causes({"conversion": {"strategy": "None"}}) == []
    service = {"namespace": "ns", "name": "svc", "path": "/convert/v1", "port": 8443}
    conversion = {
        "strategy": "Webhook",
        "webhook": {"clientConfig": {"service": service}, "conversionReviewVersions": ["v1"]},
    }
    assert crd_conversion.causes(spec(conversion)) == []


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        (
            "https://user:pw@hook.example/convert#top",
            [
                'Invalid value: "user:pw": user information is not permitted in the URL',
                'Invalid value: "top": fragments are not permitted in the URL',
            ],
        ),
        (
            "hook.example/convert",
            [
                "Invalid value: \"\": 'https' is the only allowed URL scheme; desired format: "
                "https://host[/path]",
                'Invalid value: "": host must be specified; desired format: https://host[/path]',
            ],
        ),
    ],
)
def test_webhook_urls(url: str, expected: list[str]) -> None:
    found = crd_conversion.url_causes("u", url)
    assert [c.message for c in found] == expected


def test_service_paths() -> None:
    found = crd_conversion.service_causes("s", {"namespace": "n", "name": "x", "path": "convert/"})
    assert texts(found) == ["s.path: Invalid value: \"convert/\": must start with a '/'"]
    found = crd_conversion.service_causes("s", {"namespace": "n", "name": "x", "path": "//"})
    assert texts(found) == ['s.path: Invalid value: "//": segment[0] may not be empty']
    found = crd_conversion.service_causes("s", {"namespace": "n", "name": "x", "path": "/A_b"})
    assert texts(found)[0].startswith(
        's.path: Invalid value: "/A_b": segment[0]: a lowercase RFC 1123 subdomain must consist'
    )


def test_review_versions() -> None:
    conversion = copy.deepcopy(spec())["conversion"]
    conversion["webhook"]["conversionReviewVersions"] = ["v1", "v1", "V2"]
    found = texts(crd_conversion.causes({"conversion": conversion}))
    assert (
        found[0]
        == 'spec.conversion.conversionReviewVersions[1]: Invalid value: "v1": duplicate version'
    )
    assert found[1].startswith(
        'spec.conversion.conversionReviewVersions[2]: Invalid value: "V2": a DNS-1035 label'
    )
    assert len(found) == 2
    # an update may keep a list without a known version when the CRD already had one
    conversion["webhook"]["conversionReviewVersions"] = ["v9"]
    old = {"conversion": copy.deepcopy(conversion)}
    assert crd_conversion.causes({"conversion": conversion}, old) == []
    assert texts(crd_conversion.causes({"conversion": conversion}, spec())) == [
        'spec.conversion.conversionReviewVersions: Invalid value: []string{"v9"}: must include '
        "at least one of v1, v1beta1"
    ]


def test_preserve_unknown_fields_needs_strategy_none() -> None:
    found = crd_conversion.causes({**spec(), "preserveUnknownFields": True})
    assert texts(found) == [
        'spec.conversion.strategy: Invalid value: "Webhook": must be None if '
        "spec.preserveUnknownFields is true"
    ]


def test_ca_bundles(tmp_path: Path) -> None:
    files = ensure_serving_files(tmp_path, "127.0.0.1")
    pem = files.ca_cert.read_bytes()
    assert crd_conversion.ca_bundle_error(pem) is None
    assert crd_conversion.ca_bundle_error(b"junk") == "unable to parse bytes as PEM block"
    key_only = files.key.read_bytes()
    assert crd_conversion.ca_bundle_error(key_only) == "no valid certificate authority data seen"
    broken = b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"
    assert (crd_conversion.ca_bundle_error(broken) or "").startswith("failed to parse certificate")
    # checked on the update of an established CRD whose bundle was valid, not on a create
    conversion = copy.deepcopy(spec())["conversion"]
    conversion["webhook"]["clientConfig"]["caBundle"] = base64.b64encode(b"junk").decode()
    assert crd_conversion.causes({"conversion": conversion}) == []
    found = crd_conversion.causes({"conversion": conversion}, spec(), old_established=True)
    assert texts(found) == [
        "spec.conversion.webhookClientConfig.caBundle: Invalid value: []byte{0x6a, 0x75, 0x6e, "
        "0x6b}: unable to load root certificates: unable to parse bytes as PEM block"
    ]
    old = {"conversion": copy.deepcopy(conversion)}  # the bundle was already invalid
    assert crd_conversion.causes({"conversion": conversion}, old, old_established=True) == []


def test_defaults_and_what_the_served_versions_carry() -> None:
    conversion = {
        "strategy": "Webhook",
        "webhook": {
            "clientConfig": {"service": {"namespace": "n", "name": "s"}},
            "conversionReviewVersions": ["v1"],
        },
    }
    crd = widget_crd(conversion)
    crds.apply_defaults(crd)
    assert crd["spec"]["conversion"]["webhook"]["clientConfig"]["service"]["port"] == 443
    info = crds.storage_info(crd)
    carried = orjson.loads(info.conversion)
    assert carried["name"] == "widgets.example.com"
    assert carried["storageVersion"] == "example.com/v1"
    assert carried["webhook"] == crd["spec"]["conversion"]["webhook"]
    plain = widget_crd({"strategy": "None"})
    assert crds.storage_info(plain).conversion == ""


# --- the converter --------------------------------------------------------------------------------


def widget_crd(conversion: dict[str, Any]) -> dict[str, Any]:
    def version(name: str, field: str, storage: bool) -> dict[str, Any]:
        props = {"spec": {"type": "object", "properties": {field: {"type": "integer"}}}}
        schema = {"openAPIV3Schema": {"type": "object", "properties": props}}
        return {"name": name, "served": True, "storage": storage, "schema": schema}

    return {
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "kind": "Widget"},
            "versions": [version("v1", "size", True), version("v2", "replicas", False)],
            "conversion": conversion,
        },
    }


def v2_info(review_versions: list[str] | None = None) -> ResourceInfo:
    webhook = {"clientConfig": {"url": URL}, "conversionReviewVersions": review_versions or ["v1"]}
    crd = widget_crd({"strategy": "Webhook", "webhook": webhook})
    infos = crds._infos(crd, served_only=True)
    return next(i for i in infos if i.version == "v2")


class FakeClient:
    """Answers each review with ``answer(review)``: (status, body)."""

    def __init__(self, answer: Any) -> None:
        self.answer = answer
        self.calls: list[tuple[dict[str, Any], dict[str, Any], float, str]] = []

    async def post(
        self, client_config: dict[str, Any], body: bytes, seconds: float, query: str = ""
    ) -> tuple[int, bytes]:
        review = orjson.loads(body)
        self.calls.append((client_config, review, seconds, query))
        result = self.answer(review)
        if isinstance(result, Exception):
            raise result
        status, answer = result
        return status, answer if isinstance(answer, bytes) else orjson.dumps(answer)


def answered(review: dict[str, Any], **response: Any) -> dict[str, Any]:
    request = review["request"]
    objects = []
    for obj in request["objects"]:
        out = copy.deepcopy(obj)
        out["apiVersion"] = request["desiredAPIVersion"]
        spec = out.get("spec") or {}
        if "size" in spec:
            spec["replicas"] = spec.pop("size")
        elif "replicas" in spec:
            spec["size"] = spec.pop("replicas")
        objects.append(out)
    body = {"uid": request["uid"], "convertedObjects": objects, "result": {"status": "Success"}}
    body.update(response)
    return {
        "apiVersion": review["apiVersion"],
        "kind": "ConversionReview",
        "response": body,
    }


def stored(name: str = "w", **extra: Any) -> dict[str, Any]:
    meta = {"name": name, "namespace": "default", "uid": "u-1", **extra}
    return {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": meta, "spec": {"size": 2}}


async def convert(client: FakeClient, objs: list[Any], to: str = "example.com/v2") -> Any:
    info = v2_info()
    return await WebhookConverter(info, lambda: client)(objs, to)  # type: ignore[arg-type,return-value]


async def failure(answer: Any, objs: list[Any] | None = None) -> str:
    with pytest.raises(APIError) as caught:
        await convert(FakeClient(answer), objs or [stored()])
    assert (caught.value.code, caught.value.reason) == (500, "")
    return caught.value.message


GVK = "conversion webhook for example.com/v1, Kind=Widget"


async def test_a_review_converts_only_what_is_not_at_the_desired_version() -> None:
    client = FakeClient(lambda review: (200, answered(review)))
    at_v2 = {**stored("b"), "apiVersion": "example.com/v2", "spec": {"replicas": 1}}
    out = await convert(client, [stored("a"), at_v2, stored("c")])
    assert [o["spec"] for o in out] == [{"replicas": 2}, {"replicas": 1}, {"replicas": 2}]
    assert out[1] is at_v2
    (config, review, seconds, query) = client.calls[0]
    assert (config, seconds, query) == ({"url": URL}, 30.0, "timeout=30s")
    assert [o["metadata"]["name"] for o in review["request"]["objects"]] == ["a", "c"]
    assert review["response"] == {"uid": "", "convertedObjects": None, "result": {"metadata": {}}}
    assert await convert(client, [at_v2]) == [at_v2]
    assert len(client.calls) == 1  # nothing to convert: no call


async def test_the_converted_object_keeps_its_metadata_but_labels_and_annotations() -> None:
    def answer(review: dict[str, Any]) -> tuple[int, Any]:
        body = answered(review)
        obj = body["response"]["convertedObjects"][0]
        obj["metadata"].update(generation=7, labels={"l": "v"}, annotations={"a": "b"})
        obj["spec"]["notInSchema"] = True
        return 200, body

    [out] = await convert(FakeClient(answer), [stored(generation=1, labels={"old": "x"})])
    assert out["metadata"] == {
        "name": "w",
        "namespace": "default",
        "uid": "u-1",
        "generation": 1,
        "labels": {"l": "v"},
        "annotations": {"a": "b"},
    }
    assert out["spec"] == {"replicas": 2}  # pruned by v2's schema


async def test_v1beta1_reviews_skip_the_uid_check() -> None:
    info = v2_info(["v1beta1", "v1"])
    client = FakeClient(lambda review: (200, answered(review, uid="whatever")))
    [out] = await WebhookConverter(info, lambda: client)([stored()], "example.com/v2")  # type: ignore[arg-type]
    assert out["spec"] == {"replicas": 2}
    assert client.calls[0][1]["apiVersion"] == "apiextensions.k8s.io/v1beta1"


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        (lambda r: (200, {**answered(r), "response": None}), f"{GVK} failed: no response provided"),
        (
            lambda r: (200, b""),
            f"{GVK} failed: 0-length response with status code: 200 and content type: "
            "application/json",
        ),
        (lambda r: (404, b"{}"), f"{GVK} failed: the server could not find the requested resource"),
        (
            lambda r: (503, b"not json"),
            f"{GVK} failed: the server is currently unable to handle the request",
        ),
        (
            lambda r: (502, b"{}"),
            f'{GVK} failed: an error on the server ("unknown") has prevented the request from '
            "succeeding",
        ),
        (
            lambda r: CallFailed(
                'failed to call webhook: Post "https://x": context deadline exceeded'
            ),
            f'{GVK} failed: Post "https://x": context deadline exceeded',
        ),
        (
            lambda r: (200, answered(r, convertedObjects=["text"])),
            "json: cannot unmarshal string into Go value of type map[string]interface {}",
        ),
        (
            lambda r: (200, answered(r, convertedObjects=[{"apiVersion": "example.com/v2"}])),
            """Object 'Kind' is missing in '{"apiVersion":"example.com/v2"}'""",
        ),
        (
            lambda r: (200, answered(r, convertedObjects=[])),
            f"{GVK} returned 0 objects, expected 1",
        ),
    ],
)
async def test_answers_kube_refuses(answer: Any, message: str) -> None:
    assert await failure(answer) == message


async def test_metadata_the_webhook_may_not_give() -> None:
    def with_meta(meta: Any) -> Any:
        def answer(review: dict[str, Any]) -> tuple[int, Any]:
            body = answered(review)
            obj = body["response"]["convertedObjects"][0]
            if meta is None:
                del obj["metadata"]
            else:
                obj["metadata"] = meta
            return 200, body

        return answer

    base = {"name": "w", "namespace": "default", "uid": "u-1"}
    assert await failure(with_meta(None)) == (
        f"{GVK} returned invalid object: must have the same name: w != "
    )
    assert await failure(with_meta({**base, "labels": ["x"]})) == (
        f"{GVK} returned invalid metadata: invalid metadata.labels of type []interface {{}} in "
        "converted object"
    )
    assert await failure(with_meta({**base, "annotations": {"a": 1}})) == (
        f"{GVK} returned invalid metadata: metadata.annotations[a] must be a string, but is "
        "int64 in converted object"
    )
    assert await failure(with_meta({**base, "annotations": {"a b": "x", "c d": "y"}})) == (
        f'{GVK} returned invalid metadata: [metadata.annotation: Invalid value: "a b": name '
        "part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
        "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used "
        "for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]'), metadata.annotation: "
        "Invalid value: \"c d\": name part must consist of alphanumeric characters, '-', '_' or "
        "'.', and must start and end with an alphanumeric character (e.g. 'MyName',  or "
        "'my.name',  or '123-abc', regex used for validation is "
        "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')]"
    )
    assert await failure(with_meta({**base, "namespace": "other"})) == (
        f"{GVK} returned invalid object: must have the same namespace: default != other"
    )


async def test_no_known_review_version_and_no_client() -> None:
    info = v2_info(["v9"])
    with pytest.raises(APIError) as caught:
        await WebhookConverter(info, lambda: None)([stored()], "example.com/v2")
    assert caught.value.message == "no supported conversion review versions"
    with pytest.raises(APIError) as caught:
        await WebhookConverter(v2_info(), lambda: None)([stored()], "example.com/v2")
    assert caught.value.message.startswith(f"{GVK} failed: ")


async def test_writes_are_pruned_by_the_storage_schema() -> None:
    def answer(review: dict[str, Any]) -> tuple[int, Any]:
        body = answered(review)
        body["response"]["convertedObjects"][0]["spec"]["extra"] = 1
        return 200, body

    obj = {**stored(), "apiVersion": "example.com/v2", "spec": {"replicas": 4}}
    [out] = await convert(FakeClient(answer), [obj], "example.com/v1")
    assert (out["apiVersion"], out["spec"]) == ("example.com/v1", {"size": 4})
