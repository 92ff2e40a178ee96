"""Load for the HA tests: read-modify-write increments of one ConfigMap, and watchers that check
every change arrives once and in order. Plain threads and keep-alive HTTPS connections.

Each writer ``w`` keeps its own count of increments that landed, and writes it into the object
(``data["w<w>"]``) with every increment. That is the writer's receipt: after an answer that
leaves the outcome open (a 5xx, a dropped connection, as a real client may get while etcd
elects a leader), the next read shows whether the increment landed. And before every write the
writer checks that the object holds exactly its own count: an acknowledged increment that was
lost, or one that landed although the server said it did not, fails the test on the spot.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import ssl
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness import Server, start_server, stop_server

COUNTER = "/api/v1/namespaces/default/configmaps/counter"
WATCH = "/api/v1/namespaces/default/configmaps?watch=1&resourceVersion={rv}"
DEADLINE_SECONDS = 120.0


def fresh_prefix() -> str:
    """A key prefix of its own for one test (fixed length: none is a prefix of another)."""
    return f"/ha/{uuid.uuid4().hex}"


class Servers:
    """kubelite servers started by one test, all stopped at its end."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp_path = tmp_path
        self.started: list[Server] = []

    def start(self, storage: str, *extra: str) -> Server:
        """``extra``: more ``kubelite serve`` options."""
        server = start_server(
            self.tmp_path / f"server{len(self.started)}" / "data", storage, *extra
        )
        self.started.append(server)
        return server

    def stop(self) -> None:
        for server in self.started:
            stop_server(server)  # also closes the pipes of one a test killed


class _Connection(http.client.HTTPSConnection):
    """Closes the TLS socket CPython 3.11's ``SSLSocket._create`` leaks when the server resets
    the connection before the handshake (its ``recv(1)`` probe raises without closing it): a
    killed server does exactly that, and the leak surfaces later as a ResourceWarning."""

    def connect(self) -> None:
        try:
            super().connect()
        except OSError as exc:
            tb = exc.__traceback__
            while tb is not None:
                leaked = tb.tb_frame.f_locals.get("self")
                if isinstance(leaked, ssl.SSLSocket):
                    leaked.close()
                tb = tb.tb_next
            raise


class Api:
    """A keep-alive HTTPS connection to one kubelite server; reconnects after a failure."""

    def __init__(self, server: Server, timeout: float = 60.0) -> None:
        self.server = server
        self.host, port = server.url.removeprefix("https://").rsplit(":", 1)
        self.port = int(port)
        self.timeout = timeout
        self.context = ssl.create_default_context(cafile=str(server.data_dir / "ca.crt"))
        self.conn: http.client.HTTPSConnection | None = None

    def connect(self) -> http.client.HTTPSConnection:
        if self.conn is None:
            self.conn = _Connection(
                self.host, self.port, timeout=self.timeout, context=self.context
            )
        return self.conn

    def request(self, method: str, path: str, body: object = None) -> tuple[int, Any]:
        """(status, decoded body); status 0 when the connection failed (outcome unknown)."""
        headers = {"Authorization": f"Bearer {self.server.token}"}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        try:
            conn = self.connect()
            conn.request(method, path, data, headers)
            with conn.getresponse() as resp:  # closed even when a killed server cuts the body
                return resp.status, json.loads(resp.read() or b"{}")
        except (OSError, http.client.HTTPException):
            self.close()
            return 0, None

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def __enter__(self) -> Api:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def get_once(server: Server, path: str) -> tuple[int, Any]:
    with Api(server) as api:
        return api.request("GET", path)


def create_counter(server: Server) -> str:
    body = {"metadata": {"name": "counter"}, "data": {"count": "0"}}
    with Api(server) as api:
        status, obj = api.request("POST", COUNTER.rsplit("/", 1)[0], body)
    assert status == 201, obj
    return str(obj["metadata"]["resourceVersion"])


@dataclass
class Writer:
    """Increments the counter through ``server`` until ``quota`` increments have landed."""

    index: int
    server: Server
    quota: int
    landed: int = 0
    acknowledged: int = 0
    conflicts: int = 0
    unknown: int = 0  # answers that left the outcome open (later resolved by the receipt)
    pending: bool = False  # a write with receipt landed + 1 may still land
    failed_reads: int = 0
    landed_at: list[float] = field(default_factory=list)
    error: BaseException | None = None
    stop: threading.Event = field(default_factory=threading.Event)

    @property
    def key(self) -> str:
        return f"w{self.index}"

    def run(self) -> None:
        try:
            self._run()
        except BaseException as exc:
            self.error = exc

    def _run(self) -> None:
        with Api(self.server) as api:
            self._increments(api)

    def _increments(self, api: Api) -> None:
        deadline = time.monotonic() + DEADLINE_SECONDS
        while self.landed < self.quota and not self.stop.is_set():
            assert time.monotonic() < deadline, f"{self.key}: no progress"
            status, obj = api.request("GET", COUNTER)
            if status != 200:
                self.failed_reads += 1
                time.sleep(0.05)
                continue
            data = obj["data"]
            self.check_receipt(data)
            data["count"] = str(int(data["count"]) + 1)
            data[self.key] = str(self.landed + 1)
            status, _ = api.request("PUT", COUNTER, obj)
            if status == 200:
                self.acknowledged += 1
                self.pending = False  # an older open copy had the same base or older: it lost
                self._landed()
            elif status == 409:
                self.conflicts += 1
            else:
                self.unknown += 1
                self.pending = True

    def check_receipt(self, data: dict[str, str]) -> None:
        """The object must show exactly the increments this writer landed (plus the open one,
        which is then counted as landed)."""
        receipt = int(data.get(self.key, "0"))
        if self.pending and receipt == self.landed + 1:
            self.pending = False
            self._landed()
        assert receipt == self.landed, f"{self.key}: object says {receipt}, I landed {self.landed}"

    def _landed(self) -> None:
        self.landed += 1
        self.landed_at.append(time.monotonic())


