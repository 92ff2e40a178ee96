"""From a fresh install: kubelite built from this tree into a new virtual environment, and a
user's project whose tests use the fixtures through the ``pytest11`` entry point alone (no
``-p``, no conftest). The new environment borrows the dependencies of the one running the tests
(a ``.pth`` line), so only kubelite itself is installed."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from recipes import PYTEST_INI, write_project

ROOT = Path(__file__).resolve().parents[2]

WHERE_FROM = """
import kubelite.testing as plugin

def test_the_plugin_is_the_installed_one(kubelite, pytestconfig):
    assert plugin.__file__.startswith({venv!r})
    assert pytestconfig.pluginmanager.has_plugin("kubelite.testing")
"""


def make_venv(tmp: Path) -> Path:
    """A venv without pip whose site-packages also sees this environment's packages."""
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    purelib = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    Path(purelib, "shared-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return venv


def install_kubelite(tmp: Path, venv: Path) -> None:
    """pip install (no deps) of a copy of this tree's package. The build is isolated: the
    package needs setuptools>=77 (a license expression), which pip fetches (and caches)."""
    package = tmp / "package"
    package.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, package / name)
    shutil.copytree(ROOT / "src", package / "src", ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install",
         "--quiet", "--no-deps", str(package)],
        check=True, capture_output=True,
    )  # fmt: skip


@pytest.mark.timeout(300)
def test_a_users_project_gets_the_fixtures_from_a_fresh_install(tmp_path: Path) -> None:
    venv = make_venv(tmp_path)
    install_kubelite(tmp_path, venv)
    project = tmp_path / "project"
    tests = write_project(project, only=("tests/test_basics.py",))
    (project / "pytest.ini").write_text(PYTEST_INI)
    (project / "tests" / "test_where_from.py").write_text(WHERE_FROM.format(venv=str(venv)))
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTEST_ADDOPTS")}
    env.pop("PYTEST_DISABLE_PLUGIN_AUTOLOAD", None)
    result = subprocess.run(
        [venv / "bin" / "python", "-m", "pytest", "-q", "-p", "no:cacheprovider",
         *tests, "tests/test_where_from.py"],
        cwd=project, env=env, capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert "4 passed" in result.stdout
