"""The simulation's knobs for test authors: the pod annotations ``kubelite.dev/simulate-*`` the
simulated kubelet reads when it first sees a pod (kubelite's own API, not Kubernetes behaviour),
and the image names and ids a containerd node reports.

Per container, ``kubelite.dev/simulate-<knob>.<container>`` wins over
``kubelite.dev/simulate-<knob>`` (every container):

- ``start-seconds``: from the kubelet's first sight to the sandbox (pod IP) and the containers'
  start (default 0: one ContainerCreating write first);
- ``run-seconds[.c]``: the container exits this long after it started (default: never for
  restartPolicy Always and for sidecars, at once for Never/OnFailure pods and init containers);
- ``exit-code[.c]`` (default 0), ``exit-reason[.c]`` (``Completed`` for 0, else ``Error``);
  a non-zero code on an Always pod without run-seconds exits at once (CrashLoopBackOff);
- ``fail-times[.c]``: the first N runs exit non-zero (the exit code, or 1), then the rules above;
- ``ready-seconds[.c]``: ready this long after the start; ``never-ready[.c]: "true"``;
- ``image-pull``: ``ok``, ``fail`` (ErrImagePull, then ImagePullBackOff) or ``slow:<seconds>``;
- ``stop-seconds``: the time to exit after SIGTERM (exit 137 when it reaches the grace period);
- ``log[.c]``: what ``pods/log`` answers for the container.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

Obj = dict[str, Any]
PREFIX = "kubelite.dev/simulate-"


def _number(text: str | None, default: float | None) -> float | None:
    if text is None:
        return default
    try:
        value = float(text)
    except ValueError:
        return default
    return max(value, 0.0)


@dataclass(frozen=True, slots=True)
class ContainerKnobs:
    """What one container does in the simulation."""

    #: seconds from start to exit; None: runs until stopped
    run_seconds: float | None
    exit_code: int
    exit_reason: str
    fail_times: int
    ready_seconds: float
    never_ready: bool
    log: str

    def run(self, number: int) -> tuple[float | None, int, str]:
        """Run ``number`` (1 for the first): how long it lasts (None: forever), its exit code
        and its terminated reason."""
        if number <= self.fail_times:
            code = self.exit_code or 1
            return self.run_seconds or 0.0, code, self._reason(code)
        return self.run_seconds, self.exit_code, self._reason(self.exit_code)

    def _reason(self, code: int) -> str:
        if self.exit_reason:
            return self.exit_reason
        return "Completed" if code == 0 else "Error"


@dataclass(frozen=True, slots=True)
class PodKnobs:
    start_seconds: float
    #: ``ok``, ``fail`` or ``slow``
    image_pull: str
    pull_seconds: float
    stop_seconds: float
    containers: dict[str, ContainerKnobs]


def read_knobs(pod: Obj) -> PodKnobs:
    """The knobs of ``pod`` from its annotations, with the defaults its restart policy gives."""
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    spec = pod.get("spec") or {}
    policy = spec.get("restartPolicy") or "Always"

    def value(knob: str, container: str | None = None) -> str | None:
        if container is not None and f"{PREFIX}{knob}.{container}" in annotations:
            return str(annotations[f"{PREFIX}{knob}.{container}"])
        found = annotations.get(f"{PREFIX}{knob}")
        return None if found is None else str(found)

    containers: dict[str, ContainerKnobs] = {}
    for kind, items in (("init", spec.get("initContainers") or []),
                        ("regular", spec.get("containers") or [])):  # fmt: skip
        for container in items:
            name = str(container.get("name") or "")
            sidecar = kind == "init" and container.get("restartPolicy") == "Always"
            try:
                code = int(value("exit-code", name) or 0)
            except ValueError:
                code = 0
            forever = sidecar or (kind == "regular" and policy == "Always" and code == 0)
            run = _number(value("run-seconds", name), None if forever else 0.0)
            try:
                fail_times = int(value("fail-times", name) or 0)
            except ValueError:
                fail_times = 0
            containers[name] = ContainerKnobs(
                run_seconds=run,
                exit_code=code,
                exit_reason=value("exit-reason", name) or "",
                fail_times=max(fail_times, 0),
                ready_seconds=_number(value("ready-seconds", name), 0.0) or 0.0,
                never_ready=(value("never-ready", name) or "").lower() == "true",
                log=value("log", name) or "",
            )
    pull = (value("image-pull") or "ok").strip()
    pull_seconds = 0.0
    if pull.startswith("slow:"):
        pull_seconds = _number(pull[5:], 0.0) or 0.0
        pull = "slow"
    elif pull not in ("ok", "fail"):
        pull = "ok"
    return PodKnobs(
        start_seconds=_number(value("start-seconds"), 0.0) or 0.0,
        image_pull=pull,
        pull_seconds=pull_seconds,
        stop_seconds=_number(value("stop-seconds"), 0.0) or 0.0,
        containers=containers,
    )


def container_log(pod: Obj, container: str) -> str:
    """``kubelite.dev/simulate-log[.<container>]`` of ``pod`` (empty by default)."""
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    found = annotations.get(f"{PREFIX}log.{container}", annotations.get(f"{PREFIX}log", ""))
    return str(found)


def qualified_image(image: str) -> str:
    """The image as containerd reports it (docker's ParseNormalizedNamed with the default tag):
    ``nginx`` -> ``docker.io/library/nginx:latest``, ``nginx:1.27`` ->
    ``docker.io/library/nginx:1.27``, ``quay.io/x/y`` -> ``quay.io/x/y:latest``."""
    name, at, digest = image.partition("@")
    first, slash, rest = name.partition("/")
    if slash and ("." in first or ":" in first or first == "localhost"):
        domain, path = first, rest
    else:
        domain, path = "docker.io", name
    if domain == "docker.io" and "/" not in path:
        path = f"library/{path}"
    last = path.rsplit("/", 1)[-1]
    if not at and ":" not in last:
        path += ":latest"
    return f"{domain}/{path}{at}{digest}"


def image_id(image: str) -> str:
    """A stable repo digest for the image (``docker.io/library/nginx@sha256:<64 hex>``)."""
    qualified = qualified_image(image)
    repository = qualified.partition("@")[0]
    last = repository.rsplit("/", 1)
    if ":" in last[-1]:
        repository = repository[: repository.rindex(":")]
    digest = hashlib.sha256(qualified.encode()).hexdigest()
    return f"{repository}@sha256:{digest}"


def image_size(image: str) -> int:
    """A stable, plausible image size in bytes (for the Pulled event's text)."""
    return 10_000_000 + int(hashlib.sha256(image.encode()).hexdigest()[:8], 16) % 90_000_000
