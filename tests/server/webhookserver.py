"""A real HTTPS admission webhook server for the tests: ``http.server`` in a thread, TLS with a CA
and a serving certificate of its own (made with ``cryptography``, as kubelite.server.tls makes
kubelite's), each path answering with a handler the test sets.

A handler gets the decoded AdmissionReview (and the request's query) and returns a
:class:`Reply`; :func:`review_answer` builds the usual AdmissionReview answer (uid echoed). Every
call is recorded in :attr:`WebhookServer.calls` (path, query, review, SNI host name) and each
call is served on its own thread, so a handler that waits holds only its own call.
"""

from __future__ import annotations

import base64
import datetime
import ipaddress
import json
import ssl
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

Obj = dict[str, Any]


@dataclass
class Reply:
    """What a handler answers: an HTTP status, a body and its media type."""

    status: int = 200
    body: bytes = b""
    content_type: str = "application/json"


@dataclass
class Call:
    path: str
    query: dict[str, str]
    review: Obj | None
    server_name: str | None


Handler = Callable[[Obj, dict[str, str]], Reply]


def review_answer(
    review: Obj,
    allowed: bool = True,
    *,
    status: Obj | None = None,
    patch: list[Obj] | None = None,
    warnings: list[str] | None = None,
    audit: dict[str, str] | None = None,
    uid: str | None = None,
    api_version: str = "admission.k8s.io/v1",
) -> Reply:
    """The AdmissionReview answer to ``review``."""
    response: Obj = {"uid": review["request"]["uid"] if uid is None else uid, "allowed": allowed}
    if status is not None:
        response["status"] = status
    if patch is not None:
        response["patchType"] = "JSONPatch"
        response["patch"] = base64.b64encode(json.dumps(patch).encode()).decode()
    if warnings:
        response["warnings"] = warnings
    if audit:
        response["auditAnnotations"] = audit
    body = {"apiVersion": api_version, "kind": "AdmissionReview", "response": response}
    return Reply(200, json.dumps(body).encode())


def allow(review: Obj, query: dict[str, str]) -> Reply:
    return review_answer(review)


def _certificate(
    subject: str,
    key: ec.EllipticCurvePrivateKey,
    issuer: tuple[x509.Name, ec.EllipticCurvePrivateKey] | None,
    names: list[str] | None,
) -> x509.Certificate:
    now = datetime.datetime.now(datetime.UTC)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)])
    issuer_name, issuer_key = issuer or (name, key)
    builder = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(issuer_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
    )
    if names is None:
        builder = builder.add_extension(x509.BasicConstraints(ca=True, path_length=0), True)
    else:
        alt: list[x509.GeneralName] = []
        for host in names:
            try:
                alt.append(x509.IPAddress(ipaddress.ip_address(host)))
            except ValueError:
                alt.append(x509.DNSName(host))
        builder = builder.add_extension(x509.SubjectAlternativeName(alt), False)
    return builder.sign(issuer_key, hashes.SHA256())


def make_self_signed(directory: Path, names: list[str]) -> tuple[Path, Path]:
    """A self-signed serving certificate for ``names`` (no CA: the certificate is its own
    trust anchor, as kopf's development certificates are): (tls.crt, tls.key)."""
    directory.mkdir(parents=True, exist_ok=True)
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[0])])
    cert = _certificate(names[0], key, (name, key), names)
    paths = directory / "tls.crt", directory / "tls.key"
    write_pair(cert, key, *paths)
    return paths


def write_pair(
    cert: x509.Certificate, key: ec.EllipticCurvePrivateKey, cert_path: Path, key_path: Path
) -> None:
    """A certificate and its (unencrypted PKCS#8) key, written as PEM files."""
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )


def make_certificates(directory: Path, names: list[str]) -> tuple[Path, Path, Path]:
    """A CA and a serving certificate it issued for ``names``: (ca.crt, tls.crt, tls.key)."""
    directory.mkdir(parents=True, exist_ok=True)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = _certificate("webhook-test-ca", ca_key, None, None)
    key = ec.generate_private_key(ec.SECP256R1())
    cert = _certificate("webhook", key, (ca.subject, ca_key), names)
    paths = directory / "ca.crt", directory / "tls.crt", directory / "tls.key"
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return paths


@dataclass
class WebhookServer:
    """Serves HTTPS on 127.0.0.1 (an ephemeral port) with a certificate for ``names``."""

    directory: Path
    names: list[str] = field(default_factory=lambda: ["localhost", "127.0.0.1"])
    handlers: dict[str, Handler] = field(default_factory=dict)
    calls: list[Call] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.ca_file, self.cert_file, self.key_file = make_certificates(self.directory, self.names)
        self.ca_bundle = base64.b64encode(self.ca_file.read_bytes()).decode()
        self._lock = threading.Lock()
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(self.cert_file, self.key_file)
        server_names: dict[int, str | None] = {}

        def remember_name(sock: ssl.SSLObject | ssl.SSLSocket, name: str | None, _: Any) -> None:
            server_names[id(sock)] = name

        context.sni_callback = remember_name
        owner = self

        class RequestHandler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                parts = urlsplit(self.path)
                query = {k: v[0] for k, v in parse_qs(parts.query).items()}
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                try:
                    review = json.loads(raw)
                except ValueError:
                    review = None
                name = server_names.get(id(self.connection))
                owner.record(Call(parts.path, query, review, name))
                handler = owner.handlers.get(parts.path)
                if handler is None or review is None:
                    reply = Reply(404, b"no handler", "text/plain")
                else:
                    reply = handler(review, query)
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", reply.content_type)
                    self.send_header("Content-Length", str(len(reply.body)))
                    self.end_headers()
                    self.wfile.write(reply.body)
                except OSError:
                    pass  # the caller gave up waiting (a timeout test)

        class Server(ThreadingHTTPServer):
            daemon_threads = True
            block_on_close = False

            def get_request(self) -> tuple[Any, Any]:
                sock, address = super().get_request()
                return context.wrap_socket(sock, server_side=True), address

        self._server = Server(("127.0.0.1", 0), RequestHandler)
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def record(self, call: Call) -> None:
        with self._lock:
            self.calls.append(call)

    def calls_to(self, path: str) -> list[Call]:
        with self._lock:
            return [c for c in self.calls if c.path == path]

    def url(self, path: str) -> str:
        return f"https://127.0.0.1:{self.port}{path}"

    def url_config(self, path: str) -> Obj:
        return {"url": self.url(path), "caBundle": self.ca_bundle}

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@contextmanager
def webhook_server(directory: Path, names: list[str] | None = None) -> Iterator[WebhookServer]:
    server = WebhookServer(directory, names or ["localhost", "127.0.0.1"])
    server.start()
    try:
        yield server
    finally:
        server.stop()
