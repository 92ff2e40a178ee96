"""``meta.k8s.io/v1`` Table responses, which ``kubectl get`` asks for in its Accept header.

Columns come from the kind's declaration (:attr:`ResourceInfo.table_columns`, rendered by
:func:`render_cell`). Each row carries the object's metadata as a
PartialObjectMetadata (``rows[].object``), without which ``get -A`` shows no namespace and
``--show-labels`` nothing.

A cell (:func:`render_cell`): each :class:`Column` names a JSON path into the object (the
subset of kubectl JSONPath used by CRD ``additionalPrinterColumns``: ``.field``, ``['field']``,
``[n]``, ``[*]`` and ``[?(@.a.b==literal)]``) and a ``render`` mode: ``value``, ``age``,
``count``, ``sum`` or ``ratio`` (documented on :func:`render_cell`). A CRD printer column maps to
``value``, except ``type: date`` columns, which CRs render as ``age``.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from kubelite.api.catalogue import Column, ResourceInfo, json_path_values

CONTENT_TYPE = b"application/json;as=Table;v=v1;g=meta.k8s.io"


def wants_table(accept: str) -> bool:
    """Whether the Accept header asks for a Table (``as=Table;g=meta.k8s.io``)."""
    for part in accept.split(","):
        params = {p.strip() for p in part.split(";")[1:]}
        if "as=Table" in params and "g=meta.k8s.io" in params:
            return True
    return False


def _partial(obj: dict[str, Any], include: str) -> dict[str, Any] | None:
    if include == "None":
        return None
    if include == "Object":
        return obj
    return {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": obj.get("metadata", {}),
    }


def table(
    info: ResourceInfo,
    objects: list[dict[str, Any]],
    resource_version: str,
    *,
    include_object: str = "Metadata",
    continue_token: str = "",
    remaining_item_count: int | None = None,
) -> dict[str, Any]:
    now = datetime.now(UTC)
    columns = info.table_columns
    rows = []
    for obj in objects:
        row: dict[str, Any] = {"cells": [render_cell(c, obj, now) for c in columns]}
        partial = _partial(obj, include_object)
        if partial is not None:
            row["object"] = partial
        rows.append(row)
    metadata: dict[str, Any] = {"resourceVersion": resource_version}
    if continue_token:
        metadata["continue"] = continue_token
    if remaining_item_count is not None:
        metadata["remainingItemCount"] = remaining_item_count
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": metadata,
        "columnDefinitions": [c.definition() for c in columns],
        "rows": rows,
    }


def human_duration(seconds: float) -> str:
    """A duration as kubectl's AGE column shows it (apimachinery ``duration.HumanDuration``):
    ``45s``, ``2m10s``, ``15m``, ``3h12m``, ``20h``, ``4d3h``, ``120d``, ``3y10d``."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        return f"{minutes}m{s % 60}s" if s % 60 else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = s // 3600
    if hours < 8:
        return f"{hours}h{minutes % 60}m" if minutes % 60 else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        return f"{hours // 24}d{hours % 24}h" if hours % 24 else f"{hours // 24}d"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = hours // 24
        return f"{days // 365}y{days % 365}d" if days % 365 else f"{days // 365}y"
    return f"{hours // 24 // 365}y"


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _ratio_side(path: str, obj: Any) -> int | float:
    values = json_path_values(path, obj)
    if values and all(_is_number(v) for v in values):
        total: int | float = sum(values)
        return total
    return len(values)


def _scalar(value: Any) -> Any:
    if isinstance(value, dict | list):
        return json.dumps(value, separators=(",", ":"), sort_keys=True)
    return value


def _terminated_reason(state: dict[str, Any], prefix: str = "") -> str:
    if state.get("reason"):
        return prefix + str(state["reason"])
    if state.get("signal"):
        return f"{prefix}Signal:{state['signal']}"
    return f"{prefix}ExitCode:{state.get('exitCode', 0)}"


def _condition_true(status: dict[str, Any], kind: str) -> bool:
    return any(
        c.get("type") == kind and c.get("status") == "True" for c in status.get("conditions") or []
    )


