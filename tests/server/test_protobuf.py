"""The protobuf request decoder: the wire reader, bodies captured from kubectl 1.37, and the
server's answers to protobuf bodies it cannot use (end-to-end kubectl tests are in
test_kubectl.py)."""

from __future__ import annotations

import logging

import pytest
from harness import Server

from kubelite.server.protobuf import UnsupportedKind, decode_request
from kubelite.server.protobuf.core import CONFIG_MAP
from kubelite.server.protobuf.decoder import decode_message
from kubelite.server.protobuf.wire import read_fields, read_varint

# Captured from `kubectl -v=9` (1.37.1) request-body dumps.
CONFIGMAP_BODY = bytes.fromhex(  # create configmap x --from-literal=a=1 --from-file=f.txt
    "6b3873000a0f0a0276311209436f6e6669674d6170123d0a110a017812001a0022002a0032003800420012"
    "060a016112013112140a05662e747874120b68656c6c6f2066696c650a1a0a0a0362696e120300ff011a00"
    "2200"
)
DEPLOYMENT_BODY = bytes.fromhex(  # create deployment d --image=nginx --replicas=2 --port=80
    "6b3873000a150a07617070732f7631120a4465706c6f796d656e7412b0010a1b0a016412001a0022002a00"
    "3200380042005a080a036170701201641282010802120a0a080a036170701201641a6a0a1a0a0012001a00"
    "22002a003200380042005a080a03617070120164124c122e0a056e67696e7812056e67696e782a00320a0a"
    "001000185022002a0042006a007200800100880100900100a201001a00320042004a005200580060006800"
    "8201008a01009a0100c2010022020a00280038001a0c0800100018002000280038001a002200"
)
SERVICE_BODY = bytes.fromhex(  # create service clusterip svc --tcp=80:8080 --tcp=443:https
    "6b3873000a0d0a027631120753657276696365128d010a1f0a0373766312001a0022002a00320038004200"
    "5a0a0a03617070120373766312660a1b0a0738302d38303830120354435018502207080010903f1a002800"
    "0a220a093434332d6874747073120354435018bb03220b080110001a0568747470732800120a0a03617070"
    "12037376631a002209436c757374657249503a00420052005a00600068001a020a001a002200"
)
ROLE_BODY = bytes.fromhex(  # create role r --verb=get,list --resource=pods,deployments.apps ...
    "6b3873000a240a1c726261632e617574686f72697a6174696f6e2e6b38732e696f2f76311204526f6c6512"
    "4e0a110a017212001a0022002a0032003800420012160a036765740a046c69737412001a04706f64732201"
    "7812210a036765740a046c6973741204617070731a0b6465706c6f796d656e74732201781a002200"
)


def envelope(api_version: bytes, kind: bytes, raw: bytes) -> bytes:
    type_meta = b"\x0a" + bytes([len(api_version)]) + api_version
    type_meta += b"\x12" + bytes([len(kind)]) + kind
    return b"k8s\x00\x0a" + bytes([len(type_meta)]) + type_meta + b"\x12" + bytes([len(raw)]) + raw


def test_varints() -> None:
    assert read_varint(b"\x00", 0) == (0, 1)
    assert read_varint(b"\x96\x01", 0) == (150, 2)
    assert read_varint(b"\xff\xff\xff\xff\x0f", 0) == (2**32 - 1, 5)
    with pytest.raises(ValueError, match="truncated varint"):
        read_varint(b"\x96", 0)
    with pytest.raises(ValueError, match="longer than 10 bytes"):
        read_varint(b"\xff" * 11, 0)


def test_fields_of_every_wire_type() -> None:
    data = b"\x08\x96\x01" + b"\x11" + (7).to_bytes(8, "little") + b"\x1a\x02hi"
    data += b"\x25" + (9).to_bytes(4, "little")
    assert read_fields(data) == [(1, 0, 150), (2, 1, 7), (3, 2, b"hi"), (4, 5, 9)]
    with pytest.raises(ValueError, match="runs past the end"):
        read_fields(b"\x1a\x05hi")
    with pytest.raises(ValueError, match="truncated fixed-width"):
        read_fields(b"\x11\x00")
    with pytest.raises(ValueError, match="unsupported wire type 3"):
        read_fields(b"\x0b")
    with pytest.raises(ValueError, match="field number 0"):
        read_fields(b"\x00\x00")


def test_configmap_from_kubectl() -> None:
    assert decode_request(CONFIGMAP_BODY) == {
        "kind": "ConfigMap",
        "apiVersion": "v1",
        "metadata": {"name": "x"},
        "data": {"a": "1", "f.txt": "hello file\n"},
        "binaryData": {"bin": "AP8B"},
    }


