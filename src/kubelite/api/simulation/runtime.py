"""The simulated container runtime of one pod: its sandbox, its containers' runs, restarts and
back-offs, image pulls and stops, as a state machine driven by time (no container runs).

:meth:`PodRuntime.step` applies the transitions due at a time, one stage at a time (the sandbox,
then one init container's change, then the regular containers' changes), so that the kubelet
writes the pod's status between stages as a real one would (ContainerCreating before Running).
It queues the kubelet's events (pkg/kubelet/events, kuberuntime_container.go, images/
image_manager.go texts) in :attr:`PodRuntime.events`; :meth:`PodRuntime.next_due` says when to
look again (the kubelet sets a timer, never polls).

Back-offs follow client-go's flowcontrol.Backoff as the kubelet uses it: a container's first exit
restarts it at once; a later exit within the back-off waits 10 s, doubling to 300 s
(CrashLoopBackOff), the entry forgotten after twice the cap without an exit; image pulls the
same. Every wait is multiplied by the simulation's back-off scale; the texts say kube's values.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from kubelite.api.simulation.knobs import PodKnobs, image_id, image_size, qualified_image

Obj = dict[str, Any]

BACKOFF_INITIAL, BACKOFF_MAX = 10.0, 300.0
NORMAL, WARNING = "Normal", "Warning"


def go_duration(seconds: float) -> str:
    """A time.Duration as Go prints it (``10s``, ``1m20s``, ``5m0s``, ``1.234s``, ``523ms``)."""
    if seconds < 1:
        ms = int(seconds * 1000)
        return f"{ms}ms" if ms else "0s"
    if seconds < 60:
        text = f"{int(seconds * 1000) / 1000:.3f}".rstrip("0").rstrip(".")
        return f"{text}s"
    whole = int(seconds)
    minutes, secs = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes}m{secs}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes}m{secs}s"


@dataclass(slots=True)
class Backoff:
    """One flowcontrol.Backoff entry (its duration in kube's seconds, unscaled)."""

    duration: float = 0.0
    last: float = 0.0

    def in_backoff(self, since: float, now: float, scale: float) -> bool:
        return self.duration > 0 and now - since < self.duration * scale

    def next(self, at: float, scale: float) -> None:
        if self.duration == 0 or at - self.last > 2 * BACKOFF_MAX * scale:
            self.duration = BACKOFF_INITIAL
        else:
            self.duration = min(self.duration * 2, BACKOFF_MAX)
        self.last = at


@dataclass(slots=True)
class Container:
    name: str
    image: str
    pull_policy: str
    #: ``init``, ``sidecar`` or ``regular``
    kind: str
    state: str = "waiting"
    reason: str = "ContainerCreating"
    message: str = ""
    started_at: float = 0.0
    finished_at: float = 0.0
    exit_code: int = 0
    term_reason: str = ""
    container_id: str = ""
    restart_count: int = 0
    runs: int = 0
    last: Obj | None = None
    #: when the current run ends (None: never), and when it turns ready (None: never)
    exit_at: float | None = None
    ready_at: float | None = None
    #: when a wait (pull, back-off) ends
    wait_until: float | None = None
    pulling: bool = False
    backoff: Backoff = field(default_factory=Backoff)
    pull_backoff: Backoff = field(default_factory=Backoff)

    @property
    def field_path(self) -> str:
        return f"spec.{'containers' if self.kind == 'regular' else 'initContainers'}{{{self.name}}}"

    def terminated(self) -> Obj:
        """The state of the run that ended (ContainerStateTerminated, Go's field order)."""
        return {
            "exitCode": self.exit_code,
            "reason": self.term_reason,
            "startedAt": stamp(self.started_at),
            "finishedAt": stamp(self.finished_at),
            "containerID": self.container_id,
        }

    def ready(self, now: float) -> bool:
        return self.state == "running" and self.ready_at is not None and now >= self.ready_at


def stamp(when: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(when))


def parse_stamp(text: Any, default: float) -> float:
    """An RFC 3339 time as a Unix time (``default`` when absent or unreadable)."""
    if not isinstance(text, str):
        return default
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return default


class PodRuntime:
    """One pod's simulated sandbox and containers, from the kubelet's first sight at ``now``."""

    def __init__(self, pod: Obj, knobs: PodKnobs, now: float, scale: float) -> None:
        meta, spec = pod["metadata"], pod.get("spec") or {}
        self.uid = str(meta.get("uid") or "")
        self.full_name = f"{meta.get('name')}_{meta.get('namespace')}({self.uid})"
        self.knobs = knobs
        self.scale = scale
        self.policy = str(spec.get("restartPolicy") or "Always")
        self.host_network = bool(spec.get("hostNetwork"))
        self.seen_at = now
        #: the Node it runs on and the hostIP it had (set by the kubelet)
        self.node = ""
        self.host_ip = ""
        self.sandbox_at = now + knobs.start_seconds
        self.sandbox_ready = False
        self.ip = ""
        self.terminating = False
        self.stopped = False
        self.terminal = False
        self.events: list[tuple[Container, str, str, str]] = []
        self.containers: list[Container] = []
        for kind, items in (("init", spec.get("initContainers") or []),
                            ("regular", spec.get("containers") or [])):  # fmt: skip
            for c in items:
                sidecar = kind == "init" and c.get("restartPolicy") == "Always"
                self.containers.append(
                    Container(
                        name=str(c.get("name") or ""),
                        image=str(c.get("image") or ""),
                        pull_policy=str(c.get("imagePullPolicy") or "IfNotPresent"),
                        kind="sidecar" if sidecar else kind,
                        reason="PodInitializing"
                        if spec.get("initContainers")
                        else "ContainerCreating",
                    )
                )

    def adopt(self, status: Obj, now: float) -> None:
        """Carry on from the status a previous kubelet wrote (this server restarted, or another
        one led before): the sandbox and its IP, each container's run, restarts and last state,
        so a running pod is not started again."""
        if status.get("podIP"):
            self.sandbox_ready, self.ip = True, str(status["podIP"])
        found = {
            s.get("name"): s
            for key in ("initContainerStatuses", "containerStatuses")
            for s in status.get(key) or []
        }
        for c in self.containers:
            seen = found.get(c.name)
            if not seen:
                continue
            c.restart_count = int(seen.get("restartCount") or 0)
            last = (seen.get("lastState") or {}).get("terminated")
            c.last = dict(last) if last else None
            state = seen.get("state") or {}
            knob = self.knobs.containers[c.name]
            if "running" in state:
                c.runs = c.restart_count + 1
                c.state, c.reason = "running", ""
                c.started_at = parse_stamp(state["running"].get("startedAt"), now)
                c.container_id = str(seen.get("containerID") or "")
                duration, c.exit_code, c.term_reason = knob.run(c.runs)
                c.exit_at = None if duration is None else c.started_at + duration
                c.ready_at = None if knob.never_ready else c.started_at + knob.ready_seconds
            elif "terminated" in state or last:
                ended = state.get("terminated") or last or {}
                c.runs = c.restart_count + 1
                c.state = "terminated"
                c.exit_code = int(ended.get("exitCode") or 0)
                c.term_reason = str(ended.get("reason") or "")
                c.started_at = parse_stamp(ended.get("startedAt"), now)
                c.finished_at = parse_stamp(ended.get("finishedAt"), now)
                c.container_id = str(ended.get("containerID") or "")
                if "terminated" not in state:
                    c.last = None  # it is the run that ended: lastState again once restarted

    # -- what the status reads ---------------------------------------------------------------

    @property
    def init(self) -> list[Container]:
        return [c for c in self.containers if c.kind != "regular"]

    @property
    def regular(self) -> list[Container]:
        return [c for c in self.containers if c.kind == "regular"]

    def next_due(self, now: float) -> float | None:
        """The earliest time something changes on its own (None: nothing will): an exit, the
        end of a wait, a container turning ready."""
        if self.stopped or self.terminal:
            return None
        if not self.sandbox_ready:
            return self.sandbox_at
        times = []
        for c in self.containers:
            for when in (c.exit_at, c.wait_until):
                if when is not None:
                    times.append(when)
            if c.state == "running" and c.ready_at is not None and c.ready_at > now:
                times.append(c.ready_at)
        return min(times) if times else None

    # -- transitions ---------------------------------------------------------------------------

    def step(self, now: float) -> bool:
        """Apply the next stage of transitions due at ``now``; whether anything changed."""
        if self.stopped or self.terminal:
            return False
        if self.terminating:
            return self._stop_due(now)
        if not self.sandbox_ready:
            if now < self.sandbox_at:
                return False
            self.sandbox_ready = True
            return True
        changed = False
        for c in self.init:
            if c.kind == "sidecar":
                if c.state == "running":
                    changed |= self._exit_due(c, now)
                    continue
                changed |= self._advance(c, now)
                if c.state != "running":
                    return changed  # the next init container waits for this sidecar
                continue
            if c.state == "terminated" and c.exit_code == 0:
                continue
            if c.state == "running":
                return self._exit_due(c, now) or changed
            return self._advance(c, now) or changed
        for c in self.regular:
            if c.state == "running":
                changed |= self._exit_due(c, now)
            else:
                changed |= self._advance(c, now)
        return changed

    def _advance(self, c: Container, now: float) -> bool:
        """A container not running: start it, or its restart, when its wait is over."""
        if c.wait_until is not None and now < c.wait_until:
            return False
        if c.state == "terminated":
            if not self._restarts(c):
                return False
            if c.backoff.in_backoff(c.finished_at, now, self.scale):
                if c.reason == "CrashLoopBackOff" and c.state == "waiting":
                    return False
                return self._crash_loop(c, now)
            c.backoff.next(c.finished_at, self.scale)
        elif c.state == "waiting" and c.reason == "CrashLoopBackOff":
            c.backoff.next(c.finished_at, self.scale)
        return self._start(c, now)

    def _restarts(self, c: Container) -> bool:
        if c.kind == "sidecar":
            return True
        if self.policy == "Always" and c.kind == "regular":
            return True
        return self.policy in ("Always", "OnFailure") and c.exit_code != 0

    def _crash_loop(self, c: Container, now: float) -> bool:
        c.last = c.terminated()
        c.state, c.reason = "waiting", "CrashLoopBackOff"
        c.message = (
            f"back-off {go_duration(c.backoff.duration)} restarting failed "
            f"container={c.name} pod={self.full_name}"
        )
        c.wait_until = c.finished_at + c.backoff.duration * self.scale
        self.events.append((c, WARNING, "BackOff",
                            f"Back-off restarting failed container {c.name} in pod "
                            f"{self.full_name}"))  # fmt: skip
        return True

    def _start(self, c: Container, now: float) -> bool:
        if not self._pulled(c, now):
            return True
        if c.state == "terminated":
            c.last = c.terminated()
        if c.runs:
            c.restart_count += 1
        c.runs += 1
        duration, code, reason = self.knobs.containers[c.name].run(c.runs)
        knob = self.knobs.containers[c.name]
        c.state, c.reason, c.message = "running", "", ""
        c.started_at, c.container_id = now, f"containerd://{secrets.token_hex(32)}"
        c.exit_at = None if duration is None else now + duration
        c.exit_code, c.term_reason = code, reason
        c.ready_at = None if knob.never_ready else now + knob.ready_seconds
        c.wait_until = None
        self.events.append((c, NORMAL, "Created", "Container created"))
        self.events.append((c, NORMAL, "Started", "Container started"))
        return True

    def _pulled(self, c: Container, now: float) -> bool:
        """Whether the image is there to start ``c``; else the pull goes on (or failed)."""
        pull = self.knobs.image_pull
        if c.pulling:  # a slow pull that ended
            c.pulling = False
            took = self.knobs.pull_seconds
            self._pulled_event(c, took)
            return True
        present = pull == "ok"
        if c.pull_policy == "Never" or (c.pull_policy == "IfNotPresent" and present):
            if present:
                self.events.append((c, NORMAL, "Pulled",
                                    f'Container image "{c.image}" already present on machine and '
                                    "can be accessed by the pod"))  # fmt: skip
                return True
            c.state, c.reason = "waiting", "ErrImageNeverPull"
            c.message = f'Container image "{c.image}" is not present with pull policy of Never'
            self.events.append((c, WARNING, "ErrImageNeverPull", c.message))
            self.events.append((c, WARNING, "Failed", "Error: ErrImageNeverPull"))
            c.wait_until = None
            return False
        if pull == "fail":
            return self._pull_failed(c, now)
        self.events.append((c, NORMAL, "Pulling", f'Pulling image "{c.image}"'))
        if pull == "slow" and self.knobs.pull_seconds > 0:
            c.pulling = True
            c.wait_until = now + self.knobs.pull_seconds
            return False
        self._pulled_event(c, 0.0)
        return True

    def _pulled_event(self, c: Container, took: float) -> None:
        self.events.append((c, NORMAL, "Pulled",
                            f'Successfully pulled image "{c.image}" in {go_duration(took)} '
                            f"({go_duration(took)} including waiting). Image size: "
                            f"{image_size(c.image)} bytes."))  # fmt: skip

    def _pull_failed(self, c: Container, now: float) -> bool:
        if c.pull_backoff.in_backoff(c.pull_backoff.last, now, self.scale):
            if c.reason != "ImagePullBackOff":
                c.state, c.reason = "waiting", "ImagePullBackOff"
                c.message = (
                    f'Back-off pulling image "{c.image}": ErrImagePull: {self._pull_error(c)}'
                )
                self.events.append((c, NORMAL, "BackOff", f'Back-off pulling image "{c.image}"'))
                self.events.append((c, WARNING, "Failed", "Error: ImagePullBackOff"))
            last = c.pull_backoff.last + c.pull_backoff.duration * self.scale
            c.wait_until = last
            return False
        self.events.append((c, NORMAL, "Pulling", f'Pulling image "{c.image}"'))
        error = self._pull_error(c)
        self.events.append((c, WARNING, "Failed", f'Failed to pull image "{c.image}": {error}'))
        self.events.append((c, WARNING, "Failed", "Error: ErrImagePull"))
        c.pull_backoff.next(now, self.scale)
        c.state, c.reason, c.message = "waiting", "ErrImagePull", error
        # the kubelet's next sync (soon) meets the back-off: ImagePullBackOff
        c.wait_until = now + min(1.0, c.pull_backoff.duration * self.scale / 2)
        return False

    @staticmethod
    def _pull_error(c: Container) -> str:
        ref = qualified_image(c.image)
        return (
            f'rpc error: code = NotFound desc = failed to pull and unpack image "{ref}": '
            f'failed to resolve reference "{ref}": {ref}: not found'
        )

    def _exit_due(self, c: Container, now: float) -> bool:
        if c.exit_at is None or now < c.exit_at:
            return False
        self._exit(c, c.exit_at, c.exit_code, c.term_reason)
        return True  # a restart (or the back-off) comes at the next stage

    def _exit(self, c: Container, at: float, code: int, reason: str) -> None:
        c.state, c.finished_at, c.exit_at, c.ready_at = "terminated", at, None, None
        c.exit_code, c.term_reason = code, reason

    # -- stopping --------------------------------------------------------------------------------

    def terminate(self, now: float, grace: float) -> None:
        """SIGTERM to every running container (Killing events): each exits after
        ``stop-seconds`` with 0, or at the grace period's end with 137 when it lasts that long."""
        self.terminating = True
        stop = self.knobs.stop_seconds
        for c in self.containers:
            c.wait_until = None
            if c.state != "running":
                continue
            self.events.append((c, NORMAL, "Killing", f"Stopping container {c.name}"))
            if stop and stop >= grace:
                c.exit_at, c.exit_code, c.term_reason = now + grace, 137, "Error"
            else:
                c.exit_at, c.exit_code, c.term_reason = now + stop, 0, "Completed"

    def _stop_due(self, now: float) -> bool:
        changed = False
        for c in self.containers:
            if c.state == "running" and c.exit_at is not None and c.exit_at <= now:
                self._exit(c, c.exit_at, c.exit_code, c.term_reason)
                changed = True
        if all(c.state != "running" for c in self.containers):
            self.stopped = True
            changed = True
        return changed

    def image(self, c: Container) -> str:
        return qualified_image(c.image) if c.container_id else c.image

    def image_id(self, c: Container) -> str:
        return image_id(c.image) if c.container_id else ""
