"""``pods/<name>/log`` and the subresources that connect to a container (``exec``, ``attach``,
``portforward``), for a cluster whose containers are simulated.

- ``log`` (kube's LogREST, pkg/registry/core/pod/rest/log.go, and the kubelet's
  validateContainerLogStatus in pkg/kubelet/kubelet_pods.go): the container is the one named by
  ``container=``, else the pod's only container (400 ``a container name must be specified for
  pod <p>, choose one of: [a b]`` when it has several, init containers first; ``container <c>
  is not valid for pod <p>`` for a name it lacks). A pod not bound to a node answers nothing. A
  container that has not started answers kube's 400 ``container "<c>" in pod "<p>" is waiting
  to start: <reason>``; one that runs or ran answers the text of the pod's annotation
  ``kubelite.dev/simulate-log[.<c>]`` (empty by default) as ``text/plain``; ``previous=true``
  needs a run that ended (``previous terminated container "<c>" in pod "<p>" not found``).
  ``tailLines`` and ``limitBytes`` cut it as the kubelet does. ``follow=true`` on a running
  container keeps the stream open (a simulated container logs nothing more) until that run
  ends or the pod is deleted, as the kubelet's follow ends with the container's log.
- ``exec``, ``attach``, ``portforward``: no container runs, so each answers 400 saying so.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping
from typing import Any

from kubelite.api import errors
from kubelite.api.catalogue import ResourceInfo, Subresource
from kubelite.api.machinery.generic import GenericStore
from kubelite.api.machinery.rest import Context, GetOptions, Streamed, WatchOptions

Obj = dict[str, Any]
ANNOTATION = "kubelite.dev/simulate-log"
CONNECT_KINDS = {"exec": "PodExecOptions", "attach": "PodAttachOptions",
                 "portforward": "PodPortForwardOptions"}  # fmt: skip


def container_names(pod: Obj) -> list[str]:
    """podutil.VisitContainers' order: init containers, containers, ephemeral containers."""
    spec = pod.get("spec") or {}
    return [
        str(c.get("name") or "")
        for key in ("initContainers", "containers", "ephemeralContainers")
        for c in spec.get(key) or []
    ]


def _status_of(pod: Obj, container: str) -> Obj | None:
    status = pod.get("status") or {}
    for key in ("containerStatuses", "initContainerStatuses", "ephemeralContainerStatuses"):
        for found in status.get(key) or []:
            if found.get("name") == container:
                return dict(found)
    return None


def log_text(pod: Obj, container: str, previous: bool) -> str:
    """The log of ``container`` as the kubelet would serve it; 400 with its texts when none."""
    name = pod["metadata"]["name"]
    status = _status_of(pod, container)
    if status is None:
        raise errors.bad_request(f'container "{container}" in pod "{name}" is not available')
    state, last = status.get("state") or {}, (status.get("lastState") or {}).get("terminated")
    if previous:
        if not last or not last.get("containerID"):
            raise errors.bad_request(
                f'previous terminated container "{container}" in pod "{name}" not found'
            )
    elif "running" not in state and "terminated" not in state and not last:
        reason = (state.get("waiting") or {}).get("reason") or ""
        if reason == "ErrImagePull":
            why = "image can't be pulled"
        elif reason == "ImagePullBackOff":
            why = "trying and failing to pull image"
        elif reason:
            why = reason
        else:
            raise errors.bad_request(
                f'container "{container}" in pod "{name}" is waiting to start - no logs yet'
            )
        raise errors.bad_request(
            f'container "{container}" in pod "{name}" is waiting to start: {why}'
        )
    annotations = pod["metadata"].get("annotations") or {}
    return str(annotations.get(f"{ANNOTATION}.{container}", annotations.get(ANNOTATION, "")))


def _cut(text: str, query: Mapping[str, str]) -> str:
    tail = query.get("tailLines")
    if tail is not None and tail.lstrip("-").isdigit():
        lines = text.splitlines(keepends=True)
        text = "".join(lines[len(lines) - int(tail) :]) if int(tail) > 0 else ""
    limit = query.get("limitBytes")
    if limit is not None and limit.isdigit():
        text = text.encode()[: int(limit)].decode(errors="ignore")
    return text


class PodLogREST:
    """``GET pods/<name>/log``."""

    object_info = None

    def __init__(self, pods: GenericStore, info: ResourceInfo) -> None:
        self.pods = pods
        self.info = info

    async def stream(self, ctx: Context, name: str, query: Mapping[str, str]) -> Streamed:
        pod = await self.pods.get(ctx, name, GetOptions())
        names = container_names(pod)
        container = query.get("container", "")
        if not container:
            if len(pod.get("spec", {}).get("containers") or []) == 1:
                container = str(pod["spec"]["containers"][0].get("name") or "")
            elif not names:
                raise errors.bad_request(f"a container name must be specified for pod {name}")
            else:
                raise errors.bad_request(
                    f"a container name must be specified for pod {name}, choose one of: "
                    f"[{' '.join(names)}]"
                )
        elif container not in names:
            raise errors.bad_request(f"container {container} is not valid for pod {name}")
        if not (pod.get("spec") or {}).get("nodeName"):
            return Streamed("text/plain", b"")
        previous = _flag(query, "previous")
        text = _cut(log_text(pod, container, previous), query)
        status = _status_of(pod, container) or {}
        if _flag(query, "follow") and not previous and "running" in (status.get("state") or {}):
            follow = self._while_running(ctx, pod, container, status.get("containerID"))
            return Streamed("text/plain", text.encode(), follow)
        return Streamed("text/plain", text.encode())

    async def _while_running(
        self, ctx: Context, pod: Obj, container: str, run: object
    ) -> AsyncGenerator[bytes, None]:
        """Nothing, until the run ``run`` (a containerID) of ``container`` is no longer running
        or the pod is gone: a simulated container logs nothing after its annotation's text."""
        meta = pod["metadata"]
        events = self.pods.watch(ctx, WatchOptions(resource_version=meta["resourceVersion"]))
        try:
            async for event in events:
                if event.object["metadata"].get("uid") != meta.get("uid"):
                    continue
                status = _status_of(event.object, container) or {}
                running = "running" in (status.get("state") or {})
                if event.type == "DELETED" or not running or status.get("containerID") != run:
                    return
        finally:
            await events.aclose()
        return
        yield b""  # pragma: no cover  (an async generator that yields nothing)


def _flag(query: Mapping[str, str], name: str) -> bool:
    return query.get(name, "").lower() in ("1", "t", "true")


class PodConnectREST:
    """``pods/<name>/exec|attach|portforward`` (GET and POST): 400, no container runs."""

    object_info = None

    def __init__(self, pods: GenericStore, info: ResourceInfo, name: str) -> None:
        self.pods = pods
        self.info = info
        self.name = name
        self.subresource_info = Subresource(name, "", "v1", CONNECT_KINDS[name], ("create", "get"))

    async def connect(self, ctx: Context, name: str, query: Mapping[str, str]) -> Streamed:
        await self.pods.get(ctx, name, GetOptions())  # 404 for a pod that is not there
        raise errors.bad_request(
            f"kubelite simulates containers: pods/{self.name} is not supported (no container runs)"
        )
