"""What explaining a 409 costs: a stale PUT answered with kube's bare Conflict, and with the
``details.causes`` kubelite adds (each changed field, its manager and version), in process.

The app is called directly (no socket, no TLS), as in ``bench/request_path.py``. Each figure
is the median over rounds of the mean microseconds per request, one request at a time:

* ``PUT 200``: a conflict-checked PUT that succeeds, the ordinary write, for scale;
* ``409 bare``: a stale PUT with the explanation turned off (the method replaced by one
  that finds nothing, in this process only): what the conflict path cost before;
* ``409 explained, N behind``: a stale PUT whose version is N writes old, explained anew each
  time: the sent and stored versions are read, then the writes in between, newest first, as
  far back as a changed field needs placing (at most 32);
* ``409 repeated``: the same stale PUT again and again, as served: the resource remembers its
  last 64 explanations.

Run:
    .venv/bin/python bench/conflict_causes.py            # ~15 s
    .venv/bin/python bench/conflict_causes.py --rounds 5 --requests 2000
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import orjson
import uvloop

from kubelite.api.fieldmanager.conflictcauses import Explainer
from request_path import PATH, App, call, configmap, serving_configmap, time_puts

BEHIND = (1, 10, 50)
MERGE = b"application/merge-patch+json"


async def stale_puts(app: App, n: int, stale: dict[str, Any], name: str) -> float:
    body = orjson.dumps(stale)
    path = PATH.rsplit("/", 1)[0] + "/" + name
    started = time.perf_counter()
    for _ in range(n):
        status, answer = await call(app, "PUT", path, body)
        assert status == 409, answer
    return (time.perf_counter() - started) / n * 1e6


@contextmanager
def explaining(how: str) -> Iterator[None]:
    """``bare``: nothing explained (kube's 409); ``fresh``: each 409 explained anew (the
    explanations a resource remembers are not looked at); ``remembered``: as served."""

    async def bare(self: Explainer, key: str, sent: int, current: int) -> list[Any]:
        return []

    async def fresh(self: Explainer, key: str, sent: int, current: int) -> list[Any]:
        return await self._explain(key, sent, current)

    served = Explainer.explain
    Explainer.explain = {"bare": bare, "fresh": fresh}.get(how, served)  # type: ignore[method-assign]
    try:
        yield
    finally:
        Explainer.explain = served  # type: ignore[method-assign]


async def prepare(app: App, name: str, behind: int) -> dict[str, Any]:
    """A ConfigMap ``name`` written ``behind`` times (by another manager) since the version
    returned, which a stale PUT then sends."""
    obj = configmap()
    obj["metadata"]["name"] = name
    status, body = await call(app, "POST", PATH.rsplit("/", 1)[0], orjson.dumps(obj))
    assert status == 201, body
    stale = orjson.loads(body)
    patch_path = PATH.rsplit("/", 1)[0] + f"/{name}?fieldManager=other-writer"
    for i in range(behind):
        patch = {"data": {f"key-{i % 40:02d}": f"changed-{i}"}}
        status, body = await call(app, "PATCH", patch_path, orjson.dumps(patch), MERGE)
        assert status == 200, body
    stale["data"]["key-00"] = "mine"
    return stale


async def measure(rounds: int, n: int) -> dict[str, list[float]]:
    figures: dict[str, list[float]] = {}
    async with serving_configmap() as (app, obj):
        stale = {b: await prepare(app, f"behind-{b}", b) for b in BEHIND}
        for _ in range(rounds):
            figures.setdefault("PUT 200", []).append(await time_puts(app, n, obj))
            with explaining("bare"):
                run = await stale_puts(app, n, stale[1], "behind-1")
            figures.setdefault("409 bare", []).append(run)
            for b in BEHIND:
                with explaining("fresh"):
                    run = await stale_puts(app, n, stale[b], f"behind-{b}")
                figures.setdefault(f"409 explained, {b} behind", []).append(run)
            run = await stale_puts(app, n, stale[BEHIND[-1]], f"behind-{BEHIND[-1]}")
            figures.setdefault(f"409 repeated, {BEHIND[-1]} behind", []).append(run)
    return figures


def report(figures: dict[str, list[float]]) -> None:
    median = {name: statistics.median(values) for name, values in figures.items()}
    print(f"{'figure':<28}{'median us':>10}  {'/ bare':>7}  rounds")
    for name, values in figures.items():
        rounds = ", ".join(f"{v:.1f}" for v in values)
        ratio = median[name] / median["409 bare"]
        print(f"{name:<28}{median[name]:>10.1f}  {ratio:>7.2f}  [{rounds}]")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--requests", type=int, default=1000, help="per figure and round")
    args = parser.parse_args()
    report(uvloop.run(measure(args.rounds, args.requests)))


if __name__ == "__main__":
    main()
