"""The recipes of docs/testing.md as files: each fenced block whose first line is a comment
naming a path (``# tests/test_x.py``) is that file of a user's project."""

from __future__ import annotations

import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "testing.md"
# A project's own settings (pytest-asyncio, installed here, warns when its loop scope is unset).
PYTEST_INI = "[pytest]\nasyncio_default_fixture_loop_scope = function\n"
BLOCK = re.compile(r"```(?:python|yaml)\n# (?P<path>[\w./-]+)\n(?P<body>.*?)```", re.DOTALL)


def recipe_files() -> dict[str, str]:
    """Path in the project to its text, in the order the document shows them."""
    return {m["path"]: m["body"] for m in BLOCK.finditer(DOC.read_text())}


def write_project(root: Path, only: tuple[str, ...] = ()) -> list[str]:
    """The recipes' files under ``root`` (just those named in ``only``, when given, and the
    non-test files they read); returns the test files written."""
    tests = []
    for path, body in recipe_files().items():
        is_test = Path(path).name.startswith("test_")
        if only and is_test and path not in only:
            continue
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(body)
        if is_test:
            tests.append(path)
    return tests
