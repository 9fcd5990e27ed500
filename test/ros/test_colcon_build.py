"""The package builds the standard ROS 2 way: `colcon build --base-paths . src/camp_msgs`.

Runs scripts/colcon_build.sh (colcon from PyPI, in the project venv, into build/colcon/),
which exits non-zero when colcon fails or an expected installed file is missing.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.ros, pytest.mark.slow]


def test_colcon_builds_both_packages_and_installs_nodes_launch_and_interfaces() -> None:
    venv = Path(sys.executable).parent.parent
    env = {**os.environ, "VENV": str(venv)}
    proc = subprocess.run(
        ["bash", str(ROOT / "scripts" / "colcon_build.sh")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    assert "ok: " in out and "missing:" not in out
    assert "2 packages finished" in out, out[-2000:]
