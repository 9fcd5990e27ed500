from __future__ import annotations

from dataclasses import replace

import pytest
from toy_execution import Planner, World, held_of, plan_for

from camp_planner.execution.commands import ArmCommand, BaseCommand, GripperCommand, step_commands
from camp_planner.execution.executive import ExecError, Executive


def _executive(world: World, planner: Planner | None = None) -> Executive:
    return Executive(world, world, planner or Planner(), held_of, clock=lambda: world.time)


def test_a_step_becomes_its_base_motion_then_arm_motions_cut_where_the_gripper_acts() -> None:
    plan = plan_for(World().scene(), "p")
    assert step_commands(plan, 0) == [BaseCommand([(0.0, 0.0, 0.0), (2.0, 0.0, 0.0)])]
    assert step_commands(plan, 1) == [
        ArmCommand([(1.0,)]),
        GripperCommand(close=True),
        ArmCommand([(0.0,)]),
    ]


def test_an_undisturbed_plan_reaches_the_goal_without_a_replan() -> None:
    world = World()
    run = _executive(world).run(plan_for(world.scene(), "p"))
    assert run.goal_reached and run.code == ExecError.NONE, run.message
    assert run.replans == 0 and run.steps_executed == 4
    assert world.boxes["a"] == (4.5, 0.0) and world.held == ""


def test_a_box_moved_into_the_way_is_noticed_and_the_robot_replans_from_where_it_is() -> None:
    world = World(disturb={4: "into_path"})  # as the arm retreats from the pick
    planner = Planner()
    run = _executive(world, planner).run(plan_for(world.scene(), "p"))
    assert run.code == ExecError.NONE and run.goal_reached, run.message
    assert run.replans == 1 and planner.calls == 1 and run.plan_id == "plan-1"
    assert "side moved 2.06 m, into the robot's way" in run.replan_reasons[0]
    assert len(run.replan_seconds) == 1 and run.replan_seconds[0] >= 0.0


def test_a_slipping_grasp_is_noticed_after_the_step_and_replanned() -> None:
    world = World(disturb={4: "slip"})
    run = _executive(world).run(plan_for(world.scene(), "p"))
    assert run.goal_reached and run.replans == 1, run.message
    assert "gripper holds nothing where the plan has 'a'" in run.replan_reasons[0]


def test_a_box_pushed_where_the_robot_never_goes_costs_no_replan() -> None:
    world = World(disturb={2: "push_far"})
    run = _executive(world).run(plan_for(world.scene(), "p"))
    assert run.goal_reached and run.replans == 0
    assert any(t.startswith("far moved 0.50 m") for t in run.tolerated)


def test_without_replanning_a_disagreement_ends_the_execution_with_its_reason() -> None:
    world = World(disturb={1: "push_a"})
    run = _executive(world).run(plan_for(world.scene(), "p"), replan=False)
    assert run.code == ExecError.STEP_FAILED and not run.goal_reached
    assert "a moved 0.50 m, and the plan still handles it" in run.message


def test_replans_stop_at_the_limit() -> None:
    world = World(disturb={1: "push_a", 3: "push_a", 5: "push_a"})
    run = _executive(world).run(plan_for(world.scene(), "p"), max_replans=1)
    assert run.code == ExecError.TOO_MANY_REPLANS and run.replans == 1


def test_a_plan_runs_once_and_a_stale_plan_never() -> None:
    world = World()
    executive = _executive(world)
    plan = plan_for(world.scene(), "p")
    assert executive.run(plan).goal_reached
    again = executive.run(plan)
    assert again.code == ExecError.ALREADY_EXECUTED and world.commands == 8
    # The same plan under a new id (a restarted executor has forgotten the ids): the robot and
    # the box are no longer where its scene has them.
    fresh = _executive(world).run(replace(plan, plan_id="q"))
    assert fresh.code == ExecError.STALE_PLAN and "robot is 4.00 m from where" in fresh.message
    assert world.commands == 8


def test_a_controller_that_refuses_a_goal_gives_a_named_error() -> None:
    world = World(reject="arm")
    run = _executive(world).run(plan_for(world.scene(), "p"))
    assert run.code == ExecError.CONTROLLER_REJECTED and run.replans == 0
    assert run.message.startswith("step 2/") and run.message.endswith(
        " (pick): the arm controller refused the goal"
    )


def test_cancel_stops_before_the_next_command() -> None:
    world = World()
    run = _executive(world).run(plan_for(world.scene(), "p"), cancelled=lambda: world.commands >= 2)
    assert run.code == ExecError.CANCELED and world.commands == 2


def test_no_plan_given_plans_for_the_latest_scene_first() -> None:
    world = World()
    planner = Planner()
    run = _executive(world, planner).run(None)
    assert run.goal_reached and run.replans == 0 and planner.calls == 1


@pytest.mark.parametrize("bad", ["gripper_after", "joints"])
def test_a_malformed_plan_is_refused_before_anything_moves(bad: str) -> None:
    world = World()
    plan = plan_for(world.scene(), "p")
    if bad == "joints":
        plan = replace(plan, arm_points=[(1.0, 2.0), *plan.arm_points[1:]])
    else:
        steps = list(plan.steps)
        steps[1] = replace(steps[1], gripper=(replace(steps[1].gripper[0], after_point=9),))
        plan = replace(plan, steps=steps)
    run = _executive(world).run(plan)
    assert run.code == ExecError.INVALID_PLAN and world.commands == 0
