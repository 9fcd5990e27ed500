"""What a domain implements to be planned from perceived scenes, over ROS or any front end.

A :class:`DomainPlugin` is registered under its domain's name
(:func:`camp_planner.domains.register_plugin`); the service and the ROS nodes look it up and
know nothing else of the domain. It has three parts:

- the scene adapter: a scene ↔ the domain's task, refusing with a named
  :class:`~camp_planner.domains.interface.errors.ErrorCode` whatever the model cannot
  represent faithfully, and the regions a context allows (tinted in RViz);
- the plan geometry: an executed plan (states and actions of the domain's MDP) → steps with
  action names and arguments, base path and arm waypoints;
- the simulator behind the domain's sim node: publishes a task's scene and executes the plan
  steps it receives, as a robot would; and the robot at controller level
  (:class:`~camp_planner.domains.interface.robot.RobotSim`) behind the closed-loop sim robot.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from camp_planner.core.context import Context
from camp_planner.core.mdp import Action, FactoredMDP, State
from camp_planner.domains.base import Domain
from camp_planner.domains.interface.errors import ErrorCode, ServiceError
from camp_planner.domains.interface.plan import PlanGeometry, PlanRecord, PlanStepData
from camp_planner.domains.interface.robot import RobotSim
from camp_planner.domains.interface.scene import Scene

Rect = tuple[float, float, float, float]  # (x0, y0, x1, y1) on the floor, metres


class Simulator(ABC):
    """One task simulated for the sim node: its scene, and plans executed in it."""

    @abstractmethod
    def scene(self, frame_id: str) -> Scene:
        """The scene a perfect perception stack would report now."""

    @abstractmethod
    def execute(self, steps: Sequence[PlanStepData]) -> tuple[int, str]:
        """Execute ``steps`` from the task's initial state; (steps done, why it stopped
        early or "")."""

    @abstractmethod
    def goal_reached(self) -> bool:
        """Whether the state after the last execution is a goal."""

    def render(self, path: Path, plan: PlanRecord, reached: bool, label: str) -> bool:
        """Write a PNG of the last execution to ``path``; False if the domain has no
        renders."""
        return False

    @abstractmethod
    def close(self) -> None:
        """Release the simulator (physics clients, helper processes)."""


class DomainPlugin(ABC):
    """The scene adapter, plan geometry and simulator of one domain."""

    domain: str = ""
    # The ROS node (and executable) name of the domain's simulator, e.g. "namo_sim".
    sim_node: str = ""

    # --- scene adapter --------------------------------------------------------------------
    @abstractmethod
    def task_from_scene(
        self, scene: Scene, config: Mapping[str, Any], frame_id: str
    ) -> tuple[Any, dict[str, str]]:
        """(the domain task of ``scene``, scene object id → the model variable it becomes);
        a :class:`~camp_planner.domains.interface.errors.ServiceError` naming the first thing
        the model cannot represent."""

    @abstractmethod
    def scene_from_task(self, task: Any, state: State | None, frame_id: str) -> Scene:
        """The scene a perfect perception stack would report for ``task`` in ``state`` (the
        initial state if None)."""

    def held_object(self, scene: Scene) -> str:
        """The id of the object ``scene`` shows in the robot's gripper, or "" (as the scene
        adapter reads a held object): what an executor checks a pick or a place by."""
        return ""

    def allowed_regions(self, task: Any, context: Context) -> list[tuple[int, Rect]]:
        """The floor regions ``context`` lets the robot enter in ``task``, each with its
        rectangle: what a viewer tints to show the constraint (none by default)."""
        return []

    # --- plan geometry --------------------------------------------------------------------
    @abstractmethod
    def plan_geometry(
        self,
        mdp: FactoredMDP,
        states: Sequence[State],
        actions: Sequence[Action],
        variable_to_id: Mapping[str, str],
    ) -> PlanGeometry:
        """The steps, base path and arm waypoints of an executed plan, with objects named by
        the scene's ids (``variable_to_id`` inverts :meth:`task_from_scene`'s map)."""

    # --- simulator ------------------------------------------------------------------------
    @abstractmethod
    def simulator(self, domain: Domain, config: Mapping[str, Any], task: Any) -> Simulator:
        """A simulator of ``task`` for the domain's sim node."""

    def robot(self, domain: Domain, config: Mapping[str, Any], task: Any) -> RobotSim:
        """``task``'s robot driven at controller level, for the sim robot node (closed-loop
        execution); a named error where the domain has none."""
        raise ServiceError(
            ErrorCode.UNKNOWN_DOMAIN,
            f"domain '{self.domain}' has no controller-level robot simulator",
        )
