"""The ``kubelite`` command as users run it: a real process, its exit code and its one line."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1] / "server"))  # harness.py: a real kubelite serve
