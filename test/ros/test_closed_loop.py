"""The closed loop over ROS, both domains: camp_executor plans for the scene the simulated robot
publishes, carries the plan out through FollowPath, FollowJointTrajectory and GripperCommand,
and replans once from where the robot is after a seeded disturbance. Faults: a controller that
rejects its goal gives a named error and the executor keeps serving; a cancel stops the robot
within one control period; an executor killed mid-plan and started again does not replay the
old plan."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.ros, pytest.mark.pybullet, pytest.mark.fast_downward, pytest.mark.slow]

NAMO_TASK = 4  # the shipped parameter file's task: 16 steps, a box moved out of the way
MANIP_TASK = 0


def _wait(condition: Callable[[], object], timeout: float = 60.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return bool(condition())


@pytest.fixture
def loop(tmp_path: Path) -> Iterator[Callable[..., Any]]:
    from camp_planner.ros.closed_loop import LoopRig

    made: list[LoopRig] = []

    def make(domain: str, executor: bool = True, **robot: Any) -> LoopRig:
        made.append(LoopRig(domain, robot, executor=executor, artifacts=tmp_path / "artifacts"))
        return made[-1]

    try:
        yield make
    finally:
        for one in made:
            one.close()


@pytest.mark.parametrize(
    ("domain", "task", "disturbance"),
    [
        ("namo", NAMO_TASK, "block@base#3"),
        ("manip", MANIP_TASK, "slip@base#2"),
    ],
)
def test_undisturbed_the_goal_is_reached_without_a_replan_and_disturbed_with_one(
    loop: Callable[..., Any], domain: str, task: int, disturbance: str
) -> None:
    from camp_msgs.action import ExecutePlan
    from camp_planner.ros.robot_sim_node import parse_schedule

    rig = loop(domain, task_index=task, disturbances=[""])
    labels = _progress_labels(rig)
    result = rig.run()
    assert result.error_code == ExecutePlan.Result.ERROR_NONE, result.error_message
    assert result.goal_reached and result.replans == 0 and rig.robot.sim.goal_reached()
    assert rig.robot.fired == []
    phases = {f.phase for f in rig.feedback}
    assert {"base", "arm", "gripper", "checking"} <= phases
    # RViz's progress: the step in progress over the world as seen, then the outcome.
    assert _wait(lambda: labels and labels[-1] == "goal reached, 0 replans", 10.0), labels[-3:]
    total = rig.feedback[0].steps_total
    assert f"step 1/{total} " in " | ".join(labels)
    labels.clear()

    # The same task from its start again, disturbed.
    rig.robot.load(rig.robot.pipe.task("test", task), "again", 0, parse_schedule([disturbance]))
    rig.feedback.clear()
    result = rig.run()
    assert result.error_code == ExecutePlan.Result.ERROR_NONE, result.error_message
    assert result.goal_reached and rig.robot.sim.goal_reached()
    assert len(rig.robot.fired) == 1 and not rig.robot.fired[0].endswith("nothing to disturb")
    assert result.replans == 1, list(result.replan_reasons)
    assert len(result.replan_seconds) == 1 and result.replan_seconds[0] > 0.0
    # Replanned from where the robot was: the new plan's scene is the disturbed world.
    assert result.plan_id != rig.feedback[0].plan_id
    assert "replanning from here (replan 1)" in labels
    assert _wait(lambda: labels[-1] == "goal reached, 1 replans", 10.0), labels[-3:]


def _progress_labels(rig: Any) -> list[str]:
    """The labels camp_executor draws on its progress markers, as they arrive."""
    from visualization_msgs.msg import MarkerArray

    from camp_planner.ros.common import EXECUTION_MARKERS_TOPIC

    labels: list[str] = []

    def on_markers(msg: MarkerArray) -> None:
        text = [m.text for m in msg.markers if m.ns == "label"]
        if text and (not labels or labels[-1] != text[0]):
            labels.append(text[0])

    rig.peer.create_subscription(MarkerArray, EXECUTION_MARKERS_TOPIC, on_markers, 100)
    return labels


def test_a_controller_that_rejects_its_goal_gives_a_named_error_and_the_executor_serves_on(
    loop: Callable[..., Any],
) -> None:
    from camp_msgs.action import ExecutePlan

    rig = loop("namo", task_index=NAMO_TASK, disturbances=[""], reject="arm")
    for _ in range(2):  # still serving after the first
        result = rig.run()
        assert result.error_code == ExecutePlan.Result.ERROR_CONTROLLER_REJECTED
        assert "the arm controller refused the goal" in result.error_message
        assert not result.goal_reached and result.replans == 0
    assert rig.node("camp_executor").state_label == "active"


def test_a_cancel_stops_the_robot_within_one_control_period(loop: Callable[..., Any]) -> None:
    from camp_msgs.action import ExecutePlan

    # At real speed, so a cancel lands mid-motion.
    rig = loop("namo", task_index=NAMO_TASK, disturbances=[""], real_time_factor=1.0)
    handle = rig.send()
    assert _wait(lambda: rig.robot.goals["base"] >= 2, 120.0)
    cancel = handle.cancel_goal_async()
    assert _wait(cancel.done, 10.0)
    result = rig.result(handle, 30.0)
    assert result.error_code == ExecutePlan.Result.ERROR_CANCELED
    assert rig.robot.cancelled_ticks and max(rig.robot.cancelled_ticks) <= 1
    pose = rig.robot.sim.base_pose()
    time.sleep(1.0)
    assert rig.robot.sim.base_pose() == pose  # and nothing moves afterwards


def test_an_executor_killed_mid_plan_restarts_without_replaying_the_old_plan(
    loop: Callable[..., Any], tmp_path: Path
) -> None:
    from camp_msgs.action import ExecutePlan
    from camp_planner.ros.bringup import manager_command, node_command

    rig = loop("namo", executor=False, task_index=NAMO_TASK, disturbances=[""])
    params = tmp_path / "executor.yaml"
    params.write_text("camp_executor:\n  ros__parameters:\n    domain: namo\n")
    env = {**os.environ, "ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST"}

    def start() -> list[subprocess.Popen[bytes]]:
        return [
            subprocess.Popen(node_command("camp_executor", params), env=env),
            subprocess.Popen(manager_command(["camp_executor"]), env=env),
        ]

    plan = rig.plan()
    procs = start()
    try:
        handle = rig.send(plan)
        assert handle.accepted
        assert _wait(lambda: rig.robot.goals["gripper"] >= 1, 120.0)
        for p in procs:
            p.send_signal(signal.SIGKILL)
            p.wait(10.0)
        # The controller goal in flight ends on its own; then nothing moves the robot.
        assert _wait(lambda: _still(rig.robot), 60.0)
        before = dict(rig.robot.goals)
        procs = start()
        # A goal sent before the new server is up would go to the dead one, which DDS lists
        # until its lease ends.
        assert _wait(lambda: _state(rig, "camp_executor") == "active", 120.0)
        result = rig.run(plan)  # the same plan, sent again to the new executor
        assert result.error_code == ExecutePlan.Result.ERROR_STALE_PLAN, result.error_message
        assert "the world has left the scene plan" in result.error_message
        assert dict(rig.robot.goals) == before
    finally:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGINT)
        for p in procs:
            try:
                p.wait(20.0)
            except subprocess.TimeoutExpired:
                p.kill()


def _still(robot: Any) -> bool:
    """Whether the robot made no control step for a second."""
    ticks = robot.ticks
    time.sleep(1.0)
    return bool(robot.ticks == ticks)


def _state(rig: Any, node: str) -> str:
    from lifecycle_msgs.srv import GetState

    client = rig.peer.create_client(GetState, f"/{node}/get_state")
    try:
        if not client.wait_for_service(timeout_sec=2.0):
            return ""
        future = client.call_async(GetState.Request())
        if not _wait(future.done, 5.0):
            return ""
        return str(future.result().current_state.label)
    finally:
        rig.peer.destroy_client(client)
