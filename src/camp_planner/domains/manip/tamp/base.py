"""What every part of the manipulation TAMP interface shares: one planning call's state (the
MDP state reached, what the context allows, the random numbers, the counters), the work
clock its budgets are measured on, and the helpers that execute actions in the simulator.

The context is read as a membership test on whole actions (``allows``), never as a list of
objects to ignore: which objects matter under it is for the CAMP's learned CSIs to say.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Hashable
from typing import Any, Protocol

from camp_planner.core.mdp import Action, State
from camp_planner.domains.manip.layout import ManipLayout
from camp_planner.domains.manip.world import ManipTask, Pose2D
from camp_planner.planners.tamp import InterfaceSettings
from camp_planner.sim.tabletop_scene import TabletopScene

# Nominal seconds per unit of work (see NAMO's ``tamp.work``): an arm collision check (one
# arm pose against the broadphase's candidates), an IK request, and one OMPL validity check
# of a base pose (the base box and the tucked arm).
ARM_CHECK_WORK_S = 0.15e-3
IK_WORK_S = 0.8e-3
BASE_CHECK_WORK_S = 0.1e-3

Allows = Callable[[State, Action], bool]


class Simulator(Protocol):
    """What the interface needs of the manipulation MDP: its task, variable layout, named
    base poses, the (deterministic) simulator step and the PyBullet scene behind it."""

    layout: ManipLayout
    poses: dict[str, Pose2D]
    base_paths: dict[tuple[str, str], list[Pose2D]]

    @property
    def task(self) -> ManipTask | None: ...

    def step(self, state: State, action: Action) -> State: ...

    def scene(self) -> TabletopScene: ...

    def sync(self, state: State) -> TabletopScene: ...

    def is_terminal(self, state: State) -> bool: ...

    def assign_state(self, state: State, index: int, value: Hashable) -> State: ...


class InterfaceBase:
    """One planning call's state, and the helpers every part of the interface uses."""

    def __init__(
        self,
        mdp: Simulator,
        state: State,
        allows: Allows | None,
        seed: int,
        settings: InterfaceSettings,
    ) -> None:
        self.mdp = mdp
        task = mdp.task
        assert task is not None
        self.task: ManipTask = task
        self.layout = mdp.layout
        self.state = state
        self._allows = allows
        self.rng = random.Random(seed)
        self.seed = seed
        self.motion_timeout = settings.motion_timeout_s
        self.motion_planner = settings.motion_planner
        self.stage_times: dict[str, float] = {}
        scene = mdp.scene()
        self._work_from = (scene.checks, scene.ik_requests)
        self.base_checks = 0  # OMPL's validity checks of base poses
        self.motions = 0  # OMPL queries
        # Learnt facts (see the symbolic model): per red, the grasp styles found infeasible
        # because the object is wider than the gripper opens (true of the geometry, kept when
        # the rest is forgotten) or blocked from every base pose tried; reds that could not be
        # regrasped; bins found occupied or out of reach while holding a red.
        self.too_wide: set[tuple[str, str]] = set()
        self.blocked: set[tuple[str, str]] = set()
        self.no_regrasp: set[str] = set()
        self.occupied: set[int] = set()
        self.unreachable: set[int] = set()

    def allows(self, action: Action) -> bool:
        """Whether the context (if any) lets the robot take ``action`` now."""
        return self._allows is None or self._allows(self.state, action)

    @property
    def checks(self) -> int:
        """Collision checks of this call: arm poses checked in the scene and base poses."""
        return self.mdp.scene().checks - self._work_from[0] + self.base_checks

    def work(self) -> float:
        """The work this interface has done, in nominal seconds: its arm collision checks,
        IK requests and base validity checks, each at a fixed cost, so that a budget measured
        on it ends at the same point on any machine."""
        scene = self.mdp.scene()
        checks0, ik0 = self._work_from
        return float(
            (scene.checks - checks0) * ARM_CHECK_WORK_S
            + (scene.ik_requests - ik0) * IK_WORK_S
            + self.base_checks * BASE_CHECK_WORK_S
        )

    def _timed(self, stage: str, t0: float) -> None:
        self.stage_times[stage] = self.stage_times.get(stage, 0.0) + time.perf_counter() - t0

    def _at(self, pose: str) -> State:
        """The current state with the base at work pose ``pose``."""
        return self.mdp.assign_state(self.state, 0, pose)

    def _held(self) -> str:
        return str(self.state[1])

    def _execute(self, actions: list[Action]) -> list[State]:
        states = []
        state = self.state
        for action in actions:
            state = self.mdp.step(state, action)
            states.append(state)
        return states

    def _red_xy(self, red: str) -> tuple[float, float]:
        pose: Any = self.state[self.layout.loc_index[red] + 1]
        assert isinstance(pose, tuple), f"{red} is not standing anywhere"
        return float(pose[0]), float(pose[1])

    def close(self) -> None:
        """Nothing of the shared simulator is changed for planning alone: the next sync
        rebuilds whatever a check left."""
