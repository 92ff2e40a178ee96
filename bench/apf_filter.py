"""Instructions the API Priority and Fairness filter adds to a request, counted by valgrind, against
the max-in-flight filter it replaces: the filter alone, around a handler that does nothing, for
the admin (``system:masters``: the exempt level, only counted) and for an ordinary user (the
global-default level: classification, its flow's queue, a seat), over the bootstrap
configuration. Two sizes, the difference divided by the difference in requests (start-up
cancels out); no background work runs, so repeated runs agree closely, unlike the whole-request
counts of bench/instructions.py on a busy machine.

Run:
    .venv/bin/python bench/apf_filter.py          # ~1 min; needs valgrind
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

SIZES = (2000, 12000)

WORKLOAD = r"""
import asyncio, sys
from kubelite.api.machinery.user import ADMIN, User
from kubelite.api.kinds.flowcontrol.bootstrap import (
    mandatory, mandatory_levels, mandatory_schemas, suggested_levels, suggested_schemas)
from kubelite.api.machinery.request import RequestInfo
from kubelite.server.flowcontrol.config import FlowControl
from kubelite.server.flowcontrol.filter import with_priority_and_fairness
from kubelite.server.messages import Request
from kubelite.server.overload import Limits, with_max_in_flight

control = FlowControl(600, mandatory())
control.digest([*mandatory_schemas(), *suggested_schemas()],
               [*mandatory_levels(), *suggested_levels()])

async def nothing(request, send):
    pass

filters = {"apf": with_priority_and_fairness(nothing, control, 60),
           "max-in-flight": with_max_in_flight(nothing, Limits())}
users = {"admin": ADMIN, "user": User("alice", ("system:authenticated",))}
path = "/api/v1/namespaces/default/configmaps/x"
info = RequestInfo(path, "get", True, "api", "", "v1", "default", "configmaps", "", "x")

async def main(chain, who, n):
    request = Request({"type": "http", "method": "GET", "path": path, "headers": []}, None)
    request.info, request.user = info, users[who]
    handler = filters[chain]
    for _ in range(n):
        await handler(request, None)

asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
"""


def instructions(chain: str, who: str, n: int) -> int:
    result = subprocess.run(
        ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
         sys.executable, "-c", WORKLOAD, chain, who, str(n)],
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
    small, large = SIZES
    print("instructions per request in the filter (cachegrind)")
    for who in ("admin", "user"):
        counts = {}
        for chain in ("max-in-flight", "apf"):
            counts[chain] = (instructions(chain, who, large) - instructions(chain, who, small)) / (
                large - small
            )
        added = counts["apf"] - counts["max-in-flight"]
        print(
            f"{who:<6} max-in-flight {counts['max-in-flight']:>8,.0f}   "
            f"apf {counts['apf']:>8,.0f}   added {added:>8,.0f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
