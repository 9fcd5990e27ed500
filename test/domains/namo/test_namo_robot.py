"""NAMO's controller-level robot (``domains/namo/robot.py``): a plan executed purely as
controllers drive it reaches the goal, its scene reads back as a task at every point, the
gripper acts on what is under it, and each disturbance does what it says and replays from
its seed. Also the plan geometry it executes (grasp, gripper action, tuck) and the floor
scene's forward kinematics."""

from __future__ import annotations

import math
import random
from collections.abc import Iterator
from itertools import pairwise

import pytest
from namo_worlds import CHAIN

from camp_planner.core.objective import run_episode
from camp_planner.domains import get_domain
from camp_planner.domains.interface.plan import CLOSE, OPEN
from camp_planner.domains.interface.scene import Pose2
from camp_planner.domains.namo.mdp import NamoMDP
from camp_planner.domains.namo.plan_io import plan_geometry
from camp_planner.domains.namo.plugin import NamoPlugin
from camp_planner.domains.namo.robot import NamoRobot
from camp_planner.domains.namo.scene_io import scene_from_task
from camp_planner.execution.commands import (
    ArmCommand,
    BaseCommand,
    ExecutablePlan,
    GripperCommand,
    check_plan,
    remaining_path,
    step_commands,
)
from camp_planner.planners.stilman import Stilman
from camp_planner.sim.floor_scene import PRECISE_TOLERANCE, TUCKED

pytestmark = pytest.mark.pybullet

DOMAIN = get_domain("namo")
CONFIG = DOMAIN.default_config()
PLUGIN = NamoPlugin()
BOX = "box_r1_0"  # CHAIN's box behind the doorway out of the start room: the plan moves it
TOP = CHAIN.settings.box_size[2] + 0.02  # where a pick sends the gripper


@pytest.fixture(scope="module")
def plan() -> ExecutablePlan:
    """CHAIN planned by Stilman (half a second): pick the box in the doorway, put it aside,
    drive to the goal."""
    mdp = NamoMDP.from_task(CHAIN)
    try:
        planner = Stilman(seed=0, motion_timeout_s=5.0, detour_timeout_s=2.0)
        result = run_episode(mdp, planner, lam=0.0, timeout_s=60, rng=random.Random(0))
        assert result.success, result.outcome
        geo = plan_geometry(mdp, result.states, result.actions, {})
    finally:
        mdp.close()
    return ExecutablePlan(
        "chain",
        scene_from_task(CHAIN),
        geo.steps,
        geo.base_path,
        geo.joint_names,
        [q for _, q in geo.arm_waypoints],
    )


def _robot() -> NamoRobot:
    robot = PLUGIN.robot(DOMAIN, CONFIG, CHAIN)
    assert isinstance(robot, NamoRobot)
    return robot


@pytest.fixture
def robot() -> Iterator[NamoRobot]:
    r = _robot()
    yield r
    r.close()


def _drive(robot: NamoRobot, a: Pose2, b: Pose2) -> list[str]:
    """Drive from ``a`` to ``b`` in increments of at most 0.1 m and 0.2 rad, as a path
    follower's control periods would; what each call returned, up to the first failure."""
    dyaw = math.remainder(b[2] - a[2], 2 * math.pi)
    n = max(1, math.ceil(max(math.dist(a[:2], b[:2]) / 0.1, abs(dyaw) / 0.2)))
    out = []
    for k in range(1, n + 1):
        f = k / n
        out.append(
            robot.drive((a[0] + f * (b[0] - a[0]), a[1] + f * (b[1] - a[1]), a[2] + f * dyaw))
        )
        if out[-1]:
            break
    return out


def _follow(robot: NamoRobot, path: list[Pose2]) -> list[str]:
    out: list[str] = []
    for a, b in pairwise(path):
        out += _drive(robot, a, b)
        if out[-1]:
            break
    return out