def pod_status_reason(pod: dict[str, Any]) -> str:
    """A pod's STATUS as ``kubectl get pods`` shows it (kube's printPod,
    pkg/printers/internalversion/printers.go): the reason or phase, then the first init
    container not done (``Init:<reason>``, ``Init:1/2``), else the last container's waiting or
    terminated reason (``ContainerCreating``, ``CrashLoopBackOff``, ``Completed``, ``Error``),
    ``Running``/``NotReady`` when one completed while another runs, ``Terminating`` while a
    non-terminal pod is being deleted."""
    status, spec = pod.get("status") or {}, pod.get("spec") or {}
    reason = str(status.get("reason") or status.get("phase") or "")
    for c in status.get("conditions") or []:
        if (c.get("type"), c.get("status"), c.get("reason")) == (
            "PodScheduled", "False", "SchedulingGated"
        ):  # fmt: skip
            reason = "SchedulingGated"
    init_specs = spec.get("initContainers") or []
    sidecars = {c.get("name") for c in init_specs if c.get("restartPolicy") == "Always"}
    initializing = False
    for i, container in enumerate(status.get("initContainerStatuses") or []):
        state = container.get("state") or {}
        terminated, waiting = state.get("terminated"), state.get("waiting")
        if terminated is not None and terminated.get("exitCode", 0) == 0:
            continue
        if container.get("name") in sidecars and container.get("started"):
            continue
        if terminated is not None:
            reason = _terminated_reason(terminated, "Init:")
        elif waiting and waiting.get("reason") and waiting["reason"] != "PodInitializing":
            reason = f"Init:{waiting['reason']}"
        else:
            reason = f"Init:{i}/{len(init_specs)}"
        initializing = True
        break
    if not initializing or _condition_true(status, "Initialized"):
        running = False
        for container in reversed(status.get("containerStatuses") or []):
            state = container.get("state") or {}
            if (state.get("waiting") or {}).get("reason"):
                reason = str(state["waiting"]["reason"])
            elif state.get("terminated") is not None:
                reason = _terminated_reason(state["terminated"])
            elif state.get("running") is not None and container.get("ready"):
                running = True
        if reason == "Completed" and running:
            reason = "Running" if _condition_true(status, "Ready") else "NotReady"
    meta = pod.get("metadata") or {}
    if meta.get("deletionTimestamp"):
        if status.get("reason") == "NodeLost":
            reason = "Unknown"
        elif status.get("phase") not in ("Succeeded", "Failed"):
            reason = "Terminating"
    return reason


def _sidecars(pod: dict[str, Any]) -> set[Any]:
    init = (pod.get("spec") or {}).get("initContainers") or []
    return {c.get("name") for c in init if c.get("restartPolicy") == "Always"}


def pod_ready(pod: dict[str, Any]) -> str:
    """READY as printPod counts it: ready containers of all, sidecar init containers included."""
    status, spec = pod.get("status") or {}, pod.get("spec") or {}
    sidecars = _sidecars(pod)
    total = len(spec.get("containers") or []) + len(sidecars)
    ready = sum(1 for c in status.get("containerStatuses") or [] if c.get("ready"))
    ready += sum(
        1
        for c in status.get("initContainerStatuses") or []
        if c.get("name") in sidecars and c.get("ready")
    )
    return f"{ready}/{total}"


def pod_restarts(pod: dict[str, Any], now: datetime) -> str:
    """RESTARTS as printPod shows it: the sum of the restart counts, with ``(<age> ago)`` of
    the last termination a restart followed."""
    status = pod.get("status") or {}
    sidecars = _sidecars(pod)
    statuses = list(status.get("containerStatuses") or [])
    statuses += [c for c in status.get("initContainerStatuses") or [] if c.get("name") in sidecars]
    restarts = sum(int(c.get("restartCount") or 0) for c in statuses)
    last: datetime | None = None
    for c in statuses:
        finished = ((c.get("lastState") or {}).get("terminated") or {}).get("finishedAt")
        if isinstance(finished, str):
            try:
                when = datetime.fromisoformat(finished.replace("Z", "+00:00"))
            except ValueError:
                continue
            last = when if last is None or when > last else last
    if restarts and last is not None:
        return f"{restarts} ({human_duration((now - last).total_seconds())} ago)"
    return str(restarts)


