"""``kubelite snapshot save`` while the server serves, and ``restore`` into a data directory: the
restored server has exactly what was stored when the snapshot was taken."""

from __future__ import annotations

from pathlib import Path

from harness import start_server, stop_server
from test_cli_startup import kubelite, one_line


def configmap(name: str) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name},
        "data": {"k": name},
    }


def test_save_online_then_restore(tmp_path: Path) -> None:
    backup = tmp_path / "backup.db"
    srv = start_server(tmp_path / "data")
    try:
        status, before = srv.request(
            "POST", "/api/v1/namespaces/default/configmaps", configmap("a")
        )
        assert status == 201, before
        saved = kubelite("snapshot", "save", str(backup), "--data-dir", str(srv.data_dir))
        assert saved.returncode == 0, saved.stderr
        assert saved.stdout.startswith(f"saved {srv.data_dir / 'state.db'} at revision ")
        status, _ = srv.request("POST", "/api/v1/namespaces/default/configmaps", configmap("b"))
        assert status == 201
        # restoring under a running server is refused, and changes nothing
        refused = one_line(
            kubelite("snapshot", "restore", str(backup), "--data-dir", str(srv.data_dir))
        )
        assert "is in use by another kubelite server" in refused
    finally:
        stop_server(srv)
    assert oct(backup.stat().st_mode & 0o777) == "0o600"

    restored_dir = tmp_path / "restored"
    done = kubelite("snapshot", "restore", str(backup), "--data-dir", str(restored_dir))
    assert done.returncode == 0, done.stderr
    assert "restored" in done.stdout
    again = start_server(restored_dir)
    try:
        status, a = again.request("GET", "/api/v1/namespaces/default/configmaps/a")
        assert status == 200
        assert a["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
        status, _ = again.request("GET", "/api/v1/namespaces/default/configmaps/b")
        assert status == 404  # written after the snapshot
    finally:
        stop_server(again)


def test_snapshot_mistakes_are_one_line(tmp_path: Path) -> None:
    line = one_line(
        kubelite("snapshot", "save", str(tmp_path / "x.db"), "--data-dir", str(tmp_path))
    )
    assert line == f"kubelite: no database at {tmp_path / 'state.db'}; give the server's --data-dir"
    junk = tmp_path / "junk.db"
    junk.write_text("not sqlite at all " * 100)
    line = one_line(kubelite("snapshot", "restore", str(junk), "--data-dir", str(tmp_path / "d")))
    assert line.startswith(f"kubelite: {junk} is not a kubelite database")


def test_a_snapshot_target_that_cannot_be_written_is_one_line(tmp_path: Path) -> None:
    srv = start_server(tmp_path / "data")
    try:
        data = str(srv.data_dir)
        missing = tmp_path / "no" / "such" / "x.db"
        line = one_line(kubelite("snapshot", "save", str(missing), "--data-dir", data))
        assert line == f"kubelite: cannot write {missing}: No such file or directory"
        line = one_line(kubelite("snapshot", "save", str(tmp_path), "--data-dir", data))
        assert line == f"kubelite: {tmp_path} is a directory; name the snapshot file to write"
        assert not list(tmp_path.glob("*.partial"))
    finally:
        stop_server(srv)
