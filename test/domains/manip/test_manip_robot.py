"""The manipulation robot at controller level (``ManipRobot``): TAMP plans, turned into an
executable plan and driven only through ``RobotSim`` as controllers would (the base in short
increments along the plan's path, the arm in small joint steps, the gripper opened and
closed), reach the goal; every scene between steps reads back as a task; the disturbances do
what they say and replay from a seed."""

from __future__ import annotations

import math
import random
from collections.abc import Iterator
from dataclasses import dataclass, replace

import pytest

from camp_planner.core.camp import CAMP
from camp_planner.core.context import Context, Term
from camp_planner.core.objective import run_episode
from camp_planner.domains.interface.robot import RobotSim
from camp_planner.domains.manip.domain import ManipDomain
from camp_planner.domains.manip.mdp import ManipMDP
from camp_planner.domains.manip.plan_io import plan_geometry
from camp_planner.domains.manip.plugin import ManipPlugin
from camp_planner.domains.manip.robot import GRASP_TOLERANCE, ManipRobot
from camp_planner.domains.manip.scene_io import pose_names
from camp_planner.domains.manip.world import ManipTask
from camp_planner.execution.commands import (
    ArmCommand,
    BaseCommand,
    ExecutablePlan,
    GripperCommand,
    check_plan,
    step_commands,
)
from camp_planner.planners.tamp import TAMP

pytestmark = [pytest.mark.pybullet, pytest.mark.fast_downward]

PLUGIN = ManipPlugin()
DOMAIN = ManipDomain()
CONFIG = DOMAIN.default_config()
TASKS = DOMAIN.make_tasks(CONFIG, "test")
TOP_ONLY = Context("disjunction", (Term("grasp", "none"), Term("grasp", "top")))
BASE_STEP, TURN_STEP, JOINT_STEP = 0.1, 0.2, 0.1  # metres, radians, radians per command


@dataclass
class Planned:
    task: ManipTask
    plan: ExecutablePlan
    actions: list[str]


def _plan(index: int, top_only: bool) -> Planned:
    """A TAMP plan for test task ``index`` (under a top-grasps-only CAMP, whose plans regrasp
    each red to place it), with its geometry, as an executable plan."""
    task = TASKS[index]
    mdp = ManipMDP.from_task(task)
    try:
        camp = None
        if top_only:
            blues = {b.name for b in task.distractors}
            keep = frozenset(v.name for v in (*mdp.state_vars, *mdp.action_vars))
            camp = CAMP.build(mdp, TOP_ONLY, keep - blues)
        result = run_episode(
            mdp, TAMP(seed=0), lam=100.0, timeout_s=60.0, rng=random.Random(0), camp=camp
        )
        assert result.success
        states = [mdp.initial_state()]
        for action in result.actions:  # in the full world, every blue present
            states.append(mdp.step(states[-1], action))
        assert mdp.is_terminal(states[-1])
        g = plan_geometry(mdp, states, result.actions, {})
        plan = ExecutablePlan(
            f"task-{index}",
            PLUGIN.scene_from_task(task, None, "map"),
            g.steps,
            g.base_path,
            g.joint_names,
            [q for _, q in g.arm_waypoints],
        )
        return Planned(task, plan, [mdp.describe_action(a) for a in result.actions])
    finally:
        mdp.close()


@pytest.fixture(scope="module")
def side_plan() -> Planned:
    return _plan(0, top_only=False)


@pytest.fixture(scope="module")
def regrasp_plan() -> Planned:
    planned = _plan(1, top_only=True)
    assert any(a.startswith("regrasp") for a in planned.actions)
    return planned


@pytest.fixture
def robots() -> Iterator[list[ManipRobot]]:
    made: list[ManipRobot] = []
    yield made
    for robot in made:
        robot.close()


def _drive(robot: RobotSim, poses: list[tuple[float, float, float]]) -> str:
    for goal in poses[1:]:
        x0, y0, a0 = robot.base_pose()
        turn = math.remainder(goal[2] - a0, 2 * math.pi)
        n = max(
            1,
            math.ceil(math.hypot(goal[0] - x0, goal[1] - y0) / BASE_STEP),
            math.ceil(abs(turn) / TURN_STEP),
        )
        for k in range(1, n + 1):
            t = k / n
            why = robot.drive((x0 + t * (goal[0] - x0), y0 + t * (goal[1] - y0), a0 + t * turn))
            if why:
                return why
    return ""


