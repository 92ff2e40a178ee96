"""One user's stalled request bodies against another user's creates (issue 26 §3).

User A (ServiceAccount ``stall-a``) opens ``STALLED`` ConfigMap creates whose chunked bodies
start and never finish; then user B (ServiceAccount ``stall-b``) sends ``CREATES`` ConfigMap
creates one after the other, each on a new connection. Prints how many of B's creates were
served (201) and refused (429), and their median and worst latency. Both users are ordinary
(not ``system:masters``): before API Priority and Fairness, A's bodies held every mutating slot
of the max-in-flight limit until the request timeout, and B got 429.

    .venv/bin/kubelite serve --port 0 --data-dir /tmp/kl &
    .venv/bin/python bench/stalled_bodies.py https://127.0.0.1:PORT "$(cat /tmp/kl/token)" \\
        /tmp/kl/ca.crt [STALLED [CREATES]]

(defaults: 400 stalled bodies, 58 creates; the admin token only sets the two users up)
"""

from __future__ import annotations

import asyncio
import json
import resource
import ssl
import statistics
import sys
import time
import uuid

NAMESPACE = "default"
CMS = f"/api/v1/namespaces/{NAMESPACE}/configmaps"
SAS = f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts"


async def request(
    address: tuple[str, int], context: ssl.SSLContext, token: str, method: str, path: str,
    body: object = None,
) -> tuple[int, bytes]:  # fmt: skip
    host, port = address
    reader, writer = await asyncio.open_connection(host, port, ssl=context)
    data = b"" if body is None else json.dumps(body).encode()
    head = (
        f"{method} {path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n"
        "Connection: close\r\n\r\n"
    )
    writer.write(head.encode() + data)
    response = await reader.read()
    writer.close()
    return int(response.split(b" ", 2)[1]), response.partition(b"\r\n\r\n")[2]


async def user(address: tuple[str, int], context: ssl.SSLContext, admin: str, name: str) -> str:
    """A ServiceAccount that may edit the namespace, and a token of it."""
    status, body = await request(address, context, admin, "POST", SAS, {"metadata": {"name": name}})
    assert status in (201, 409), body
    binding = {
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"},
        "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": NAMESPACE}],
    }
    path = f"/apis/rbac.authorization.k8s.io/v1/namespaces/{NAMESPACE}/rolebindings"
    status, body = await request(address, context, admin, "POST", path, binding)
    assert status in (201, 409), body
    review = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}}
    status, body = await request(address, context, admin, "POST", f"{SAS}/{name}/token", review)
    assert status == 201, body
    token: str = json.loads(body)["status"]["token"]
    return token


async def stall(
    address: tuple[str, int], context: ssl.SSLContext, token: str
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A create whose chunked body sends its first bytes and never the rest."""
    host, _ = address
    reader, writer = await asyncio.open_connection(*address, ssl=context)
    writer.write(
        f"POST {CMS} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\n"
        "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
        '5\r\n{"met\r\n'.encode()
    )
    await writer.drain()
    return reader, writer


async def answered(reader: asyncio.StreamReader) -> int | None:
    """The status a stalled request was answered with already, if any."""
    try:
        line = await asyncio.wait_for(reader.readline(), 0.05)
    except TimeoutError:
        return None
    return int(line.split(b" ", 2)[1]) if line else None


async def main() -> None:
    url, admin, ca = sys.argv[1], sys.argv[2], sys.argv[3]
    stalled = int(sys.argv[4]) if len(sys.argv) > 4 else 400
    creates = int(sys.argv[5]) if len(sys.argv) > 5 else 58
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    host, port_text = url.split("//")[1].rsplit(":", 1)
    address = (host.strip("[]"), int(port_text))
    context = ssl.create_default_context(cafile=ca)
    a, b = [await user(address, context, admin, f"stall-{x}") for x in "ab"]
    held = [await stall(address, context, a) for _ in range(stalled)]
    await asyncio.sleep(1.0)  # every stalled request has reached the server
    early = [await answered(r) for r, _ in held]
    refused = early.count(429)
    codes: dict[int, int] = {}
    times: list[float] = []
    run = uuid.uuid4().hex[:6]
    for i in range(creates):
        body = {"metadata": {"name": f"b-{run}-{i}"}, "data": {"n": str(i)}}
        started = time.perf_counter()
        status, _ = await request(address, context, b, "POST", CMS, body)
        times.append((time.perf_counter() - started) * 1000)
        codes[status] = codes.get(status, 0) + 1
    for _, writer in held:
        writer.close()
    others = {k: v for k, v in codes.items() if k not in (201, 429)}
    print(
        f"{stalled} stalled bodies from user A ({refused} refused at once with 429, "
        f"{early.count(None)} held); "
        f"user B's {creates} creates: "
        f"{codes.get(201, 0)} served (201), {codes.get(429, 0)} refused (429)"
        + (f", other {others}" if others else "")
    )
    print(
        f"user B's create latency: median {statistics.median(times):.1f} ms, "
        f"max {max(times):.1f} ms"
    )


if __name__ == "__main__":
    asyncio.run(main())
