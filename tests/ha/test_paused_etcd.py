"""A kubelite server over an etcd whose every member is paused (SIGSTOP: connections stay open,
nothing answers), as kube-apiserver's health checks and clients see it:

- /readyz and /livez fail on their ``etcd`` checks, and pass again once etcd is resumed;
- requests fail in seconds with a 504 Timeout Status (kubectl, which retries what carries
  Retry-After, gives up within a minute: it used to hang for almost four);
- a pause of two seconds (shorter than an outage) is ridden out: a write made during it lands.
"""

from __future__ import annotations

import os
import signal
import ssl
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager

from harness import Server
from load import Servers, fresh_prefix

from etcdcluster import EtcdCluster

CMS = "/api/v1/namespaces/default/configmaps"


@contextmanager
def paused(cluster: EtcdCluster) -> Iterator[None]:
    for member in cluster.members:
        os.kill(member.pid, signal.SIGSTOP)
    try:
        yield
    finally:
        for member in cluster.members:
            os.kill(member.pid, signal.SIGCONT)


def health(server: Server, path: str) -> tuple[int, str]:
    context = ssl.create_default_context(cafile=str(server.data_dir / "ca.crt"))
    try:
        with urllib.request.urlopen(server.url + path, context=context, timeout=30) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


def wait_for(predicate: object, seconds: float = 30.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return
        time.sleep(0.2)
    raise AssertionError(f"not within {seconds} s")


def test_a_paused_etcd_fails_health_and_requests_fast_then_recovers(
    cluster: EtcdCluster, servers: Servers
) -> None:
    server = servers.start(f"{cluster.url}?prefix={fresh_prefix()}")
    assert health(server, "/readyz") == (200, "ok")
    with paused(cluster):
        wait_for(lambda: health(server, "/readyz")[0] == 500)
        status, body = health(server, "/readyz?verbose")
        lines = body.splitlines()
        assert "[-]etcd failed: reason withheld" in lines
        assert "[-]etcd-readiness failed: reason withheld" in lines
        assert lines[-1] == "readyz check failed"
        assert health(server, "/livez")[0] == 500
        status, reply = server.request("GET", f"{CMS}/absent")
        assert (status, reply["reason"]) == (504, "Timeout")
        # kubectl retries a 504 with Retry-After up to ten times; each answer now comes in
        # seconds, so it gives up well inside the harness's 60 s (it used to take ~4 minutes)
        result = server.kubectl("get", "configmaps", check=False)
        assert result.returncode != 0
        assert "(Timeout)" in result.stderr
    wait_for(lambda: health(server, "/readyz") == (200, "ok"))
    status, _ = server.request("POST", CMS, {"metadata": {"name": "after-the-pause"}})
    assert status == 201


def test_a_short_pause_is_ridden_out(cluster: EtcdCluster, servers: Servers) -> None:
    server = servers.start(f"{cluster.url}?prefix={fresh_prefix()}")
    results: list[int] = []
    with paused(cluster):
        writer = threading.Thread(
            target=lambda: results.append(
                server.request("POST", CMS, {"metadata": {"name": "during-a-blip"}})[0]
            )
        )
        writer.start()
        time.sleep(2)
    writer.join(60)
    assert results == [201]
