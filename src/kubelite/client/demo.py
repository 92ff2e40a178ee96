"""``kubelite demo conflict``: optimistic concurrency on a live server, narrated.

Act 1 is the seed scenario: editors A and B read Deployment ``web-server`` at the same
resourceVersion; A changes the image and wins; B changes the replicas and gets 409 Conflict,
whose causes name the field A changed, A's field manager and the version A wrote; B re-reads,
re-applies its change and succeeds; both changes are in the object. Act 2 has many writers
hammering one object with ``update(ref, mutate)``; it counts the conflicts and proves that no
update was lost (the counter equals the number of acknowledged writes, and each writer's
own tally is intact).

Runs against a throwaway ``kubelite serve`` started in a temporary directory (a subprocess: the
client never imports the server); given ``--kubeconfig``, on that server, which must be kubelite
(``KUBECONFIG`` is never used: the demo must not write to a real cluster by accident).
"""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table

from kubelite.client.async_client import AsyncClient
from kubelite.client.errors import Conflict, NotFound
from kubelite.client.kubeconfig import KubeconfigError, load_kubeconfig
from kubelite.client.objects import Object, Ref, resource_version
from kubelite.client.retry import Backoff

NAME = "web-server"
COUNTER = "demo.kubelite.io/updates"
DEPLOYMENT: Object = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": NAME, "labels": {"app": "web"}},
    "spec": {
        "replicas": 3,
        "selector": {"matchLabels": {"app": "web"}},
        "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "web", "image": "nginx:1.25"}]},
        },
    },
}
# Many writers on one object lose many rounds in a row: client-go's DefaultRetry semantics
# (constant delay with jitter), with enough steps for the crowd.
CROWD = Backoff(steps=1000, duration=0.002, factor=1.0, jitter=1.0)


def _image(deployment: Object) -> str:
    return str(deployment["spec"]["template"]["spec"]["containers"][0]["image"])


def _state(title: str, *rows: tuple[str, Object]) -> Table:
    table = Table(title=title, title_justify="left")
    for column in ("who", "resourceVersion", "image", "replicas"):
        table.add_column(column)
    for who, obj in rows:
        table.add_row(who, resource_version(obj), _image(obj), str(obj["spec"]["replicas"]))
    return table


