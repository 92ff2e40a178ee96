"""Events as kube's components record them: :class:`EventRecorder` writes core/v1 Events about an
object, in client-go's two styles.

- ``legacy`` (client-go ``tools/record``, what the kubelet and most of kube-controller-manager
  use): ``source: {component, host}``, ``firstTimestamp``, ``lastTimestamp``, ``count``; an
  event identical to one recorded before (same object, type, reason and message: the
  ``EventCorrelator``'s key) is not written again but counted: its ``count`` goes up and its
  ``lastTimestamp`` moves (``tools/record/events_cache.go``), which ``kubectl describe`` shows as
  ``(x3 over 2m)``.
- ``series`` (client-go ``tools/events``, the scheduler's): ``eventTime`` (MicroTime),
  ``reportingController``, ``reportingInstance``, ``action``; a repeat becomes the event's
  ``series`` (``count``, ``lastObservedTime``), as ``tools/events/event_broadcaster.go`` does.

The name is ``<object name>.<hex of the Unix time in nanoseconds>``; an event about a
cluster-scoped object (a Node) goes to namespace ``default``, as both recorders place it.
Recording never raises: a failed write is logged and dropped, as client-go drops it (an event
is best effort, never a reason for a controller's sync to fail).
"""

from __future__ import annotations

import logging
import socket
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Literal

from kubelite.api.catalogue import Catalogue
from kubelite.api.controllers.leaderelection import microtime
from kubelite.api.encoding.stored import now
from kubelite.api.errors import APIError
from kubelite.api.machinery.registry import Registry

log = logging.getLogger(__name__)

Obj = dict[str, Any]
NORMAL, WARNING = "Normal", "Warning"
#: client-go's ``maxLruCacheEntries``: the events remembered for counting repeats
CACHE_SIZE = 4096
#: client-go's note limit (``tools/events``: 1 kB), applied to both styles' messages
MAX_MESSAGE_BYTES = 1024


@dataclass(slots=True)
class _Recorded:
    namespace: str
    name: str
    count: int


def reference(obj: Obj, field_path: str | None = None) -> Obj:
    """An ObjectReference to ``obj`` (``involvedObject`` / ``regarding``)."""
    meta = obj["metadata"]
    ref: Obj = {"kind": obj.get("kind", "")}
    if obj.get("apiVersion"):  # ObjectReference's omitempty: the kubelet's node reference has none
        ref["apiVersion"] = obj["apiVersion"]
    if meta.get("namespace"):
        ref["namespace"] = meta["namespace"]
    ref["name"] = meta.get("name", "")
    if meta.get("uid"):
        ref["uid"] = meta["uid"]
    if meta.get("resourceVersion"):
        ref["resourceVersion"] = meta["resourceVersion"]
    if field_path:
        ref["fieldPath"] = field_path
    return ref


def truncated(message: str) -> str:
    """At most MAX_MESSAGE_BYTES, ending ``...`` when cut (the scheduler's ``truncateMessage``)."""
    data = message.encode()
    if len(data) <= MAX_MESSAGE_BYTES:
        return message
    return data[: MAX_MESSAGE_BYTES - 4].decode(errors="ignore") + " ..."


class EventRecorder:
    """Records events about objects as ``component`` (``kubelet``, ``default-scheduler``,
    ``replicaset-controller``...), on ``host`` (the legacy style's ``source.host``: a kubelet's
    node) or as ``instance`` (the series style's ``reportingInstance``)."""

    def __init__(
        self,
        registry: Registry,
        catalogue: Catalogue,
        component: str,
        *,
        style: Literal["legacy", "series"] = "legacy",
        host: str | None = None,
        instance: str | None = None,
    ) -> None:
        self.registry = registry
        self.info = catalogue.require("", "v1", "events")
        self.component = component
        self.style = style
        self.host = host
        self.instance = instance or f"{component}-{socket.gethostname()}"
        self._seen: OrderedDict[tuple[str, ...], _Recorded] = OrderedDict()

    async def record(
        self,
        obj: Obj,
        type_: str,
        reason: str,
        message: str,
        *,
        field_path: str | None = None,
        action: str | None = None,
    ) -> None:
        """An event about ``obj``; a repeat of one recorded before is counted on it."""
        message = truncated(message)
        ref = reference(obj, field_path)
        key = (
            ref["kind"], ref.get("namespace", ""), ref["name"], ref.get("uid", ""),
            field_path or "", type_, reason, message, action or "",
        )  # fmt: skip
        try:
            seen = self._seen.get(key)
            if seen is not None:
                self._seen.move_to_end(key)
                if await self._repeat(seen):
                    return
            namespace = ref.get("namespace") or "default"
            name = f"{ref['name']}.{time.time_ns():x}"
            body = self._event(namespace, name, ref, type_, reason, message, action)
            await self.registry.create(self.info, namespace, body, field_manager=self.component)
            self._seen[key] = _Recorded(namespace, name, 1)
            if len(self._seen) > CACHE_SIZE:
                self._seen.popitem(last=False)
        except APIError as exc:
            log.debug("event %s about %s/%s not recorded: %s", reason, ref.get("namespace"),
                      ref["name"], exc.message)  # fmt: skip
        except Exception:
            log.exception("event %s about %s not recorded", reason, ref["name"])

    def _event(
        self,
        namespace: str,
        name: str,
        ref: Obj,
        type_: str,
        reason: str,
        message: str,
        action: str | None,
    ) -> Obj:
        body: Obj = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": namespace},
            "involvedObject": ref,
            "reason": reason,
            "message": message,
            "type": type_,
        }
        if self.style == "legacy":
            stamp = now()
            source = {"component": self.component}
            if self.host:
                source["host"] = self.host
            body.update(source=source, firstTimestamp=stamp, lastTimestamp=stamp, count=1)
            body.update(reportingComponent=self.component, reportingInstance=self.host or "")
        else:
            body.update(
                eventTime=microtime(),
                reportingComponent=self.component,
                reportingInstance=self.instance,
                action=action or "",
            )
        return body

    async def _repeat(self, seen: _Recorded) -> bool:
        """Count a repeat on the event recorded before; False when it is gone (then a new one is
        recorded)."""
        seen.count += 1
        if self.style == "legacy":
            patch: Obj = {"count": seen.count, "lastTimestamp": now()}
        else:
            patch = {"series": {"count": seen.count, "lastObservedTime": microtime()}}
        try:
            await self.registry.patch(
                self.info, seen.namespace, seen.name, "application/merge-patch+json", patch,
                field_manager=self.component,
            )  # fmt: skip
        except APIError as exc:
            if exc.code == 404:
                return False
            raise
        return True
