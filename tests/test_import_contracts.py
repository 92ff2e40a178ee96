"""The import contracts of pyproject.toml prove what ARCHITECTURE.md says: each breaks when a
forbidden import is added. Every case plants one import in a copy of the package and runs
``lint-imports`` over that copy."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")

TOP = "Layers point one way"
STORAGE = "Inside storage"
API = "Inside api"
NO_KIND = "No generic package and no server module imports a kind"
CLIENT = "The client shares api types only"
ALL = (TOP, STORAGE, API, NO_KIND, CLIENT)


def lint(tmp_path: Path, plant: dict[str, str]) -> dict[str, str]:
    """Each contract's verdict (KEPT or BROKEN) over a copy of src/ with ``plant``'s lines
    appended to (or, for a new file, written as) the modules named by their path."""
    src = tmp_path / "src"
    shutil.copytree(ROOT / "src" / "kubelite", src / "kubelite")
    for relative, line in plant.items():
        path = src / "kubelite" / relative
        existing = path.read_text() if path.exists() else ""
        path.write_text(existing + "\n" + line + "\n")
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    env = {**os.environ, "PYTHONPATH": str(src)}
    result = subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    text = re.sub(r"\s*\n\s*", " ", result.stdout)  # contract names wrap at 80 columns
    verdicts = {}
    for name in ALL:
        found = re.search(re.escape(name) + r".*? (KEPT|BROKEN)", text)
        assert found is not None, result.stdout + result.stderr
        verdicts[name] = found.group(1)
    assert (result.returncode != 0) == ("BROKEN" in verdicts.values())
    return verdicts


def test_every_contract_is_kept_by_the_code_as_it_is(tmp_path: Path) -> None:
    assert lint(tmp_path, {}) == dict.fromkeys(ALL, "KEPT")


@pytest.mark.parametrize(
    ("plant", "broken"),
    [
        # a machinery package importing a kind: both the api layers and the kind ban
        (
            {"api/admission/policy/plugins.py": "import kubelite.api.kinds.core.namespaces"},
            {API, NO_KIND},
        ),
        ({"api/auth/rbacindex.py": "import kubelite.api.controllers.crd"}, {API, NO_KIND}),
        ({"api/machinery/generic.py": "import kubelite.api.kinds"}, {API, NO_KIND}),
        # the server's request path importing a kind (only assembly and serve may)
        ({"server/handlers.py": "import kubelite.api.kinds.core"}, {NO_KIND}),
        ({"server/flowcontrol/matching.py": "import kubelite.api.controllers.crd"}, {NO_KIND}),
        ({"server/handlers.py": "import kubelite.api.simulation.config"}, {NO_KIND}),
        # the simulated cluster sits above kube-controller-manager's controllers
        ({"api/controllers/namespace.py": "import kubelite.api.simulation.config"}, {API}),
        # the generic store reaching up into admission's plugins, or a codec into the store
        ({"api/machinery/generic.py": "import kubelite.api.admission.rules"}, {API}),
        ({"api/encoding/jsoncodec.py": "import kubelite.api.machinery.generic"}, {API}),
        ({"api/catalogue/types.py": "import kubelite.api.machinery.selectors"}, {API}),
        # siblings of one layer stay independent
        ({"api/cel/values.py": "import kubelite.api.auth.rbac"}, {API}),
        # a new api module outside every layer: the layers are exhaustive
        ({"api/newconcern.py": "X = 1"}, {API}),
        ({"storage/newthing.py": "X = 1"}, {STORAGE}),
        # storage's own order, the timing wrapper included
        ({"storage/interface.py": "import kubelite.storage.timed"}, {STORAGE}),
        ({"storage/timed.py": "import kubelite.storage.urls"}, {STORAGE}),
        # the top-level order and the client's
        ({"storage/errors.py": "import kubelite.api.errors"}, {TOP}),
        # (and through the server, whose assembly imports the kinds, the api's own order)
        ({"api/machinery/rest.py": "import kubelite.server.app"}, {TOP, API}),
        ({"client/__init__.py": "import kubelite.server.app"}, {CLIENT}),
    ],
    ids=lambda value: next(iter(value)) if isinstance(value, dict) else None,
)
def test_a_forbidden_import_breaks_its_contract(
    tmp_path: Path, plant: dict[str, str], broken: set[str]
) -> None:
    verdicts = lint(tmp_path, plant)
    assert {name for name, verdict in verdicts.items() if verdict == "BROKEN"} == broken