def _run_step(robot: NamoRobot, plan: ExecutablePlan, index: int) -> list[str]:
    """Step ``index`` of ``plan`` through RobotSim alone; what every call returned."""
    out: list[str] = []
    for command in step_commands(plan, index):
        if isinstance(command, BaseCommand):
            out += _follow(robot, command.poses)
        elif isinstance(command, ArmCommand):
            out += [robot.set_arm(q) for q in command.points]
        else:
            assert isinstance(command, GripperCommand)
            out.append(robot.gripper(command.close))
    return out


def _reads_back(robot: NamoRobot) -> None:
    """The robot's scene is a task the planner accepts, with the robot, the boxes and the
    held box where the robot has them."""
    task, slot_of = PLUGIN.task_from_scene(robot.scene("map"), CONFIG, "map")
    assert task.start == pytest.approx(robot.base_pose(), abs=1e-6)
    assert task.held == (slot_of[robot.held()] if robot.held() else "")
    floor = {slot_of[n]: xy for n, xy in robot._floor_boxes().items()}
    read = {b.name: (b.x, b.y) for b in task.boxes if b.name != task.held}
    assert read.keys() == floor.keys()
    for name, xy in floor.items():
        assert read[name] == pytest.approx(xy, abs=1e-6)


def _step_index(plan: ExecutablePlan, action: str) -> int:
    return next(i for i, s in enumerate(plan.steps) if s.action == action)


def test_picks_and_places_grasp_act_and_tuck(plan: ExecutablePlan) -> None:
    check_plan(plan)
    manipulations = [(i, s) for i, s in enumerate(plan.steps) if s.action in ("pick", "place")]
    assert [s.action for _, s in manipulations] == ["pick", "place"]
    ends = 0
    for i, step in manipulations:
        (action,) = step.gripper
        assert action.command == (CLOSE if step.action == "pick" else OPEN)
        # The grasp (put-down) point, then tucked again, both this step's.
        assert step.arm_trajectory_end == ends + 2 == action.after_point + 2
        assert plan.arm_points[step.arm_trajectory_end - 1] == TUCKED
        commands = step_commands(plan, i)
        grasp = plan.arm_points[action.after_point]
        assert commands == [
            ArmCommand([grasp]),
            GripperCommand(step.action == "pick"),
            ArmCommand([TUCKED]),
        ]
        ends = step.arm_trajectory_end
    assert plan.steps[-1].arm_trajectory_end == len(plan.arm_points) == 4


def test_the_plan_driven_by_controller_commands_reaches_the_goal_and_reads_back(
    plan: ExecutablePlan, robot: NamoRobot
) -> None:
    assert not robot.goal_reached() and robot.arm_joints() == TUCKED
    held_seen = False
    for i in range(len(plan.steps)):
        results = _run_step(robot, plan, i)
        assert results and all(r == "" for r in results), (i, results)
        if plan.steps[i].action == "pick":
            assert robot.held() == BOX
        # The planner replans from exactly this scene: in every room, holding or not.
        _reads_back(robot)
        held_seen |= robot.held() != ""
    assert held_seen and robot.held() == ""
    assert robot.goal_reached()
    # The box stands where the plan put it down: the put-down joints' gripper point.
    place = plan.steps[_step_index(plan, "place")]
    at = robot.scene("map").object(BOX).pose
    assert (at.x, at.y) == pytest.approx((place.target.x, place.target.y), abs=1e-4)


def test_the_gripper_closes_on_nothing_and_opens_holding_nothing(robot: NamoRobot) -> None:
    assert "nothing to grasp" in robot.gripper(True)  # tucked: far above every box top
    x, y, yaw = robot.base_pose()
    scene = robot.mdp.sync(robot.state)
    q = scene.precise_arm_solution(x + 0.5 * math.cos(yaw), y + 0.5 * math.sin(yaw), TOP)
    assert q is not None
    assert robot.set_arm(q) == ""
    why = robot.gripper(True)
    assert "nothing to grasp under the gripper" in why and robot.held() == ""
    assert robot.gripper(False) == "the gripper holds nothing"
    assert robot.set_arm((0.0,) * 3).startswith("the arm has 7 joints")


