"""What a small body costs the server when it would expand: the JSON patch bomb (a ``copy`` of
``/data`` to ``/d``, then ``/d`` copied into itself N times, doubling it each time) and a YAML
alias bomb, each against a baseline measured in the same run on the same server: a JSON patch
of as many ``test`` operations, and the same YAML object without aliases.

For each: the answer, its time, and the server's peak memory (VmHWM) before and after. Each
bomb runs on a fresh server, so its peak is its own.

Run:
    .venv/bin/python bench/input_bounds.py               # N = 21 and 30
    .venv/bin/python bench/input_bounds.py --copies 21   # N = 21 only (the one to run against
                                                         # a server without the copy limit:
                                                         # N = 30 takes 22 GB there)
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import api as base

CM = "/api/v1/namespaces/default/configmaps"
REVISIONS = "/apis/apps/v1/namespaces/default/controllerrevisions"


def call(proc: base.Proc, method: str, path: str, raw: bytes, content_type: str) -> tuple[int, Any]:
    req = urllib.request.Request(proc.url + path, data=raw, method=method)
    req.add_header("Content-Type", content_type)
    req.add_header("Authorization", f"Bearer {proc.token}")
    try:
        with urllib.request.urlopen(req, timeout=600, context=base.ssl_context(proc.data_dir)) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def measured(workdir: Path, name: str, method: str, path: str, raw: bytes, ctype: str) -> None:
    """One request on a fresh server holding ConfigMap ``c``: answer, seconds, peak memory."""
    proc = base.start_kubelite(workdir / name)
    try:
        base.wait_ready(proc)
        made = json.dumps({"metadata": {"name": "c"}, "data": {"a": "b"}}).encode()
        assert call(proc, "POST", CM, made, "application/json")[0] == 201
        before = proc.status("VmHWM")
        started = time.perf_counter()
        code, answer = call(proc, method, path, raw, ctype)
        seconds = time.perf_counter() - started
        after = proc.status("VmHWM")
        text = answer.get("message", "")[:60] if code >= 400 else ""
        print(
            f"{name:<28} {len(raw):>6} B  {code} {text:<62} {seconds:6.2f} s  "
            f"peak {before // 1024:>4} -> {after // 1024:>6} MiB (+{(after - before) // 1024})"
        )
    finally:
        proc.stop()


def copies(n: int) -> bytes:
    ops = [{"op": "copy", "from": "/data", "path": "/d"}]
    ops += [{"op": "copy", "from": "/d", "path": f"/d/x{i}"} for i in range(n)]
    return json.dumps(ops).encode()


def tests(n: int) -> bytes:
    return json.dumps([{"op": "test", "path": "/data/a", "value": "b"}] * (n + 1)).encode()


def revision(levels: int, aliased: bool) -> bytes:
    """A ControllerRevision whose data is ten strings, then ``levels`` lists of ten aliases of
    the list before (or, without aliases, each written out once)."""
    data = '  a: &a ["x","x","x","x","x","x","x","x","x","x"]\n'
    for level in range(1, levels + 1):
        name, before = "abcdefgh"[level], "abcdefgh"[level - 1]
        refs = ",".join([f"*{before}" if aliased else '"x"'] * 10)
        data += f"  {name}: &{name} [{refs}]\n"
    head = "apiVersion: apps/v1\nkind: ControllerRevision\nmetadata:\n  name: r\nrevision: 1\n"
    return (head + "data:\n" + data).encode()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--copies", type=int, nargs="*", default=[21, 30])
    parser.add_argument("--yaml-levels", type=int, default=3)
    args = parser.parse_args()
    with base.workdir(None) as workdir:
        for n in args.copies:
            patch = "application/json-patch+json"
            measured(workdir, f"{n + 1} test ops (baseline)", "PATCH", f"{CM}/c", tests(n), patch)
            measured(workdir, f"{n} doubling copies", "PATCH", f"{CM}/c", copies(n), patch)
        levels, yaml = args.yaml_levels, "application/yaml"
        plain = revision(levels, aliased=False)
        measured(workdir, "YAML, no aliases (baseline)", "POST", REVISIONS, plain, yaml)
        bomb = revision(levels, aliased=True)
        measured(workdir, f"YAML, {levels} levels of aliases", "POST", REVISIONS, bomb, yaml)


if __name__ == "__main__":
    main()