def _move_arm(robot: RobotSim, points: list[tuple[float, ...]]) -> str:
    for q in points:
        q0 = robot.arm_joints()
        n = max(1, math.ceil(max(abs(b - a) for a, b in zip(q0, q, strict=True)) / JOINT_STEP))
        for k in range(1, n + 1):
            why = robot.set_arm([a + k / n * (b - a) for a, b in zip(q0, q, strict=True)])
            if why:
                return why
    return ""


def _execute(robot: RobotSim, plan: ExecutablePlan, upto: int | None = None) -> list[str]:
    """Run steps ``0 … upto - 1`` through the robot's controller interface only; every
    call's answer, and the scene read back as a task after each step."""
    answers: list[str] = []
    for i in range(len(plan.steps) if upto is None else upto):
        for command in step_commands(plan, i):
            if isinstance(command, BaseCommand):
                answers.append(_drive(robot, command.poses))
            elif isinstance(command, ArmCommand):
                answers.append(_move_arm(robot, command.points))
            else:
                assert isinstance(command, GripperCommand)
                answers.append(robot.gripper(command.close))
        task, _ = PLUGIN.task_from_scene(robot.scene("map"), CONFIG, "map")
        assert isinstance(task, ManipTask)
        assert task.held == robot.held()
    return answers


def test_plans_carry_explicit_gripper_actions_and_pass_check_plan(
    side_plan: Planned, regrasp_plan: Planned
) -> None:
    for planned in (side_plan, regrasp_plan):
        check_plan(planned.plan)
        for step in planned.plan.steps:
            closes = [a.command for a in step.gripper]
            want = {"pick": ["close"], "place": ["open"], "regrasp": ["open", "close"]}
            assert closes == want.get(step.action, [])


@pytest.mark.parametrize("which", ["side_plan", "regrasp_plan"])
def test_an_undisturbed_plan_reaches_the_goal_through_controller_commands(
    which: str, request: pytest.FixtureRequest, robots: list[ManipRobot]
) -> None:
    planned: Planned = request.getfixturevalue(which)
    robot = PLUGIN.robot(DOMAIN, CONFIG, planned.task)
    assert isinstance(robot, ManipRobot)
    robots.append(robot)
    assert not robot.goal_reached() and robot.held() == ""
    answers = _execute(robot, planned.plan)
    assert answers and all(a == "" for a in answers), [a for a in answers if a]
    assert robot.goal_reached() and robot.held() == ""
    # The base ends exactly at the work pose the MDP names, not a rounding off it.
    last = planned.plan.steps[-1]
    assert robot.base_pose() == pytest.approx(planned.plan.base_path[last.base_path_end])
    assert robot.work_pose() != ""


def test_the_scene_mid_regrasp_shows_the_red_held_then_on_the_strip(
    regrasp_plan: Planned, robots: list[ManipRobot]
) -> None:
    robot = ManipRobot(regrasp_plan.task)
    robots.append(robot)
    plan = regrasp_plan.plan
    k = next(i for i, s in enumerate(plan.steps) if s.action == "regrasp")
    _execute(robot, plan, upto=k)
    task, _ = PLUGIN.task_from_scene(robot.scene("map"), CONFIG, "map")
    assert (task.held, task.grasp_style) == ("red_0", "top")
    # Inside the regrasp, after the put-down: the red stands on the staging strip.
    commands = step_commands(plan, k)
    for command in commands[: commands.index(GripperCommand(False)) + 1]:
        if isinstance(command, ArmCommand):
            assert _move_arm(robot, command.points) == ""
        elif isinstance(command, GripperCommand):
            assert robot.gripper(command.close) == ""
    task, _ = PLUGIN.task_from_scene(robot.scene("map"), CONFIG, "map")
    assert task.held == "" and task.place_of(task.obj("red_0")) == "staging"


def test_closing_on_nothing_or_on_a_blue_fails_with_a_message(robots: list[ManipRobot]) -> None:
    robot = ManipRobot(TASKS[0])
    robots.append(robot)
    why = robot.gripper(True)
    assert "nothing between the fingers" in why and robot.held() == ""
    assert "holds nothing" in robot.gripper(False)
    assert robot.slip() == ""


def _at(task: ManipTask, pose: str) -> ManipRobot:
    return ManipRobot(replace(task, start=pose_names(task)[pose]))


