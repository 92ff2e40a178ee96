"""kubelite's server app built in this process, for the client's in-process transport.

The client never imports the server; the tests build the app here, exactly as ``kubelite serve``
wires it (a private in-RAM SQLite store, the built-in catalogue, the system namespaces, the
namespace controller and the watch caches), and hand the ASGI object to the client.
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

from kubelite.api.catalogue import load_builtin_catalogue
from kubelite.api.namespaces import NamespaceLifecycle
from kubelite.api.registry import Registry
from kubelite.api.watchcache import WatchCacheSet
from kubelite.server.asgi import KubeliteApp
from kubelite.server.serve import ensure_namespaces
from kubelite.storage import StoreOptions, open_store

TOKEN = "in-process-token"


@asynccontextmanager
async def in_process_app(
    bookmark_interval: float | None = None, **store_options: Any
) -> AsyncIterator[KubeliteApp]:
    """A KubeliteApp on the running loop (bearer token :data:`TOKEN`), closed on exit;
    ``bookmark_interval`` overrides the watch caches' (60 s)."""
    store = await open_store("sqlite://", StoreOptions(**store_options))
    try:
        catalogue = load_builtin_catalogue()
        registry = Registry(store)
        await ensure_namespaces(registry, catalogue)
        lifecycle = NamespaceLifecycle(registry, catalogue)
        lifecycle.start()
        options = {} if bookmark_interval is None else {"bookmark_interval": bookmark_interval}
        caches = WatchCacheSet(store, **options)
        app = KubeliteApp(registry, catalogue, TOKEN, lifecycle, caches)
        # KubeliteApp keeps ``caches or WatchCacheSet(...)``, and an empty WatchCacheSet is
        # falsy (it has __len__): make sure the app uses the set configured here.
        app.caches = caches
        try:
            yield app
        finally:
            app.shutting_down.set()
            await lifecycle.close()
            await caches.close()
    finally:
        await store.close()


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
