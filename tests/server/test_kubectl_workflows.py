"""kubectl workflows beyond create/get/delete: edit, api-resources, get -w, deletecollection."""

from __future__ import annotations

import sys
import textwrap
import time
from pathlib import Path

from harness import ROOT_CA, Server

CM_YAML = """apiVersion: v1
kind: ConfigMap
metadata:
  name: cm1
  labels: {app: demo}
data:
  a: "1"
"""


def editor_script(tmp_path: Path, old: str, new: str) -> str:
    """An EDITOR that replaces ``old`` with ``new`` in the file kubectl hands it."""
    script = tmp_path / "editor.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import sys
            path = sys.argv[-1]
            text = open(path).read()
            open(path, "w").write(text.replace({old!r}, {new!r}))
            """
        )
    )
    return f"{sys.executable} {script}"


def test_edit_patches_without_a_resource_version(server: Server, tmp_path: Path) -> None:
    server.kubectl("create", "-f", "-", input=CM_YAML)
    editor = editor_script(tmp_path, 'a: "1"', 'a: "edited"')
    out = server.kubectl("edit", "cm", "cm1", env={"KUBE_EDITOR": editor, "EDITOR": editor})
    assert "configmap/cm1 edited" in out.stdout
    got = server.kubectl("get", "cm", "cm1", "-o", "jsonpath={.data.a}").stdout
    assert got == "edited"
    unchanged = editor_script(tmp_path, "no such text", "x")
    out = server.kubectl("edit", "cm", "cm1", env={"KUBE_EDITOR": unchanged, "EDITOR": unchanged})
    assert "Edit cancelled, no changes made." in out.stdout + out.stderr


def test_api_resources_lists_kinds_with_short_names(server: Server) -> None:
    out = server.kubectl("api-resources").stdout.splitlines()
    rows = {line.split()[0]: line.split() for line in out[1:]}
    assert rows["configmaps"][1] == "cm"
    assert rows["deployments"][1:4] == ["deploy", "apps/v1", "true"]
    assert rows["namespaces"][1:4] == ["ns", "v1", "false"]
    assert "leases" in rows


def test_get_watch_prints_changes(server: Server) -> None:
    server.kubectl("create", "-f", "-", input=CM_YAML)
    watcher = server.kubectl_background("get", "cm", "-w", "--request-timeout=6s")
    time.sleep(1.5)
    server.kubectl("label", "cm", "cm1", "x=1")
    server.kubectl("create", "-f", "-", input=CM_YAML.replace("cm1", "cm2"))
    out, _ = watcher.communicate(timeout=30)
    names = [line.split()[0] for line in out.splitlines()[1:] if line.strip()]
    assert names[0] == "cm1"
    assert "cm2" in names
    assert names.count("cm1") >= 2  # the listed row, then the labelled one


def test_delete_collection_by_label(server: Server) -> None:
    for name in ("a", "b", "c"):
        server.kubectl("create", "-f", "-", input=CM_YAML.replace("cm1", name))
    server.kubectl("label", "cm", "c", "app=other", "--overwrite")
    code, listing = server.request(
        "DELETE", "/api/v1/namespaces/{ns}/configmaps?labelSelector=app%3Ddemo"
    )
    assert code == 200
    left = server.kubectl("get", "cm", "-o", "name").stdout.split()
    assert left == ["configmap/c", f"configmap/{ROOT_CA}"]
    assert len(listing["items"]) == 2  # type: ignore[arg-type]
