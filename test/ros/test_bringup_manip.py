"""The manipulation system (paper domain D4) over ROS: its launch file, parameter file and
``manip_sim`` executable agree, and `camp bringup manip --once` runs camp_planner,
tamp_server and manip_sim (composed, and one process per node as the launch file does) to
the goal of a test task."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from launch_files import launched_nodes

from camp_planner.cli import main

ROOT = Path(__file__).resolve().parents[2]
PARAMS = ROOT / "config" / "ros" / "manip_params.yaml"


def test_the_manip_launch_file_starts_every_node_of_its_parameter_file() -> None:
    launch = ROOT / "launch" / "manip.launch.py"
    names = launched_nodes(launch)
    assert names == {"tamp_server", "camp_planner", "manip_sim", "camp_executor", "manip_robot"}
    params = yaml.safe_load(PARAMS.read_text())
    assert names == set(params)
    assert params["camp_planner"]["ros__parameters"]["domain"] == "manip"
    assert params["tamp_server"]["ros__parameters"]["domain"] == "manip"
    scripts = set(
        re.findall(r'"(\w+) = camp_planner\.ros\.\w+:main\w*"', (ROOT / "setup.py").read_text())
    )
    assert names <= scripts
    assert "manip_params.yaml" in launch.read_text()
    assert PARAMS.read_text().startswith("# ")


def test_the_bringup_starts_manip_s_sim_node() -> None:
    from camp_planner.ros.bringup import node_command, system_nodes

    assert system_nodes("manip") == ("tamp_server", "camp_planner", "manip_sim")
    command = node_command("manip_sim", PARAMS)
    assert command[1:4] == ["-m", "camp_planner.ros.sim_node", "manip"]


def _params(tmp_path: Path) -> Path:
    params = yaml.safe_load(PARAMS.read_text())
    for block in params.values():
        p = block["ros__parameters"]
        if "selector_bundle" in p:
            p["selector_bundle"] = "none"  # the universal context: the same plan on every run
            p["artifacts"] = str(tmp_path / "artifacts")
    params["manip_sim"]["ros__parameters"]["render_dir"] = str(tmp_path / "renders")
    path = tmp_path / "manip.yaml"
    path.write_text(yaml.safe_dump(params))
    return path


@pytest.mark.ros
@pytest.mark.pybullet
@pytest.mark.fast_downward
@pytest.mark.slow
@pytest.mark.parametrize("processes", [False, True], ids=["composed", "processes"])
def test_bringup_once_runs_the_manip_system_to_the_goal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], processes: bool
) -> None:
    args = ["bringup", "manip", "--params", str(_params(tmp_path)), "--once", "--wait", "300"]
    assert main([*args, "--processes"] if processes else args) == 0
    out = capsys.readouterr().out
    assert "goal reached: True" in out and "[bringup] context: universal" in out
    assert "task_planning" in out and "manip_sim executed" in out
    found = re.search(r"plan: (\d+) steps, (\d+) base poses, (\d+) arm waypoints", out)
    assert found is not None
    steps, poses, waypoints = (int(v) for v in found.groups())
    assert steps >= 6 and poses > steps and waypoints >= 8  # two picks, two places at least
    assert list((tmp_path / "renders").glob("manip_execution_*.png"))
