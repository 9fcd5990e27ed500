"""A motion that reaches the goal on its way to somewhere else ends the plan there
(``goal_en_route``): the simulator moves a robot that has reached the goal no further, so
such a motion used to end short of its target and fail."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
from toy_mdps import ScriptedInterface, ScriptedMDP

from camp_planner.core.mdp import State
from camp_planner.core.planner import Deadline
from camp_planner.planners.stilman import Stilman
from camp_planner.planners.tamp import TAMP, Refinement
from camp_planner.workflow import Pipeline


class _PastTheGoal(ScriptedInterface):
    """A TAMP interface whose symbolic plan has two steps; refining the first reaches the goal
    (the way to the box passed it), and the second would fail from there. For Stilman's
    algorithm, the way to the goal is blocked by box ``b``, and the way to ``b`` passes the
    goal."""

    DOMAIN = (
        "(define (domain d) (:requirements :strips) (:predicates (free) (near) (done))\n"
        "  (:action go_near :parameters () :precondition (free) :effect (near))\n"
        "  (:action finish :parameters () :precondition (near) :effect (done)))"
    )

    def __init__(self) -> None:
        super().__init__()
        self.refined: list[str] = []
        self.state: State = (0, 0)
        self.at = "here"
        self.moved: set[str] = set()
        self.blocks: dict[str, set[str]] = {}
        self.near: set[str] = set()
        self.keep_out: list[object] = []

    def pddl(self) -> tuple[str, str]:
        return self.DOMAIN, "(define (problem p) (:domain d) (:init (free)) (:goal (done)))"

    def refine(self, step: tuple[str, ...], deadline: Deadline) -> Refinement:
        self.refined.append(step[0])
        if step[0] in ("go_near", "move_to_near_b"):
            self.done = True
            self.state = (2, 0)
            return Refinement(True, [("right",), ("right",)], [(1, 0), (2, 0)])
        if step[0] == "move_to_goal":
            return Refinement(False, reason="b is in the way", facts=["(blocks b goal)"])
        return Refinement(False, reason=f"{step[0]} is not possible from the goal")


@pytest.mark.fast_downward
def test_tamp_ends_the_plan_where_a_step_reached_the_goal() -> None:
    iface = _PastTheGoal()
    planner = TAMP()
    planner.prepare(ScriptedMDP(iface), Deadline(60))
    assert iface.refined == ["go_near"]  # "finish" was never asked of the goal state
    assert planner.last_stats["actions"] == 2


def test_stilman_ends_the_plan_where_the_way_to_an_obstructor_reached_the_goal() -> None:
    iface = _PastTheGoal()
    planner = Stilman()
    planner.prepare(ScriptedMDP(iface), Deadline(60))
    # No pick of b from the goal, which would fail and undo the way there.
    assert iface.refined == ["move_to_goal", "move_to_near_b"]
    assert planner.last_stats["actions"] == 2


def test_goal_en_route_must_be_a_boolean() -> None:
    with pytest.raises(ValueError, match="goal_en_route"):
        TAMP(goal_en_route="yes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="goal_en_route"):
        Stilman(goal_en_route=1)  # type: ignore[arg-type]


@pytest.mark.pybullet
@pytest.mark.fast_downward
@pytest.mark.slow
def test_the_namo_task_whose_way_to_a_box_passes_the_goal_is_solved(tmp_path: Path) -> None:
    # NAMO eval v14, seed 2, test task 2, planner seed 2: every way TAMP found to the box
    # it had to move passed within reach of the goal. Those motions ended at the goal, short
    # of the box, and the call failed after three resamples. (Plans depend only on the
    # task, seed and settings, so this case replays anywhere; if a planner change stops
    # this way from passing the goal, the second assertion says so.)
    base = Pipeline.create("namo", None, tmp_path / "a")
    config = copy.deepcopy(base.config)
    config["seed"] = 2
    pipe = Pipeline.from_config("namo", config, tmp_path / "a")
    task = pipe.task("test", 2)
    result, _ = pipe.run(task, "tamp", None, seed=2)
    assert result.success, result.failures
    old, _ = pipe.run(task, "tamp", None, seed=2, overrides={"goal_en_route": False})
    assert not old.success and "failed without obstruction" in old.failures[0]
    # The first version of the change also ended carries that passed the goal: their box
    # was then never put down, and these runs, solved before, failed.
    default = Pipeline.from_config("namo", copy.deepcopy(base.config), tmp_path / "a")
    default.config["tasks"]["test"] = 10
    tasks = default.tasks("test")
    for planner, index in (("tamp", 7), ("stilman", 8)):
        result, _ = default.run(tasks[index], planner, None, seed=0)
        assert result.success, (planner, index, result.failures)
