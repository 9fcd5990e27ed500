"""The ROS benchmark: bad arguments are refused; a tiny run against real nodes (separate
processes, its own ROS_DOMAIN_ID) answers every call and writes its rows."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "bench_ros.py"


def _run(args: list[str], domain: int) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST",
        "ROS_DOMAIN_ID": str(domain),
    }
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_bad_arguments_are_refused() -> None:
    proc = _run(["--calls", "0"], 1 + (os.getpid() + 7) % 100)
    assert proc.returncode == 2 and "--calls" in proc.stderr


@pytest.mark.ros
@pytest.mark.slow
def test_a_tiny_run_measures_selection_and_the_floor(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    proc = _run(["--calls", "5", "--tasks", "0", "--json", str(out)], 1 + (os.getpid() + 13) % 100)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    rows = json.loads(out.read_text())
    for key in ("select_rtt_ms", "select_features_rtt_ms", "floor_scene_rtt_ms"):
        assert len(rows[key]) == 5 and all(v > 0 for v in rows[key])
    assert rows["plans"] == []
    assert set(rows["in_process_ms"]) >= {"request_deserialize", "select", "features_select"}
    assert "floor:" in proc.stdout and "round trip p50" in proc.stdout
