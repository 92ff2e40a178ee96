"""``kubelite history KIND/NAME [--diff]`` against a server with ``--history-retention``:
the timeline of an object's writes after it was deleted and the store compacted, the field
changes between versions, kubectl's spellings of a kind, and one-line errors."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from harness import Server, start_in_process, stop_server
from test_cli_startup import kubelite, one_line

from kubelite.api.machinery.retention import parse_retention


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    """The commands' server, in this process (``--history-retention configmaps=20``)."""
    retention = parse_retention("configmaps=20")
    srv = start_in_process(tmp_path / "data", history_retention=retention)
    try:
        yield srv
    finally:
        stop_server(srv)


def history(server: Server, *args: str) -> list[str]:
    result = kubelite("history", *args, "--kubeconfig", str(server.kubeconfig))
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


def test_timeline_and_diff_after_deletion_and_compaction(server: Server) -> None:
    server.kubectl("create", "configmap", "app", "--from-literal=k=a", "-n", "kube-public")
    server.kubectl("label", "configmap", "app", "team=blue", "-n", "kube-public")
    server.kubectl(
        "patch", "configmap", "app", "-n", "kube-public", "--type=merge",
        "-p", '{"data": {"k": "b", "extra": "x"}}',
    )  # fmt: skip
    server.kubectl("delete", "configmap", "app", "-n", "kube-public")
    revision = server.request("GET", "/api/v1/configmaps")[1]["metadata"]["resourceVersion"]
    compacted = kubelite(
        "compact", "--revision", str(revision), "--kubeconfig", str(server.kubeconfig)
    )
    assert compacted.returncode == 0, compacted.stderr

    lines = history(server, "configmap/app", "-n", "kube-public")
    assert lines[0].split() == ["REVISION", "TIME", "MANAGER", "OPERATION"]
    rows = [line.split() for line in lines[1:]]
    assert [(r[2], r[3]) for r in rows] == [
        ("kubectl-create", "Create"),
        ("kubectl-label", "Update"),
        ("kubectl-patch", "Update"),
        ("-", "Delete"),
    ]
    revisions = [int(r[0]) for r in rows]
    assert revisions == sorted(revisions)

    diffed = history(server, "cm/app", "-n", "kube-public", "--diff")
    assert diffed == [
        lines[0],
        lines[1],
        lines[2],
        '    + .metadata.labels.team: "blue"',
        lines[3],
        '    ~ .data.k: "a" -> "b"',
        '    + .data.extra: "x"',
        lines[4],
    ]


@pytest.mark.parametrize("kind", ["configmaps", "ConfigMap", "cm", "configmap"])
def test_kind_spellings(server: Server, kind: str) -> None:
    server.kubectl("create", "configmap", "spelled")
    lines = history(server, f"{kind}/spelled")
    assert [line.split()[3] for line in lines[1:]] == ["Create"]


def test_one_line_errors(server: Server) -> None:
    config = ("--kubeconfig", str(server.kubeconfig))
    assert one_line(kubelite("history", "secrets/x", *config)) == (
        "kubelite: the server keeps no history of secrets "
        "(start it with --history-retention secrets=...)"
    )
    assert one_line(kubelite("history", "foos/x", *config)) == (
        'kubelite: the server doesn\'t have a resource type "foos"'
    )
    assert one_line(kubelite("history", "cm/none", *config)) == (
        'kubelite: configmaps "none" not found'
    )