def render_cell(column: Column, obj: dict[str, Any], now: datetime | None = None) -> Any:
    """The Table cell ``column`` shows for ``obj`` (a JSON string, number, bool or null).

    By ``column.render``:

    - ``value``: the value at ``json_path``; several matches are joined with ``,``; none gives
      ``column.default``. Maps and lists are rendered as compact JSON.
    - ``age``: the RFC 3339 time at ``json_path`` as :func:`human_duration` of ``now - time``
      (``now`` defaults to the current time); absent or unparseable gives ``column.default``.
    - ``count``: how many nodes the comma-separated paths match together; a path without
      brackets that ends at a map or list counts its entries (``.data,.binaryData`` counts keys;
      ``.secrets[*]`` counts items; ``[?(...)]`` counts the items that pass).
    - ``sum``: the sum of the numbers matched (0 if none).
    - ``ratio``: ``json_path`` is ``<a>/<b>``; the cell is ``"<a>/<b>"`` where each side is the
      sum of its matches if they are numbers, else how many there are (``0`` if none).
    - ``node-status``, ``node-roles``: a Node's STATUS and ROLES (:func:`node_status`,
      :func:`node_roles`; ``json_path`` unused).
    - ``job-status``, ``job-completions``, ``job-duration``: a Job's STATUS, COMPLETIONS and
      DURATION (:func:`job_status`, :func:`job_completions`, :func:`job_duration`).
    """
    render = column.render
    if render == "value":
        values = json_path_values(column.json_path, obj)
        if not values:
            return column.default
        if len(values) == 1:
            return _scalar(values[0])
        return ",".join(str(_scalar(v)) for v in values)
    if render == "age":
        values = json_path_values(column.json_path, obj)
        if not values or not isinstance(values[0], str):
            return column.default
        try:
            then = datetime.fromisoformat(values[0].replace("Z", "+00:00"))
        except ValueError:
            return column.default
        if then.tzinfo is None:
            then = then.replace(tzinfo=UTC)
        current = now if now is not None else datetime.now(UTC)
        return human_duration((current - then).total_seconds())
    if render == "count":
        total = 0
        for path in column.json_path.split(","):
            for value in json_path_values(path, obj):
                bare = "[" not in path  # a path to a map or list itself counts its entries
                total += len(value) if bare and isinstance(value, dict | list) else 1
        return total
    if render == "sum":
        return sum(v for v in json_path_values(column.json_path, obj) if _is_number(v))
    if render == "pod-status":
        return pod_status_reason(obj)
    if render == "pod-ready":
        return pod_ready(obj)
    if render == "pod-restarts":
        return pod_restarts(obj, now or datetime.now(UTC))
    if render == "ratio":
        numerator, _, denominator = column.json_path.partition("/")
        return f"{_ratio_side(numerator, obj)}/{_ratio_side(denominator, obj)}"
    if render == "job-status":
        return job_status(obj)
    if render == "job-completions":
        return job_completions(obj)
    if render == "job-duration":
        return job_duration(obj, now or datetime.now(UTC))
    if render == "node-status":
        return node_status(obj)
    if render == "node-roles":
        return node_roles(obj)
    raise ValueError(f"unknown render mode {render!r} for column {column.name!r}")


#: the node-role label prefix and the old role label printNode reads
NODE_ROLE_PREFIX, NODE_ROLE_LABEL = "node-role.kubernetes.io/", "kubernetes.io/role"


def node_status(node: dict[str, Any]) -> str:
    """printNode's STATUS (pkg/printers/internalversion/printers.go): ``Ready`` or
    ``NotReady`` from the Ready condition (``Unknown`` without one), then
    ``SchedulingDisabled`` when ``spec.unschedulable``."""
    status = []
    for condition in (node.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Ready":
            status = ["Ready" if condition.get("status") == "True" else "NotReady"]
    if not status:
        status = ["Unknown"]
    if (node.get("spec") or {}).get("unschedulable"):
        status.append("SchedulingDisabled")
    return ",".join(status)


def node_roles(node: dict[str, Any]) -> str:
    """printNode's ROLES (``findNodeRoles``): the ``node-role.kubernetes.io/<role>`` labels and
    ``kubernetes.io/role``, sorted and joined with ``,``; ``<none>`` without any."""
    roles = set()
    for key, value in ((node.get("metadata") or {}).get("labels") or {}).items():
        if key.startswith(NODE_ROLE_PREFIX) and key[len(NODE_ROLE_PREFIX) :]:
            roles.add(key[len(NODE_ROLE_PREFIX) :])
        elif key == NODE_ROLE_LABEL and value:
            roles.add(value)
    return ",".join(sorted(roles)) or "<none>"


#: printJob's STATUS: the first condition type that is True, in this order (Terminating, from
#: the deletion timestamp, comes after Failed)
_JOB_STATUS_ORDER = ("Complete", "Failed", "", "Suspended", "FailureTarget", "SuccessCriteriaMet")


def job_status(job: dict[str, Any]) -> str:
    """printJob's STATUS: Complete, Failed, Terminating, Suspended, FailureTarget,
    SuccessCriteriaMet, else Running."""
    true = {
        c.get("type")
        for c in (job.get("status") or {}).get("conditions") or []
        if c.get("status") == "True"
    }
    for kind in _JOB_STATUS_ORDER:
        if not kind:
            if (job.get("metadata") or {}).get("deletionTimestamp"):
                return "Terminating"
        elif kind in true:
            return kind
    return "Running"


def job_completions(job: dict[str, Any]) -> str:
    """printJob's COMPLETIONS: ``succeeded/completions``; without completions ``succeeded/1``,
    or ``succeeded/1 of parallelism`` when more than one pod runs at a time."""
    spec = job.get("spec") or {}
    succeeded = int((job.get("status") or {}).get("succeeded") or 0)
    if spec.get("completions") is not None:
        return f"{succeeded}/{spec['completions']}"
    parallelism = int(spec.get("parallelism") or 0)
    if parallelism > 1:
        return f"{succeeded}/1 of {parallelism}"
    return f"{succeeded}/1"


def job_duration(job: dict[str, Any], now: datetime) -> str:
    """printJob's DURATION: from startTime to completionTime, or to now while not complete;
    empty before it started."""
    status = job.get("status") or {}

    def parsed(text: Any) -> datetime | None:
        if not isinstance(text, str):
            return None
        try:
            return datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            return None

    started = parsed(status.get("startTime"))
    if started is None:
        return ""
    ended = parsed(status.get("completionTime")) or now
    return human_duration((ended - started).total_seconds())