@dataclass
class Watcher:
    """Watches the counter through ``server`` from ``rv`` until it has seen ``final`` (set once
    the writers are done), resuming from the last resourceVersion when the stream breaks and
    relisting on 410. Records every count seen, and where it relisted."""

    server: Server
    rv: str
    counts: list[int] = field(default_factory=list)
    relisted_at: list[int] = field(default_factory=list)  # indexes into counts
    reconnects: int = 0
    final: int | None = None
    error: BaseException | None = None

    def run(self) -> None:
        try:
            deadline = time.monotonic() + DEADLINE_SECONDS
            while self.final is None or not self.counts or self.counts[-1] < self.final:
                assert time.monotonic() < deadline, "watcher did not see the final count"
                self._stream()
        except BaseException as exc:
            self.error = exc

    def _stream(self) -> None:
        api = Api(self.server, timeout=2.0)  # short reads: re-check whether we are done
        stack = contextlib.ExitStack()  # the response is closed on every way out
        try:
            conn = api.connect()
            conn.request("GET", WATCH.format(rv=self.rv), headers=_auth(self.server))
            resp = stack.enter_context(conn.getresponse())
            if resp.status == 410:
                return self._relist()
            if resp.status != 200:
                time.sleep(0.1)
                return None
            for line in resp:
                event = json.loads(line)
                if event["type"] == "ERROR":
                    if event["object"].get("code") == 410:
                        return self._relist()
                    return None
                obj = event["object"]
                self.rv = obj["metadata"]["resourceVersion"]
                self.counts.append(int(obj["data"]["count"]))
                if self.final is not None and self.counts[-1] >= self.final:
                    return None
        except TimeoutError:
            pass  # quiet for a while: resume from the last resourceVersion
        except (OSError, http.client.HTTPException):
            self.reconnects += 1
        finally:
            stack.close()
            api.close()
        return None

    def _relist(self) -> None:
        status, obj = get_once(self.server, COUNTER)
        if status == 200:
            self.relisted_at.append(len(self.counts))
            self.rv = obj["metadata"]["resourceVersion"]
            self.counts.append(int(obj["data"]["count"]))


def _auth(server: Server) -> dict[str, str]:
    return {"Authorization": f"Bearer {server.token}"}


def run_all(writers: list[Writer], watchers: list[Watcher], during: Any = None) -> None:
    """Run the writers (and ``during()``, in this thread) to their quotas, then the watchers up to
    the final count; raise the first error any of them met."""
    threads = [threading.Thread(target=w.run, daemon=True) for w in writers]
    watch_threads = [threading.Thread(target=w.run, daemon=True) for w in watchers]
    for t in watch_threads + threads:
        t.start()
    if during is not None:
        during()
    for t in threads:
        t.join(DEADLINE_SECONDS + 10)
    for writer in writers:
        if writer.error is not None:
            raise writer.error
    final = sum(w.landed for w in writers)
    for watcher in watchers:
        watcher.final = final
    for t in watch_threads:
        t.join(DEADLINE_SECONDS + 10)
    for watcher in watchers:
        if watcher.error is not None:
            raise watcher.error


def assert_every_change_once_in_order(watcher: Watcher, first: int, final: int) -> None:
    """Counts rise by exactly one per event (a relist after 410 may skip ahead), start right after
    ``first`` and end at ``final``."""
    counts = watcher.counts
    assert counts, "the watcher saw nothing"
    assert counts[0] == first + 1 or 0 in watcher.relisted_at
    for i in range(1, len(counts)):
        if i in watcher.relisted_at:
            assert counts[i] >= counts[i - 1], (i, counts[i - 1], counts[i])
        else:
            assert counts[i] == counts[i - 1] + 1, (i, counts[i - 1], counts[i])
    assert counts[-1] == final


def check_final(server: Server, writers: list[Writer]) -> int:
    """The counter holds every increment that landed, once: returns the final count."""
    status, obj = get_once(server, COUNTER)
    assert status == 200, obj
    for writer in writers:
        writer.check_receipt(obj["data"])
    final = int(obj["data"]["count"])
    assert final == sum(w.landed for w in writers)
    return final