def test_a_push_moves_an_object_near_the_gripper_and_replays(
    side_plan: Planned, robots: list[ManipRobot]
) -> None:
    pose = side_plan.plan.steps[0].arguments[0]  # where the first pick is made
    moved: list[tuple[str, tuple[float, float, float]]] = []
    for _ in range(2):
        robot = _at(side_plan.task, pose)
        robots.append(robot)
        name = robot.push_object(random.Random(7))
        assert name
        before = side_plan.task.obj(name)
        x, y, z = robot._where(name)
        assert 0.05 - 1e-9 <= math.hypot(x - before.x, y - before.y) <= 0.15 + 1e-9
        assert z == pytest.approx(before.z)
        PLUGIN.task_from_scene(robot.scene("map"), CONFIG, "map")  # on its table, no overlap
        moved.append((name, (x, y, z)))
    assert moved[0] == moved[1]


def test_a_pushed_red_spoils_the_grasp_planned_for_it(
    side_plan: Planned, robots: list[ManipRobot]
) -> None:
    plan = side_plan.plan
    robot = ManipRobot(side_plan.task)
    robots.append(robot)
    _execute(robot, plan, upto=1)  # at the pick's work pose
    red = plan.steps[1].arguments[0]
    # The task is fixed, so which seed first pushes the red is too: none would be a defect.
    pushed = next((s for s in range(50) if robot.push_object(random.Random(s)) == red), None)
    assert pushed is not None, f"none of 50 seeds pushed {red}"
    commands = step_commands(plan, 1)
    assert isinstance(commands[0], ArmCommand)
    # The arm either meets the red where it now stands, or reaches the grasp and closes on
    # nothing: the plan's grasp is spoilt either way, and the robot says so.
    why = _move_arm(robot, commands[0].points)
    if why:
        assert f"would hit {red}" in why
    else:
        why = robot.gripper(True)
        assert "nothing between the fingers" in why and str(GRASP_TOLERANCE) in why
    assert robot.held() == ""


def test_a_blue_moved_into_the_way_blocks_the_side_grasp_and_replays(
    side_plan: Planned, robots: list[ManipRobot]
) -> None:
    plan = side_plan.plan
    pose = plan.steps[0].arguments[0]
    path = plan.base_path[: plan.steps[0].base_path_end + 1]
    placed: list[tuple[str, tuple[float, float, float]]] = []
    for _ in range(2):
        robot = ManipRobot(side_plan.task)  # at the start, the path ahead
        robots.append(robot)
        blue = robot.block_path(path, random.Random(7))
        assert blue.startswith("blue_")
        placed.append((blue, robot._where(blue)))
    assert placed[0] == placed[1]
    blue, (bx, by, _) = placed[0]
    red = min(
        (r for r in side_plan.task.reds),
        key=lambda r: math.hypot(bx - r.x, by - r.y),
    )
    assert math.hypot(bx - red.x, by - red.y) <= red.radius + 0.03 + 0.02
    # The scene reads back, and from the path's end the side pick of that red, which worked
    # before the blue came, now fails.
    task, _ = PLUGIN.task_from_scene(robot.scene("map"), CONFIG, "map")
    pick = ("pick", "none", red.name, "side", "none")
    for world, works in ((side_plan.task, True), (task, False)):
        mdp = ManipMDP.from_task(world)
        try:
            state = mdp.assign_state(mdp.initial_state(), 0, pose)
            assert (mdp.step(state, pick) != state) == works
        finally:
            mdp.close()


def test_a_slip_drops_the_held_red_below_the_gripper_and_replays(
    regrasp_plan: Planned, robots: list[ManipRobot]
) -> None:
    plan = regrasp_plan.plan
    k = next(i for i, s in enumerate(plan.steps) if s.action == "pick")
    where: list[tuple[float, float, float]] = []
    for _ in range(2):
        robot = ManipRobot(regrasp_plan.task)
        robots.append(robot)
        _execute(robot, plan, upto=k + 1)
        red = robot.held()
        assert red
        assert robot.slip() == red and robot.held() == ""
        task, _ = PLUGIN.task_from_scene(robot.scene("map"), CONFIG, "map")
        assert task.held == "" and task.place_of(task.obj(red)) == "table"
        where.append(robot._where(red))
    assert where[0] == where[1]
