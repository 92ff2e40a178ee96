"""Instructions per request, counted by valgrind: the A/B figure that the noise of a shared machine
does not move.

Wall-clock figures here vary by ±15-30% from minute to minute, more than most single changes to
the request path. The number of instructions a request executes does not: cachegrind counts
them, and repeated runs agree to about 0.1%. The workload is bench/request_path.py's, run in
process with no HTTP: a ConfigMap is created, then PUT one request at a time with
bench/api.py's body (a 2 KB payload and a sequence number, conflict-checked), or read by name.
It runs at two sizes. The difference, divided by the difference in requests, is the cost of
one request, and start-up cancels out. Background work (controllers, timers) is counted in
proportion to the run's wall time, which is why GETs are measured over more requests.

Compare two commits by running this once with each on ``PYTHONPATH`` (e.g. a worktree's
``src``).

Run:
    .venv/bin/python bench/instructions.py          # ~2 min; needs valgrind
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

SIZES = {"PUT": (100, 600), "GET": (200, 2200)}

WORKLOAD = r"""
import sys
sys.path.insert(0, {bench!r})
import orjson, uvloop
from request_path import PATH, TOKEN, call, configmap
from kubelite.server.assembly import running
from kubelite.storage import StoreOptions

async def main(mode, n):
    options = StoreOptions(compaction_interval_seconds=0)
    async with running("sqlite://", options, token=TOKEN) as server:
        app = server.app
        status, body = await call(app, "POST", PATH.rsplit("/", 1)[0], orjson.dumps(configmap()))
        assert status == 201, body
        rv = orjson.loads(body)["metadata"]["resourceVersion"]
        payload = "x" * 2048
        for i in range(n):
            if mode == "PUT":
                obj = {{"apiVersion": "v1", "kind": "ConfigMap",
                       "metadata": {{"name": "bench", "namespace": "default",
                                    "resourceVersion": rv}},
                       "data": {{"seq": str(i), "payload": payload}}}}
                status, body = await call(app, "PUT", PATH, orjson.dumps(obj))
                assert status == 200, body
                rv = orjson.loads(body)["metadata"]["resourceVersion"]
            else:
                status, body = await call(app, "GET", PATH)
                assert status == 200, body

uvloop.run(main(sys.argv[1], int(sys.argv[2])))
"""


def instructions(mode: str, n: int) -> int:
    """Instructions executed by the workload (all threads), as cachegrind counts them."""
    script = WORKLOAD.format(bench=str(Path(__file__).resolve().parent))
    result = subprocess.run(
        ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
         sys.executable, "-c", script, mode, str(n)],
        capture_output=True, text=True, env={**os.environ, "PYTHONMALLOC": "malloc"},
        timeout=1200,
    )  # fmt: skip
    found = re.search(r"I\s+refs:\s+([\d,]+)", result.stderr)
    if result.returncode != 0 or found is None:
        raise RuntimeError(f"the workload failed under valgrind:\n{result.stderr[-3000:]}")
    return int(found.group(1).replace(",", ""))


def main() -> int:
    if shutil.which("valgrind") is None:
        print("valgrind not found: apt-get install -y valgrind", file=sys.stderr)
        return 2
    print("instructions per request (cachegrind, in process, one request at a time)")
    for mode, (small, large) in SIZES.items():
        per = (instructions(mode, large) - instructions(mode, small)) / (large - small)
        print(f"{mode:<5}{per:>14,.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
