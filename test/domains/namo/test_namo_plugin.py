"""NAMO's robot plug-in: scenes in the room grid, the rooms a context allows, and the
simulator behind ``namo_sim`` (a scene of its task; plans executed with every box present)."""

from __future__ import annotations

from pathlib import Path

import pytest

from camp_planner.core.context import Context
from camp_planner.domains import get_domain
from camp_planner.domains.interface.plan import PlanRecord, PlanStepData
from camp_planner.domains.interface.scene import Pose
from camp_planner.domains.namo.plugin import NamoPlugin, NamoSimulator
from camp_planner.domains.namo.world import NamoSettings, generate_task

pytestmark = pytest.mark.pybullet

PLUGIN = NamoPlugin()


def test_a_scene_of_a_task_is_that_task() -> None:
    config = get_domain("namo").default_config()
    task = generate_task(3, 3, NamoSettings())
    back, slot_of = PLUGIN.task_from_scene(PLUGIN.scene_from_task(task, None, "map"), config, "map")
    assert back.boxes == task.boxes and back.start == task.start
    assert slot_of == {b.name: b.name for b in task.boxes}


def test_the_universal_context_allows_every_room() -> None:
    task = generate_task(3, 3, NamoSettings())
    regions = PLUGIN.allowed_regions(task, Context.universal())
    assert [r for r, _ in regions] == list(range(task.settings.n_rooms))


def test_the_simulator_executes_steps_and_stops_at_the_first_it_cannot(tmp_path: Path) -> None:
    domain = get_domain("namo")
    config = domain.default_config()
    task = domain.make_tasks(config, "test")[0]
    sim = PLUGIN.simulator(domain, config, task)
    assert isinstance(sim, NamoSimulator)
    try:
        assert sim.scene("map").objects and not sim.goal_reached()
        x, y, yaw = task.start
        ahead = Pose.planar(x + 0.1, y, yaw)
        steps = [
            PlanStepData("move", [], [], "transit", ahead, 1),
            PlanStepData("pick", ["no_such_box"], ["no_such_box"], "manipulation", ahead, 1),
        ]
        done, why = sim.execute(steps)
        assert done == 1 and "could not pick 'no_such_box'" in why
        assert sim.render(tmp_path / "run.png", PlanRecord(steps), False, "test task 0")
        assert (tmp_path / "run.png").stat().st_size > 0
    finally:
        sim.close()