def test_deployment_from_kubectl_keeps_go_json_shape() -> None:
    """Empty structs stay as {} and zero-valued omitempty scalars vanish, as in the JSON
    kubectl prints with --dry-run=client -o json."""
    assert decode_request(DEPLOYMENT_BODY) == {
        "kind": "Deployment",
        "apiVersion": "apps/v1",
        "metadata": {"name": "d", "labels": {"app": "d"}},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "d"}},
            "template": {
                "metadata": {"labels": {"app": "d"}},
                "spec": {
                    "containers": [
                        {
                            "name": "nginx",
                            "image": "nginx",
                            "ports": [{"containerPort": 80}],
                            "resources": {},
                        }
                    ]
                },
            },
            "strategy": {},
        },
        "status": {},
    }


def test_service_int_or_string_target_ports() -> None:
    spec = decode_request(SERVICE_BODY)["spec"]
    assert spec["ports"] == [
        {"name": "80-8080", "protocol": "TCP", "port": 80, "targetPort": 8080},
        {"name": "443-https", "protocol": "TCP", "port": 443, "targetPort": "https"},
    ]
    assert spec["type"] == "ClusterIP"


def test_role_rules_keep_empty_strings_in_lists() -> None:
    assert decode_request(ROLE_BODY)["rules"] == [
        {
            "verbs": ["get", "list"],
            "apiGroups": [""],
            "resources": ["pods"],
            "resourceNames": ["x"],
        },
        {
            "verbs": ["get", "list"],
            "apiGroups": ["apps"],
            "resources": ["deployments"],
            "resourceNames": ["x"],
        },
    ]


def test_secret_bytes_quantities_times_and_negative_ints() -> None:
    secret = envelope(b"v1", b"Secret", b"\x12\x08\x0a\x01k\x12\x03\x00\xff\x01\x28\x01")
    assert decode_request(secret) == {
        "kind": "Secret",
        "apiVersion": "v1",
        "data": {"k": "AP8B"},
        "immutable": True,
    }
    # metadata.creationTimestamp {seconds: 1700000000}, deletionGracePeriodSeconds -1
    seconds = b"\x08\x80\xe2\xcf\xaa\x06"
    meta = b"\x0a\x01m\x42" + bytes([len(seconds)]) + seconds + b"\x50" + b"\xff" * 9 + b"\x01"
    quota_spec = b"\x0a\x0c\x0a\x04pods\x12\x04\x0a\x0210"
    quota = b"\x0a" + bytes([len(meta)]) + meta + b"\x12" + bytes([len(quota_spec)]) + quota_spec
    decoded = decode_request(envelope(b"v1", b"ResourceQuota", quota))
    assert decoded["metadata"] == {
        "name": "m",
        "creationTimestamp": "2023-11-14T22:13:20Z",
        "deletionGracePeriodSeconds": -1,
    }
    assert decoded["spec"] == {"hard": {"pods": "10"}}


def test_unknown_fields_are_skipped_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, logger="kubelite.server.protobuf"):
        body = b"\x0a\x03\x0a\x01x" + b"\xf8\x06\x05" + b"\x12\x06\x0a\x01a\x12\x011"
        decoded = decode_message(CONFIG_MAP, body, "ConfigMap")
    assert decoded == {"metadata": {"name": "x"}, "data": {"a": "1"}}
    assert "ConfigMap.111" in caplog.text  # field 111, a varint


def test_malformed_and_unsupported_bodies() -> None:
    with pytest.raises(ValueError, match="k8s"):
        decode_request(b'{"kind":"ConfigMap"}')
    with pytest.raises(ValueError, match="runs past the end"):
        decode_request(CONFIGMAP_BODY[:30])
    with pytest.raises(ValueError, match="expected a varint"):
        decode_request(envelope(b"v1", b"ConfigMap", b"\x22\x00"))  # immutable as bytes
    with pytest.raises(UnsupportedKind, match="CertificateSigningRequest"):
        decode_request(envelope(b"certificates.k8s.io/v1", b"CertificateSigningRequest", b""))


def test_server_answers_400_for_malformed_and_415_for_unsupported_protobuf(
    server: Server,
) -> None:
    path = "/api/v1/namespaces/{ns}/configmaps"
    protobuf = "application/vnd.kubernetes.protobuf"
    code, body = server.request("POST", path, raw=CONFIGMAP_BODY[:30], content_type=protobuf)
    assert code == 400
    assert body["reason"] == "BadRequest"
    unsupported = envelope(b"v1", b"Binding", b"\x0a\x03\x0a\x01b")
    code, body = server.request("POST", path, raw=unsupported, content_type=protobuf)
    assert code == 415
    assert "the body of the request was in an unknown format" in str(body["message"])
    code, body = server.request("POST", path, raw=CONFIGMAP_BODY, content_type=protobuf)
    assert code == 201
    assert body["data"] == {"a": "1", "f.txt": "hello file\n"}
