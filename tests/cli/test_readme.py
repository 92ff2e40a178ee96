"""README.md's walk-throughs, followed top to bottom as a reader would: its shell blocks run in
one directory against one real ``kubelite serve`` (started there as ``make serve`` starts it, but
on a free port), then its Python blocks. Each command must succeed, except those the README shows
failing, which must fail with the text it shows.

Not run: ``make serve``/``make test`` (the server is started here instead), the etcd walk-through
(fixed ports, an etcd and a ``pip install``), and the Python fragments that are not programs (the
409's ``except Conflict`` excerpt, and the Informer controller, which runs until stopped)."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from harness import Server, start_server, stop_server

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
BIN = Path(sys.executable).parent
FENCE = re.compile(r"^```(?P<lang>\w*)\n(?P<body>.*?)^```$", re.DOTALL | re.MULTILINE)
HEREDOC = re.compile(r"<<'?(?P<end>\w+)'?")
#: the commands the README shows failing (by how they start), and a text of what it shows
FAILING = {
    "kubectl replace -f demo.yaml": "the object has been modified; please apply your changes",
    "KUBECONFIG=alice.kubeconfig kubectl get secrets -n default": (
        'secrets is forbidden: User "alice" cannot list resource "secrets" in API group "" in'
        ' the namespace "default"'
    ),
    "kubectl create configmap unowned": (
        "configmaps \"unowned\" is forbidden: ValidatingAdmissionPolicy 'owner-label' with"
        " binding 'owner-label' denied request: every ConfigMap needs an owner label"
    ),
    "kubectl get configmap dependent": "NotFound",
    "kubectl patch widget w1": 'spec: Invalid value: "object": size must be at most 10',
}


def sections() -> dict[str, list[tuple[str, str]]]:
    """Each ``## `` heading of the README to its fenced blocks, (language, text), in order."""
    found: dict[str, list[tuple[str, str]]] = {}
    for part in re.split(r"^## ", README.read_text(), flags=re.MULTILINE)[1:]:
        heading, _, body = part.partition("\n")
        found[heading] = [(m["lang"], m["body"]) for m in FENCE.finditer(body)]
    return found


def blocks(heading: str, lang: str) -> list[str]:
    return [text for language, text in sections()[heading] if language == lang]


def commands(block: str) -> list[str]:
    """A shell block's commands: each line that is not a comment, with its here-document."""
    found: list[str] = []
    lines = iter(block.splitlines())
    for line in lines:
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        command = [line]
        heredoc = HEREDOC.search(line)
        if heredoc:
            for body in lines:
                command.append(body)
                if body == heredoc["end"]:
                    break
        found.append("\n".join(command))
    return found


@dataclass
class Outcome:
    command: str
    status: int
    output: str


