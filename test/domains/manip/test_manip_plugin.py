"""The manipulation domain's robot plug-in: the bins a context allows, the geometry of a
hand-made plan (steps, base path, arm waypoints), and the simulator behind ``manip_sim``
executing it with every object present."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from manip_actions import REGRASP
from manip_actions import move as _move
from manip_actions import pick as _pick
from manip_actions import place as _place

from camp_planner.core.context import Context, Term
from camp_planner.core.mdp import State
from camp_planner.domains import get_domain, get_plugin
from camp_planner.domains.interface.plan import PlanGeometry, PlanRecord, PlanStepData
from camp_planner.domains.interface.scene import Pose
from camp_planner.domains.manip.layout import NONE
from camp_planner.domains.manip.mdp import ManipMDP
from camp_planner.domains.manip.plan_io import PANDA_JOINTS, execute_steps, move_path
from camp_planner.domains.manip.plugin import ManipPlugin, ManipSimulator
from camp_planner.domains.manip.world import generate_task
from camp_planner.sim.tabletop_scene import STOWED

pytestmark = pytest.mark.pybullet

PLUGIN = ManipPlugin()
TASK = generate_task(0, 0)  # skinny reds; bins 0, 3, 5 and 8 free

# Found by stepping the MDP: each red picked from the top, regrasped from the side on the
# staging strip and placed into a free bin.
PLAN = [
    _move("left_5"),
    _pick("red_0", "top"),
    _move("right_3"),
    REGRASP,
    _place(0),
    _move("left_6"),
    _pick("red_1", "top"),
    _move("right_3"),
    REGRASP,
    _place(3),
]
IDS = {"red_0": "cup_0", "red_1": "cup_1"}  # model name -> the scene's id


@pytest.fixture(scope="module")
def mdp() -> Iterator[ManipMDP]:
    m = ManipMDP.from_task(TASK)
    yield m
    m.close()


@pytest.fixture(scope="module")
def executed(mdp: ManipMDP) -> list[State]:
    states = [mdp.initial_state()]
    for action in PLAN:
        nxt = mdp.step(states[-1], action)
        assert nxt != states[-1], f"{action} changed nothing"
        states.append(nxt)
    assert mdp.is_terminal(states[-1])
    return states


@pytest.fixture(scope="module")
def geometry(mdp: ManipMDP, executed: list[State]) -> PlanGeometry:
    detour = [(0.3, -0.9, 2.0), (-0.2, -0.9, 3.0)]
    mdp.base_paths[("right_3", "left_6")] = detour
    try:
        return PLUGIN.plan_geometry(mdp, executed, PLAN, IDS)
    finally:
        del mdp.base_paths[("right_3", "left_6")]


def test_the_plug_in_is_registered_for_manip() -> None:
    plugin = get_plugin("manip")
    assert isinstance(plugin, ManipPlugin) and plugin.sim_node == "manip_sim"


def test_a_bin_context_tints_its_bins_and_the_universal_context_none() -> None:
    assert PLUGIN.allowed_regions(TASK, Context.universal()) == []
    context = Context("disjunction", tuple(Term("bin", v) for v in (NONE, 2, 5)))
    regions = PLUGIN.allowed_regions(TASK, context)
    assert [k for k, _ in regions] == [2, 5]
    b = TASK.bins[5]
    x0, y0, x1, y1 = regions[1][1]
    assert x0 < b.x < x1 and y0 < b.y < y1
    assert x1 - x0 == pytest.approx(b.inner + 2 * b.wall)


def test_the_steps_name_their_actions_and_arguments(geometry: PlanGeometry) -> None:
    steps = geometry.steps
    assert [(s.action, s.arguments) for s in steps] == [
        ("move", ["left_5"]),
        ("pick", ["cup_0", "top"]),
        ("move", ["right_3"]),
        ("regrasp", ["cup_0", "side"]),
        ("place", ["cup_0", "bin_0"]),
        ("move", ["left_6"]),
        ("pick", ["cup_1", "top"]),
        ("move", ["right_3"]),
        ("regrasp", ["cup_1", "side"]),
        ("place", ["cup_1", "bin_3"]),
    ]
    assert [s.mode for s in steps[:5]] == [
        "transit",
        "manipulation",
        "transfer",
        "manipulation",
        "manipulation",
    ]
    assert steps[2].objects == ["cup_0"] and steps[5].objects == []
    # A pick's target is the red where it stood (its bounding box's centre); a place's, the
    # red standing in its bin.
    red = TASK.obj("red_0")
    assert steps[1].target.x == pytest.approx(red.x, abs=1e-3)
    assert steps[1].target.z == pytest.approx(red.z + red.height / 2, abs=1e-3)
    b = TASK.bins[0]
    assert (steps[4].target.x, steps[4].target.y) == pytest.approx((b.x, b.y))


def test_the_base_path_runs_from_the_start_through_each_move(
    mdp: ManipMDP, geometry: PlanGeometry
) -> None:
    path, steps = geometry.base_path, geometry.steps
    assert path[0] == pytest.approx(TASK.start)
    assert path[-1] == pytest.approx(mdp.poses["right_3"])
    for step in steps:
        end = path[step.base_path_end]
        if step.action == "move":
            assert end == pytest.approx(mdp.poses[step.arguments[0]])
            assert step.target.as_planar() == pytest.approx(end)
    # The TAMP planner's path of one move is followed; the others are straight segments.
    i, j = steps[4].base_path_end, steps[5].base_path_end
    assert path[i + 1 : j] == [(0.3, -0.9, 2.0), (-0.2, -0.9, 3.0)]
    assert j - i == 3 and steps[0].base_path_end == 1 and steps[2].base_path_end == 2
    assert move_path(mdp, "start", "left_5") == [TASK.start, mdp.poses["left_5"]]


def test_each_manipulation_is_an_arm_program_with_explicit_gripper_actions(
    geometry: PlanGeometry,
) -> None:
    assert geometry.joint_names == PANDA_JOINTS
    assert all(len(q) == 7 for _, q in geometry.arm_waypoints)
    points = [q for _, q in geometry.arm_waypoints]
    ends = [s.arm_trajectory_end for s in geometry.steps]
    assert ends[-1] == len(points) and ends == sorted(ends)
    start = 0
    for i, step in enumerate(geometry.steps):
        assert [k for k, _ in geometry.arm_waypoints[start : step.arm_trajectory_end]] == [i] * (
            step.arm_trajectory_end - start
        )
        commands = [a.command for a in step.gripper]
        if step.action == "move":
            assert step.arm_trajectory_end == start and commands == []
        else:
            # From the stowed arm back to it (the base drives with it stowed), the gripper
            # closing on a pick, opening on a place, both on a regrasp.
            assert points[step.arm_trajectory_end - 1] == STOWED
            assert (
                commands
                == {"pick": ["close"], "place": ["open"], "regrasp": ["open", "close"]}[step.action]
            )
            for action in step.gripper:
                assert start + 1 <= action.after_point < step.arm_trajectory_end - 1
                # After the goal, the retreat: the arm comes back the way it went, or above.
                assert points[action.after_point - 1] != points[action.after_point]
        start = step.arm_trajectory_end


def test_executing_the_plan_s_steps_reaches_the_goal(geometry: PlanGeometry) -> None:
    fresh = ManipMDP.from_task(TASK)  # the full world, from the initial state
    try:
        trace, done, why = execute_steps(fresh, geometry.steps, {v: k for k, v in IDS.items()})
        assert (done, why) == (len(geometry.steps), "")
        assert fresh.is_terminal(trace[-1]) and len(trace) == len(geometry.steps) + 1
    finally:
        fresh.close()


def test_execution_stops_at_the_first_step_it_cannot_do(
    mdp: ManipMDP, geometry: PlanGeometry
) -> None:
    ids = {v: k for k, v in IDS.items()}
    steps = list(geometry.steps)
    occupied = next(k for k in range(9) if TASK.occupied[k])
    bad_place = replace(steps[4], arguments=["cup_0", f"bin_{occupied}"])
    trace, done, why = execute_steps(mdp, [*steps[:4], bad_place], ids)
    assert done == 4 and f"could not place 'cup_0' into bin_{occupied}" in why
    _, done, why = execute_steps(
        mdp, [*steps[:4], replace(bad_place, arguments=["cup_0", "bin_9"])], ids
    )
    assert done == 4 and "no bin 'bin_9'" in why
    _, done, why = execute_steps(mdp, [replace(steps[1], arguments=["mug", "top"])], ids)
    assert done == 0 and "no red 'mug'" in why
    nowhere = replace(steps[0], arguments=[], target=Pose.planar(2.5, 1.5, 0.0))
    _, done, why = execute_steps(mdp, [nowhere], ids)
    assert done == 0 and "no work pose" in why
    # A move given without its pose's name is matched by its target.
    by_pose = replace(steps[0], arguments=[])
    trace, done, _ = execute_steps(mdp, [by_pose], ids)
    assert done == 1 and trace[-1][0] == "left_5"
    _, done, why = execute_steps(mdp, [PlanStepData("wave", [], [], "transit", Pose(), 0)])
    assert done == 0 and "unknown action 'wave'" in why


def test_the_simulator_executes_reports_and_renders(geometry: PlanGeometry, tmp_path: Path) -> None:
    domain = get_domain("manip")
    sim = PLUGIN.simulator(domain, domain.default_config(), TASK)
    assert isinstance(sim, ManipSimulator)
    try:
        scene = sim.scene("map")
        assert scene.domain == "manip" and not sim.goal_reached()
        # The sim node's scene names objects by the model's names: the steps do too.
        steps = [
            replace(s, arguments=[{v: k for k, v in IDS.items()}.get(a, a) for a in s.arguments])
            for s in geometry.steps
        ]
        assert sim.execute(steps) == (len(steps), "")
        assert sim.goal_reached()
        after = sim.scene("map")
        assert after.object("red_0").room == "bin_0" and after.object("red_1").room == "bin_3"
        record = PlanRecord(
            steps,
            "bin ∈ {none, 0, 3}",
            {"bin": ("none", "0", "3")},
            ("blue_3", "bin_0"),
            0.5,
        )
        assert sim.render(tmp_path / "run.png", record, True, "test task 0")
        assert (tmp_path / "run.png").stat().st_size > 0
        assert sim.execute(steps[:2]) == (2, "") and not sim.goal_reached()
    finally:
        sim.close()
