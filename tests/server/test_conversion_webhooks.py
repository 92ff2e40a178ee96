"""CRD conversion webhooks against a real server and a real HTTPS webhook started here (its own
CA and serving certificate): a Widget stored at v2 (``spec.size``) and served at v1 too
(``spec.replicas``), read and written at either version by HTTP, watch and kubectl; the
webhook down or answering wrongly, with kube-apiserver's texts; a webhook reached as a Service.

The stored version is the one discovery prefers (v2 before v1), which the garbage collector
reads every kind at: its monitor of Widgets (started within a second of the CRD, at any point
of a test on a loaded machine) then sends no reviews of its own, and the reviews a test counts
are its requests'."""

from __future__ import annotations

import base64
import copy
import json
import ssl
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from harness import Server

from kubelite.server.tls import ensure_serving_files

#: a server that calls webhooks runs in a process of its own (test_admission_webhooks.py says
#: why), and each test's webhook has a CA of its own: a server of its own for each
pytestmark = pytest.mark.fresh_server(subprocess=True)
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
V2 = "/apis/example.com/v2/namespaces/{ns}/widgets"
V1 = "/apis/example.com/v1/namespaces/{ns}/widgets"


# --- the webhook ---------------------------------------------------------------------------------


def convert(obj: dict[str, Any], desired: str) -> dict[str, Any]:
    """v2 ``spec.size`` <-> v1 ``spec.replicas``."""
    out = copy.deepcopy(obj)
    spec = out.get("spec") or {}
    if desired == "example.com/v1" and "size" in spec:
        spec["replicas"] = spec.pop("size")
    if desired == "example.com/v2" and "replicas" in spec:
        spec["size"] = spec.pop("replicas")
    out["apiVersion"] = desired
    return out


class ConversionHook:
    """An HTTPS conversion webhook in a thread. ``mode`` makes it misbehave; ``reviews`` are
    the ConversionReview requests it received."""

    def __init__(self, certs: Path, service_host: str) -> None:
        certs.mkdir(parents=True, exist_ok=True)
        files = ensure_serving_files(certs, "127.0.0.1", (service_host,))
        self.ca_bundle = base64.b64encode(files.ca_cert.read_bytes()).decode()
        self.mode = "ok"
        self.reviews: list[dict[str, Any]] = []
        hook = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                review = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                hook.reviews.append({"path": self.path, **review})
                status, body = hook.answer(review)
                data = json.dumps(body).encode() if not isinstance(body, bytes) else body
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(files.cert, files.key)
        self.httpd.socket = context.wrap_socket(self.httpd.socket, server_side=True)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}/convert"

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def answer(self, review: dict[str, Any]) -> tuple[int, Any]:
        request = review["request"]
        desired = request["desiredAPIVersion"]
        converted = [convert(obj, desired) for obj in request["objects"]]
        response: dict[str, Any] = {
            "uid": request["uid"],
            "convertedObjects": converted,
            "result": {"status": "Success"},
        }
        mode = self.mode
        if mode == "http500":
            return 500, b"boom"
        if mode == "wrong-uid":
            response["uid"] = "not-the-uid"
        elif mode == "failure":
            response["result"] = {"status": "Failure", "message": "cannot convert widgets today"}
        elif mode == "failure-silent":
            response["result"] = {"status": "Failure"}
        elif mode == "count":
            response["convertedObjects"] = converted + converted
        elif mode == "rename":
            for obj in converted:
                obj["metadata"]["name"] = "other"
        elif mode == "rename-b":
            for obj in converted:
                if obj["metadata"]["name"] == "b":
                    obj["metadata"]["name"] = "other"
        elif mode == "new-uid":
            for obj in converted:
                obj["metadata"]["uid"] = "00000000-0000-0000-0000-000000000000"
        elif mode == "labels":
            for obj in converted:
                obj["metadata"]["labels"] = {"converted": "yes"}
                obj["metadata"]["generation"] = 99  # not the webhook's to change: restored
                obj["spec"]["unknown"] = "pruned"
        elif mode == "bad-label":
            for obj in converted:
                obj["metadata"]["labels"] = {"bad key": "x"}
        elif mode == "wrong-version":
            for obj in converted:
                obj["apiVersion"] = "example.com/v3"
        elif mode == "wrong-kind":
            for obj in converted:
                obj["kind"] = "Gadget"
        elif mode == "wrong-review":
            return 200, {"apiVersion": "v1", "kind": "Status", "response": response}
        return 200, {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "ConversionReview",
            "response": response,
        }