def run_shell(commands: list[str], cwd: Path, env: dict[str, str]) -> list[Outcome]:
    """The commands in one bash, one after the other (variables carry), each one's exit status
    and output."""
    script = ["exec 2>&1"]
    for number, command in enumerate(commands):
        script += [f"echo '@@@ start {number}'", command, f'echo "@@@ end {number} $?"']
    result = subprocess.run(
        ["bash", "-c", "\n".join(script)],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    outcomes = []
    for number, command in enumerate(commands):
        start = result.stdout.index(f"@@@ start {number}\n") + len(f"@@@ start {number}\n")
        end = result.stdout.index(f"@@@ end {number} ", start)
        status = int(result.stdout[end:].split("\n", 1)[0].split()[-1])
        outcomes.append(Outcome(command, status, result.stdout[start:end]))
    return outcomes


def check(outcomes: list[Outcome]) -> None:
    for outcome in outcomes:
        failing = [text for start, text in FAILING.items() if outcome.command.startswith(start)]
        if failing:
            assert outcome.status != 0, f"{outcome.command!r} succeeded:\n{outcome.output}"
            assert failing[0] in " ".join(outcome.output.split()), outcome.output
        else:
            assert outcome.status == 0, f"{outcome.command!r} failed:\n{outcome.output}"


@pytest.fixture
def reader(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """The reader's directory (the repository's ``tests`` reachable from it, as in a checkout)
    and environment: ``.venv/bin`` on the PATH, nothing of this session's kube settings."""
    (tmp_path / "tests").symlink_to(ROOT / "tests")
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBE")}
    env.update(PATH=f"{BIN}{os.pathsep}{env.get('PATH', '')}", HOME=str(tmp_path))
    return tmp_path, env


def serve(cwd: Path, *options: str) -> Server:
    """``make serve``'s server, state in ``./kubelite-data``, on a free port."""
    return start_server(cwd / "kubelite-data", None, *options)


def test_every_failure_shown_is_checked() -> None:
    shown = []
    for heading in sections():
        for block in blocks(heading, "sh"):
            lines = block.splitlines()
            for number, line in enumerate(lines[:-1]):
                after = lines[number + 1].lstrip()
                if not line.lstrip().startswith("#") and after.startswith(("# Error", "# error")):
                    shown.append(line)
    assert len(shown) == 3
    assert all(any(line.startswith(start) for start in FAILING) for line in shown), shown


@pytest.mark.timeout(300)
def test_the_shell_walk_throughs_run_top_to_bottom(
    reader: tuple[Path, dict[str, str]],
) -> None:
    cwd, env = reader
    assert blocks("Quickstart: kubectl against kubelite", "sh")[0].startswith("make serve\n")
    server = serve(cwd)
    first: list[str] = []
    try:
        for heading in (
            "Quickstart: kubectl against kubelite",
            "Users and RBAC",
            "Admission: policies and webhooks",
            "Walk-through: owners and garbage collection",
        ):
            for block in blocks(heading, "sh"):
                if not block.startswith("make serve\n"):
                    first.extend(commands(block))
        check(run_shell(first, cwd, env))  # in one shell: the quickstart's export holds
        env["KUBECONFIG"] = str(cwd / "kubelite-data" / "kubeconfig")

        restart, rest = blocks("Revision history beyond compaction", "sh")
        (line,) = commands(restart)
        assert line.startswith(".venv/bin/kubelite serve "), line
        options = shlex.split(line)[2:]
        at = options.index("--data-dir")
        assert options.pop(at + 1) == "./kubelite-data"
        del options[at]
        stop_server(server)
        server = serve(cwd, *options)
        history = run_shell(commands(rest), cwd, env)
        check(history)
        timeline = next(o.output for o in history if o.command.startswith("kubelite history"))
        assert timeline.split()[:4] == ["REVISION", "TIME", "MANAGER", "OPERATION"], timeline
        assert '~ .data.level: "info" -> "debug"' in timeline, timeline

        (crd,) = blocks("Walk-through: a CustomResourceDefinition", "sh")
        check(run_shell(commands(crd), cwd, env))
    finally:
        stop_server(server)


@pytest.mark.timeout(120)
def test_the_python_programs_run_after_the_quickstart(
    reader: tuple[Path, dict[str, str]],
) -> None:
    cwd, env = reader
    server = serve(cwd)
    try:
        quickstart = blocks("Quickstart: kubectl against kubelite", "sh")[1]
        check(run_shell(commands(quickstart), cwd, env))

        (client,) = blocks("Python client", "python")[:1]
        ran = subprocess.run(
            [sys.executable, "-c", client], cwd=cwd, env=env, capture_output=True, text=True,
            timeout=60,
        )  # fmt: skip
        assert ran.returncode == 0, ran.stderr
        assert ran.stdout.startswith("409 Conflict Operation cannot be fulfilled"), ran.stdout
    finally:
        stop_server(server)

    (storage,) = blocks("Quickstart: the storage engine", "python")
    program = storage.replace("sqlite:///tmp/demo/", f"sqlite://{cwd}/demo/")
    assert program != storage
    ran = subprocess.run(
        [sys.executable, "-c", program], cwd=cwd, env=env, capture_output=True, text=True,
        timeout=60,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.startswith("conflict; current is b'{\"a\": 2}'\n"), ran.stdout
