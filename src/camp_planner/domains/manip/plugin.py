"""The manipulation domain's (paper domain D4) robot plug-in: its scene adapter, plan
geometry, simulator and controller-level robot (:mod:`.robot`).

Registered in :mod:`camp_planner.domains` under ``manip``; the service and the ROS nodes
(``manip_sim`` is :class:`ManipSimulator` behind the generic sim node) use only this. The
scene rules are in :mod:`.scene_io`, the plan geometry and execution in :mod:`.plan_io`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from camp_planner.core.context import Context
from camp_planner.core.mdp import Action, FactoredMDP, State
from camp_planner.domains.base import Domain
from camp_planner.domains.interface.plan import PlanGeometry, PlanRecord, PlanStepData
from camp_planner.domains.interface.plugin import DomainPlugin, Rect, Simulator
from camp_planner.domains.interface.robot import RobotSim
from camp_planner.domains.interface.scene import Scene
from camp_planner.domains.manip.domain import world_settings
from camp_planner.domains.manip.scene_io import held_red, scene_from_task, task_from_scene
from camp_planner.domains.manip.world import ManipObject, ManipTask

BIN_VARIABLE = "bin"  # the action variable a bin context constrains


def _bins_allowed(values: Sequence[Any]) -> list[int]:
    """The bin indices among a context's allowed values of ``bin`` (``none`` left out)."""
    return sorted({int(str(v)) for v in values if str(v).lstrip("-").isdigit()})


class ManipPlugin(DomainPlugin):
    domain = "manip"
    sim_node = "manip_sim"

    def task_from_scene(
        self, scene: Scene, config: Mapping[str, Any], frame_id: str
    ) -> tuple[Any, dict[str, str]]:
        return task_from_scene(scene, world_settings(config), frame_id=frame_id)

    def scene_from_task(self, task: Any, state: State | None, frame_id: str) -> Scene:
        assert isinstance(task, ManipTask)
        return scene_from_task(task, state, frame_id)

    def held_object(self, scene: Scene) -> str:
        return held_red(scene)

    def allowed_regions(self, task: Any, context: Context) -> list[tuple[int, Rect]]:
        """The bins a context lets the robot place into, each with its outer rectangle (none
        under a context that does not constrain the bin: nothing to tint)."""
        assert isinstance(task, ManipTask)
        values = context.allowed(BIN_VARIABLE)
        if not values:
            return []
        out: list[tuple[int, Rect]] = []
        for k in _bins_allowed(list(values)):
            if 0 <= k < len(task.bins):
                b = task.bins[k]
                h = b.inner / 2 + b.wall
                out.append((k, (b.x - h, b.y - h, b.x + h, b.y + h)))
        return out

    def plan_geometry(
        self,
        mdp: FactoredMDP,
        states: Sequence[State],
        actions: Sequence[Action],
        variable_to_id: Mapping[str, str],
    ) -> PlanGeometry:
        from camp_planner.domains.manip.mdp import ManipMDP
        from camp_planner.domains.manip.plan_io import plan_geometry

        assert isinstance(mdp, ManipMDP)
        return plan_geometry(mdp, states, actions, variable_to_id)

    def simulator(self, domain: Domain, config: Mapping[str, Any], task: Any) -> Simulator:
        from camp_planner.domains.manip.mdp import ManipMDP

        assert isinstance(task, ManipTask)
        mdp = domain.make_mdp(task, config)
        assert isinstance(mdp, ManipMDP)
        return ManipSimulator(task, mdp)

    def robot(self, domain: Domain, config: Mapping[str, Any], task: Any) -> RobotSim:
        """``task``'s robot at controller level: the base, the Panda and the gripper in the
        task's full PyBullet world (:class:`~camp_planner.domains.manip.robot.ManipRobot`)."""
        from camp_planner.domains.manip.robot import ManipRobot

        assert isinstance(task, ManipTask)
        return ManipRobot(task)


class ManipSimulator(Simulator):
    """A manipulation task in PyBullet: moves to work poses checked against the tables and
    every object, picks, regrasps and places through IK with collision checks, every blue and
    green present (nothing a CAMP dropped is left out)."""

    def __init__(self, task: ManipTask, mdp: Any) -> None:
        self.task = task
        self.mdp = mdp
        self.state: State = mdp.initial_state()
        self.trace: list[State] = [self.state]
        self.steps: list[PlanStepData] = []

    def scene(self, frame_id: str) -> Scene:
        return scene_from_task(self.task, self.state, frame_id)

    def execute(self, steps: Sequence[PlanStepData]) -> tuple[int, str]:
        from camp_planner.domains.manip.plan_io import execute_steps

        self.trace, done, why = execute_steps(self.mdp, steps)
        self.state = self.trace[-1]
        self.steps = list(steps[:done])
        return done, why

    def goal_reached(self) -> bool:
        return bool(self.mdp.is_terminal(self.state))

    def final_task(self) -> ManipTask:
        """The task's objects where the last execution left them (a held red at the
        gripper's side of the base, an emptied bin's green gone)."""
        lay = self.mdp.layout
        st = self.task.settings
        objects: list[ManipObject] = []
        x0, y0, yaw = self.mdp.poses[str(self.state[0])]
        for obj in self.task.objects:
            if obj.kind == "red":
                pose = self.state[lay.pose_index(obj.name)]
                if isinstance(pose, tuple):
                    x, y, z = (float(v) for v in pose)
                else:  # held: ahead of the base
                    ahead = st.base_half_extent + 0.3
                    x, y, z = x0 + ahead * math.cos(yaw), y0 + ahead * math.sin(yaw), obj.z
                objects.append(replace(obj, x=x, y=y, z=z))
            elif obj.kind == "blue":
                value = self.state[lay.blue_index[obj.name]]
                if isinstance(value, tuple):
                    objects.append(replace(obj, x=float(value[0]), y=float(value[1])))
            else:
                objects.append(obj)
        return replace(self.task, objects=tuple(objects))

    def render(self, path: Path, plan: PlanRecord, reached: bool, label: str) -> bool:
        """The objects where the execution left them, the bins the context allows tinted
        and those the plan placed into outlined, what the CAMP dropped greyed, and the base
        poses the robot stood at."""
        # matplotlib only when rendering: the planning worker loads this plug-in too.
        from camp_planner.domains.manip.render import render_scene

        values = plan.context_terms.get(BIN_VARIABLE)
        allowed = _bins_allowed(values) if values is not None else None
        dropped: set[str] = set()
        for v in plan.dropped_variables:
            if v.startswith("bin_"):
                dropped.add(f"green_{v[4:]}")  # a dropped bin leaves its green out
            elif v.startswith("blue_"):
                dropped.add(v)
        chosen = [
            int(s.arguments[1][4:])
            for s in self.steps
            if s.action == "place" and len(s.arguments) == 2 and s.arguments[1][4:].isdigit()
        ]
        poses = [self.mdp.poses[str(s[0])] for s in self.trace]
        trail = [p for k, p in enumerate(poses) if k == 0 or p != poses[k - 1]]
        title = (
            f"{label}: {plan.context_name or 'universal'}\n"
            f"{'goal reached' if reached else 'goal NOT reached'}, planning "
            f"{plan.planning_time:.2f} s, {len(self.steps)} steps executed"
        )
        render_scene(
            self.final_task(),
            path,
            dropped=dropped,
            allowed_bins=allowed,
            chosen_bins=chosen,
            base_poses=trail,
            title=title,
        )
        return True

    def close(self) -> None:
        self.mdp.close()