@pytest.fixture
def hook(tmp_path: Path, server: Server) -> Iterator[ConversionHook]:
    webhook = ConversionHook(tmp_path / "hook", service_host(server))
    try:
        yield webhook
    finally:
        webhook.stop()


def service_host(server: Server) -> str:
    """The host name of the Service ``widget-conv`` in the test's namespace."""
    return f"widget-conv.{server.namespace}.svc"


def widget_crd(client_config: dict[str, Any]) -> dict[str, Any]:
    def version(name: str, field: str, storage: bool) -> dict[str, Any]:
        spec = {"type": "object", "properties": {field: {"type": "integer"}}}
        return {
            "name": name,
            "served": True,
            "storage": storage,
            "schema": {
                "openAPIV3Schema": {"type": "object", "properties": {"spec": spec}},
            },
        }

    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "kind": "Widget"},
            "versions": [version("v2", "size", True), version("v1", "replicas", False)],
            "conversion": {
                "strategy": "Webhook",
                "webhook": {"clientConfig": client_config, "conversionReviewVersions": ["v1"]},
            },
        },
    }


def ok(server: Server, method: str, path: str, body: Any = None, **kw: Any) -> dict[str, Any]:
    code, got = server.request(method, path, body, **kw)
    assert code in (200, 201), (code, got)
    return got


@pytest.fixture
def widgets(server: Server, hook: ConversionHook) -> Server:
    ok(server, "POST", CRDS, widget_crd({"url": hook.url, "caBundle": hook.ca_bundle}))
    return server


def widget(name: str, api_version: str = "example.com/v2", **spec: int) -> dict[str, Any]:
    return {
        "apiVersion": api_version,
        "kind": "Widget",
        "metadata": {"name": name},
        "spec": spec,
    }


# --- the CRD -------------------------------------------------------------------------------------


