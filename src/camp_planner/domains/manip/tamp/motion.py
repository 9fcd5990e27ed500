"""Base motions for the manipulation TAMP interface: one OMPL SE(2) query over the floor from
the current base pose to a work pose, in the current state's collision world (the tucked arm
and any held red carried along, checked against the tables, the bins and every object the
simulated world holds).

Each query is seeded from the planning call's random numbers and budgeted in validity checks
(the interface's work clock), so a call's motions depend on its task, context, seed and
settings alone. The path found is recorded in the MDP's ``base_paths`` for the plan geometry.
"""

from __future__ import annotations

import math
import time

from camp_planner.core.planner import Deadline
from camp_planner.domains.manip.tamp.base import BASE_CHECK_WORK_S, InterfaceBase
from camp_planner.domains.manip.world import Pose2D
from camp_planner.motion.ompl_se2 import plan_base_path

EDGE_STEP_M = 0.05  # OMPL checks base motions' edges this far apart (metres of SE(2))


class MotionPlanning(InterfaceBase):
    """OMPL's base motions in the current state's collision world."""

    def _motion(self, goal_name: str, deadline: Deadline) -> list[Pose2D] | None:
        """A collision-free base path from the current pose to work pose ``goal_name`` (the
        pose alone if the robot stands there already), or None if OMPL finds none within
        the motion budget."""
        here = str(self.state[0])
        if here == goal_name:
            return [self.mdp.poses[here]]
        t0 = time.perf_counter()
        scene = self.mdp.sync(self.state)
        task = self.task
        start, goal = self.mdp.poses[here], self.mdp.poses[goal_name]
        counted = 0

        def valid(x: float, y: float, yaw: float) -> bool:
            nonlocal counted
            counted += 1
            pose = (x, y, yaw)
            return task.on_floor(pose) and scene.base_free(pose)

        hx, hy = task.settings.world_half
        budget = max(1, math.ceil(self.motion_timeout / BASE_CHECK_WORK_S))
        try:
            result = plan_base_path(
                start,
                goal,
                (-hx, -hy, hx, hy),
                valid,
                timeout_s=max(deadline.call.remaining, 1e-3),
                seed=self.rng.randrange(1, 2**31),
                planner=self.motion_planner,
                segment_m=EDGE_STEP_M,
                max_checks=budget,
            )
        finally:
            self.base_checks += counted
            self.motions += 1
            self._timed("motion_planning", t0)
        if result.path is None:
            return None
        path = [(float(x), float(y), float(yaw)) for x, y, yaw in result.path]
        self.mdp.base_paths[(here, goal_name)] = path
        return path
