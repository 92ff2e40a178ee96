"""``kubelite serve`` and friends on ordinary mistakes: one line that says what to do, a non-zero
exit, no traceback and nothing half-started. Also --version, --tls-san, a wildcard bind's
kubeconfig and the data directory's permissions."""

from __future__ import annotations

import os
import socket
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from cryptography import x509
from harness import Server, start_server, stop_server

from kubelite import __version__


def kubelite(
    *args: str, cwd: Path | None = None, env: dict[str, str] | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kubelite", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        env={**os.environ, **(env or {})},
    )


def one_line(result: subprocess.CompletedProcess[str]) -> str:
    """The error line; fails unless the command failed with exactly one line and no traceback."""
    assert result.returncode == 1, result.stdout + result.stderr
    lines = [line for line in result.stderr.splitlines() if " INFO " not in line]
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert lines[0].startswith("kubelite: ")
    return lines[0]


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    srv = start_server(tmp_path / "data")
    try:
        yield srv
    finally:
        stop_server(srv)


def test_version() -> None:
    result = kubelite("--version")
    assert result.returncode == 0
    assert result.stdout.strip() == f"kubelite {__version__}"


def test_port_in_use_is_one_line_and_nothing_is_started(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = kubelite("serve", "--port", str(port), "--data-dir", str(tmp_path / "d"))
    line = one_line(result)
    assert line == (
        f"kubelite: 127.0.0.1:{port} is in use; stop what listens there, or pick another "
        "--port (0: any free)"
    )
    assert not (tmp_path / "d" / "state.db").exists()  # bound before the store opened


def test_a_data_dir_held_by_a_running_server_is_refused(server: Server) -> None:
    result = kubelite("serve", "--port", "0", "--data-dir", str(server.data_dir))
    line = one_line(result)
    assert line == (
        f"kubelite: data dir {server.data_dir} is in use by another kubelite server "
        f"(pid {server.process.pid}); stop it, or give another --data-dir"
    )
    status, _ = server.request("GET", "/api/v1/namespaces/default")
    assert status == 200  # the running server is untouched


def test_unknown_storage_url_and_missing_etcd_client(tmp_path: Path) -> None:
    data = str(tmp_path / "d")
    line = one_line(kubelite("serve", "--port", "0", "--data-dir", data, "--storage", "pg://x"))
    assert line.startswith("kubelite: unknown store URL scheme 'pg' in 'pg://x'; expected one of ")
    assert line.endswith("; see --storage in `kubelite serve --help`")
    no_scheme = one_line(kubelite("serve", "--port", "0", "--data-dir", data, "--storage", "x"))
    assert "has no scheme" in no_scheme
    without_aetcd = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; sys.modules['aetcd'] = None; from kubelite.cli import main; "
            f"sys.exit(main(['serve', '--port', '0', '--data-dir', {data!r}, "
            "'--storage', 'etcd://127.0.0.1:2379']))",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "needs the etcd client: pip install 'kubelite[etcd]'" in one_line(without_aetcd)


def test_unreadable_and_empty_kubeconfig(tmp_path: Path) -> None:
    absent = tmp_path / "absent"
    line = one_line(kubelite("compact", "--kubeconfig", str(absent), "--revision", "1"))
    assert line == f"kubelite: cannot read kubeconfig {absent}: No such file or directory"
    # An empty KUBECONFIG is unset, as for kubectl: the default path is used, not ''.
    line = one_line(kubelite("compact", "--revision", "1", cwd=tmp_path, env={"KUBECONFIG": ""}))
    assert line == (
        "kubelite: cannot read kubeconfig kubelite-data/kubeconfig: No such file or directory"
    )


def test_tls_sans_and_a_wildcard_bind_name_a_reachable_address(tmp_path: Path) -> None:
    srv = start_server(
        tmp_path / "data", None, "--bind-address", "0.0.0.0", "--tls-san", "api.example,10.9.8.7"
    )
    try:
        config = yaml.safe_load(srv.kubeconfig.read_text())
        assert config["clusters"][0]["cluster"]["server"] == srv.url
        assert srv.url.startswith("https://127.0.0.1:")
        status, _ = srv.request("GET", "/api/v1/namespaces/default")
        assert status == 200  # the certificate names the address the kubeconfig gives
        cert = x509.load_pem_x509_certificate((srv.data_dir / "server.crt").read_bytes())
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        names = {str(n.value) for n in san}
        assert {"api.example", "10.9.8.7", "127.0.0.1", "localhost"} <= names
    finally:
        stop_server(srv)


def test_the_data_dir_is_private(server: Server) -> None:
    assert stat.S_IMODE(server.data_dir.stat().st_mode) == 0o700
    for name in ("state.db", "state.db-wal", "token", "ca.key", "server.key", "kubeconfig"):
        path = server.data_dir / name
        assert path.exists(), name
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, name


def test_an_existing_data_dir_is_made_private(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir(mode=0o755)
    os.chmod(data, 0o755)
    (data / "state.db").touch(mode=0o644)
    os.chmod(data / "state.db", 0o644)
    srv = start_server(data)
    try:
        assert stat.S_IMODE(data.stat().st_mode) == 0o700
        assert stat.S_IMODE((data / "state.db").stat().st_mode) == 0o600
    finally:
        stop_server(srv)


def test_a_tls_san_that_is_no_name_is_one_line(tmp_path: Path) -> None:
    data = tmp_path / "d"
    line = one_line(
        kubelite("serve", "--port", "0", "--data-dir", str(data), "--tls-san", "ü.example")
    )
    assert line == (
        "kubelite: --tls-san 'ü.example' is neither an IP address nor a DNS name (write an "
        "internationalized name in its xn-- form)"
    )
    assert not data.exists()  # refused before anything was made


def test_in_flight_limits_that_cannot_work_are_one_line(tmp_path: Path) -> None:
    """kube-apiserver's checks of --max-requests-inflight and --max-mutating-requests-inflight:
    neither negative, and with priority and fairness a positive sum (its seats)."""
    cases = [
        (["--max-requests-inflight", "-1"],
         "kubelite: --max-requests-inflight can not be negative value"),
        (["--max-requests-inflight", "0", "--max-mutating-requests-inflight", "0"],
         "kubelite: invalid configuration: MaxRequestsInFlight=0 and "
         "MaxMutatingRequestsInFlight=0; they must add up to something positive (or pass "
         "--enable-priority-and-fairness=false)"),
    ]  # fmt: skip
    for args, line in cases:
        result = kubelite("serve", *args, "--data-dir", str(tmp_path / "d"))
        assert result.returncode == 2, result.stderr
        assert result.stderr.strip() == line
        assert not (tmp_path / "d").exists()


def test_simulation_flags_that_cannot_work_are_one_line(tmp_path: Path) -> None:
    cases = [
        (["--node-capacity", "cpu=lots"], "kubelite: --node-capacity: cpu=lots: 'lots' is not a "
         "quantity"),
        (["--node-capacity", "cpu"], "kubelite: --node-capacity: 'cpu' is not NAME=QUANTITY "
         "(e.g. cpu=8,memory=32Gi,pods=110)"),
        (["--simulate-backoff-scale", "0"],
         "kubelite: --simulate-backoff-scale must be above 0, e.g. 0.01"),
    ]  # fmt: skip
    for args, line in cases:
        result = kubelite("serve", *args, "--data-dir", str(tmp_path / "d"))
        assert result.returncode == 2, result.stderr
        assert result.stderr.strip() == line
        assert not (tmp_path / "d").exists()
    result = kubelite("serve", "--nodes", "-1", "--data-dir", str(tmp_path / "d"))
    assert result.returncode == 2
    assert "invalid node count '-1' (0 or more, e.g. 3)" in result.stderr
