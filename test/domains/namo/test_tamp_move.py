"""Moves and picks of NAMO's TAMP interface (``domains/namo/tamp/move.py``): drives that
end where the goal is reached, approach poses a simulated pick accepts, failed picks."""

from __future__ import annotations

import copy
import math
import random
from pathlib import Path

import pytest
from namo_worlds import box_along_a_wall, open_chain

from camp_planner.core.planner import Deadline
from camp_planner.domains.namo.mdp import NamoMDP
from camp_planner.planners.tamp import InterfaceSettings
from camp_planner.workflow import Pipeline

pytestmark = [pytest.mark.pybullet]


def test_a_drive_to_the_goal_ends_where_the_goal_is_reached() -> None:
    from camp_planner.domains.namo.tamp import NamoTampInterface

    task = open_chain()
    mdp = NamoMDP.from_task(task)
    iface = NamoTampInterface(mdp, mdp.initial_state(), None, seed=0, settings=InterfaceSettings())
    # A straight line through the goal's reach to a pose beyond it.
    iface.state = mdp._with_pose(iface.state, (7.5, 6.3, math.pi / 2))
    done = iface._drive(
        [(7.5, 6.3, math.pi / 2), (7.5, 7.0, math.pi / 2), (7.0, 7.0, 0.0)], (7.0, 7.0, 0.0), "goal"
    )
    assert done is not None and done.ok and len(done.actions) == 1
    assert mdp.is_terminal(iface.state) and iface.at == "goal"
    iface.close()
    mdp.close()


def test_every_pose_offered_for_picking_a_box_picks_it_in_the_simulator() -> None:
    # Reach and inverse kinematics alone let poses through from which the box, held ahead
    # of the base at the base's heading, swings into the wall beside it: a plan that went
    # there failed at the pick and the whole planning call with it.
    from camp_planner.domains.namo.tamp import NamoTampInterface

    mdp = NamoMDP.from_task(box_along_a_wall())
    iface = NamoTampInterface(mdp, mdp.initial_state(), None, seed=0, settings=InterfaceSettings())
    poses = iface._targets("near_box_r1_0")
    assert poses
    start = mdp.initial_state()
    for pose in poses:
        here = (pose, 1, *start[2:])
        assert mdp.step(here, ("pick", None, "box_r1_0"))[2] == "box_r1_0", pose
    # The square pose straight below the box, at the holding distance, is among them.
    assert any(abs(p[2] - math.pi / 2) < 1e-9 and abs(p[0] - 4.5) < 1e-9 for p in poses)
    iface.close()
    mdp.close()


def test_the_interfaces_pick_test_agrees_with_the_simulated_pick() -> None:
    # _pick_works repeats the pick's last test without stepping the MDP (no resync of the
    # scene after it): it must accept exactly the poses from which the MDP's pick works.
    from camp_planner.domains.namo.tamp import NamoTampInterface

    mdp = NamoMDP.from_task(box_along_a_wall())
    start = mdp.initial_state()
    iface = NamoTampInterface(mdp, start, None, seed=0, settings=InterfaceSettings())
    rng = random.Random(3)
    verdicts = []
    for _ in range(300):
        d, bearing = rng.uniform(0.4, 0.65), rng.uniform(-math.pi, 0.0)
        pose = (
            round(4.5 + d * math.cos(bearing), 4),
            round(2.78 + d * math.sin(bearing), 4),
            round(bearing + math.pi + rng.uniform(-0.8, 0.8), 4),
        )
        scene = iface._scene()
        if scene.collisions(pose) or not scene.arm_reaches(4.5, 2.78, 0.72):
            continue
        works = iface._pick_works(pose, "box_r1_0")
        picked = mdp.step((pose, 1, *start[2:]), ("pick", None, "box_r1_0"))
        assert works == (picked[2] == "box_r1_0"), pose
        verdicts.append(works)
    # Both kinds of pose were met: some picks swing the box into the wall.
    assert True in verdicts and False in verdicts
    iface.close()
    mdp.close()


def test_a_failed_pick_sends_the_next_plan_back_to_a_new_approach() -> None:
    from camp_planner.domains.namo.tamp import NamoTampInterface

    mdp = NamoMDP.from_task(box_along_a_wall())
    iface = NamoTampInterface(mdp, mdp.initial_state(), None, seed=0, settings=InterfaceSettings())
    iface.near.add("box_r1_0")
    iface.at = "near_box_r1_0"  # but the robot stands 1.2 m away: the pick must fail
    outcome = iface.refine(("pick", "box_r1_0", "near_box_r1_0"), Deadline(60.0))
    assert not outcome.ok and not outcome.facts
    assert iface.at == "here"
    iface.close()
    mdp.close()


@pytest.mark.fast_downward
@pytest.mark.slow
def test_the_namo_task_whose_way_to_a_box_passes_the_goal_is_solved(tmp_path: Path) -> None:
    # Eval seed 2, test task 2, planner seed 2: every way TAMP finds to the box it has to
    # move passes within reach of the goal, where the plan then ends.
    base = Pipeline.create("namo", None, tmp_path / "a")
    config = copy.deepcopy(base.config)
    config["seed"] = 2
    pipe = Pipeline.from_config("namo", config, tmp_path / "a")
    task = pipe.task("test", 2)
    result, _ = pipe.run(task, "tamp", None, seed=2)
    assert result.success, result.failures
    # A carry that passes the goal goes on: its box is put down where the carry ends.
    default = Pipeline.from_config("namo", copy.deepcopy(base.config), tmp_path / "a")
    default.config["tasks"]["test"] = 10
    tasks = default.tasks("test")
    for planner, index in (("tamp", 7), ("stilman", 8)):
        result, _ = default.run(tasks[index], planner, None, seed=0)
        assert result.success, (planner, index, result.failures)