def test_forward_kinematics_lands_where_the_plan_aimed_and_leaves_the_arm(
    robot: NamoRobot,
) -> None:
    scene = robot.mdp.sync(robot.state)
    x, y, yaw = robot.base_pose()
    target = (x + 0.55 * math.cos(yaw + 0.3), y + 0.55 * math.sin(yaw + 0.3), TOP)
    rough = scene.arm_solution(*target)
    precise = scene.precise_arm_solution(*target)
    assert rough is not None and precise is not None
    before = scene.gripper_point(TUCKED)
    assert math.dist(scene.gripper_point(precise), target) <= PRECISE_TOLERANCE
    assert math.dist(scene.gripper_point(precise), target) <= math.dist(
        scene.gripper_point(rough), target
    )
    assert scene.gripper_point(TUCKED) == before  # the arm was put back tucked
    assert not scene.collisions()


def test_a_driven_base_stops_at_a_wall_and_names_it(robot: NamoRobot) -> None:
    x, y, yaw = robot.base_pose()
    why = robot.drive((x, y - 1.5, yaw))  # the start room's bottom wall is 1.5 m away
    assert why.startswith("blocked by wall") and "short of" in why
    assert robot.base_pose()[1] < y and robot.base_pose()[1] > y - 1.5
    _reads_back(robot)


def _pushed(seed: int) -> tuple[str, tuple[float, float], tuple[float, float]]:
    robot = _robot()
    try:
        before = robot._floor_boxes()
        name = robot.push_object(random.Random(seed))
        assert name
        after = robot._floor_boxes()
        assert {n for n in before if before[n] != after[n]} == {name}
        _reads_back(robot)
        assert not robot.mdp.sync(robot.state).collisions()
        return name, before[name], after[name]
    finally:
        robot.close()


def test_a_push_moves_a_box_nearby_a_short_way_and_replays() -> None:
    name, was, now = _pushed(7)
    assert 0.3 - 1e-3 <= math.dist(was, now) <= 0.6 + 1e-3
    assert math.dist(was, CHAIN.start[:2]) <= 2.5
    assert _pushed(7) == (name, was, now)


def _blocked(plan: ExecutablePlan, seed: int) -> tuple[str, tuple[float, float], str]:
    """Execute ``plan`` up to its place, block the rest of its path, drive that path."""
    robot = _robot()
    try:
        start = _step_index(plan, "place") + 1
        for i in range(start):
            assert all(r == "" for r in _run_step(robot, plan, i))
        path = list(remaining_path(plan, start))
        name = robot.block_path(path, random.Random(seed))
        assert name and robot.held() == ""
        at = robot._floor_boxes()[name]
        _reads_back(robot)
        results = _follow(robot, path)
        assert results[-1].startswith(f"blocked by {name}"), results[-1]
        return name, at, results[-1]
    finally:
        robot.close()


def test_a_box_moved_onto_the_path_blocks_the_drive_and_replays(plan: ExecutablePlan) -> None:
    first = _blocked(plan, 7)
    assert _blocked(plan, 7) == first


def test_a_slipping_box_comes_down_below_the_gripper(plan: ExecutablePlan) -> None:
    robot = _robot()
    try:
        assert robot.slip() == ""  # nothing held
        for i in range(_step_index(plan, "pick") + 1):
            assert all(r == "" for r in _run_step(robot, plan, i))
        carried = robot.scene("map").object(BOX).pose
        assert robot.held() == BOX
        assert robot.slip() == BOX
        assert robot.held() == "" and robot.slip() == ""
        down = robot.scene("map").object(BOX).pose
        assert (down.x, down.y) == pytest.approx((carried.x, carried.y), abs=1e-3)
        assert down.z == pytest.approx(CHAIN.settings.box_size[2] / 2)
        _reads_back(robot)
        # The box is on the floor again: the gripper, sent back down to it, picks it again.
        assert robot.set_arm(plan.arm_points[0]) == "" and robot.gripper(True) == ""
        assert robot.held() == BOX
    finally:
        robot.close()