def test_the_crds_conversion_is_validated_with_apiextensions_texts(
    server: Server, hook: ConversionHook
) -> None:
    def invalid(crd: dict[str, Any]) -> str:
        code, body = server.request("POST", CRDS, crd)
        assert code == 422, body
        causes = body["details"]["causes"]  # type: ignore[index]
        return "; ".join(f"{c['field']}: {c['message']}" for c in causes)

    crd = widget_crd({"url": hook.url})
    del crd["spec"]["conversion"]["webhook"]
    assert invalid(crd) == (
        "spec.conversion.webhookClientConfig: Required value: required when strategy is set to "
        "Webhook; spec.conversion.conversionReviewVersions: Required value"
    )
    crd = widget_crd({"url": hook.url})
    crd["spec"]["conversion"]["strategy"] = "None"
    assert invalid(crd) == (
        "spec.conversion.webhookClientConfig: Forbidden: should not be set when strategy is not "
        "set to Webhook; spec.conversion.conversionReviewVersions: Forbidden: should not be set "
        "when strategy is not set to Webhook"
    )
    crd = widget_crd({"url": hook.url})
    crd["spec"]["conversion"]["webhook"]["conversionReviewVersions"] = ["v2"]
    assert invalid(crd) == (
        'spec.conversion.conversionReviewVersions: Invalid value: []string{"v2"}: must include '
        "at least one of v1, v1beta1"
    )
    crd = widget_crd({"url": "http://127.0.0.1/convert?x=1"})
    assert invalid(crd) == (
        "spec.conversion.webhookClientConfig.url: Invalid value: \"http\": 'https' is the only "
        "allowed URL scheme; desired format: https://host[/path]; "
        'spec.conversion.webhookClientConfig.url: Invalid value: "x=1": query parameters are '
        "not permitted in the URL"
    )
    crd = widget_crd({"url": hook.url, "service": {"namespace": "default", "name": "x"}})
    assert invalid(crd) == (
        "spec.conversion.webhookClientConfig: Required value: exactly one of url or service is "
        "required"
    )
    crd = widget_crd({"service": {"namespace": "", "name": "x", "path": "/a//b", "port": 0}})
    assert invalid(crd) == (
        "spec.conversion.webhookClientConfig.service.namespace: Required value; "
        "spec.conversion.webhookClientConfig.service.port: Invalid value: 0: port is not valid: "
        "must be between 1 and 65535, inclusive; "
        'spec.conversion.webhookClientConfig.service.path: Invalid value: "/a//b": segment[1] '
        "may not be empty"
    )
    crd = widget_crd({"url": hook.url})
    crd["spec"]["conversion"]["strategy"] = "Magic"
    assert invalid(crd).startswith(
        'spec.conversion.strategy: Unsupported value: "Magic": supported values: "None", "Webhook"'
    )
    code, listing = server.request("GET", CRDS)
    assert listing["items"] == []  # type: ignore[index]
    # a service's port defaults to 443; the CRD is served at once
    crd = widget_crd({"service": {"namespace": "default", "name": "widget-conv"}})
    created = ok(server, "POST", CRDS, crd)
    client = created["spec"]["conversion"]["webhook"]["clientConfig"]
    assert client["service"]["port"] == 443
    # an established CRD's caBundle is checked on update
    created["spec"]["conversion"]["webhook"]["clientConfig"]["caBundle"] = base64.b64encode(
        b"not a certificate"
    ).decode()
    code, body = server.request("PUT", CRDS + "/widgets.example.com", created)
    assert code == 422, body
    message = body["details"]["causes"][0]["message"]  # type: ignore[index]
    assert message.startswith("Invalid value: []byte{0x6e, 0x6f, 0x74, 0x20, ")
    assert message.endswith(
        ": unable to load root certificates: unable to parse bytes as PEM block"
    )


# --- reading and writing at either version ------------------------------------------------


