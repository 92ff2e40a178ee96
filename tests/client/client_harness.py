"""kubelite's server app built in this process, for the client's in-process transport.

The client never imports the server; the tests build the app here with the assembly function
``kubelite serve`` uses (on a private in-RAM SQLite store), and hand the ASGI object to the
client.
"""

from __future__ import annotations

import asyncio
import inspect
import sys
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "server"))

from kubelite.server.app import KubeliteApp
from kubelite.server.assembly import running
from kubelite.storage import StoreOptions

TOKEN = "in-process-token"


@asynccontextmanager
async def in_process_app(
    bookmark_interval: float | None = None, **store_options: Any
) -> AsyncIterator[KubeliteApp]:
    """A KubeliteApp on the running loop (bearer token :data:`TOKEN`), closed on exit;
    ``bookmark_interval`` overrides the watch caches' (60 s)."""
    options = {} if bookmark_interval is None else {"bookmark_interval": bookmark_interval}
    async with running(
        "sqlite://", StoreOptions(**store_options), token=TOKEN, watch_cache_options=options
    ) as server:
        yield server.app


@contextmanager
def app_in_thread() -> Iterator[tuple[KubeliteApp, asyncio.AbstractEventLoop]]:
    """The app on an event loop of its own in a background thread (for the sync client)."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="kubelite-app", daemon=True)
    thread.start()
    context = in_process_app()
    try:
        app = asyncio.run_coroutine_threadsafe(context.__aenter__(), loop).result(30)
        try:
            yield app, loop
        finally:
            asyncio.run_coroutine_threadsafe(context.__aexit__(None, None, None), loop).result(30)
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()


#: Every namespace of a real server holds ConfigMap ``kube-root-ca.crt`` (the root CA publisher's,
#: as in any cluster; the in-process app has no CA and publishes none): tests that count the
#: ConfigMaps of a namespace leave it out with this field selector.
NOT_ROOT_CA = "metadata.name!=kube-root-ca.crt"


def configmap(name: str, namespace: str = "default", value: str = "0") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": namespace}, "data": {"v": value}}  # fmt: skip


async def eventually(check: Callable[[], bool | Awaitable[bool]], seconds: float = 30) -> None:
    """Wait until ``check`` holds, polling (a bound against hanging, not a timing assertion)."""
    async with asyncio.timeout(seconds):
        while True:
            result = check()
            if await result if inspect.isawaitable(result) else result:
                return
            await asyncio.sleep(0.02)
