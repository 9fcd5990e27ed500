"""Load and faults over ROS (scripts/stress_ros.py at the issue's scale, nodes in separate
processes): 1,000 /select_context calls from 4 processes all answered; the planning worker,
the TAMP server and the camp_planner node each killed mid-plan and the next valid scene still
planned; no process left behind."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

pytestmark = [pytest.mark.ros, pytest.mark.pybullet, pytest.mark.fast_downward, pytest.mark.slow]


def test_load_and_faults_leave_every_scene_planned(
    namo_tiny: tuple[Path, Path], tmp_path: Path
) -> None:
    import importlib.util

    assert os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] == "LOCALHOST"
    config, bundle = namo_tiny
    common = f"domain: namo\n    config_file: {config}\n    selector_bundle: {bundle}\n"
    common += f"    artifacts: {tmp_path / 'artifacts'}\n    planner: tamp\n"
    params = tmp_path / "params.yaml"
    params.write_text(
        f"camp_planner:\n  ros__parameters:\n    {common}    timeout_s: 30.0\n"
        "    server_lost_s: 3.0\n    server_wait_s: 60.0\n"
        f"tamp_server:\n  ros__parameters:\n    {common}    timeout_grace_s: 5.0\n"
    )
    root = Path(__file__).resolve().parents[2]
    spec = importlib.util.spec_from_file_location("stress_ros", root / "scripts/stress_ros.py")
    assert spec is not None and spec.loader is not None
    stress = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(stress)
    out = tmp_path / "stress.json"
    args = ["--params", str(params), "--calls", "1000", "--clients", "4", "--json", str(out)]
    code = stress.main(args)
    results = json.loads(out.read_text())
    load = results["load"]
    assert load["answered"] == 1000 and not load["failures"], load["failures"][:5]
    for fault in results["faults"]:
        assert fault["recovered"], fault
    assert not results["unexpected_exits"]
    assert not results["left_running"], results["left_running"]
    assert code == 0
