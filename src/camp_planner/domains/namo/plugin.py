"""NAMO's robot plug-in: its scene adapter, plan geometry, simulator and controller-level
robot (:mod:`.robot`).

Registered in :mod:`camp_planner.domains` under ``namo``; the service and the ROS nodes
(``namo_sim`` is :class:`NamoSimulator` behind the generic sim node) use only this. The
scene rules are in :mod:`.scene_io`, the plan geometry and execution in :mod:`.plan_io`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from camp_planner.core.context import Context
from camp_planner.core.mdp import Action, FactoredMDP, State
from camp_planner.domains.base import Domain
from camp_planner.domains.interface.plan import PlanGeometry, PlanRecord, PlanStepData
from camp_planner.domains.interface.plugin import DomainPlugin, Rect, Simulator
from camp_planner.domains.interface.robot import RobotSim
from camp_planner.domains.interface.scene import Scene
from camp_planner.domains.namo.domain import world_settings
from camp_planner.domains.namo.mdp import NamoMDP
from camp_planner.domains.namo.plan_io import execute_steps, moved_boxes, plan_geometry
from camp_planner.domains.namo.scene_io import held_box, scene_from_task, task_from_scene
from camp_planner.domains.namo.world import NamoTask

ROOM_VARIABLE = "robot_room"  # the context variable that confines the robot to rooms


class NamoPlugin(DomainPlugin):
    domain = "namo"
    sim_node = "namo_sim"

    def task_from_scene(
        self, scene: Scene, config: Mapping[str, Any], frame_id: str
    ) -> tuple[Any, dict[str, str]]:
        return task_from_scene(scene, world_settings(config), frame_id=frame_id)

    def scene_from_task(self, task: Any, state: State | None, frame_id: str) -> Scene:
        assert isinstance(task, NamoTask)
        return scene_from_task(task, state, frame_id)

    def held_object(self, scene: Scene) -> str:
        return held_box(scene)

    def allowed_regions(self, task: Any, context: Context) -> list[tuple[int, Rect]]:
        """The rooms ``context`` lets the robot enter (every room under a context that does
        not constrain the robot's room), each with its floor rectangle."""
        assert isinstance(task, NamoTask)
        rooms = context.allowed(ROOM_VARIABLE)
        ids = sorted(int(str(r)) for r in rooms) if rooms else range(task.settings.n_rooms)
        return [(r, task.room_rect(r)) for r in ids]

    def plan_geometry(
        self,
        mdp: FactoredMDP,
        states: Sequence[State],
        actions: Sequence[Action],
        variable_to_id: Mapping[str, str],
    ) -> PlanGeometry:
        assert isinstance(mdp, NamoMDP)
        return plan_geometry(mdp, states, actions, variable_to_id)

    def simulator(self, domain: Domain, config: Mapping[str, Any], task: Any) -> Simulator:
        assert isinstance(task, NamoTask)
        mdp = domain.make_mdp(task, config)
        assert isinstance(mdp, NamoMDP)
        return NamoSimulator(task, mdp)

    def robot(self, domain: Domain, config: Mapping[str, Any], task: Any) -> RobotSim:
        # Loaded here: the planning workers load the plug-in and never drive a robot.
        from camp_planner.domains.namo.robot import NamoRobot

        assert isinstance(task, NamoTask)
        mdp = domain.make_mdp(task, config)
        assert isinstance(mdp, NamoMDP)
        return NamoRobot(task, mdp)


class NamoSimulator(Simulator):
    """A NAMO task in PyBullet: base motions checked against every box and wall, picks and
    places through IK, every box present (nothing a CAMP dropped is left out)."""

    def __init__(self, task: NamoTask, mdp: NamoMDP) -> None:
        self.task = task
        self.mdp = mdp
        self.state = mdp.initial_state()
        self.trace: list[State] = [self.state]

    def scene(self, frame_id: str) -> Scene:
        return scene_from_task(self.task, self.state, frame_id)

    def execute(self, steps: Sequence[PlanStepData]) -> tuple[int, str]:
        self.trace, done, why = execute_steps(self.mdp, steps)
        self.state = self.trace[-1]
        return done, why

    def goal_reached(self) -> bool:
        return self.mdp.is_terminal(self.state)

    def render(self, path: Path, plan: PlanRecord, reached: bool, label: str) -> bool:
        # matplotlib only when rendering: the planning worker loads this plug-in too.
        from camp_planner.domains.namo.render import render_scene

        rooms = plan.context_terms.get(ROOM_VARIABLE)
        allowed = {int(v) for v in rooms} if rooms is not None else None
        moved = moved_boxes(self.task, self.state)
        title = (
            f"{label}: {plan.context_name or 'universal'}\n"
            f"{'goal reached' if reached else 'goal NOT reached'}, "
            f"planning {plan.planning_time:.2f} s, {len(moved)} boxes moved"
        )
        render_scene(
            self.task,
            path,
            allowed_rooms=allowed,
            dropped=set(plan.dropped_variables),
            base_path=[_pose(s[0]) for s in self.trace],
            moved=moved,
            title=title,
        )
        return True

    def close(self) -> None:
        self.mdp.close()


def _pose(value: Any) -> tuple[float, float, float]:
    return (float(value[0]), float(value[1]), float(value[2]))
