"""Child process for test_crash.py: write under load and report every acknowledged write.

Usage: ``python crash_writer.py DB_PATH TASKS [history]``

Opens ``sqlite://DB_PATH`` with full durability and no automatic compaction, prints ``ready``,
then runs TASKS concurrent tasks. Task ``i`` owns key ``/crash/<i>``: it creates it with counter
0 (or, when the key survives from an earlier run, goes on from the counter stored there) and
then updates it with counter+1, +2, ... for ever, each update a compare-and-swap on the
revision it last wrote. Only after a write has been acknowledged (its ``await`` returned) does
the task print ``ack <key> <counter> <revision>`` and flush stdout, so every line the parent
reads names a write the store promised to keep. The parent ends this process with SIGKILL.
With ``history``, the store keeps every version of ``/crash/`` keys (a history retention
policy), so the parent can check that each acknowledged write's history row survived too.
"""

from __future__ import annotations

import asyncio
import sys

from kubelite.storage import Retention, Store, StoreOptions, open_store


def key_for(task: int) -> str:
    return f"/crash/{task:02}"


def ack(key: str, counter: int, revision: int) -> None:
    # One write(2) of a short line to a pipe is atomic, so the parent never sees half a line.
    sys.stdout.write(f"ack {key} {counter} {revision}\n")
    sys.stdout.flush()


async def work(store: Store, task: int) -> None:
    key = key_for(task)
    kv = await store.get(key)
    if kv is None:
        counter = 0
        revision = await store.create(key, b"0")
        ack(key, counter, revision)
    else:
        counter, revision = int(kv.value), kv.mod_revision
    while True:
        counter += 1
        revision = await store.update(key, str(counter).encode(), revision)
        ack(key, counter, revision)


async def main(path: str, tasks: int, history: bool) -> None:
    kept = {"/crash/": Retention(max_versions=1_000_000)} if history else {}
    options = StoreOptions(durability="full", compaction_interval_seconds=0, history_retention=kept)
    store = await open_store(f"sqlite://{path}", options)
    print("ready", flush=True)
    try:
        await asyncio.gather(*(work(store, i) for i in range(tasks)))
    finally:
        await store.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2]), sys.argv[3:] == ["history"]))
