"""pybullet loaded without its start-up line: a planning worker must not print it again."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = [pytest.mark.pybullet]

LINE = "pybullet build time"


def _output(code: str) -> str:
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    return run.stdout + run.stderr


def test_pybullet_imported_quietly_prints_nothing_and_works() -> None:
    assert LINE in _output("import pybullet")  # the line the quiet import exists to drop
    quiet = _output(
        "from camp_planner.sim.quiet import import_pybullet_quietly as q; q(); import pybullet; "
        "c = pybullet.connect(pybullet.DIRECT); print('client', c); pybullet.disconnect(c)"
    )
    assert LINE not in quiet and "client 0" in quiet
