"""The repository stands alone: no tracked file points at notes kept outside it (a sibling
directory of specifications or a guide). Sources are cited as upstream Kubernetes files instead.
The forbidden strings are built here so this file does not match itself."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FORBIDDEN = ("../" + "shared", "shared" + "/spec", "GUIDE" + ".md")


def tracked_files(root: Path) -> list[Path]:
    """The files git tracks under ``root`` (skips the test when it is not a git checkout)."""
    if shutil.which("git") is None or not (root / ".git").exists():
        pytest.skip("not a git checkout")
    listing = subprocess.run(
        ["git", "ls-files", "-z"], cwd=root, capture_output=True, check=True
    ).stdout.decode()
    return [root / name for name in listing.split("\0") if name]


def mentions(files: list[Path]) -> list[str]:
    """``path:line: string`` for every forbidden string in the given files."""
    found = []
    for path in files:
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, FileNotFoundError, IsADirectoryError):
            continue
        for number, line in enumerate(text.splitlines(), 1):
            for string in FORBIDDEN:
                if string in line:
                    found.append(f"{path}:{number}: {string}")
    return found


def test_no_tracked_file_points_outside_the_repository() -> None:
    files = tracked_files(ROOT)
    assert any(path.name == "pyproject.toml" for path in files)
    assert mentions(files) == []


@pytest.mark.parametrize("string", FORBIDDEN)
def test_a_planted_mention_is_found(tmp_path: Path, string: str) -> None:
    clean = tmp_path / "clean.py"
    clean.write_text('"""Cites k8s.io/apiserver ``pkg/endpoints/handlers/create.go``."""\n')
    planted = tmp_path / "planted.md"
    planted.write_text(f"# Notes\n\nThe order of a write: see {string} for details.\n")
    assert mentions([clean]) == []
    assert mentions([clean, planted]) == [f"{planted}:3: {string}"]