def test_reads_at_another_version_go_through_the_webhook(
    widgets: Server, hook: ConversionHook
) -> None:
    created = ok(widgets, "POST", V2, widget("a", size=3))
    assert created["spec"] == {"size": 3}
    assert hook.reviews == []  # created at the storage version: nothing to convert
    got = ok(widgets, "GET", V1 + "/a")
    assert (got["apiVersion"], got["spec"]) == ("example.com/v1", {"replicas": 3})
    assert got["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    review = hook.reviews[-1]
    assert review["path"] == "/convert?timeout=30s"
    assert (review["apiVersion"], review["kind"]) == (
        "apiextensions.k8s.io/v1",
        "ConversionReview",
    )
    request = review["request"]
    assert request["desiredAPIVersion"] == "example.com/v1"
    assert [o["metadata"]["name"] for o in request["objects"]] == ["a"]
    assert "resourceVersion" not in request["objects"][0]["metadata"]  # as kube's storage sends
    ok(widgets, "POST", V2, widget("b", size=4))
    hook.reviews.clear()
    listed = ok(widgets, "GET", V1)
    assert listed["apiVersion"] == "example.com/v1"
    assert [(i["apiVersion"], i["spec"]) for i in listed["items"]] == [
        ("example.com/v1", {"replicas": 3}),
        ("example.com/v1", {"replicas": 4}),
    ]
    assert len(hook.reviews) == 1  # the page in one review
    assert len(hook.reviews[0]["request"]["objects"]) == 2
    hook.reviews.clear()
    ok(widgets, "GET", V2 + "/a")
    ok(widgets, "GET", V2)
    assert hook.reviews == []  # at the storage version: never sent


def test_writes_at_another_version_are_stored_at_the_storage_version(
    widgets: Server, hook: ConversionHook
) -> None:
    created = ok(widgets, "POST", V1, widget("w", "example.com/v1", replicas=5))
    assert (created["apiVersion"], created["spec"]) == ("example.com/v1", {"replicas": 5})
    assert created["metadata"]["generation"] == 1
    stored = ok(widgets, "GET", V2 + "/w")
    assert stored["spec"] == {"size": 5}
    assert stored["metadata"]["uid"] == created["metadata"]["uid"]
    # the write converted v1 -> v2 to store, and what it stored back to v1 to answer
    desired = [r["request"]["desiredAPIVersion"] for r in hook.reviews]
    assert desired == ["example.com/v2", "example.com/v1"]
    # PUT, merge patch and server-side apply at v1
    current = ok(widgets, "GET", V1 + "/w")
    current["spec"]["replicas"] = 6
    updated = ok(widgets, "PUT", V1 + "/w", current)
    assert updated["spec"] == {"replicas": 6}
    assert ok(widgets, "GET", V2 + "/w")["spec"] == {"size": 6}
    patched = ok(
        widgets,
        "PATCH",
        V1 + "/w",
        {"spec": {"replicas": 7}},
        content_type="application/merge-patch+json",
    )
    assert patched["spec"] == {"replicas": 7}
    assert patched["metadata"]["generation"] == 3
    assert ok(widgets, "GET", V2 + "/w")["spec"] == {"size": 7}
    applied = ok(
        widgets,
        "PATCH",
        V1 + "/w?fieldManager=tester&force=true",
        widget("w", "example.com/v1", replicas=8),
        content_type="application/apply-patch+yaml",
    )
    assert applied["spec"] == {"replicas": 8}
    assert ok(widgets, "GET", V2 + "/w")["spec"] == {"size": 8}
    # an unchanged write is no write
    before = ok(widgets, "GET", V1 + "/w")
    again = ok(widgets, "PUT", V1 + "/w", before)
    assert again["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    # a dry run answers the converted object and stores nothing
    dry = ok(widgets, "POST", V1 + "?dryRun=All", widget("d", "example.com/v1", replicas=1))
    assert dry["spec"] == {"replicas": 1}
    assert "resourceVersion" not in dry["metadata"]
    assert widgets.request("GET", V2 + "/d")[0] == 404
    # deleting at v1 reads the object at v1
    deleted = ok(widgets, "DELETE", V1 + "/w")
    assert deleted["status"] == "Success"


def test_watches_at_another_version_get_converted_events(
    widgets: Server, hook: ConversionHook
) -> None:
    ok(widgets, "POST", V2, widget("before", size=1))
    reader, events = widgets.watch_lines(V1 + "?watch=true", 3)
    deadline = time.monotonic() + 3
    while not events and time.monotonic() < deadline:  # the watch is up: its initial event
        time.sleep(0.02)
    created = ok(widgets, "POST", V2, widget("w", size=2))
    ok(
        widgets,
        "PATCH",
        V2 + "/w",
        {"spec": {"size": 9}},
        content_type="application/merge-patch+json",
    )
    ok(widgets, "DELETE", V2 + "/w")
    reader.join()
    seen = [(e["type"], e["object"]["metadata"]["name"], e["object"]["spec"]) for e in events]
    assert seen == [
        ("ADDED", "before", {"replicas": 1}),
        ("ADDED", "w", {"replicas": 2}),
        ("MODIFIED", "w", {"replicas": 9}),
        ("DELETED", "w", {"replicas": 9}),
    ]
    assert {e["object"]["apiVersion"] for e in events} == {"example.com/v1"}
    assert (
        events[1]["object"]["metadata"]["resourceVersion"]
        == (created["metadata"]["resourceVersion"])
    )
    # a watch from a resourceVersion, with a label selector
    ok(
        widgets,
        "POST",
        V1,
        {
            **widget("x", "example.com/v1", replicas=1),
            "metadata": {"name": "x", "labels": {"a": "b"}},
        },
    )
    start = created["metadata"]["resourceVersion"]
    reader, events = widgets.watch_lines(
        f"{V1}?watch=true&resourceVersion={start}&labelSelector=a", 2
    )
    reader.join()
    assert [(e["type"], e["object"]["spec"]) for e in events] == [("ADDED", {"replicas": 1})]


def test_kubectl_gets_either_version(widgets: Server) -> None:
    ok(widgets, "POST", V2, widget("k", size=2))
    at_v1 = json.loads(widgets.kubectl("get", "widgets.v1.example.com", "k", "-o", "json").stdout)
    assert (at_v1["apiVersion"], at_v1["spec"]) == ("example.com/v1", {"replicas": 2})
    at_v2 = json.loads(widgets.kubectl("get", "widgets.v2.example.com", "k", "-o", "json").stdout)
    assert (at_v2["apiVersion"], at_v2["spec"]) == ("example.com/v2", {"size": 2})
    table = widgets.kubectl("get", "widgets.v1.example.com").stdout.split("\n")
    assert table[1].split()[0] == "k"
    manifest = (
        "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: m\nspec:\n  replicas: 6\n"
    )
    widgets.kubectl("apply", "-f", "-", input=manifest)
    at_v2 = json.loads(widgets.kubectl("get", "widgets.v2.example.com", "m", "-o", "json").stdout)
    assert at_v2["spec"] == {"size": 6}


# --- failures -------------------------------------------------------------------------------------


def test_a_webhook_that_cannot_be_called_fails_reads_and_writes_at_other_versions(
    widgets: Server, hook: ConversionHook
) -> None:
    created = ok(widgets, "POST", V2, widget("a", size=1))
    rv = created["metadata"]["resourceVersion"]
    hook.stop()
    code, body = widgets.request("GET", V1 + "/a")
    assert code == 500, body
    prefix = (
        "conversion webhook for example.com/v2, Kind=Widget failed: "
        f'Post "https://127.0.0.1:{hook.port}/convert?timeout=30s": '
    )
    assert body["message"].startswith(prefix)  # type: ignore[union-attr]
    assert "reason" not in body
    assert body["status"] == "Failure"
    code, body = widgets.request("GET", V1)
    assert code == 500
    assert body["message"].startswith(prefix)  # type: ignore[union-attr]
    code, body = widgets.request("POST", V1, widget("b", "example.com/v1", replicas=2))
    assert code == 500, body
    assert body["message"].startswith(  # type: ignore[union-attr]
        "conversion webhook for example.com/v1, Kind=Widget failed: "
    )
    assert widgets.request("GET", V2 + "/b")[0] == 404  # nothing stored
    # at the storage version nothing is converted
    assert ok(widgets, "GET", V2 + "/a")["spec"] == {"size": 1}
    # a watch at v1 ends with the 500 InternalError kube's storage watch sends
    reader, events = widgets.watch_lines(V1 + "?watch=true", 2)
    reader.join()
    assert events[-1]["type"] == "ERROR"
    status = events[-1]["object"]
    assert (status["code"], status["reason"]) == (500, "InternalError")
    assert status["message"].startswith("Internal error occurred: " + prefix)
    # so does a watch from a resourceVersion when it reaches an event it cannot convert
    reader, events = widgets.watch_lines(f"{V1}?watch=true&resourceVersion={rv}", 3)
    ok(widgets, "POST", V2, widget("c", size=3))
    reader.join()
    assert [e["type"] for e in events] == ["ERROR"]
    assert events[0]["object"]["code"] == 500
    assert events[0]["object"]["message"].startswith("Internal error occurred: " + prefix)


@pytest.mark.parametrize(
    ("mode", "message"),
    [
        ("wrong-uid", 'failed: expected response.uid="{uid}", got "not-the-uid"'),
        ("failure", "failed: cannot convert widgets today"),
        ("failure-silent", "failed: response.result.status was 'Failure', not 'Success'"),
        ("count", "returned 2 objects, expected 1"),
        ("rename", "returned invalid object: must have the same name: a != other"),
        (
            "new-uid",
            "returned invalid object: must have the same UID: {object_uid} != "
            "00000000-0000-0000-0000-000000000000",
        ),
        (
            "wrong-version",
            "returned invalid object at index 0: invalid groupVersion (expected example.com/v1, "
            "received example.com/v3)",
        ),
        (
            "wrong-kind",
            "returned invalid object at index 0: invalid kind (expected Widget, received Gadget)",
        ),
        (
            "bad-label",
            'returned invalid metadata: metadata.labels: Invalid value: "bad key": name part '
            "must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
            "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex "
            "used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
        ),
        (
            "wrong-review",
            "failed: expected webhook response of apiextensions.k8s.io/v1, Kind=ConversionReview, "
            "got /v1, Kind=Status",
        ),
        (
            "http500",
            'failed: an error on the server ("boom") has prevented the request from succeeding',
        ),
    ],
)
def test_wrong_answers_fail_with_kubes_texts(
    widgets: Server, hook: ConversionHook, mode: str, message: str
) -> None:
    created = ok(widgets, "POST", V2, widget("a", size=1))
    hook.mode = mode
    code, body = widgets.request("GET", V1 + "/a")
    assert code == 500, body
    uid = hook.reviews[-1]["request"]["uid"]
    expected = "conversion webhook for example.com/v2, Kind=Widget " + message.format(
        uid=uid, object_uid=created["metadata"]["uid"]
    )
    assert body["message"] == expected  # type: ignore[index]


def test_a_list_is_one_review_and_its_failure_names_the_object_at_fault(
    widgets: Server, hook: ConversionHook
) -> None:
    ok(widgets, "POST", V2, widget("a", size=1))
    ok(widgets, "POST", V2, widget("b", size=1))
    hook.mode = "rename-b"
    code, body = widgets.request("GET", V1)
    assert code == 500, body
    assert body["message"] == (  # type: ignore[index]
        "conversion webhook for example.com/v2, Kind=Widget returned invalid object: must have "
        "the same name: b != other"
    )
    assert len(hook.reviews) == 1


def test_the_webhook_may_change_labels_and_annotations_only(
    widgets: Server, hook: ConversionHook
) -> None:
    created = ok(widgets, "POST", V2, widget("a", size=1))
    hook.mode = "labels"
    got = ok(widgets, "GET", V1 + "/a")
    assert got["metadata"]["labels"] == {"converted": "yes"}
    assert got["metadata"]["generation"] == created["metadata"]["generation"]
    assert got["spec"] == {"replicas": 1}  # the field v1's schema does not know is pruned


# --- a webhook reached as a Service ------------------------------------------------------


def test_a_service_client_config_reaches_the_webhook_at_its_endpoints(
    server: Server, hook: ConversionHook
) -> None:
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "widget-conv"},
        "spec": {"ports": [{"port": 443, "targetPort": hook.port}]},
    }
    ok(server, "POST", "/api/v1/namespaces/{ns}/services", service)
    endpoints = {
        "apiVersion": "v1",
        "kind": "Endpoints",
        "metadata": {"name": "widget-conv"},
        "subsets": [{"addresses": [{"ip": "127.0.0.1"}], "ports": [{"port": hook.port}]}],
    }
    ok(server, "POST", "/api/v1/namespaces/{ns}/endpoints", endpoints)
    config = {
        "service": {"namespace": server.namespace, "name": "widget-conv", "path": "/convert"},
        "caBundle": hook.ca_bundle,
    }
    ok(server, "POST", CRDS, widget_crd(config))
    ok(server, "POST", V2, widget("s", size=4))
    got = ok(server, "GET", V1 + "/s")
    assert got["spec"] == {"replicas": 4}
    assert hook.reviews[-1]["path"] == "/convert?timeout=30s"
    # a service without endpoints: the call fails, naming the service's URL
    ok(server, "DELETE", "/api/v1/namespaces/{ns}/endpoints/widget-conv")
    code, body = server.request("GET", V1 + "/s")
    assert code == 500
    assert body["message"].startswith(  # type: ignore[union-attr]
        "conversion webhook for example.com/v2, Kind=Widget failed: "
        f'Post "https://{service_host(server)}:443/convert?timeout=30s": '
    )
