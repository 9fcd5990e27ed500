"""The launch file, the parameter file and the node executables agree, and `camp bringup`
runs the three nodes composed in one process end to end (what `make demo` does)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from launch_files import launched_nodes

from camp_planner.cli import main

ROOT = Path(__file__).resolve().parents[2]


def test_launch_file_starts_every_node_of_the_parameter_file() -> None:
    launch = ROOT / "launch" / "namo.launch.py"
    names = launched_nodes(launch)
    assert names == {"tamp_server", "camp_planner", "namo_sim", "camp_executor", "namo_robot"}
    params = yaml.safe_load((ROOT / "config" / "ros" / "namo_params.yaml").read_text())
    assert names == set(params)
    assert all("ros__parameters" in block for block in params.values())
    scripts = set(
        re.findall(r'"(\w+) = camp_planner\.ros\.\w+:main\w*"', (ROOT / "setup.py").read_text())
    )
    assert names <= scripts
    assert "params_file" in launch.read_text()


def test_bad_parameter_files_get_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("camp_planner: {domain: namo}\n")
    assert main(["bringup", "namo", "--params", str(bad), "--once"]) == 2
    assert "ros__parameters" in capsys.readouterr().err
    assert main(["bringup", "namo", "--params", str(tmp_path / "none.yaml"), "--once"]) == 2
    assert "no parameter file" in capsys.readouterr().err


def _tiny_params(namo_tiny: tuple[Path, Path], tmp_path: Path) -> Path:
    """The shipped NAMO parameter file pointed at the tiny configuration and its bundle."""
    config, bundle = namo_tiny
    params = yaml.safe_load((ROOT / "config" / "ros" / "namo_params.yaml").read_text())
    for block in params.values():
        p = block["ros__parameters"]
        p["config_file"] = str(config)
        if "selector_bundle" in p:
            p["selector_bundle"] = str(bundle)
            p["artifacts"] = str(tmp_path / "artifacts")
    params["namo_sim"]["ros__parameters"]["render_dir"] = str(tmp_path / "renders")
    params["namo_sim"]["ros__parameters"]["split"] = "test"  # the tiny config has 2 train tasks
    path = tmp_path / "namo.yaml"
    path.write_text(yaml.safe_dump(params))
    return path


@pytest.mark.ros
@pytest.mark.pybullet
@pytest.mark.fast_downward
@pytest.mark.slow
def test_bringup_once_runs_the_composed_system_to_the_goal(
    namo_tiny: tuple[Path, Path], tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """The open loop to the goal, every line of its output (the planning worker's too,
    captured at the descriptors) said once."""
    path = _tiny_params(namo_tiny, tmp_path)
    assert (
        main(["bringup", "namo", "--params", str(path), "--once", "--task", "4", "--wait", "300"])
        == 0
    )
    out, err = capfd.readouterr()
    assert "goal reached: True" in out and "[bringup] context:" in out
    assert "task_planning" in out and "dropped objects" in out
    assert list((tmp_path / "renders").glob("namo_execution_*.png"))
    lines = [
        re.sub(r"^\[(\w+)\] \[[0-9.]+\]", r"[\1]", line)
        for line in (out + err).splitlines()
        if line.strip()
    ]
    assert sorted({line for line in lines if lines.count(line) > 1}) == []


@pytest.mark.ros
@pytest.mark.parametrize("system", ["namo", "manip"])
def test_the_rviz_config_shows_the_topics_and_frame_the_nodes_use(system: str) -> None:
    from geometry_msgs.msg import PoseStamped

    from camp_planner.ros.common import (
        BASE_PATH_TOPIC,
        EXECUTION_MARKERS_TOPIC,
        EXECUTION_PATH_TOPIC,
        MARKERS_TOPIC,
    )

    rviz = yaml.safe_load((ROOT / "config" / "ros" / f"{system}.rviz").read_text())
    manager = rviz["Visualization Manager"]
    params = yaml.safe_load((ROOT / "config" / "ros" / f"{system}_params.yaml").read_text())
    frame = params[f"{system}_sim"]["ros__parameters"]["frame_id"]
    assert manager["Global Options"]["Fixed Frame"] == frame
    by_topic = {d["Topic"]["Value"]: d["Class"] for d in manager["Displays"] if "Topic" in d}
    assert by_topic == {
        f"/{MARKERS_TOPIC}": "rviz_default_plugins/MarkerArray",
        f"/{BASE_PATH_TOPIC}": "rviz_default_plugins/Path",
        f"/{EXECUTION_MARKERS_TOPIC}": "rviz_default_plugins/MarkerArray",
        f"/{EXECUTION_PATH_TOPIC}": "rviz_default_plugins/Path",
    }
    markers = next(
        d for d in manager["Displays"] if d.get("Topic", {}).get("Value") == f"/{MARKERS_TOPIC}"
    )
    # Both topics are latched: a volatile subscription would miss a plan sent before RViz.
    assert all(
        d["Topic"]["Durability Policy"] == "Transient Local"
        for d in manager["Displays"]
        if "Topic" in d
    )
    # Every namespace the node draws is listed (and so shown) in the config.
    from nav_msgs.msg import Path as PathMsg

    from camp_planner.domains.namo.scene_io import scene_from_task
    from camp_planner.domains.namo.world import generate_task
    from camp_planner.ros.convert import scene_markers, scene_to_msg

    task = generate_task(0, 0)
    msg = scene_to_msg(scene_from_task(task))
    path = PathMsg()
    path.poses = [PoseStamped(), PoseStamped()]
    box = next(o.id for o in msg.objects if o.movable)
    every = scene_markers(
        msg, allowed_rooms=[(0, task.room_rect(0))], dropped=[box], base_path=path, label="x"
    )
    drawn = {m.ns for m in every.markers[1:]}
    assert drawn == set(markers["Namespaces"])
    launch = (ROOT / "launch" / f"{system}.launch.py").read_text()
    assert f'"{system}.rviz"' in launch and '"rviz"' in launch


@pytest.mark.ros
@pytest.mark.pybullet
@pytest.mark.fast_downward
@pytest.mark.slow
def test_two_namespaced_systems_run_side_by_side_each_to_its_goal(
    namo_tiny: tuple[Path, Path], tmp_path: Path
) -> None:
    """Two bring-ups in one ROS domain, under robot1 and robot2: each serves its own
    select_context and topics, nothing sits at the root, and each reaches its goal."""
    import os
    import subprocess
    import sys
    import time

    import rclpy

    path = _tiny_params(namo_tiny, tmp_path)
    runs = {
        ns: subprocess.Popen(
            [sys.executable, "-m", "camp_planner.cli", "bringup", "namo", "--params", str(path)]
            + ["--once", "--task", task, "--wait", "300", "--namespace", ns],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=dict(os.environ),
        )
        for ns, task in (("robot1", "4"), ("robot2", "0"))
    }
    context = rclpy.Context()
    rclpy.init(context=context)
    node = rclpy.create_node("namespace_test_observer", context=context)
    seen: set[str] = set()
    try:
        deadline = time.monotonic() + 240.0
        wanted = {f"/{ns}/select_context" for ns in runs}
        while time.monotonic() < deadline and not wanted <= seen:
            seen |= {name for name, _ in node.get_service_names_and_types()}
            seen |= {name for name, _ in node.get_topic_names_and_types()}
            time.sleep(0.5)
        outputs = {ns: run.communicate(timeout=400)[0] for ns, run in runs.items()}
    finally:
        for run in runs.values():
            if run.poll() is None:
                run.kill()
        node.destroy_node()
        rclpy.shutdown(context=context)
    assert wanted <= seen, sorted(seen)
    assert {"/robot1/camp/plan", "/robot2/camp/plan", "/robot1/camp/scene"} <= seen
    assert not {"/select_context", "/camp/plan", "/camp/scene", "/plan"} & seen
    for ns, out in outputs.items():
        assert runs[ns].returncode == 0, out[-3000:]
        assert "goal reached: True" in out and f"namespace /{ns}" in out


@pytest.mark.ros
@pytest.mark.pybullet
@pytest.mark.fast_downward
@pytest.mark.slow
def test_bringup_closed_loop_once_replans_after_the_disturbance_and_draws_it(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """What `make demo` runs: the shipped closed loop executes test task 4 through the
    controller actions, replans once after the seeded box on the path, reaches the goal and
    writes the picture of the execution; each event said once."""
    params = yaml.safe_load((ROOT / "config" / "ros" / "namo_params.yaml").read_text())
    renders = tmp_path / "renders"
    params["camp_executor"]["ros__parameters"]["render_dir"] = str(renders)
    params["tamp_server"]["ros__parameters"]["artifacts"] = str(tmp_path / "artifacts")
    path = tmp_path / "namo.yaml"
    path.write_text(yaml.safe_dump(params))
    args = ["bringup", "namo", "--params", str(path), "--closed-loop", "--once", "--wait", "300"]
    assert main(args) == 0
    out, err = capfd.readouterr()
    assert out.count("[closed-loop] goal reached in ") == 1, out
    assert out.count("[closed-loop] replan 1: step 3/") == 1 and "replan 2:" not in out
    assert "[closed-loop] namo_robot: goal reached: True" in out
    pictures = sorted(renders.glob("namo_closed_loop_*.png"))
    assert [p.name for p in pictures] == ["namo_closed_loop_1.png"]
    assert err.count("[camp_executor]: execution picture: ") == 1
    assert err.count("[camp_executor]: execution reached the goal") == 1
