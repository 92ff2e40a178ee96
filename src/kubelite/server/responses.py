"""Writing answers: an object or a Table, a List streamed page by page, and a watch stream.

Lists (except Tables) are sent as HTTP chunks as they are read from one snapshot
(:class:`~kubelite.api.machinery.listing.ListScan`), so a large list is never held whole. Watch
streams are newline-delimited JSON events, batched while a chunk is in flight (:mod:`streaming`); an
error after the stream began (a 410 for a compacted revision) is an in-stream ERROR event.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Coroutine
from typing import Any

import orjson

from kubelite.api import errors
from kubelite.api.catalogue import ResourceInfo
from kubelite.api.encoding import jsoncodec
from kubelite.api.errors import APIError
from kubelite.api.machinery.listing import ListScan
from kubelite.api.machinery.reads import collect
from kubelite.server.faults import StreamFaults
from kubelite.server.messages import JSON, Request, Send, send_json
from kubelite.server.streaming import ChunkBatcher
from kubelite.server.table import CONTENT_TYPE as TABLE_CONTENT_TYPE
from kubelite.server.table import table, wants_table

Obj = dict[str, Any]


def as_table(request: Request) -> bool:
    return wants_table(request.headers.get("accept", ""))


async def send_object(
    request: Request,
    send: Send,
    info: ResourceInfo | None,
    obj: Obj,
    status: int = 200,
    headers: tuple[tuple[bytes, bytes], ...] = (),
) -> None:
    """One object, as JSON or (when asked, for a kind with columns) a one-row Table."""
    if info is None or not as_table(request):
        await send_json(send, status, obj, headers)
        return
    meta = obj.get("metadata") or {}
    include = request.query.get("includeObject", "Metadata")
    body = table(info, [obj], str(meta.get("resourceVersion", "")), include_object=include)
    await send_json(send, status, body, headers, content_type=TABLE_CONTENT_TYPE)


async def send_list(request: Request, send: Send, info: ResourceInfo, scan: ListScan) -> None:
    """A List, or a Table of it when the client asked for one."""
    if not as_table(request):
        await stream_list(send, info, scan)
        return
    listing = await collect(scan)
    meta = listing["metadata"]
    body = table(
        info,
        listing["items"],
        meta["resourceVersion"],
        include_object=request.query.get("includeObject", "Metadata"),
        continue_token=meta.get("continue", ""),
        remaining_item_count=meta.get("remainingItemCount"),
    )
    await send_json(send, 200, body, content_type=TABLE_CONTENT_TYPE)


async def stream_list(send: Send, info: ResourceInfo, scan: ListScan) -> None:
    """A List sent page by page as it is read (chunked). ``items`` comes before ``metadata``,
    whose continue token is known last; JSON readers do not care about key order. Errors in the
    first page are ordinary Status answers; a later one (the snapshot compacted away mid-list)
    cuts the response short."""
    pages = scan.pages()
    first = await anext(pages, None)
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [(b"content-type", JSON), (b"transfer-encoding", b"chunked")],
        }
    )
    head = orjson.dumps({"kind": info.list_kind, "apiVersion": info.group_version})
    chunk = head[:-1] + b',"items":['
    page, separator = first, b""
    while page is not None:
        chunk += separator + b",".join(jsoncodec.dumps(obj) for obj in page)
        await send({"type": "http.response.body", "body": chunk, "more_body": True})
        chunk, separator = b"", b","
        page = await anext(pages, None)
    tail = b'],"metadata":' + orjson.dumps(scan.metadata) + b"}\n"
    await send({"type": "http.response.body", "body": chunk + tail, "more_body": False})


async def stream_watch(
    request: Request,
    send: Send,
    info: ResourceInfo,
    events: AsyncGenerator[Any, None],
    seconds: float,
    stopping: asyncio.Future[Any],
    faults: StreamFaults | None = None,
) -> None:
    """A watch stream: events until the client goes, the timeout, or the server stops
    (``stopping`` is done; shared by every stream, so not cancelled here) or an injected fault
    ends it (:mod:`.faults`)."""
    tabled = as_table(request)
    include = request.query.get("includeObject", "Metadata")
    out = ChunkBatcher(send)

    async def pump() -> None:
        try:
            async for event in events:
                if faults is not None:
                    faults.before(event)  # may raise the injected 410
                if tabled:
                    obj = table(info, [event.object], str(event.revision), include_object=include)
                    await out.write(jsoncodec.dumps({"type": event.type, "object": obj}) + b"\n")
                else:
                    await out.write(event.line())  # encoded once for all its watchers
                request.count_watch_event()
                if faults is not None and faults.ends_after(event):
                    break
                del event  # not held while the stream waits (an initial event's own encoding)
        except APIError as exc:  # the stream has begun: errors travel as ERROR events
            error = {"type": "ERROR", "object": errors.status_body(exc)}
            await out.write(orjson.dumps(error) + b"\n")
        await out.flush()

    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [
                (b"content-type", TABLE_CONTENT_TYPE if tabled else JSON),
                (b"transfer-encoding", b"chunked"),
            ],
        }
    )
    # granian sends the head with the first body chunk: an empty one sends it now, so the
    # client sees 200 before the first event, as from kube-apiserver.
    await send({"type": "http.response.body", "body": b"", "more_body": True})
    try:
        await _pump_until_over(request, pump(), stopping, seconds)
    finally:
        await out.aclose()
        await events.aclose()
    await send({"type": "http.response.body", "body": b"", "more_body": False})


async def stream_bytes(
    request: Request,
    send: Send,
    content_type: str,
    body: bytes,
    follow: AsyncGenerator[bytes, None],
    stopping: asyncio.Future[Any],
) -> None:
    """``body``, then what ``follow`` yields as it comes, in chunks: until ``follow`` ends, the
    client goes, or the server stops (a followed log, as kubectl logs -f reads it)."""
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [
                (b"content-type", content_type.encode()),
                (b"transfer-encoding", b"chunked"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body, "more_body": True})

    async def pump() -> None:
        async for chunk in follow:
            await send({"type": "http.response.body", "body": chunk, "more_body": True})

    try:
        await _pump_until_over(request, pump(), stopping, None)
    finally:
        await follow.aclose()
    await send({"type": "http.response.body", "body": b"", "more_body": False})


async def _pump_until_over(
    request: Request,
    pump: Coroutine[Any, Any, None],
    stopping: asyncio.Future[Any],
    seconds: float | None,
) -> None:
    """Run a stream's ``pump`` until it ends (its error raised), the client goes, the server
    stops (``stopping``: shared by every stream, so not cancelled here) or ``seconds`` pass."""
    pumping = asyncio.ensure_future(pump)
    disconnected = asyncio.ensure_future(_wait_disconnect(request))
    try:
        done, _ = await asyncio.wait(
            {pumping, disconnected, stopping}, timeout=seconds, return_when=asyncio.FIRST_COMPLETED
        )
        if pumping in done:
            pumping.result()
    finally:
        for task in (pumping, disconnected):
            task.cancel()
        await asyncio.gather(pumping, disconnected, return_exceptions=True)


async def _wait_disconnect(request: Request) -> None:
    while (await request.receive())["type"] != "http.disconnect":
        pass