async def seed_scenario(client: AsyncClient, editor_a: AsyncClient, console: Console) -> bool:
    """``editor_a`` writes as field manager ``editor-a``: B's 409 names it."""
    console.rule("[bold]Act 1: two editors, one Deployment")
    with contextlib.suppress(NotFound):
        await client.delete("apps/v1", "Deployment", NAME)
    created = await client.create(DEPLOYMENT)
    console.print(f"Created Deployment [bold]{NAME}[/] at version {resource_version(created)}.")

    a = await client.get("apps/v1", "Deployment", NAME)
    b = await client.get("apps/v1", "Deployment", NAME)
    console.print(_state("A and B read the same version", ("A", a), ("B", b)))

    a["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:1.27"
    a = await editor_a.update(a)
    console.print(
        f"A sets the image to nginx:1.27 and writes with the version it read: "
        f"[green]200 OK[/], now at {resource_version(a)}."
    )

    b["spec"]["replicas"] = 5
    try:
        await client.update(b)
        console.print("[red]B's stale write was accepted: A's change would be lost.[/]")
        return False
    except Conflict as exc:
        console.print(
            f"B sets replicas to 5 and writes with version {resource_version(b)}: "
            f"[yellow]409 {exc.reason}[/]\n  [dim]{exc.message}[/]"
        )
        for change in exc.changes:
            by = f' by "{change.manager}"' if change.manager else ""
            at = f" at resourceVersion {change.resource_version}" if change.resource_version else ""
            field = escape(change.field)
            console.print(f"  the server says why: [bold]{field}[/] {change.change}{by}{at}")

    b = await client.update(
        Ref("apps/v1", "Deployment", NAME), lambda d: d["spec"].update(replicas=5)
    )
    console.print(
        f"B re-reads, re-applies its change and writes again: [green]200 OK[/], "
        f"now at {resource_version(b)}."
    )
    final = await client.get("apps/v1", "Deployment", NAME)
    console.print(_state("The Deployment now", ("server", final)))
    both = _image(final) == "nginx:1.27" and final["spec"]["replicas"] == 5
    verdict = "[green]both changes survived" if both else "[red]a change was lost"
    console.print(Panel(f"{verdict}[/]: A's image and B's replicas.", expand=False))
    return both


async def crowd(client: AsyncClient, console: Console, writers: int, updates: int) -> bool:
    console.rule(f"[bold]Act 2: {writers} writers, {updates} updates each, one object")
    ref = Ref("apps/v1", "Deployment", NAME)

    def reset(d: Object) -> None:
        annotations = d["metadata"].setdefault("annotations", {})
        for key in [k for k in annotations if k.startswith("demo.kubelite.io/")]:
            del annotations[key]
        annotations[COUNTER] = "0"

    await client.update(ref, reset)
    attempts = 0

    def bump(writer: int) -> Any:
        def mutate(d: Object) -> None:
            nonlocal attempts
            attempts += 1
            annotations = d["metadata"]["annotations"]
            annotations[COUNTER] = str(int(annotations[COUNTER]) + 1)
            mine = f"demo.kubelite.io/writer-{writer}"
            annotations[mine] = str(int(annotations.get(mine, "0")) + 1)

        return mutate

    async def writer(i: int) -> None:
        for _ in range(updates):
            await client.update(ref, bump(i), backoff=CROWD)

    with console.status(f"{writers} writers at work..."):
        await asyncio.gather(*(writer(i) for i in range(writers)))
    final = await client.get("apps/v1", "Deployment", NAME)
    annotations = final["metadata"]["annotations"]
    acknowledged = writers * updates
    counter = int(annotations[COUNTER])
    tallies = [int(annotations.get(f"demo.kubelite.io/writer-{i}", "0")) for i in range(writers)]

    table = Table(title="Result", title_justify="left", show_header=False)
    table.add_row("writes acknowledged", str(acknowledged))
    conflicts = attempts - acknowledged  # every extra mutate call followed a 409
    table.add_row("409 Conflicts seen (each re-read and re-applied)", str(conflicts))
    table.add_row("counter on the server", str(counter))
    table.add_row("writers whose own tally is complete", f"{tallies.count(updates)}/{writers}")
    console.print(table)
    intact = counter == acknowledged and tallies == [updates] * writers
    if intact:
        console.print(Panel("[green]No update was lost.[/]", expand=False))
    else:
        console.print(Panel("[red]Updates were lost.[/]", expand=False))
    return intact


@contextlib.contextmanager
def temporary_server() -> Iterator[Path]:
    """A ``kubelite serve --port 0`` in a temporary directory; yields its kubeconfig."""
    with tempfile.TemporaryDirectory(prefix="kubelite-demo-") as tmp:
        data = Path(tmp) / "data"
        process = subprocess.Popen(
            [sys.executable, "-m", "kubelite", "serve", "--port", "0", "--data-dir", str(data)],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        try:
            assert process.stdout is not None
            for line in process.stdout:
                if line.startswith("kubelite serving on "):
                    break
            else:
                raise RuntimeError("kubelite serve did not start")
            yield data / "kubeconfig"
        finally:
            process.terminate()
            try:
                process.wait(20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            if process.stdout is not None:
                process.stdout.close()


class NotKubelite(Exception):
    """The demo was pointed at a server that is not kubelite."""


async def conflict_demo(
    kubeconfig: Path,
    console: Console,
    writers: int = 16,
    updates: int = 10,
    require_kubelite: bool = False,
) -> bool:
    connection = load_kubeconfig(kubeconfig)
    editor_a = AsyncClient(connection, namespace="default", field_manager="editor-a")
    async with AsyncClient(connection, namespace="default") as client, editor_a:
        if require_kubelite:
            version = await client.request("GET", "/version")
            git_version = str(version.get("gitVersion", "")) if isinstance(version, dict) else ""
            if "+kubelite" not in git_version:
                raise NotKubelite(
                    f"{connection.server} is not a kubelite server (version {git_version or '?'}); "
                    "the demo writes a Deployment, so it runs only on kubelite"
                )
        seeded = await seed_scenario(client, editor_a, console)
        hammered = await crowd(client, console, writers, updates)
    return seeded and hammered


def run_conflict_demo(
    kubeconfig: str | None,
    writers: int = 16,
    updates: int = 10,
    console: Console | None = None,
) -> int:
    """The ``kubelite demo conflict`` command; 0 when both acts prove their point."""
    console = console or Console()
    with contextlib.ExitStack() as stack:
        if kubeconfig is None:
            console.print("[dim]Starting a throwaway kubelite server.[/]")
            path = stack.enter_context(temporary_server())
        else:
            path = Path(kubeconfig)
            console.print(f"[dim]Using {path}.[/]")
        try:
            ok = asyncio.run(conflict_demo(path, console, writers, updates, kubeconfig is not None))
        except (NotKubelite, KubeconfigError) as exc:
            print(f"kubelite: {exc}", file=sys.stderr)
            return 1
    return 0 if ok else 1
